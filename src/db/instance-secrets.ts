import { randomBytes } from 'node:crypto';
import type { Db } from './database.js';

/**
 * A server-side key (for HMAC-signed URLs, CSRF tokens and the like), created on first use and kept in
 * the database so that every process of one installation signs and verifies with the same key.
 * It is a key of the server, not a credential issued to anybody, so it is stored as is.
 */
export async function instanceSecret(db: Db, name: string): Promise<Buffer> {
  await db
    .insertInto('instance_secrets')
    .values({ name, value: randomBytes(32).toString('base64url') })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('instance_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return Buffer.from(row.value, 'base64url');
}
