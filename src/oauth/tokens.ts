import { newId } from '../core/ids.js';
import { generateCredential, hashSecret, isWellFormedCredential } from '../crypto/issued-secrets.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import { accessTokenLifetime } from './apps.js';
import type { OAuthApp } from './tables.js';

export const ACCESS_TOKEN_PREFIX = 'pos_';
export const REFRESH_TOKEN_PREFIX = 'por_';

/** What the token endpoint answers with: `expiresIn` and `refreshToken` only for an app whose tokens expire. */
export interface IssuedTokens {
  accessToken: string;
  /** Seconds until the access token stops working (RFC 6749 §5.1 `expires_in`). */
  expiresIn?: number;
  refreshToken?: string;
}

/** The authorization tokens are issued under, and what this access token is for. */
export interface TokenIssue {
  grantId: string;
  organizationId: string;
  /** The code the tokens are issued for; `null` for a refresh. */
  codeId: string | null;
  /** The authorization the tokens descend from: its code's id. */
  chainId: string;
  /** RFC 8707: the access token's resource, which may be narrower than the authorized one. */
  resource: string | null;
  /** The access token's scopes, which may be narrower than the authorized ones. */
  scope: string | null;
  /** What the user authorized, kept by the refresh token for its successors. */
  authorized: { resource: string | null; scope: string | null };
}

/**
 * Issues an access token under a grant, in the caller's transaction, and beside it a refresh token
 * when the app's access tokens expire (`refreshIdleMs`: how long that one lives unused). The returned
 * tokens are the only time they exist in clear.
 */
export async function issueTokens(
  db: Db,
  app: OAuthApp,
  issue: TokenIssue,
  now: Date,
  refreshIdleMs: number,
): Promise<IssuedTokens> {
  const lifetime = accessTokenLifetime(app);
  const accessToken = generateCredential(ACCESS_TOKEN_PREFIX);
  await db
    .insertInto('oauth_tokens')
    .values({
      id: newId('tok'),
      token_hash: hashSecret(accessToken),
      grant_id: issue.grantId,
      app_id: app.id,
      organization_id: issue.organizationId,
      code_id: issue.codeId,
      // Always in its chain: a refresh token's reuse or revocation ends it, even one issued without expiry.
      chain_id: issue.chainId,
      resource: issue.resource,
      scope: issue.scope,
      expires_at: lifetime === null ? null : new Date(now.getTime() + lifetime * 1000),
    })
    .execute();
  if (lifetime === null) return { accessToken };
  const refreshToken = generateCredential(REFRESH_TOKEN_PREFIX);
  await db
    .insertInto('oauth_refresh_tokens')
    .values({
      id: newId('rtok'),
      token_hash: hashSecret(refreshToken),
      grant_id: issue.grantId,
      app_id: app.id,
      organization_id: issue.organizationId,
      chain_id: issue.chainId,
      resource: issue.authorized.resource,
      scope: issue.authorized.scope,
      expires_at: new Date(now.getTime() + refreshIdleMs),
    })
    .execute();
  return { accessToken, expiresIn: lifetime, refreshToken };
}

/**
 * RFC 7009: revokes the token if it is one of this app's; anything else is silently left alone. A
 * refresh token takes its whole chain with it (RFC 7009 §2.1): the access tokens issued under the same
 * authorization stop working too. The prefix tells the kind, so `token_type_hint` is not needed.
 */
export async function revokeToken(db: Db, appId: string, token: string, now: Date): Promise<void> {
  if (isWellFormedCredential(token, REFRESH_TOKEN_PREFIX)) {
    const refresh = await db
      .selectFrom('oauth_refresh_tokens')
      .select('chain_id')
      .where('token_hash', '=', hashSecret(token))
      .where('app_id', '=', appId)
      .executeTakeFirst();
    if (refresh) await revokeChain(db, refresh.chain_id, now);
    return;
  }
  if (!isWellFormedCredential(token, ACCESS_TOKEN_PREFIX)) return;
  await db
    .updateTable('oauth_tokens')
    .set({ revoked_at: now })
    .where('token_hash', '=', hashSecret(token))
    .where('app_id', '=', appId)
    .where('revoked_at', 'is', null)
    .execute();
}

/**
 * Revokes every access and refresh token descended from one authorization (its code's id): the code
 * was used twice (RFC 6749 §4.1.2), a spent refresh token came back (RFC 9700 §4.14.2), or the app
 * revoked a refresh token.
 */
export async function revokeChain(db: Db, chainId: string, now: Date): Promise<void> {
  await transaction(db, async (trx) => {
    await trx
      .updateTable('oauth_tokens')
      .set({ revoked_at: now })
      .where((eb) => eb.or([eb('code_id', '=', chainId), eb('chain_id', '=', chainId)]))
      .where('revoked_at', 'is', null)
      .execute();
    await trx
      .updateTable('oauth_refresh_tokens')
      .set({ revoked_at: now })
      .where('chain_id', '=', chainId)
      .where('revoked_at', 'is', null)
      .execute();
  });
}

// A token past its expiry is refused whatever it says; a day later it is not even worth telling apart.
const KEPT_AFTER_EXPIRY_MS = 86_400_000;

/**
 * Housekeeping: deletes access tokens and refresh tokens a day past their expiry. A spent refresh
 * token is kept until then, so that its reuse is still recognised (and revokes its chain) while it
 * could otherwise have been used; tokens that never expire are kept, as they always were.
 */
export async function forgetExpiredTokens(db: Db, now: Date): Promise<void> {
  const before = new Date(now.getTime() - KEPT_AFTER_EXPIRY_MS);
  await db.deleteFrom('oauth_refresh_tokens').where('expires_at', '<', before).execute();
  await db.deleteFrom('oauth_tokens').where('expires_at', '<', before).execute();
}
