import { newId, randomBase62 } from '../core/ids.js';
import { hashSecret } from '../crypto/issued-secrets.js';
import type { Db } from '../db/database.js';
import type { Session, User } from './tables.js';

/** A browser stays signed in this long after signing in. */
export const SESSION_LIFETIME_MS = 14 * 24 * 60 * 60_000;

/**
 * Starts a session and returns the token for the browser's cookie. Only its hash is stored, so a
 * copy of the database signs nobody in. A new token on every sign-in also defeats session fixation.
 */
export async function createSession(
  db: Db,
  userId: string,
  organizationId: string | null,
  now: Date,
): Promise<{ token: string; session: Session }> {
  const token = randomBase62(43);
  const session = await db
    .insertInto('sessions')
    .values({
      id: newId('ses'),
      token_hash: hashSecret(token),
      user_id: userId,
      organization_id: organizationId,
      expires_at: new Date(now.getTime() + SESSION_LIFETIME_MS),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { token, session };
}

/** Who a signed-in browser is; the password hash stays in the database. */
export type SessionUser = Pick<User, 'id' | 'email' | 'name'> & { emailVerified: boolean };

export async function findSession(
  db: Db,
  token: string,
  now: Date,
): Promise<{ session: Session; user: SessionUser } | undefined> {
  const row = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .selectAll('sessions')
    .select(['users.email', 'users.name', 'users.email_verified_at'])
    .where('sessions.token_hash', '=', hashSecret(token))
    .where('sessions.expires_at', '>', now)
    .executeTakeFirst();
  if (!row) return undefined;
  const { email, name, email_verified_at, ...session } = row;
  return { session, user: { id: session.user_id, email, name, emailVerified: email_verified_at !== null } };
}

export async function deleteSession(db: Db, sessionId: string): Promise<void> {
  await db.deleteFrom('sessions').where('id', '=', sessionId).execute();
}

export async function setSessionOrganization(db: Db, sessionId: string, organizationId: string): Promise<void> {
  await db.updateTable('sessions').set({ organization_id: organizationId }).where('id', '=', sessionId).execute();
}

/** Housekeeping: expired sessions are of no use to anybody. */
export async function forgetExpiredSessions(db: Db, now: Date): Promise<void> {
  await db.deleteFrom('sessions').where('expires_at', '<=', now).execute();
}
