import { newId } from '../core/ids.js';
import type { Db } from '../db/database.js';
import type { OAuthAuthorizationRequest } from './tables.js';

/** How long a consent page can be left open before its answer is refused. */
const REQUEST_LIFETIME_MS = 30 * 60_000;

export interface PendingAuthorization {
  sessionId: string;
  appId: string;
  organizationId: string;
  /** The registered redirect URL the page names. */
  redirectUri: string;
  redirectUriGiven: boolean;
  state: string | null;
  codeChallenge: string | null;
  /** RFC 8707: the resource the token will be for; `null` for every resource. */
  resource: string | null;
  /** The scopes asked for, space-separated; `null` for every operation. */
  scope: string | null;
}

/**
 * Remembers what a consent page shows, for the browser session it was shown to. The page's form
 * refers to it by an unguessable id, so the answer approves exactly what was shown (RFC 6819
 * §4.4.1.8, §5.1.4.1.2): the app, redirect URI, state, PKCE challenge, resource and organization never come
 * from the form.
 */
export async function createAuthorizationRequest(db: Db, pending: PendingAuthorization, now: Date): Promise<string> {
  const id = newId('authz');
  await db
    .insertInto('oauth_authorization_requests')
    .values({
      id,
      session_id: pending.sessionId,
      app_id: pending.appId,
      organization_id: pending.organizationId,
      redirect_uri: pending.redirectUri,
      redirect_uri_given: pending.redirectUriGiven,
      state: pending.state,
      code_challenge: pending.codeChallenge,
      resource: pending.resource,
      scope: pending.scope,
      expires_at: new Date(now.getTime() + REQUEST_LIFETIME_MS),
    })
    .execute();
  await db
    .deleteFrom('oauth_authorization_requests')
    .where('session_id', '=', pending.sessionId)
    .where('expires_at', '<=', now)
    .execute();
  return id;
}

/**
 * Takes the pending request for an answer: it is removed whatever the answer, so a consent page can
 * be answered once. Another session's request, an expired one or an unknown id is `undefined`.
 */
export function takeAuthorizationRequest(
  db: Db,
  id: string,
  sessionId: string,
  now: Date,
): Promise<OAuthAuthorizationRequest | undefined> {
  return db
    .deleteFrom('oauth_authorization_requests')
    .where('id', '=', id)
    .where('session_id', '=', sessionId)
    .where('expires_at', '>', now)
    .returningAll()
    .executeTakeFirst();
}
