import { newId } from '../core/ids.js';
import { generateCredential, hashSecret, isWellFormedCredential } from '../crypto/issued-secrets.js';
import type { Db } from '../db/database.js';

export const ACCESS_TOKEN_PREFIX = 'pos_';

/** Issues an access token under a grant; the returned token is the only time it exists in clear. */
export async function issueAccessToken(
  db: Db,
  grant: {
    grantId: string;
    appId: string;
    organizationId: string;
    codeId: string | null;
    resource: string | null;
    scope: string | null;
  },
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
      resource: grant.resource,
      scope: grant.scope,
    })
    .execute();
  return token;
}

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
  await db
    .updateTable('oauth_tokens')
    .set({ revoked_at: now })
    .where('code_id', '=', codeId)
    .where('revoked_at', 'is', null)
    .execute();
}
