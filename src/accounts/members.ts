import { sql } from 'kysely';
import { ForbiddenError, NotFoundError, UnprocessableError } from '../core/errors.js';
import { assertCan, can, includesRole, ROLES, type Actor, type Role } from '../core/roles.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import { recordAudit } from '../audit/log.js';

/** A member acting in the organization: who they are and their role there. */
export type MemberActor = Actor & { userId: string };

export interface Member {
  userId: string;
  email: string;
  name: string;
  role: Role;
  joinedAt: Date;
}

/** What a member made that acts for the organization: their API keys and the apps they approved. */
export interface MemberCredentials {
  apiKeys: { id: string; name: string; role: Role }[];
  grants: { id: string; appName: string }[];
}

/**
 * The parts of other features that a member's removal changes, given by the composition: the OAuth
 * grants the member approved are revoked, or kept with the role the member had.
 */
export interface MemberGrantSteps {
  revoke(trx: Db, organizationId: string, userId: string): Promise<void>;
  keep(trx: Db, organizationId: string, userId: string, role: Role): Promise<void>;
}

// Roles from the most trusted: `order by` this to list owners first.
const ROLE_RANK = sql<number>`array_position(array[${sql.join(ROLES.map((role) => sql.lit(role)))}]::text[], role)`;

export async function listMembers(db: Db, organizationId: string): Promise<Member[]> {
  const rows = await db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.user_id')
    .select(['users.id as userId', 'users.email', 'users.name', 'memberships.role', 'memberships.created_at'])
    .where('memberships.organization_id', '=', organizationId)
    .orderBy(ROLE_RANK)
    .orderBy('users.email')
    .execute();
  return rows.map(({ created_at, ...row }) => ({ ...row, joinedAt: created_at }));
}

/** Adds a user to the organization with `role`; a user who is a member already keeps the role they have. */
export async function addMember(trx: Db, organizationId: string, userId: string, role: Role): Promise<void> {
  await trx
    .insertInto('memberships')
    .values({ organization_id: organizationId, user_id: userId, role })
    .onConflict((oc) => oc.columns(['organization_id', 'user_id']).doNothing())
    .execute();
}

/** The member's active API keys and approved apps in the organization, for the choice to revoke or keep them. */
export async function memberCredentials(db: Db, organizationId: string, userId: string): Promise<MemberCredentials> {
  const apiKeys = await db
    .selectFrom('api_keys')
    .select(['id', 'name', 'role'])
    .where('organization_id', '=', organizationId)
    .where('created_by_user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at')
    .execute();
  const grants = await db
    .selectFrom('oauth_grants')
    .innerJoin('oauth_apps', 'oauth_apps.id', 'oauth_grants.app_id')
    .select(['oauth_grants.id', 'oauth_apps.name as appName'])
    .where('oauth_grants.organization_id', '=', organizationId)
    .where('oauth_grants.approved_by_user_id', '=', userId)
    .orderBy('oauth_grants.approved_at')
    .execute();
  return { apiKeys: apiKeys.map((key) => ({ ...key, role: key.role ?? 'owner' })), grants };
}

/**
 * The memberships of the organization, locked for the rest of the transaction: every change of a role
 * or a member reads them this way, so two changes at once cannot both take away the last owner.
 */
async function lockedMembers(trx: Db, organizationId: string): Promise<Map<string, Role>> {
  const rows = await trx
    .selectFrom('memberships')
    .select(['user_id', 'role'])
    .where('organization_id', '=', organizationId)
    .forUpdate()
    .execute();
  return new Map(rows.map((row) => [row.user_id, row.role]));
}

function memberRole(members: Map<string, Role>, userId: string): Role {
  const role = members.get(userId);
  if (!role) throw new NotFoundError('No member with this id in the organization.');
  return role;
}

function assertAnotherOwner(members: Map<string, Role>, userId: string, what: string): void {
  const owners = [...members].filter(([id, role]) => role === 'owner' && id !== userId);
  if (owners.length === 0) {
    throw new UnprocessableError(
      `The organization needs an owner: ${what} the last one is not possible. Make another member owner first.`,
    );
  }
}

/** An admin may manage editors, contributors, viewers and other admins; only an owner touches an owner. */
function assertMayManage(actor: MemberActor, role: Role, what: string): void {
  assertCan(actor, 'members:manage', what);
  if (role === 'owner') assertCan(actor, 'organization:own', `${what} an owner`);
}

/**
 * Changes a member's role. Making an owner, or changing an owner's role, is for owners; the last owner
 * keeps their role. The member's API keys are lowered with them: a key never acts above its maker
 * (the apps they approved follow their role as it is).
 */
export async function changeMemberRole(db: Db, actor: MemberActor, userId: string, role: Role): Promise<void> {
  assertMayManage(actor, role, 'make');
  await transaction(db, async (trx) => {
    const members = await lockedMembers(trx, actor.organizationId);
    const current = memberRole(members, userId);
    assertMayManage(actor, current, 'change the role of');
    if (current === 'owner' && role !== 'owner') assertAnotherOwner(members, userId, 'changing the role of');
    await trx
      .updateTable('memberships')
      .set({ role })
      .where('organization_id', '=', actor.organizationId)
      .where('user_id', '=', userId)
      .execute();
    if (current !== role) {
      await recordAudit(trx, {
        organizationId: actor.organizationId,
        actor: { user: actor.userId },
        action: 'member.role_changed',
        subject: { type: 'member', id: userId },
        details: { from: current, to: role },
      });
    }
    const above = ROLES.filter((other) => !includesRole(role, other));
    if (above.length === 0) return;
    await trx
      .updateTable('api_keys')
      .set({ role })
      .where('organization_id', '=', actor.organizationId)
      .where('created_by_user_id', '=', userId)
      .where('role', 'in', above)
      .execute();
  });
}

/**
 * Removes a member (or, with their own id, the actor leaves). Their API keys and the apps they
 * approved are revoked or kept, as the manager removing them asks; kept ones keep acting with the role
 * they had. A member who leaves keeps nothing: they hold the keys' secrets, so only someone who stays
 * may decide that an integration of theirs goes on. Their
 * sessions acting for the organization go on acting for another of theirs, or none.
 */
export async function removeMember(
  db: Db,
  actor: MemberActor,
  userId: string,
  options: { revokeCredentials: boolean; grants: MemberGrantSteps; now: Date },
): Promise<void> {
  const leaving = userId === actor.userId;
  await transaction(db, async (trx) => {
    const members = await lockedMembers(trx, actor.organizationId);
    const role = memberRole(members, userId);
    if (!leaving) assertMayManage(actor, role, 'remove');
    if (role === 'owner') assertAnotherOwner(members, userId, leaving ? 'leaving as' : 'removing');
    if (options.revokeCredentials || leaving) {
      await trx
        .updateTable('api_keys')
        .set({ revoked_at: options.now })
        .where('organization_id', '=', actor.organizationId)
        .where('created_by_user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .execute();
      await options.grants.revoke(trx, actor.organizationId, userId);
    } else {
      await options.grants.keep(trx, actor.organizationId, userId, role);
    }
    await recordAudit(trx, {
      organizationId: actor.organizationId,
      actor: { user: actor.userId },
      action: leaving ? 'member.left' : 'member.removed',
      subject: { type: 'member', id: userId },
      details: { role, credentials: options.revokeCredentials || leaving ? 'revoked' : 'kept' },
    });
    await trx
      .deleteFrom('memberships')
      .where('organization_id', '=', actor.organizationId)
      .where('user_id', '=', userId)
      .execute();
    await trx
      .updateTable('sessions')
      .set({ organization_id: null })
      .where('user_id', '=', userId)
      .where('organization_id', '=', actor.organizationId)
      .execute();
  });
}

/** Hands the organization over: the member becomes an owner and the owner who hands it over an admin. */
export async function transferOwnership(db: Db, actor: MemberActor, userId: string): Promise<void> {
  assertCan(actor, 'organization:own', 'hand the organization over');
  if (userId === actor.userId) throw new UnprocessableError('You own the organization already.');
  await transaction(db, async (trx) => {
    const members = await lockedMembers(trx, actor.organizationId);
    memberRole(members, userId);
    if (memberRole(members, actor.userId) !== 'owner') throw new ForbiddenError('Only an owner hands it over.');
    await trx
      .updateTable('memberships')
      .set({ role: 'owner' })
      .where('organization_id', '=', actor.organizationId)
      .where('user_id', '=', userId)
      .execute();
    await trx
      .updateTable('memberships')
      .set({ role: 'admin' })
      .where('organization_id', '=', actor.organizationId)
      .where('user_id', '=', actor.userId)
      .execute();
    await recordAudit(trx, {
      organizationId: actor.organizationId,
      actor: { user: actor.userId },
      action: 'organization.ownership_transferred',
      subject: { type: 'member', id: userId },
    });
  });
}

/** Whether the role may see the members' page's forms (the list is for every member). */
export const managesMembers = (role: Role) => can(role, 'members:manage');
