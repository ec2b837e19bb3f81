import { hashSecret, isWellFormedCredential } from '../crypto/issued-secrets.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import { contractScopes, scopesInclude } from '../http/scopes.js';
import { covers } from './codes.js';
import { OAuthError } from './errors.js';
import type { OAuthApp, OAuthRefreshToken } from './tables.js';
import { issueTokens, REFRESH_TOKEN_PREFIX, revokeChain, type IssuedTokens } from './tokens.js';

export interface RefreshRequest {
  refreshToken: string;
  /** RFC 6749 §6 `scope`, as sent; `undefined`: the scopes of the refresh token. */
  scope: string | undefined;
  /** RFC 8707 `resource`, in its canonical form; `undefined`: the resource of the refresh token. */
  resource: string | undefined;
  /** How long the successor refresh token lives unused. */
  refreshIdleMs: number;
}

const invalidGrant = (description: string) => new OAuthError('invalid_grant', description);
const REUSED =
  'The refresh token has already been used; every token of this authorization has been revoked. ' +
  'Send the user through the authorization again.';

/**
 * RFC 6749 §6 with rotation (RFC 9700 §4.14.2): exchanges an authenticated app's refresh token for a
 * new access token and a new refresh token, and spends the one presented. A spent token presented
 * again means two parties hold it, so the whole chain (every access and refresh token descended from
 * the same authorization) is revoked; only the client that owns the token gets that far.
 */
export async function refreshTokens(db: Db, app: OAuthApp, request: RefreshRequest, now: Date) {
  if (!isWellFormedCredential(request.refreshToken, REFRESH_TOKEN_PREFIX)) {
    throw invalidGrant('The refresh token is not valid.');
  }
  const refresh = await db
    .selectFrom('oauth_refresh_tokens')
    .selectAll()
    .where('token_hash', '=', hashSecret(request.refreshToken))
    .where('app_id', '=', app.id)
    .executeTakeFirst();
  if (!refresh) throw invalidGrant('The refresh token is not valid.');
  if (refresh.revoked_at) throw invalidGrant('The refresh token has been revoked.');
  if (refresh.spent_at) {
    await revokeChain(db, refresh.chain_id, now);
    throw invalidGrant(REUSED);
  }
  if (refresh.expires_at.getTime() <= now.getTime()) throw invalidGrant('The refresh token has expired.');

  const scope = narrowedScope(refresh, request.scope);
  const resource = narrowedResource(refresh, request.resource);
  const tokens = await spendAndIssue(db, app, refresh, { scope, resource }, now, request.refreshIdleMs);
  if (!tokens) {
    // Another request spent it first: that is a second use.
    await revokeChain(db, refresh.chain_id, now);
    throw invalidGrant(REUSED);
  }
  return { organizationId: refresh.organization_id, scope, ...tokens };
}

/**
 * RFC 6749 §6: the scopes asked for must all be among those the user authorized (a `write` scope
 * covers its `read` one); the access token then has only those, the next refresh token all of them.
 */
function narrowedScope(refresh: OAuthRefreshToken, given: string | undefined): string | null {
  if (given === undefined) return refresh.scope;
  const known = [...contractScopes().keys()];
  const asked = new Set(given.split(' ').filter(Boolean));
  if (asked.size === 0 || [...asked].some((name) => !known.includes(name))) {
    throw new OAuthError(
      'invalid_scope',
      `The scope parameter must be space-separated scopes among: ${known.join(' ')}.`,
    );
  }
  if (refresh.scope !== null) {
    const granted = refresh.scope.split(' ');
    const beyond = [...asked].filter((name) => !scopesInclude(granted, name));
    if (beyond.length > 0) {
      throw new OAuthError(
        'invalid_scope',
        `The scope may only narrow what the user authorized (${refresh.scope}); not authorized: ${beyond.join(' ')}.`,
      );
    }
  }
  return known.filter((name) => asked.has(name)).join(' ');
}

/** RFC 8707 §2.2: the resource must be the authorized one, or one of the two the origin covers. */
function narrowedResource(refresh: OAuthRefreshToken, given: string | undefined): string | null {
  if (given === undefined) return refresh.resource;
  if (refresh.resource !== null && given !== refresh.resource && !covers(refresh.resource, given)) {
    throw new OAuthError('invalid_target', `This refresh token was authorized for ${refresh.resource} only.`);
  }
  return given;
}

/** Spends the refresh token and issues its successors in one transaction; `undefined` when it was already spent. */
function spendAndIssue(
  db: Db,
  app: OAuthApp,
  refresh: OAuthRefreshToken,
  access: { scope: string | null; resource: string | null },
  now: Date,
  refreshIdleMs: number,
): Promise<IssuedTokens | undefined> {
  return transaction(db, async (trx) => {
    // One atomic claim: of any number of concurrent refreshes exactly one sees the row unspent.
    const spent = await trx
      .updateTable('oauth_refresh_tokens')
      .set({ spent_at: now })
      .where('id', '=', refresh.id)
      .where('spent_at', 'is', null)
      .where('revoked_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    if (!spent) return undefined;
    return issueTokens(
      trx,
      app,
      {
        grantId: refresh.grant_id,
        organizationId: refresh.organization_id,
        codeId: null,
        chainId: refresh.chain_id,
        ...access,
        authorized: { resource: refresh.resource, scope: refresh.scope },
      },
      now,
      refreshIdleMs,
    );
  });
}
