import type { MemberActor } from '../accounts/members.js';
import { recordAudit } from '../audit/log.js';
import { verifyPassword } from '../accounts/passwords.js';
import type { Organization } from '../accounts/tables.js';
import { ConflictError, ForbiddenError, NotFoundError, UnprocessableError, ValidationError } from '../core/errors.js';
import { assertCan, type Role } from '../core/roles.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import { planMail } from '../mail/outbox.js';
import type { MailContext } from '../mail/worker.js';
import { planOrganizationFileDeletions } from '../media/file-deletions.js';
import { revokeMemberGrants } from '../oauth/grants.js';
import { queueRevocation } from '../providers/account-revocations.js';

/**
 * Deleting an organization and deleting one's account. An organization goes in one transaction: its
 * channels' tokens move to the revocations the housekeeping asks the networks for (they outlive the
 * organization, still encrypted), its media files are planned for deletion from the storage, its
 * members are told by mail, and its row goes with everything that is its (posts and their history,
 * channels, media, API keys, apps, approved apps, webhooks, invitations) by the database's cascades.
 */

/** Deletes the organization the actor owns; `typedName` must be its name, as a confirmation. */
export async function deleteOrganization(ctx: MailContext, actor: MemberActor, typedName: string): Promise<void> {
  assertCan(actor, 'organization:own', 'delete the organization');
  await transaction(ctx.db, async (trx) => {
    const organization = await trx
      .selectFrom('organizations')
      .selectAll()
      .where('id', '=', actor.organizationId)
      .forUpdate()
      .executeTakeFirst();
    if (!organization) throw new NotFoundError('The organization no longer exists.');
    // The role as it is now, not as the session read it at the start of the request.
    const membership = await trx
      .selectFrom('memberships')
      .innerJoin('users', 'users.id', 'memberships.user_id')
      .select(['memberships.role', 'users.name', 'users.email'])
      .where('organization_id', '=', organization.id)
      .where('user_id', '=', actor.userId)
      .forUpdate()
      .executeTakeFirst();
    if (membership?.role !== 'owner') throw new ForbiddenError('Only an owner deletes the organization.');
    if (typedName.trim() !== organization.name) {
      throw new ValidationError('Type the name of the organization to confirm that it is to be deleted.', [
        { path: 'name', message: 'is not the name of the organization' },
      ]);
    }
    await dismantleOrganization(ctx, trx, organization, `${membership.name} (${membership.email})`);
  });
}

/** Deletes the organization's row and everything that is its; see the module's comment. */
async function dismantleOrganization(
  ctx: MailContext,
  trx: Db,
  organization: Organization,
  deletedBy: string,
): Promise<void> {
  // As when a channel is removed: a publication under way would finish with its record and tokens gone.
  const publishing = await trx
    .selectFrom('posts')
    .select('id')
    .where('organization_id', '=', organization.id)
    .where('status', '=', 'publishing')
    .limit(1)
    .executeTakeFirst();
  if (publishing) {
    throw new ConflictError(
      `A post of ${organization.name} is being published; delete the organization once the post is published ` +
        'or failed (a minute at most).',
    );
  }
  const channels = await trx
    .selectFrom('channels')
    .selectAll()
    .where('organization_id', '=', organization.id)
    .where('credentials', 'is not', null)
    .forUpdate()
    .execute();
  for (const channel of channels) await queueRevocation(trx, channel);
  await planOrganizationFileDeletions(trx, organization.id);
  // What the sandbox network shows publicly of the organization's posts goes with them.
  await trx.deleteFrom('sandbox_releases').where('organization_id', '=', organization.id).execute();
  const told = await trx
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.user_id')
    .select('users.email')
    .where('memberships.organization_id', '=', organization.id)
    .where('users.email_verified_at', 'is not', null)
    .execute();
  for (const member of told) {
    await planMail(ctx, trx, {
      kind: 'organization-deleted',
      to: member.email,
      data: { organizationName: organization.name, deletedBy },
    });
  }
  await trx.deleteFrom('organizations').where('id', '=', organization.id).execute();
}

/** What deleting a user's account does to each organization they belong to. */
export interface AccountDeletionPlan {
  /** Organizations where the user is the only member: deleted with the account. */
  deleted: { id: string; name: string }[];
  /** Organizations the user leaves; the others go on. */
  left: { id: string; name: string; role: Role }[];
  /**
   * Organizations the user is the last owner of, with other members: the account cannot go before they
   * are handed over.
   */
  blocking: { id: string; name: string; members: number }[];
}

export async function accountDeletionPlan(db: Db, userId: string): Promise<AccountDeletionPlan> {
  const rows = await db
    .selectFrom('memberships as mine')
    .innerJoin('organizations', 'organizations.id', 'mine.organization_id')
    .innerJoin('memberships as all', 'all.organization_id', 'mine.organization_id')
    .select((eb) => [
      'organizations.id',
      'organizations.name',
      'mine.role',
      eb.fn.countAll<string>().as('members'),
      eb.fn.count<string>('all.user_id').filterWhere('all.role', '=', 'owner').as('owners'),
    ])
    .where('mine.user_id', '=', userId)
    .groupBy(['organizations.id', 'organizations.name', 'mine.role', 'mine.created_at'])
    .orderBy('mine.created_at')
    .orderBy('organizations.id')
    .execute();
  const plan: AccountDeletionPlan = { deleted: [], left: [], blocking: [] };
  for (const row of rows) {
    const members = Number(row.members);
    if (members === 1) plan.deleted.push({ id: row.id, name: row.name });
    else if (row.role === 'owner' && Number(row.owners) === 1)
      plan.blocking.push({ id: row.id, name: row.name, members: members - 1 });
    else plan.left.push({ id: row.id, name: row.name, role: row.role });
  }
  return plan;
}

/**
 * Deletes a user's account, after their password: refused while they are the last owner of an
 * organization that has other members (they hand it over, or delete it, first). The organizations they
 * are alone in are deleted with it; in the others, the API keys they made and the apps they approved
 * are revoked, as when a member leaves (they hold those secrets).
 */
export async function deleteAccount(ctx: MailContext, userId: string, password: string): Promise<AccountDeletionPlan> {
  const user = await ctx.db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst();
  if (!user) throw new NotFoundError('The account no longer exists.');
  if (!(await verifyPassword(password, user.password_hash)))
    throw new UnprocessableError('The password is not right.', [{ path: 'password', message: 'is not right' }]);
  const now = ctx.clock.now();
  return transaction(ctx.db, async (trx) => {
    // The user first (no key or grant of theirs is made meanwhile), then their organizations in the
    // order deleting an organization locks them (the organization, then its members), so the two never
    // wait on each other; nothing joins an organization that is about to go.
    await trx.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute();
    await trx
      .selectFrom('organizations')
      .select('id')
      .where('id', 'in', (eb) => eb.selectFrom('memberships').select('organization_id').where('user_id', '=', userId))
      .orderBy('id')
      .forUpdate()
      .execute();
    // The memberships of the user's organizations locked, as every change of a member locks them: no one
    // hands one over, joins or leaves meanwhile.
    await trx
      .selectFrom('memberships')
      .select('user_id')
      .where('organization_id', 'in', (eb) =>
        eb.selectFrom('memberships').select('organization_id').where('user_id', '=', userId),
      )
      .forUpdate()
      .execute();
    const plan = await accountDeletionPlan(trx, userId);
    if (plan.blocking.length > 0) {
      const names = plan.blocking.map((organization) => organization.name).join(', ');
      throw new UnprocessableError(
        `You are the last owner of ${names}, which ${plan.blocking.length === 1 ? 'has' : 'have'} other members. ` +
          'Make another member owner first (Settings → Members → Hand over), or delete the organization ' +
          '(Settings → Organization).',
      );
    }
    for (const organization of plan.left) {
      await trx
        .updateTable('api_keys')
        .set({ revoked_at: now })
        .where('organization_id', '=', organization.id)
        .where('created_by_user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .execute();
      await revokeMemberGrants(trx, organization.id, userId);
      await recordAudit(trx, {
        organizationId: organization.id,
        actor: { user: userId },
        action: 'member.left',
        subject: { type: 'member', id: userId },
        details: { role: organization.role, credentials: 'revoked', accountDeleted: true },
      });
    }
    const deletedBy = `${user.name} (${user.email})`;
    for (const { id } of plan.deleted) {
      const organization = await trx
        .selectFrom('organizations')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      await dismantleOrganization(ctx, trx, organization, deletedBy);
    }
    if (user.email_verified_at)
      await planMail(ctx, trx, {
        kind: 'account-deleted',
        to: user.email,
        data: { name: user.name, organizations: plan.deleted.map((organization) => organization.name).join(', ') },
      });
    await trx.deleteFrom('users').where('id', '=', userId).execute();
    return plan;
  });
}
