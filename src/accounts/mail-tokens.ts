import { randomBase62 } from '../core/ids.js';
import { hashSecret } from '../crypto/issued-secrets.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import { hashPassword, MIN_PASSWORD_LENGTH } from './passwords.js';
import type { AccountMailTokenTable, User } from './tables.js';

export type MailTokenPurpose = AccountMailTokenTable['purpose'];

/**
 * How long a mailed link works. A password reset is short (OWASP's Forgot Password Cheat Sheet: a
 * token that expires soon limits what a read mailbox gives away); a verification may wait for a person
 * who reads their mail the next day.
 */
export const MAIL_TOKEN_LIFETIME_MS: Record<MailTokenPurpose, number> = {
  password_reset: 30 * 60_000,
  email_verification: 7 * 24 * 60 * 60_000,
};

/** 43 base62 characters: about 256 bits, so the stored SHA-256 needs neither salt nor KDF. */
const TOKEN_LENGTH = 43;
const TOKEN_SHAPE = /^[0-9A-Za-z]{43}$/;

/** Issues a single-use token for a link to `email`; only its hash is stored. */
export async function issueMailToken(
  db: Db,
  token: { userId: string; purpose: MailTokenPurpose; email: string },
  now: Date,
): Promise<string> {
  const value = randomBase62(TOKEN_LENGTH);
  await db
    .insertInto('account_mail_tokens')
    .values({
      token_hash: hashSecret(value),
      user_id: token.userId,
      purpose: token.purpose,
      email: token.email,
      expires_at: new Date(now.getTime() + MAIL_TOKEN_LIFETIME_MS[token.purpose]),
    })
    .execute();
  return value;
}

/** The unused, unexpired token of this purpose, or `undefined` (a malformed value is not looked up). */
export function findMailToken(db: Db, token: string, purpose: MailTokenPurpose, now: Date) {
  if (!TOKEN_SHAPE.test(token)) return Promise.resolve(undefined);
  return db
    .selectFrom('account_mail_tokens')
    .selectAll()
    .where('token_hash', '=', hashSecret(token))
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

/** Spends a token: true if this call spent it (a second use, even a concurrent one, gets false). */
async function spend(trx: Db, token: string, purpose: MailTokenPurpose, now: Date) {
  return trx
    .updateTable('account_mail_tokens')
    .set({ used_at: now })
    .where('token_hash', '=', hashSecret(token))
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returningAll()
    .executeTakeFirst();
}

export class PasswordTooShortError extends Error {}

/**
 * Sets a new password with a reset link: the link is spent, so are the user's other reset links, and
 * every session of the user ends (whoever knew the old password is signed out). `undefined` when the
 * link is unknown, used or expired.
 */
export async function resetPassword(
  db: Db,
  token: string,
  password: string,
  now: Date,
): Promise<Pick<User, 'id' | 'email'> | undefined> {
  if (password.length < MIN_PASSWORD_LENGTH) throw new PasswordTooShortError();
  if (!(await findMailToken(db, token, 'password_reset', now))) return undefined;
  // scrypt takes tens of milliseconds: outside the transaction.
  const passwordHash = await hashPassword(password);
  return transaction(db, async (trx) => {
    const spent = await spend(trx, token, 'password_reset', now);
    if (!spent) return undefined;
    const user = await trx
      .updateTable('users')
      .set({ password_hash: passwordHash })
      .where('id', '=', spent.user_id)
      .returning(['id', 'email'])
      .executeTakeFirstOrThrow();
    await trx
      .updateTable('account_mail_tokens')
      .set({ used_at: now })
      .where('user_id', '=', user.id)
      .where('purpose', '=', 'password_reset')
      .where('used_at', 'is', null)
      .execute();
    await trx.deleteFrom('sessions').where('user_id', '=', user.id).execute();
    return user;
  });
}

export type VerificationOutcome =
  | { verified: true; email: string }
  /** The link is unknown, used or expired, or names an address the user no longer uses or asks for. */
  | { verified: false; reason: 'invalid' }
  /** The new address belongs to another account since the link was sent. */
  | { verified: false; reason: 'taken'; email: string };

/** A step of an account's change of address, run in the change's transaction (e.g. a notice to the old address). */
export type AddressChangeStep = (
  trx: Db,
  change: { userId: string; name: string; previous: string; email: string },
) => Promise<void>;

/**
 * Follows a verification link: the user's address is verified, or the pending new address becomes the
 * user's address, verified (and `onChange` runs with the change).
 */
export async function verifyEmail(
  db: Db,
  token: string,
  now: Date,
  onChange?: AddressChangeStep,
): Promise<VerificationOutcome> {
  return transaction(db, async (trx) => {
    const spent = await spend(trx, token, 'email_verification', now);
    if (!spent) return { verified: false, reason: 'invalid' };
    const user = await trx
      .selectFrom('users')
      .select(['id', 'name', 'email', 'pending_email'])
      .where('id', '=', spent.user_id)
      .forUpdate()
      .executeTakeFirstOrThrow();
    if (spent.email === user.email) {
      await trx.updateTable('users').set({ email_verified_at: now }).where('id', '=', user.id).execute();
      return { verified: true, email: user.email };
    }
    if (spent.email !== user.pending_email) return { verified: false, reason: 'invalid' };
    const taken = await trx.selectFrom('users').select('id').where('email', '=', spent.email).executeTakeFirst();
    if (taken) return { verified: false, reason: 'taken', email: spent.email };
    await trx
      .updateTable('users')
      .set({ email: spent.email, pending_email: null, email_verified_at: now })
      .where('id', '=', user.id)
      .execute();
    await onChange?.(trx, { userId: user.id, name: user.name, previous: user.email, email: spent.email });
    return { verified: true, email: spent.email };
  });
}

/** Housekeeping: used and expired links are of no use to anybody. */
export async function forgetExpiredMailTokens(db: Db, now: Date): Promise<void> {
  await db.deleteFrom('account_mail_tokens').where('expires_at', '<=', now).execute();
}
