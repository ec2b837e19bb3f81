import { randomBytes } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { components } from '../../generated/public-v1.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { Keyring } from '../crypto/keyring.js';
import type { Db } from '../db/database.js';
import { recordAudit, type AuditActor } from '../audit/log.js';
import type { WebhookEndpointTable } from './tables.js';
import { transaction } from '../db/transaction.js';

export type WebhookBody = components['schemas']['Webhook'];
export type WebhookEndpoint = Selectable<WebhookEndpointTable>;

/** An organization keeps at most this many endpoints. */
export const MAX_ENDPOINTS = 20;
/** How long the secret before a rotation still signs deliveries. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;

/**
 * Who manages endpoints: an organization, through an API key (all its endpoints) or an OAuth app's
 * token (that app's).
 */
export interface WebhookOwner {
  organizationId: string;
  appId: string | null;
  /** Who acts through this owner, as the audit log records the changes. */
  actor: AuditActor;
}

/** A new signing secret, as the Standard Webhooks specification shapes them: `whsec_` and base64 of 24 random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** What each secret of an endpoint is encrypted for: the value is bound to its endpoint. */
const secretContext = (endpointId: string) => `webhook-secret:${endpointId}`;

export function toWebhookBody(row: WebhookEndpoint, now: Date): WebhookBody {
  const overlap =
    row.previous_secret_expires_at && row.previous_secret_expires_at > now
      ? row.previous_secret_expires_at.toISOString()
      : null;
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    eventTypes: row.event_types,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    previousSecretExpiresAt: overlap,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The secrets that sign a delivery now: the current one, and the previous one during its overlap. */
export function signingSecrets(keyring: Keyring, row: WebhookEndpoint, now: Date): string[] {
  const secrets = [keyring.decrypt(row.secret, secretContext(row.id))];
  if (row.previous_secret && row.previous_secret_expires_at && row.previous_secret_expires_at > now) {
    secrets.push(keyring.decrypt(row.previous_secret, secretContext(row.id)));
  }
  return secrets;
}

export function listEndpoints(db: Db, owner: WebhookOwner): Promise<WebhookEndpoint[]> {
  let query = db.selectFrom('webhook_endpoints').selectAll().where('organization_id', '=', owner.organizationId);
  if (owner.appId) query = query.where('app_id', '=', owner.appId);
  return query.orderBy('created_at').orderBy('id').execute();
}

/** The owner's endpoint; 404 for an unknown id, another organization's, or (for an app) another app's. */
export async function findEndpoint(db: Db, owner: WebhookOwner, id: string): Promise<WebhookEndpoint> {
  let query = db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', id)
    .where('organization_id', '=', owner.organizationId);
  if (owner.appId) query = query.where('app_id', '=', owner.appId);
  const row = await query.executeTakeFirst();
  if (!row) throw new NotFoundError(`There is no webhook endpoint ${id} in this organization.`);
  return row;
}

export async function createEndpoint(
  db: Db,
  keyring: Keyring,
  owner: WebhookOwner,
  input: { url: string; eventTypes: string[]; description: string | null },
): Promise<{ row: WebhookEndpoint; secret: string }> {
  return transaction(db, async (trx) => {
    // Counted under the organization's row lock, so that concurrent creates cannot pass the limit together.
    await trx.selectFrom('organizations').select('id').where('id', '=', owner.organizationId).forUpdate().execute();
    const { count } = await trx
      .selectFrom('webhook_endpoints')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('organization_id', '=', owner.organizationId)
      .executeTakeFirstOrThrow();
    if (Number(count) >= MAX_ENDPOINTS)
      throw new ConflictError(
        `The organization has ${MAX_ENDPOINTS} webhook endpoints, the most it may have; delete one first.`,
      );
    const id = newId('whk');
    const secret = newSecret();
    const row = await trx
      .insertInto('webhook_endpoints')
      .values({
        id,
        organization_id: owner.organizationId,
        app_id: owner.appId,
        url: input.url,
        description: input.description,
        event_types: JSON.stringify(input.eventTypes),
        secret: keyring.encrypt(secret, secretContext(id)),
        previous_secret: null,
        previous_secret_expires_at: null,
        disabled_reason: null,
        failing_since: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(trx, {
      organizationId: owner.organizationId,
      actor: owner.actor,
      action: 'webhook.created',
      subject: { type: 'webhook', id, label: input.url },
      details: { eventTypes: input.eventTypes },
    });
    return { row, secret };
  });
}

export async function updateEndpoint(
  db: Db,
  row: WebhookEndpoint,
  changes: { url?: string; eventTypes?: string[]; description?: string | null; enabled?: boolean },
  now: Date,
): Promise<WebhookEndpoint> {
  return db
    .updateTable('webhook_endpoints')
    .set({
      ...(changes.url !== undefined ? { url: changes.url } : {}),
      ...(changes.eventTypes !== undefined ? { event_types: JSON.stringify(changes.eventTypes) } : {}),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
      // Turned on again by its owner: whatever turned it off is over, and its failures count afresh.
      ...(changes.enabled !== undefined
        ? { enabled: changes.enabled, disabled_reason: null, failing_since: null }
        : {}),
      updated_at: now,
    })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A new secret for the endpoint; the current one signs too for a day. */
export async function rotateSecret(
  db: Db,
  keyring: Keyring,
  row: WebhookEndpoint,
  now: Date,
): Promise<{ row: WebhookEndpoint; secret: string }> {
  const secret = newSecret();
  const updated = await db
    .updateTable('webhook_endpoints')
    .set({
      secret: keyring.encrypt(secret, secretContext(row.id)),
      previous_secret: row.secret,
      previous_secret_expires_at: new Date(now.getTime() + ROTATION_OVERLAP_MS),
      updated_at: now,
    })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return { row: updated, secret };
}

/** Encrypts every endpoint's secrets with the keyring's current key; how many values were written. */
export async function reencryptWebhookSecrets(db: Db, keyring: Keyring): Promise<number> {
  return transaction(db, async (trx) => {
    let written = 0;
    const rows = await trx
      .selectFrom('webhook_endpoints')
      .select(['id', 'secret', 'previous_secret'])
      .forUpdate()
      .execute();
    for (const row of rows) {
      const stale = [row.secret, row.previous_secret].filter(
        (value): value is string => value !== null && Keyring.keyIdOf(value) !== keyring.currentKeyId,
      );
      if (stale.length === 0) continue;
      const again = (value: string) =>
        keyring.encrypt(keyring.decrypt(value, secretContext(row.id)), secretContext(row.id));
      const previous = row.previous_secret === null ? null : again(row.previous_secret);
      await trx
        .updateTable('webhook_endpoints')
        .set({ secret: again(row.secret), previous_secret: previous })
        .where('id', '=', row.id)
        .execute();
      written += stale.length;
    }
    return written;
  });
}
