import { addChannel } from '../channels/channels.js';
import { ConflictError, UnprocessableError, ValidationError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { compiledOnce } from '../db/compiled-once.js';
import type { Db } from '../db/database.js';
import { hashPassword, MIN_PASSWORD_LENGTH, verifyPassword } from './passwords.js';
import type { Organization, User } from './tables.js';
import { transaction } from '../db/transaction.js';

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
// RFC 5321 §4.5.3.1: no address that mail can be delivered to is longer.
const MAX_EMAIL_LENGTH = 254;
const MAX_NAME_LENGTH = 100;

/** Whether a normalized address has the shape of one mail can be delivered to. */
export function isEmailAddress(email: string): boolean {
  return EMAIL.test(email) && email.length <= MAX_EMAIL_LENGTH;
}

export interface NewAccount {
  organizationName: string;
  email: string;
  password: string;
  /** Display name of the user; defaults to the part of the email before `@`. */
  userName?: string | undefined;
}

/**
 * Creates an organization owned by the user with this email. A new email creates the user; an
 * existing one must come with that user's password, and the user then belongs to one more
 * organization.
 */
export async function createOrganizationWithOwner(
  db: Db,
  account: NewAccount,
  /** `sandboxChannel`: the organization starts with a sandbox channel, so its user can publish at once. */
  options: { sandboxChannel?: boolean } = {},
): Promise<{ organization: Organization; user: User; createdUser: boolean }> {
  const { email, organizationName, userName } = checkNewAccount(account);
  const existing = await findUserByEmail(db, email);
  if (existing && !(await verifyPassword(account.password, existing.password_hash))) {
    throw new UnprocessableError(`A user with the email ${email} exists and the password does not match.`);
  }
  const passwordHash = existing ? undefined : await hashPassword(account.password);

  return transaction(db, async (trx) => {
    const user = existing ?? (await insertUser(trx, { email, name: userName, passwordHash: passwordHash! }));
    const organization = await trx
      .insertInto('organizations')
      .values({ id: newId('org'), name: organizationName })
      .returningAll()
      .executeTakeFirstOrThrow();
    await trx
      .insertInto('memberships')
      .values({ organization_id: organization.id, user_id: user.id, role: 'owner' })
      .execute();
    if (options.sandboxChannel)
      await addChannel(trx, {
        organization_id: organization.id,
        provider: 'sandbox',
        name: 'Sandbox',
        username: null,
        picture: null,
      });
    return { organization, user, createdUser: !existing };
  });
}

/** The account's details as they are stored; 400 with every field that is not valid. */
function checkNewAccount(account: NewAccount): { email: string; organizationName: string; userName: string } {
  const email = normalizeEmail(account.email);
  const organizationName = account.organizationName.trim();
  const userName = account.userName?.trim() || email.split('@')[0]!.slice(0, MAX_NAME_LENGTH);
  const problems = [];
  if (!organizationName) problems.push({ path: 'organizationName', message: 'must not be empty' });
  if (organizationName.length > MAX_NAME_LENGTH)
    problems.push({ path: 'organizationName', message: `must be at most ${MAX_NAME_LENGTH} characters` });
  if (!isEmailAddress(email)) problems.push({ path: 'email', message: 'must be an email address' });
  if (userName.length > MAX_NAME_LENGTH)
    problems.push({ path: 'name', message: `must be at most ${MAX_NAME_LENGTH} characters` });
  if (account.password.length < MIN_PASSWORD_LENGTH) {
    problems.push({ path: 'password', message: `must be at least ${MIN_PASSWORD_LENGTH} characters` });
  }
  if (problems.length > 0) throw new ValidationError('The account details are not valid.', problems);
  return { email, organizationName, userName };
}

async function insertUser(trx: Db, user: { email: string; name: string; passwordHash: string }): Promise<User> {
  const inserted = await trx
    .insertInto('users')
    .values({ id: newId('usr'), email: user.email, name: user.name, password_hash: user.passwordHash })
    .onConflict((oc) => oc.column('email').doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!inserted)
    throw new ConflictError(`A user with the email ${user.email} was created at the same time; try again.`);
  return inserted;
}

export function findUserByEmail(db: Db, email: string): Promise<User | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', normalizeEmail(email)).executeTakeFirst();
}

const organizationById = compiledOnce(1, (db, id: string) =>
  db.selectFrom('organizations').selectAll().where('id', '=', id),
);

export async function findOrganization(db: Db, id: string): Promise<Organization | undefined> {
  return (await db.executeQuery(organizationById(db, id))).rows[0];
}

/** The organizations a user belongs to, oldest membership first. */
export function listUserOrganizations(db: Db, userId: string) {
  return db
    .selectFrom('memberships')
    .innerJoin('organizations', 'organizations.id', 'memberships.organization_id')
    .select(['organizations.id', 'organizations.name', 'memberships.role'])
    .where('memberships.user_id', '=', userId)
    .orderBy('memberships.created_at')
    .orderBy('organizations.id')
    .execute();
}
