import type { Db } from '../db/database.js';
import { takeAuthorizationRequest } from './authorization-requests.js';
import { approveApp } from './grants.js';
import { matchRedirectUri } from './registration.js';
import { withQuery } from './urls.js';

/** What the consent form sends back; only `requestId` and `decision` decide anything. */
export interface ConsentAnswer {
  requestId: string;
  decision: string;
  /** Repeated from the page so that a tampered form is noticed. */
  clientId: string;
  organizationId: string;
  state: string;
}

/** The signed-in user answering, as the session knows them. */
export interface ConsentingUser {
  sessionId: string;
  userId: string;
  organizationIds: string[];
}

export type ConsentOutcome = { redirectTo: string } | { refused: { title: string; message: string } };

/**
 * Applies the user's answer to the pending request the page showed. The request is taken whatever
 * happens, so a consent page is answered once; the app, redirect URL, state, PKCE challenge and
 * organization all come from the server's record, never from the form.
 */
export async function answerConsent(
  db: Db,
  issuer: string,
  user: ConsentingUser,
  answer: ConsentAnswer,
  now: Date,
): Promise<ConsentOutcome> {
  const pending = await takeAuthorizationRequest(db, answer.requestId, user.sessionId, now);
  if (!pending) {
    return {
      refused: {
        title: 'This request has expired',
        message: 'This authorization request was already answered or has expired. Go back to the app and start again.',
      },
    };
  }
  const app = await db.selectFrom('oauth_apps').selectAll().where('id', '=', pending.app_id).executeTakeFirstOrThrow();
  // An app whose redirect URL changed since the page was shown would send the user somewhere the
  // page did not name.
  const tampered =
    answer.clientId !== app.client_id ||
    answer.organizationId !== pending.organization_id ||
    answer.state !== (pending.state ?? '') ||
    matchRedirectUri(app, pending.redirect_uri) !== pending.redirect_uri ||
    !user.organizationIds.includes(pending.organization_id);
  if (tampered) {
    return {
      refused: {
        title: 'This request was changed',
        message: 'The answer does not match the request that was shown. Go back to the app and start again.',
      },
    };
  }
  const state = pending.state ?? undefined;
  // RFC 9207: `iss` names this server in every answer, so an app talking to several servers can tell
  // which one answered (the mix-up defence RFC 9700 §4.4 recommends).
  if (answer.decision === 'deny')
    return { redirectTo: withQuery(pending.redirect_uri, { error: 'access_denied', state, iss: issuer }) };
  if (answer.decision !== 'approve') return { refused: { title: 'No answer', message: 'Choose Approve or Deny.' } };
  const code = await approveApp(
    db,
    {
      appId: app.id,
      organizationId: pending.organization_id,
      userId: user.userId,
      redirectUri: pending.redirect_uri_given ? pending.redirect_uri : null,
      codeChallenge: pending.code_challenge,
      resource: pending.resource,
      scope: pending.scope,
    },
    now,
  );
  return { redirectTo: withQuery(pending.redirect_uri, { code, state, iss: issuer }) };
}
