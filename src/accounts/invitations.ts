import { sql } from 'kysely';
import { ForbiddenError, NotFoundError, ValidationError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { assertCan, includesRole, type Role } from '../core/roles.js';
import { generateCredential, hashSecret, isWellFormedCredential } from '../crypto/issued-secrets.js';
import type { Db } from '../db/database.js';
import { inTransaction, transaction } from '../db/transaction.js';
import { recordAudit } from '../audit/log.js';
import { addMember, type MemberActor } from './members.js';
import { normalizeEmail } from './organizations.js';

export const INVITATION_PREFIX = 'inv_';
/** How long an invitation's link can be used. */
export const INVITATION_LIFETIME_MS = 7 * 24 * 60 * 60_000;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export interface PendingInvitation {
  id: string;
  organizationId: string;
  organizationName: string;
  email: string;
  role: Role;
  expiresAt: Date;
}

/** The path of an invitation's link: the token rides in the query, which the logs redact. */
export const invitationPath = (token: string) => `/invitations/accept?token=${encodeURIComponent(token)}`;

/**
 * Invites an email to the organization with a role of at most the inviter's (never owner: owners are
 * made among members). Returns the token of the single-use link, which exists only in this answer.
 */
export async function createInvitation(
  db: Db,
  /** The inviting member; `userId: null` for the operator (the admin CLI), who invites as an owner. */
  actor: Omit<MemberActor, 'userId'> & { userId: string | null },
  invitation: { email: string; role: Exclude<Role, 'owner'> },
  now: Date,
): Promise<{ token: string; id: string }> {
  assertCan(actor, 'members:manage', 'invite members');
  if (!includesRole(actor.role, invitation.role)) {
    throw new ForbiddenError(`The ${actor.role} role may not invite a member as ${invitation.role}.`);
  }
  const email = normalizeEmail(invitation.email);
  if (!EMAIL.test(email) || email.length > 254) {
    throw new ValidationError('The email is not valid.', [{ path: 'email', message: 'must be an email address' }]);
  }
  const token = generateCredential(INVITATION_PREFIX);
  return inTransaction(db, async (trx) => {
    const { id } = await trx
      .insertInto('invitations')
      .values({
        id: newId('invite'),
        organization_id: actor.organizationId,
        email,
        role: invitation.role,
        token_hash: hashSecret(token),
        invited_by_user_id: actor.userId,
        expires_at: new Date(now.getTime() + INVITATION_LIFETIME_MS),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await recordAudit(trx, {
      organizationId: actor.organizationId,
      actor: actor.userId === null ? 'operator' : { user: actor.userId },
      action: 'member.invited',
      subject: { type: 'invitation', id, label: email },
      details: { role: invitation.role },
    });
    return { token, id };
  });
}

/** The organization's invitations that can still be accepted, newest first. */
export async function listPendingInvitations(db: Db, organizationId: string, now: Date): Promise<PendingInvitation[]> {
  return pending(db, now).where('invitations.organization_id', '=', organizationId).execute();
}

/** The invitation a link's token opens, while it can be accepted. */
export async function findInvitation(db: Db, token: string, now: Date): Promise<PendingInvitation | undefined> {
  if (!isWellFormedCredential(token, INVITATION_PREFIX)) return undefined;
  return pending(db, now).where('invitations.token_hash', '=', hashSecret(token)).executeTakeFirst();
}

function pending(db: Db, now: Date) {
  return db
    .selectFrom('invitations')
    .innerJoin('organizations', 'organizations.id', 'invitations.organization_id')
    .select([
      'invitations.id',
      'invitations.organization_id as organizationId',
      'organizations.name as organizationName',
      'invitations.email',
      'invitations.role',
      'invitations.expires_at as expiresAt',
    ])
    .where('invitations.accepted_at', 'is', null)
    .where('invitations.revoked_at', 'is', null)
    .where('invitations.expires_at', '>', now)
    .orderBy('invitations.created_at', 'desc');
}

/**
 * The signed-in user accepts: the link is spent and the user joins with the invitation's role (a
 * member already keeps their role). Returns the organization joined.
 */
export async function acceptInvitation(db: Db, token: string, userId: string, now: Date): Promise<string> {
  const gone = () => new NotFoundError('This invitation has been used, revoked or has expired.');
  if (!isWellFormedCredential(token, INVITATION_PREFIX)) throw gone();
  return transaction(db, async (trx) => {
    // One statement spends the link, so two acceptances at once cannot both use it.
    const spent = await trx
      .updateTable('invitations')
      .set({ accepted_at: now })
      .where('token_hash', '=', hashSecret(token))
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .returning(['organization_id', 'role'])
      .executeTakeFirst();
    if (!spent) throw gone();
    await addMember(trx, spent.organization_id, userId, spent.role);
    await recordAudit(trx, {
      organizationId: spent.organization_id,
      actor: { user: userId },
      action: 'member.joined',
      subject: { type: 'member', id: userId },
      details: { role: spent.role },
    });
    return spent.organization_id;
  });
}

export async function revokeInvitation(db: Db, actor: MemberActor, invitationId: string, now: Date): Promise<void> {
  assertCan(actor, 'members:manage', 'revoke invitations');
  await transaction(db, async (trx) => {
    const revoked = await trx
      .updateTable('invitations')
      .set((eb) => ({ revoked_at: eb.fn.coalesce('revoked_at', eb.val(now)) }))
      .where('organization_id', '=', actor.organizationId)
      .where('id', '=', invitationId)
      .returning(['id', 'email'])
      .executeTakeFirst();
    if (!revoked) throw new NotFoundError('No invitation with this id in the organization.');
    await recordAudit(trx, {
      organizationId: actor.organizationId,
      actor: { user: actor.userId },
      action: 'member.invitation_revoked',
      subject: { type: 'invitation', id: revoked.id, label: revoked.email },
    });
  });
}

/** Housekeeping: invitations accepted, revoked or expired more than `keepMs` ago are forgotten. */
export async function forgetSpentInvitations(db: Db, now: Date, keepMs = INVITATION_LIFETIME_MS): Promise<void> {
  const before = new Date(now.getTime() - keepMs);
  await db
    .deleteFrom('invitations')
    .where(sql<boolean>`coalesce(accepted_at, revoked_at, expires_at) < ${before}`)
    .execute();
}
