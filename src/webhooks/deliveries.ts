import type { Clock } from '../core/clock.js';
import { sql, type Selectable } from 'kysely';
import { Webhook } from 'standardwebhooks';
import type { components } from '../../generated/public-v1.js';
import type { Config } from '../core/config.js';
import { newId } from '../core/ids.js';
import type { Logger } from '../core/logger.js';
import type { Keyring } from '../crypto/keyring.js';
import type { CursorCodec } from '../http/cursors.js';
import type { Db } from '../db/database.js';
import { MicroBatcher } from '../jobs/batcher.js';
import type { JobQueue } from '../jobs/queue.js';
import type { OutboundClient } from '../net/outbound-client.js';
import { signingSecrets, type WebhookEndpoint } from './endpoints.js';
import type { WebhookDeliveryTable } from './tables.js';

export type WebhookDeliveryBody = components['schemas']['WebhookDelivery'];
export type WebhookDelivery = Selectable<WebhookDeliveryTable>;

export const DELIVER = 'deliver-webhook' as const;
/** A receiver has this long to answer. */
const TIMEOUT_SECONDS = 10;
/** What is kept of a receiver's answer, for the deliveries list. */
const RESPONSE_KEPT_BYTES = 1024;
/** How long a worker holds a delivery it sends: longer than an attempt can take. */
const CLAIM_MS = (TIMEOUT_SECONDS + 5) * 1000;
/** An endpoint whose every attempt failed for this long is turned off. */
const DISABLE_AFTER_MS = 3 * 86_400_000;

/** What the webhooks need of the service. */
export interface WebhookContext {
  config: Config;
  db: Db;
  keyring: Keyring;
  queue: JobQueue;
  logger: Logger;
  clock: Clock;
  cursors: CursorCodec;
}

export function toDeliveryBody(row: WebhookDelivery): WebhookDeliveryBody {
  return {
    id: row.id,
    webhookId: row.endpoint_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    lastStatusCode: row.last_status_code,
    lastDurationMs: row.last_duration_ms,
    lastError: row.last_error,
    lastResponseBody: row.last_response_body,
    nextAttemptAt: row.next_attempt_at?.toISOString() ?? null,
    deliveredAt: row.delivered_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
  };
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

/**
 * Sends deliveries, at least once each: signed per the Standard Webhooks specification (with the
 * previous secret too during a rotation's overlap), POSTed through the outbound client that refuses
 * private addresses (unless the operator allowed their ranges), no redirect followed, 10 seconds to
 * answer. A 2xx is a success; anything else is tried again on the configured schedule, then the
 * delivery fails. Deliveries of one post wait for the earlier ones to one endpoint.
 */
export class WebhookDeliverer {
  /**
   * Deliveries of the batch the consumer just fetched, claimed together (see `prepare`): what each
   * job's handler sends, or `null` for one that could not be claimed then.
   */
  private readonly prepared = new Map<
    string,
    { delivery: WebhookDelivery; endpoint: WebhookEndpoint | undefined } | null
  >();
  /**
   * Outcomes written together, in one statement per batch; a delivery's job completes only once its
   * outcome is written.
   */
  private readonly outcomes: MicroBatcher<{ delivery: WebhookDelivery; outcome: Outcome }>;

  constructor(
    private readonly ctx: WebhookContext,
    private readonly outbound: OutboundClient,
  ) {
    this.outcomes = new MicroBatcher((items) => this.settleMany(this.ctx.db, items), {
      size: OUTCOME_BATCH,
      delayMs: OUTCOME_DELAY_MS,
    });
  }

  /**
   * Claims the deliveries of a fetched batch of jobs, and reads their endpoints, in two statements
   * for the whole batch rather than two per delivery; each job's `deliver` then sends its own.
   */
  async prepare(deliveryIds: string[]): Promise<void> {
    const now = this.ctx.clock.now();
    const [claimed, endpoints] = await Promise.all([this.claim(deliveryIds, now), this.endpointsOf(deliveryIds)]);
    for (const id of deliveryIds) this.prepared.set(id, null);
    for (const delivery of claimed)
      this.prepared.set(delivery.id, {
        delivery,
        endpoint: endpoints.find((endpoint) => endpoint.id === delivery.endpoint_id),
      });
  }

  async deliver(deliveryId: string): Promise<void> {
    const now = this.ctx.clock.now();
    let prepared = this.prepared.get(deliveryId);
    this.prepared.delete(deliveryId);
    if (prepared === undefined) {
      const [claimed, endpoints] = await Promise.all([this.claim([deliveryId], now), this.endpointsOf([deliveryId])]);
      prepared = claimed[0] ? { delivery: claimed[0], endpoint: endpoints[0] } : null;
    }
    if (!prepared) {
      // Another job of it is sending it (a job planned again while the first was queued): come back
      // when that one's hold ends, in case it died. Otherwise it is settled, not due yet (its own
      // job comes then), or waiting for an earlier delivery of its post (which plans it when it settles).
      const held = await this.ctx.db
        .selectFrom('webhook_deliveries')
        .select(['status', 'claimed_until'])
        .where('id', '=', deliveryId)
        .executeTakeFirst();
      if (held?.status === 'pending' && held.claimed_until && held.claimed_until > now) {
        await this.ctx.queue.plan(
          this.ctx.db,
          DELIVER,
          { deliveryId },
          { startAfter: new Date(held.claimed_until.getTime() + 1000) },
        );
      }
      return;
    }
    const { delivery, endpoint } = prepared;
    if (!endpoint) return;
    if (!endpoint.enabled) {
      await this.finish(delivery, {
        status: 'failed',
        error: 'the endpoint is turned off',
        statusCode: null,
        durationMs: null,
        body: null,
      });
      return;
    }
    const attempt = await this.send(endpoint, delivery, now);
    if (attempt.ok) {
      await this.finish(
        delivery,
        {
          status: 'succeeded',
          error: null,
          statusCode: attempt.statusCode,
          durationMs: attempt.durationMs,
          body: attempt.body,
        },
        endpoint,
      );
      return;
    }
    await this.failed(delivery, endpoint, attempt);
  }

  /**
   * Takes deliveries to send them now, in one statement: only pending ones, due, held by no other
   * job, and with no earlier delivery of their post to the endpoint still pending.
   */
  private async claim(deliveryIds: string[], now: Date): Promise<WebhookDelivery[]> {
    const { rows } = await sql<WebhookDelivery>`
      update webhook_deliveries d set claimed_until = ${new Date(now.getTime() + CLAIM_MS)}
      where d.id in (select jsonb_array_elements_text(${JSON.stringify(deliveryIds)}::jsonb)) and d.status = 'pending'
        and (d.claimed_until is null or d.claimed_until < ${now})
        and (d.next_attempt_at is null or d.next_attempt_at <= ${new Date(now.getTime() + 1000)})
        and not exists (
          select 1 from webhook_deliveries e
          where e.endpoint_id = d.endpoint_id and e.ordering_key = d.ordering_key and e.status = 'pending' and e.seq < d.seq
        )
      returning d.*`.execute(this.ctx.db);
    return rows;
  }

  private endpointsOf(deliveryIds: string[]): Promise<WebhookEndpoint[]> {
    return this.ctx.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('webhook_deliveries')
          .select('endpoint_id')
          .where('id', 'in', sql<string>`(select jsonb_array_elements_text(${JSON.stringify(deliveryIds)}::jsonb))`),
      )
      .execute();
  }
  private async send(endpoint: WebhookEndpoint, delivery: WebhookDelivery, now: Date): Promise<Attempt> {
    const signatures = signingSecrets(this.ctx.keyring, endpoint, now).map((secret) =>
      new Webhook(secret).sign(delivery.id, now, delivery.payload),
    );
    const started = performance.now();
    try {
      const answer = await this.outbound.call(endpoint.url, {
        method: 'POST',
        trusted: false,
        headers: {
          'Content-Type': 'application/json',
          'User-Agent': 'post-scheduler-webhooks',
          'webhook-id': delivery.id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': signatures.join(' '),
        },
        body: delivery.payload,
        timeoutSeconds: TIMEOUT_SECONDS,
        maxResponseBytes: RESPONSE_KEPT_BYTES,
      });
      const durationMs = Math.round(performance.now() - started);
      const body = answer.body.toString('utf8').replace(/\u0000/g, '');
      const ok = answer.status >= 200 && answer.status <= 299;
      return {
        ok,
        statusCode: answer.status,
        durationMs,
        body,
        error: ok ? null : failureOf(answer.status, answer.headers.location),
      };
    } catch (error) {
      const durationMs = Math.round(performance.now() - started);
      const reason = (error as { details?: { message: string }[] }).details?.[0]?.message;
      const why =
        reason ??
        ((error as Error).name === 'TimeoutError' || (error as Error).name === 'AbortError'
          ? `no answer within ${TIMEOUT_SECONDS} seconds`
          : `no answer (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
      return { ok: false, statusCode: null, durationMs, body: null, error: why };
    }
  }

  /** A failed attempt: tried again on the schedule, or failed for good; an endpoint failing for 3 days is turned off. */
  private async failed(delivery: WebhookDelivery, endpoint: WebhookEndpoint, attempt: Attempt): Promise<void> {
    const now = this.ctx.clock.now();
    const schedule = this.ctx.config.webhooks.retrySchedule;
    const failingSince = endpoint.failing_since ?? now;
    const disable = now.getTime() - failingSince.getTime() >= DISABLE_AFTER_MS;
    await this.ctx.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('webhook_endpoints')
        .set(
          disable
            ? { failing_since: failingSince, enabled: false, disabled_reason: 'failing', updated_at: now }
            : { failing_since: failingSince },
        )
        .where('id', '=', endpoint.id)
        .execute();
      const wait = schedule[delivery.attempts];
      if (wait === undefined || disable) {
        await this.settleMany(trx, [{ delivery, outcome: { status: 'failed', ...attempt } }]);
        return;
      }
      const next = new Date(now.getTime() + wait * 1000);
      await trx
        .updateTable('webhook_deliveries')
        .set({
          attempts: delivery.attempts + 1,
          last_status_code: attempt.statusCode,
          last_duration_ms: attempt.durationMs,
          last_error: attempt.error,
          last_response_body: attempt.body,
          next_attempt_at: next,
          claimed_until: null,
        })
        .where('id', '=', delivery.id)
        .execute();
      await this.ctx.queue.plan(trx, DELIVER, { deliveryId: delivery.id }, { startAfter: next });
    });
    if (disable)
      this.ctx.logger.warn(
        { webhookId: endpoint.id },
        'turned off a webhook endpoint that failed every delivery for 3 days',
      );
  }

  private async finish(delivery: WebhookDelivery, outcome: Outcome, endpoint?: WebhookEndpoint): Promise<void> {
    if (endpoint?.failing_since)
      await this.ctx.db
        .updateTable('webhook_endpoints')
        .set({ failing_since: null })
        .where('id', '=', endpoint.id)
        .execute();
    await this.outcomes.add({ delivery, outcome });
  }

  /**
   * Records deliveries' outcomes, in one statement that also finds, for each, the next pending
   * delivery of the same post to the endpoint, which was waiting for it; then plans those. Planned
   * after the outcomes are written (in `db`'s transaction, if it is one): were the worker to die in
   * between, housekeeping plans them.
   */
  private async settleMany(db: Db, items: { delivery: WebhookDelivery; outcome: Outcome }[]): Promise<void> {
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
    const { rows } = await sql<{ next_id: string | null; next_at: Date | null }>`
      with input as (
        select * from jsonb_to_recordset(${input}::jsonb)
          as input(id text, status text, attempts integer, status_code integer, duration_ms integer, error text, body text, delivered_at timestamptz)
      )
      update webhook_deliveries d set
        status = input.status, attempts = input.attempts, last_status_code = input.status_code,
        last_duration_ms = input.duration_ms, last_error = input.error, last_response_body = input.body,
        next_attempt_at = null, claimed_until = null, delivered_at = input.delivered_at
      from input
      where d.id = input.id
      returning
        (select n.id from webhook_deliveries n where n.endpoint_id = d.endpoint_id and n.ordering_key = d.ordering_key
          and n.status = 'pending' and n.seq > d.seq order by n.seq limit 1) as next_id,
        (select n.next_attempt_at from webhook_deliveries n where n.endpoint_id = d.endpoint_id and n.ordering_key = d.ordering_key
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

  /** Sends a settled delivery again, now, with the same id and payload. */
  async retry(delivery: WebhookDelivery): Promise<WebhookDelivery> {
    const now = this.ctx.clock.now();
    return this.ctx.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('webhook_deliveries')
        // Attempts keep counting: a delivery tried again by hand gets one more attempt.
        .set({ status: 'pending', next_attempt_at: now, delivered_at: null })
        .where('id', '=', delivery.id)
        .where('status', '!=', 'pending')
        .returningAll()
        .executeTakeFirst();
      if (!row) return delivery;
      await this.ctx.queue.plan(trx, DELIVER, { deliveryId: row.id });
      return row;
    });
  }
}

/**
 * Why an answer other than 2xx failed the attempt. A redirect is never followed (it could lead to an
 * address the endpoint's checks would refuse, and a signed event belongs to the URL registered for
 * it), so the answer says where it pointed, for the receiver's owner to register that URL instead.
 */
function failureOf(status: number, location: string | undefined): string {
  if (status < 300 || status > 399 || !location) return `the receiver answered ${status}`;
  const target = location.length > 200 ? `${location.slice(0, 200)}…` : location;
  return `the receiver answered ${status}, a redirect to ${target}, which is not followed: register the URL that answers`;
}

interface Attempt {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  body: string | null;
  error: string | null;
}

interface Outcome {
  status: 'succeeded' | 'failed';
  statusCode: number | null;
  durationMs: number | null;
  body: string | null;
  error: string | null;
}

/** Outcomes written within this long of each other go in one statement, at most this many. */
const OUTCOME_DELAY_MS = 10;
const OUTCOME_BATCH = 100;

/** Settled deliveries are listed for this long, then forgotten. */
const KEEP_SETTLED_MS = 30 * 86_400_000;
/** A pending delivery whose time passed this long ago without a job has lost it (see sweepDeliveries). */
const LOST_AFTER_SECONDS = 600;

/**
 * Housekeeping of deliveries: forgets settled ones after 30 days, and plans a job again for any
 * pending delivery that is overdue and has none (a job pg-boss gave up on), so none is left behind.
 */
export async function sweepDeliveries(ctx: Pick<WebhookContext, 'db' | 'queue' | 'clock'>): Promise<void> {
  const now = ctx.clock.now();
  await ctx.db
    .deleteFrom('webhook_deliveries')
    .where('status', '!=', 'pending')
    .where('created_at', '<', new Date(now.getTime() - KEEP_SETTLED_MS))
    .execute();
  const { rows } = await sql<{ id: string }>`
    select d.id from webhook_deliveries d
    where d.status = 'pending' and d.next_attempt_at < ${new Date(now.getTime() - LOST_AFTER_SECONDS * 1000)}
    and ${ctx.queue.noLiveJob(DELIVER, 'deliveryId', sql.ref('d.id'))}
    order by d.seq limit 1000`.execute(ctx.db);
  await ctx.queue.planMany(
    ctx.db,
    DELIVER,
    rows.map((row) => ({ data: { deliveryId: row.id } })),
  );
}
