import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { MicroBatcher } from '../jobs/batcher.js';
import { DELIVER, type WebhookContext, type WebhookDelivery } from './deliveries.js';

/** How a delivery ended. */
export interface Outcome {
  status: 'succeeded' | 'failed';
  statusCode: number | null;
  durationMs: number | null;
  body: string | null;
  error: string | null;
}

export interface SettledDelivery {
  delivery: WebhookDelivery;
  outcome: Outcome;
}

/** Outcomes written within this long of each other go in one statement, at most this many. */
const OUTCOME_DELAY_MS = 10;
const OUTCOME_BATCH = 100;

/**
 * Records how deliveries ended. The outcomes of deliveries that end at about the same time are
 * written together, one statement per batch, and a delivery's job completes only once its outcome is
 * written.
 */
export class DeliveryOutcomes {
  private readonly batch: MicroBatcher<SettledDelivery>;

  constructor(private readonly ctx: Pick<WebhookContext, 'db' | 'queue' | 'clock' | 'metrics'>) {
    this.batch = new MicroBatcher((items) => this.write(this.ctx.db, items), {
      size: OUTCOME_BATCH,
      delayMs: OUTCOME_DELAY_MS,
    });
  }

  /** Records an outcome with the others of the moment; resolves once it is written. */
  add(settled: SettledDelivery): Promise<void> {
    return this.batch.add(settled);
  }

  /**
   * Records deliveries' outcomes, in one statement that also finds, for each, the next pending
   * delivery of the same post to the endpoint, which was waiting for it; then plans those. Planned
   * after the outcomes are written (in `db`'s transaction, if it is one): were the worker to die in
   * between, housekeeping plans them.
   */
  async write(db: Db, items: SettledDelivery[]): Promise<void> {
    for (const { outcome } of items) this.ctx.metrics.webhookDeliveries.inc({ outcome: outcome.status });
    const now = this.ctx.clock.now();
    const input = JSON.stringify(
      items.map(({ delivery, outcome }) => ({
        id: delivery.id,
        status: outcome.status,
        attempts: delivery.attempts + (outcome.statusCode === null && outcome.durationMs === null ? 0 : 1),
        status_code: outcome.statusCode,
        duration_ms: outcome.durationMs,
        error: outcome.error,
        body: outcome.body,
        delivered_at: outcome.status === 'succeeded' ? now.toISOString() : null,
      })),
    );
    // The input's limit is its length: it tells the planner how many rows to expect (a set-returning
    // function counts as 100), so that it finds each delivery by its key rather than read the table whole.
    const { rows } = await sql<{ next_id: string | null; next_at: Date | null }>`
      with input as (
        select * from jsonb_to_recordset(${input}::jsonb)
          as input(
            id text, status text, attempts integer, status_code integer, duration_ms integer, error text, body text,
            delivered_at timestamptz
          )
        limit ${items.length}
      )
      update webhook_deliveries d set
        status = input.status, attempts = input.attempts, last_status_code = input.status_code,
        last_duration_ms = input.duration_ms, last_error = input.error, last_response_body = input.body,
        next_attempt_at = null, claimed_until = null, delivered_at = input.delivered_at
      from input
      where d.id = input.id
      returning
        (select n.id from webhook_deliveries n
          where n.endpoint_id = d.endpoint_id and n.ordering_key = d.ordering_key
            and n.status = 'pending' and n.seq > d.seq order by n.seq limit 1) as next_id,
        (select n.next_attempt_at from webhook_deliveries n
          where n.endpoint_id = d.endpoint_id and n.ordering_key = d.ordering_key
            and n.status = 'pending' and n.seq > d.seq order by n.seq limit 1) as next_at`.execute(db);
    const next = rows.flatMap((row) =>
      row.next_id
        ? [
            {
              data: { deliveryId: row.next_id },
              ...(row.next_at && row.next_at > now ? { startAfter: row.next_at } : {}),
            },
          ]
        : [],
    );
    await this.ctx.queue.planMany(db, DELIVER, next);
  }
}
