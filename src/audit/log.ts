import { sql } from 'kysely';
import type { CredentialType } from '../core/contract.js';
import { newId } from '../core/ids.js';
import type { Db } from '../db/database.js';
import type { AuditLogRow } from './tables.js';

/**
 * The audit log of an organization: who did what to its members, roles, API keys, OAuth apps, approved
 * apps, webhooks, channels and posts. A change records itself with `recordAudit`, given the transaction
 * of the change, so the entry exists exactly when the change does. Entries are kept for
 * `AUDIT_LOG_RETENTION_DAYS` (see `forgetOldAuditEntries`).
 */

/** What was done: the kinds of entry, `subject.verb` in the past tense. */
export const AUDIT_ACTIONS = {
  'member.invited': 'Invited a member',
  'member.invitation_revoked': 'Revoked an invitation',
  'member.joined': 'Joined',
  'member.role_changed': "Changed a member's role",
  'member.removed': 'Removed a member',
  'member.left': 'Left the organization',
  'organization.ownership_transferred': 'Handed the organization over',
  'api_key.created': 'Created an API key',
  'api_key.revoked': 'Revoked an API key',
  'oauth_app.registered': 'Registered an OAuth app',
  'oauth_app.secret_rotated': "Rotated an OAuth app's secret",
  'oauth_app.deleted': 'Deleted an OAuth app',
  'approved_app.approved': 'Approved an app',
  'approved_app.revoked': "Revoked an app's access",
  'webhook.created': 'Created a webhook',
  'webhook.updated': 'Changed a webhook',
  'webhook.deleted': 'Deleted a webhook',
  'webhook.secret_rotated': "Rotated a webhook's secret",
  'channel.connected': 'Connected a channel',
  'channel.reconnected': 'Reconnected a channel',
  'channel.removed': 'Removed a channel',
  'post.deleted': 'Deleted a post',
  'post.approved': 'Approved a post',
  'post.rejected': 'Rejected a post',
} as const;
export type AuditAction = keyof typeof AUDIT_ACTIONS;

export function isAuditAction(value: unknown): value is AuditAction {
  return typeof value === 'string' && Object.hasOwn(AUDIT_ACTIONS, value);
}

/**
 * Who did it: a signed-in member (`user`: their user id), a credential of the Public API or MCP (an API
 * key, or an OAuth access token, recorded as the grant it belongs to; or the grant itself), or the
 * operator (the admin CLI).
 */
export type AuditActor =
  { user: string } | { credential: { type: CredentialType; id: string } } | { grant: string } | 'operator';

/** What it was done to; `label` is how the entry names it (looked up from `id` when absent). */
export interface AuditSubject {
  type:
    | 'member'
    | 'invitation'
    | 'organization'
    | 'api_key'
    | 'oauth_app'
    | 'approved_app'
    | 'webhook'
    | 'channel'
    | 'post';
  id: string | null;
  label?: string;
}

export interface AuditRecord {
  organizationId: string;
  actor: AuditActor;
  action: AuditAction;
  subject: AuditSubject;
  /** What the change was beyond its kind (e.g. `{ from: 'editor', to: 'admin' }`): never a secret. */
  details?: Record<string, unknown>;
  /** When; the database's clock by default. */
  at?: Date;
}

/** Writes an entry of the audit log; call it with the transaction of the change it records. */
export async function recordAudit(trx: Db, record: AuditRecord): Promise<void> {
  const actor = await resolveActor(trx, record.actor);
  const subjectLabel = record.subject.label ?? (await subjectLabelOf(trx, record.subject));
  await trx
    .insertInto('audit_log')
    .values({
      id: newId('aud'),
      organization_id: record.organizationId,
      ...(record.at ? { created_at: record.at } : {}),
      action: record.action,
      actor_type: actor.type,
      actor_id: actor.id,
      actor_label: actor.label,
      subject_type: record.subject.type,
      subject_id: record.subject.id,
      subject_label: subjectLabel,
      details: JSON.stringify(record.details ?? {}),
    })
    .execute();
}

async function resolveActor(
  trx: Db,
  actor: AuditActor,
): Promise<{ type: AuditLogRow['actor_type']; id: string | null; label: string }> {
  if (actor === 'operator') return { type: 'operator', id: null, label: 'Operator (admin command line)' };
  if ('user' in actor) {
    const user = await trx.selectFrom('users').select('email').where('id', '=', actor.user).executeTakeFirst();
    return { type: 'user', id: actor.user, label: user?.email ?? actor.user };
  }
  if ('grant' in actor) {
    const grant = await trx
      .selectFrom('oauth_grants')
      .innerJoin('oauth_apps', 'oauth_apps.id', 'oauth_grants.app_id')
      .select('oauth_apps.name')
      .where('oauth_grants.id', '=', actor.grant)
      .executeTakeFirst();
    return { type: 'oauth_grant', id: actor.grant, label: grant ? `App "${grant.name}"` : 'An OAuth app' };
  }
  if (actor.credential.type === 'api_key') {
    const key = await trx
      .selectFrom('api_keys')
      .select(['name', 'prefix', 'last_four'])
      .where('id', '=', actor.credential.id)
      .executeTakeFirst();
    const label = key ? `API key "${key.name}" (${key.prefix}…${key.last_four})` : `API key ${actor.credential.id}`;
    return { type: 'api_key', id: actor.credential.id, label };
  }
  const token = await trx
    .selectFrom('oauth_tokens')
    .innerJoin('oauth_apps', 'oauth_apps.id', 'oauth_tokens.app_id')
    .select(['oauth_tokens.grant_id', 'oauth_apps.name'])
    .where('oauth_tokens.id', '=', actor.credential.id)
    .executeTakeFirst();
  return token
    ? { type: 'oauth_grant', id: token.grant_id, label: `App "${token.name}"` }
    : { type: 'oauth_grant', id: null, label: 'An OAuth app' };
}

async function subjectLabelOf(trx: Db, subject: AuditSubject): Promise<string> {
  const id = subject.id;
  if (id === null) return '';
  const found = await (async (): Promise<string | undefined> => {
    switch (subject.type) {
      case 'member':
        return (await trx.selectFrom('users').select('email').where('id', '=', id).executeTakeFirst())?.email;
      case 'api_key':
        return (await trx.selectFrom('api_keys').select('name').where('id', '=', id).executeTakeFirst())?.name;
      case 'oauth_app':
        return (await trx.selectFrom('oauth_apps').select('name').where('id', '=', id).executeTakeFirst())?.name;
      case 'webhook':
        return (await trx.selectFrom('webhook_endpoints').select('url').where('id', '=', id).executeTakeFirst())?.url;
      case 'channel': {
        const channel = await trx
          .selectFrom('channels')
          .select(['name', 'provider'])
          .where('id', '=', id)
          .executeTakeFirst();
        return channel && `${channel.name} (${channel.provider})`;
      }
      default:
        return undefined;
    }
  })();
  return found ?? id;
}

/** An entry as the pages, the exports and the API show it. */
export interface AuditEntry {
  id: string;
  at: Date;
  action: string;
  actor: { type: AuditLogRow['actor_type']; id: string | null; label: string };
  subject: { type: string; id: string | null; label: string };
  details: Record<string, unknown>;
}

function toEntry(row: AuditLogRow): AuditEntry {
  return {
    id: row.id,
    at: row.created_at,
    action: row.action,
    actor: { type: row.actor_type, id: row.actor_id, label: row.actor_label },
    subject: { type: row.subject_type, id: row.subject_id, label: row.subject_label },
    details: row.details,
  };
}

/** Which entries to list: of one kind of action, of one actor (by id). */
export interface AuditFilter {
  action?: AuditAction;
  actorId?: string;
}

/** Where a page ends: the time and id of its last entry; the next page lists the entries before it. */
export interface AuditPosition {
  at: Date;
  id: string;
}

/** A page of the organization's entries, newest first, before `after` when given; `next` when there are more. */
export async function listAuditEntries(
  db: Db,
  organizationId: string,
  { filter = {}, after, limit }: { filter?: AuditFilter; after?: AuditPosition; limit: number },
): Promise<{ entries: AuditEntry[]; next: AuditPosition | null }> {
  let query = db.selectFrom('audit_log').selectAll().where('organization_id', '=', organizationId);
  if (filter.action) query = query.where('action', '=', filter.action);
  if (filter.actorId) query = query.where('actor_id', '=', filter.actorId);
  if (after) query = query.where(sql<boolean>`(created_at, id) < (${after.at}, ${after.id})`);
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const entries = rows.slice(0, limit).map(toEntry);
  const last = entries.at(-1);
  return { entries, next: rows.length > limit && last ? { at: last.at, id: last.id } : null };
}

/** Every entry matching the filter, newest first, read a batch at a time (for the exports). */
export async function* eachAuditEntry(
  db: Db,
  organizationId: string,
  filter: AuditFilter = {},
  batch = 500,
): AsyncGenerator<AuditEntry> {
  let after: AuditPosition | undefined;
  for (;;) {
    const page = await listAuditEntries(db, organizationId, { filter, after, limit: batch });
    yield* page.entries;
    if (!page.next) return;
    after = page.next;
  }
}

/** The members and credentials that appear as actors in the organization's log, for the filter's choice. */
export async function auditActors(db: Db, organizationId: string): Promise<{ id: string; label: string }[]> {
  const rows = await db
    .selectFrom('audit_log')
    .select(['actor_id', sql<string>`max(actor_label)`.as('label')])
    .where('organization_id', '=', organizationId)
    .where('actor_id', 'is not', null)
    .groupBy('actor_id')
    .orderBy('label')
    .limit(200)
    .execute();
  return rows.map((row) => ({ id: row.actor_id!, label: row.label }));
}

/** Deletes the entries older than the retention (the housekeeping's pass). */
export async function forgetOldAuditEntries(db: Db, now: Date, retentionDays: number): Promise<void> {
  const before = new Date(now.getTime() - retentionDays * 86_400_000);
  await db.deleteFrom('audit_log').where('created_at', '<', before).execute();
}
