import type { CredentialResolver } from '../accounts/authenticate.js';
import { generateCredential, hashSecret, isWellFormedCredential } from '../accounts/credentials.js';
import type { Db } from '../db/database.js';
import { newId } from '../ids.js';

export const ACCESS_TOKEN_PREFIX = 'pos_';

/** Issues an access token under a grant; the returned token is the only time it exists in clear. */
export async function issueAccessToken(
  db: Db,
  grant: { grantId: string; appId: string; organizationId: string; codeId: string | null },
): Promise<string> {
  const token = generateCredential(ACCESS_TOKEN_PREFIX);
  await db
    .insertInto('oauth_tokens')
    .values({
      id: newId('tok'),
      token_hash: hashSecret(token),
      grant_id: grant.grantId,
      app_id: grant.appId,
      organization_id: grant.organizationId,
      code_id: grant.codeId,
    })
    .execute();
  return token;
}

// Like API keys: minute precision is plenty for people reviewing access, and spares a write per request.
const LAST_USED_PRECISION_MS = 60_000;

/** Lets the Public API accept `pos_` tokens exactly like API keys, acting for the organization that approved. */
export const resolveOAuthToken: CredentialResolver = async (db, secretHash, now) => {
  const token = await db
    .selectFrom('oauth_tokens')
    .select(['id', 'organization_id', 'last_used_at'])
    .where('token_hash', '=', secretHash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!token) return undefined;
  if (!token.last_used_at || now.getTime() - token.last_used_at.getTime() >= LAST_USED_PRECISION_MS) {
    await db.updateTable('oauth_tokens').set({ last_used_at: now }).where('id', '=', token.id).execute();
  }
  return { organizationId: token.organization_id, credential: { type: 'oauth_token', id: token.id } };
};

/** RFC 7009: revokes the token if it is one of this app's; anything else is silently left alone. */
export async function revokeAccessToken(db: Db, appId: string, token: string, now: Date): Promise<void> {
  if (!isWellFormedCredential(token, ACCESS_TOKEN_PREFIX)) return;
  await db
    .updateTable('oauth_tokens')
    .set({ revoked_at: now })
    .where('token_hash', '=', hashSecret(token))
    .where('app_id', '=', appId)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Revokes every token issued for one authorization code (RFC 6749 §4.1.2: the code was used twice). */
export async function revokeTokensOfCode(db: Db, codeId: string, now: Date): Promise<void> {
  await db.updateTable('oauth_tokens').set({ revoked_at: now }).where('code_id', '=', codeId).where('revoked_at', 'is', null).execute();
}
