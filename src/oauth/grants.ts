import { ForbiddenError, NotFoundError } from '../core/errors.js';
import { can, ROLES, type Role } from '../core/roles.js';
import { newId } from '../core/ids.js';
import { generateCredential, hashSecret } from '../crypto/issued-secrets.js';
import type { Db } from '../db/database.js';
import { recordAudit } from '../audit/log.js';
import { appPicturePath } from './app-pictures.js';
import { transaction } from '../db/transaction.js';

export const CODE_PREFIX = 'pac_';
/** The mission's limit: a code expires 10 minutes after it is issued. */
export const CODE_LIFETIME_MS = 10 * 60_000;

export interface Approval {
  appId: string;
  organizationId: string;
  userId: string;
  /** As sent to the authorize endpoint, to be matched again at the token endpoint. */
  redirectUri: string | null;
  codeChallenge: string | null;
  /** RFC 8707: the resource the code's token will be for; `null` for every resource. */
  resource: string | null;
  /** The scopes the user approved, space-separated; `null` for every operation. */
  scope: string | null;
}

/**
 * Records that a user approved an app for an organization and issues the authorization code. The
 * grant is what Settings → Approved apps lists; approving again refreshes it.
 */
export async function approveApp(db: Db, approval: Approval, now: Date): Promise<string> {
  const code = generateCredential(CODE_PREFIX);
  await transaction(db, async (trx) => {
    // The app acts with the role its approver has in the organization, never more; a user who is no
    // longer a member (removed while the consent page was open) approves nothing.
    const membership = await trx
      .selectFrom('memberships')
      .select('role')
      .where('organization_id', '=', approval.organizationId)
      .where('user_id', '=', approval.userId)
      .forShare()
      .executeTakeFirst();
    if (!membership) throw new ForbiddenError('You are no longer a member of this organization.');
    // One grant per app and organization, acting with its approver's role: when another member
    // approves the app, the access the previous approver gave ends (their tokens, refresh tokens and
    // pending codes), so no token ever acts with a role its holder was not given.
    const previous = await trx
      .selectFrom('oauth_grants')
      .select(['id', 'approved_by_user_id'])
      .where('app_id', '=', approval.appId)
      .where('organization_id', '=', approval.organizationId)
      .forUpdate()
      .executeTakeFirst();
    if (previous && previous.approved_by_user_id !== approval.userId) {
      await trx
        .updateTable('oauth_tokens')
        .set({ revoked_at: now })
        .where('grant_id', '=', previous.id)
        .where('revoked_at', 'is', null)
        .execute();
      await trx
        .updateTable('oauth_refresh_tokens')
        .set({ revoked_at: now })
        .where('grant_id', '=', previous.id)
        .where('revoked_at', 'is', null)
        .execute();
      await trx.deleteFrom('oauth_codes').where('grant_id', '=', previous.id).execute();
    }
    const role = membership.role;
    const grant = await trx
      .insertInto('oauth_grants')
      .values({
        id: newId('grant'),
        app_id: approval.appId,
        organization_id: approval.organizationId,
        approved_by_user_id: approval.userId,
        approved_at: now,
        role,
      })
      .onConflict((oc) =>
        oc
          .columns(['app_id', 'organization_id'])
          .doUpdateSet({ approved_by_user_id: approval.userId, approved_at: now, role }),
      )
      .returning('id')
      .executeTakeFirstOrThrow();
    const app = await trx
      .selectFrom('oauth_apps')
      .select('name')
      .where('id', '=', approval.appId)
      .executeTakeFirstOrThrow();
    await recordAudit(trx, {
      organizationId: approval.organizationId,
      actor: { user: approval.userId },
      action: 'approved_app.approved',
      subject: { type: 'approved_app', id: grant.id, label: app.name },
      details: { role, scope: approval.scope ?? 'every operation' },
    });
    await trx
      .insertInto('oauth_codes')
      .values({
        id: newId('code'),
        code_hash: hashSecret(code),
        grant_id: grant.id,
        app_id: approval.appId,
        organization_id: approval.organizationId,
        redirect_uri: approval.redirectUri,
        code_challenge: approval.codeChallenge,
        resource: approval.resource,
        scope: approval.scope,
        expires_at: new Date(now.getTime() + CODE_LIFETIME_MS),
      })
      .execute();
  });
  return code;
}

export interface ApprovedApp {
  grantId: string;
  organizationId: string;
  organizationName: string;
  appName: string;
  appDescription: string;
  /** Where the page shows the app's stored picture from (this site), when it has one. */
  picture: string | undefined;
  /** The app registered itself or is known by its metadata document: nobody vouches for it. */
  unverified: boolean;
  approvedAt: Date;
  approvedBy: string | null;
  activeTokens: number;
  lastUsedAt: Date | null;
}

// The roles that see and revoke the organization's approved apps.
const MANAGING_ROLES = ROLES.filter((role) => can(role, 'developers:manage'));

/**
 * The apps approved for the organizations this user manages the apps of. A Revoke acts for the whole
 * organization, so every such member sees (and may revoke) what any member approved.
 */
export async function listApprovedApps(db: Db, userId: string): Promise<ApprovedApp[]> {
  const rows = await db
    .selectFrom('oauth_grants as g')
    .innerJoin('memberships as m', (join) =>
      join
        .onRef('m.organization_id', '=', 'g.organization_id')
        .on('m.user_id', '=', userId)
        .on('m.role', 'in', MANAGING_ROLES),
    )
    .innerJoin('organizations as o', 'o.id', 'g.organization_id')
    .innerJoin('oauth_apps as a', 'a.id', 'g.app_id')
    .leftJoin('users as u', 'u.id', 'g.approved_by_user_id')
    .leftJoin('oauth_tokens as t', (join) => join.onRef('t.grant_id', '=', 'g.id').on('t.revoked_at', 'is', null))
    .select((eb) => [
      'g.id as grantId',
      'g.organization_id as organizationId',
      'o.name as organizationName',
      'a.name as appName',
      'a.description as appDescription',
      'a.client_id as clientId',
      'a.picture_sha256 as pictureSha256',
      'a.registration as registration',
      'g.approved_at as approvedAt',
      'u.name as approvedBy',
      eb.fn.count<string>('t.id').as('activeTokens'),
      eb.fn.max('t.last_used_at').as('lastUsedAt'),
    ])
    .groupBy([
      'g.id',
      'o.id',
      'o.name',
      'a.id',
      'a.name',
      'a.description',
      'a.client_id',
      'a.picture_sha256',
      'a.registration',
      'u.name',
      'm.created_at',
    ])
    .orderBy('m.created_at')
    .orderBy('o.id')
    .orderBy('g.approved_at', 'desc')
    .execute();
  return rows.map(({ clientId, pictureSha256, registration, ...row }) => ({
    ...row,
    unverified: registration !== 'settings',
    picture: appPicturePath({ client_id: clientId, picture_sha256: pictureSha256 }),
    activeTokens: Number(row.activeTokens),
    lastUsedAt: row.lastUsedAt === null ? null : new Date(row.lastUsedAt),
  }));
}

/**
 * A user's Revoke: removes the app's grant for one organization, and with it (the foreign keys
 * cascade) that organization's tokens and pending codes for the app, and the webhook endpoints the
 * app created for the organization. Other organizations that approved the same app are untouched.
 */
export async function revokeGrant(db: Db, userId: string, grantId: string): Promise<void> {
  await transaction(db, async (trx) => {
    const deleted = await trx
      .deleteFrom('oauth_grants')
      .where('id', '=', grantId)
      .where(
        'organization_id',
        'in',
        trx
          .selectFrom('memberships')
          .select('organization_id')
          .where('user_id', '=', userId)
          .where('role', 'in', MANAGING_ROLES),
      )
      .returning(['organization_id', 'app_id'])
      .executeTakeFirst();
    if (!deleted) throw new NotFoundError('No approved app with this id for your organizations.');
    const app = await trx
      .selectFrom('oauth_apps')
      .select('name')
      .where('id', '=', deleted.app_id)
      .executeTakeFirstOrThrow();
    await recordAudit(trx, {
      organizationId: deleted.organization_id,
      actor: { user: userId },
      action: 'approved_app.revoked',
      subject: { type: 'approved_app', id: grantId, label: app.name },
    });
    await trx
      .deleteFrom('webhook_endpoints')
      .where('organization_id', '=', deleted.organization_id)
      .where('app_id', '=', deleted.app_id)
      .execute();
  });
}

/**
 * A member leaves the organization and the apps they approved for it go with them: the grants (and,
 * by the foreign keys, their tokens and codes) and the webhook endpoints those apps created.
 */
export async function revokeMemberGrants(trx: Db, organizationId: string, userId: string): Promise<void> {
  const deleted = await trx
    .deleteFrom('oauth_grants')
    .where('organization_id', '=', organizationId)
    .where('approved_by_user_id', '=', userId)
    .returning('app_id')
    .execute();
  if (deleted.length === 0) return;
  await trx
    .deleteFrom('webhook_endpoints')
    .where('organization_id', '=', organizationId)
    .where(
      'app_id',
      'in',
      deleted.map((grant) => grant.app_id),
    )
    .execute();
}

/** A member leaves and the apps they approved stay: each acts on with the role the member had. */
export async function keepMemberGrants(trx: Db, organizationId: string, userId: string, role: Role): Promise<void> {
  await trx
    .updateTable('oauth_grants')
    .set({ role })
    .where('organization_id', '=', organizationId)
    .where('approved_by_user_id', '=', userId)
    .execute();
}
