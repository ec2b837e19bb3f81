import type { Selectable } from 'kysely';
import type { Clock } from '../core/clock.js';
import type { Config } from '../core/config.js';
import { newId } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import type { Metrics } from '../core/metrics.js';
import type { Keyring } from '../crypto/keyring.js';
import type { Db } from '../db/database.js';
import type { CursorCodec } from '../http/cursors.js';
import type { JobQueue } from '../jobs/queue.js';
import type { WebhookDeliveryTable } from './tables.js';

export type WebhookDelivery = Selectable<WebhookDeliveryTable>;

/** The queue of deliveries' jobs: each sends (or sends again) one delivery; its row says where it stands. */
export const DELIVER = 'deliver-webhook' as const;

/** What the webhooks need of the service. */
export interface WebhookContext {
  config: Config;
  db: Db;
  keyring: Keyring;
  queue: JobQueue;
  logger: Logger;
  clock: Clock;
  cursors: CursorCodec;
  metrics: Metrics;
}

/** One event to deliver: its type, when it happened, what it carries, and what orders it. */
export interface WebhookEvent {
  type: string;
  at: Date;
  data: unknown;
  /** Events with the same key reach an endpoint in the order they were made (a post's id). */
  orderingKey: string | null;
}

/**
 * Makes the deliveries of events to their endpoints, due `now`, and plans sending them, in the caller's
 * transaction: they exist if, and only if, it commits. One statement for the rows and one for the jobs.
 */
export async function createDeliveries(
  trx: Db,
  queue: JobQueue,
  events: { endpointIds: string[]; event: WebhookEvent }[],
  now: Date,
): Promise<WebhookDelivery[]> {
  const values = events.flatMap(({ endpointIds, event }) => {
    const payload = JSON.stringify({ type: event.type, timestamp: event.at.toISOString(), data: event.data });
    return endpointIds.map((endpointId) => ({
      id: newId('msg'),
      endpoint_id: endpointId,
      event_type: event.type,
      ordering_key: event.orderingKey,
      payload,
      created_at: now,
      next_attempt_at: now,
    }));
  });
  if (values.length === 0) return [];
  const rows = await trx.insertInto('webhook_deliveries').values(values).returningAll().execute();
  await queue.planMany(
    trx,
    DELIVER,
    rows.map((row) => ({ data: { deliveryId: row.id } })),
  );
  return rows;
}
