import type { Actor } from '../core/roles.js';
import type { Db } from '../db/database.js';

/** An actor of the Public API: the credential it acts through (see src/http/principal.ts). */
interface CredentialActor extends Actor {
  credential?: { type: string; id: string };
}

/**
 * The person who asks for a post to be published, told by mail when it is approved or rejected: the
 * signed-in member acting through the pages, or the member who made the API key or approved the OAuth
 * app acting through the Public API; `null` when nobody is known (a key made before keys recorded
 * their maker, or a maker who has left).
 */
export async function submitterOf(db: Db, actor: CredentialActor): Promise<string | null> {
  if (actor.userId) return actor.userId;
  const credential = actor.credential;
  if (credential?.type === 'api_key') {
    const key = await db
      .selectFrom('api_keys')
      .select('created_by_user_id as user_id')
      .where('id', '=', credential.id)
      .executeTakeFirst();
    return key?.user_id ?? null;
  }
  if (credential?.type === 'oauth_token') {
    const grant = await db
      .selectFrom('oauth_tokens')
      .innerJoin('oauth_grants', 'oauth_grants.id', 'oauth_tokens.grant_id')
      .select('oauth_grants.approved_by_user_id as user_id')
      .where('oauth_tokens.id', '=', credential.id)
      .executeTakeFirst();
    return grant?.user_id ?? null;
  }
  return null;
}
