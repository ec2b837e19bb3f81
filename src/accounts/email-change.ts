import { ConflictError, UnprocessableError, ValidationError } from '../core/errors.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import type { AddressChangeStep } from './mail-tokens.js';
import { findUserByEmail, isEmailAddress, normalizeEmail } from './organizations.js';
import { verifyPassword } from './passwords.js';

/**
 * A user asks to use another address. With `verifyFirst` (mail is sent) the address waits in
 * `pending_email` until its verification link is followed, and the user keeps signing in with the old
 * one; without it (an installation that sends no mail cannot verify) it is the user's address at once,
 * unverified. The current password is asked for either way: a session left open is not enough to take
 * over the account's password resets.
 */
export async function changeEmail(
  db: Db,
  userId: string,
  change: { email: string; password: string; verifyFirst: boolean },
  /** Runs when the address changes at once (without `verifyFirst`), in the change's transaction. */
  onChange?: AddressChangeStep,
): Promise<{ email: string; pending: boolean }> {
  const email = normalizeEmail(change.email);
  if (!isEmailAddress(email))
    throw new ValidationError('The address is not valid.', [{ path: 'email', message: 'must be an email address' }]);
  const user = await db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirstOrThrow();
  if (!(await verifyPassword(change.password, user.password_hash)))
    throw new UnprocessableError('The password is not right.', [{ path: 'password', message: 'is not right' }]);
  if (email === user.email)
    throw new UnprocessableError('This is your address already.', [{ path: 'email', message: 'is yours already' }]);
  const other = await findUserByEmail(db, email);
  if (other)
    throw new ConflictError('Another account uses this address.', [
      { path: 'email', message: 'is used by another account' },
    ]);
  if (change.verifyFirst) {
    await db.updateTable('users').set({ pending_email: email }).where('id', '=', userId).execute();
    return { email, pending: true };
  }
  await transaction(db, async (trx) => {
    await trx
      .updateTable('users')
      .set({ email, pending_email: null, email_verified_at: null })
      .where('id', '=', userId)
      .execute();
    await onChange?.(trx, { userId, name: user.name, previous: user.email, email });
  });
  return { email, pending: false };
}
