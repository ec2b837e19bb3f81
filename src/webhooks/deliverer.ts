import { sql } from 'kysely';
import type { OutboundClient } from '../net/outbound-client.js';
import { DELIVER, type WebhookContext, type WebhookDelivery } from './deliveries.js';
import { DeliveryOutcomes, type Outcome } from './delivery-outcomes.js';
import type { WebhookEndpoint } from './endpoints.js';
import { sendSigned, TIMEOUT_SECONDS, type Attempt } from './signed-send.js';
import { transaction } from '../db/transaction.js';

/** How long a worker holds a delivery it sends: longer than an attempt can take. */
const CLAIM_MS = (TIMEOUT_SECONDS + 5) * 1000;
/** An endpoint whose every attempt failed for this long is turned off. */
const DISABLE_AFTER_MS = 3 * 86_400_000;

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
  private readonly outcomes: DeliveryOutcomes;

  constructor(
    private readonly ctx: WebhookContext,
    private readonly outbound: OutboundClient,
  ) {
    this.outcomes = new DeliveryOutcomes(ctx);
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

  /** One job: send the delivery if it is due and free (claimed with its batch, or now). */
  async deliver(deliveryId: string): Promise<void> {
    const now = this.ctx.clock.now();
    let prepared = this.prepared.get(deliveryId);
    this.prepared.delete(deliveryId);
    if (prepared === undefined) {
      const [claimed, endpoints] = await Promise.all([this.claim([deliveryId], now), this.endpointsOf([deliveryId])]);
      prepared = claimed[0] ? { delivery: claimed[0], endpoint: endpoints[0] } : null;
    }
    if (!prepared) return this.comeBackIfHeld(deliveryId, now);
    const { delivery, endpoint } = prepared;
    if (endpoint) await this.send(delivery, endpoint, now);
  }

  /**
   * A delivery that could not be claimed. Another job of it is sending it (a job planned again while
   * the first was queued): come back when that one's hold ends, in case it died. Otherwise it is
   * settled, not due yet (its own job comes then), or waiting for an earlier delivery of its post
   * (which plans it when it settles).
   */
  private async comeBackIfHeld(deliveryId: string, now: Date): Promise<void> {
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
  }

  /** Sends a claimed delivery to its endpoint, signed, and records how it went. */
  private async send(delivery: WebhookDelivery, endpoint: WebhookEndpoint, now: Date): Promise<void> {
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
    const attempt = await sendSigned(this.outbound, this.ctx.keyring, endpoint, delivery, now);
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
      where d.id in ${idsIn(deliveryIds)} and d.status = 'pending'
        and (d.claimed_until is null or d.claimed_until < ${now})
        and (d.next_attempt_at is null or d.next_attempt_at <= ${new Date(now.getTime() + 1000)})
        and not exists (
          select 1 from webhook_deliveries e
          where e.endpoint_id = d.endpoint_id and e.ordering_key = d.ordering_key
            and e.status = 'pending' and e.seq < d.seq
        )
      returning d.*`.execute(this.ctx.db);
    return rows;
  }

  private endpointsOf(deliveryIds: string[]): Promise<WebhookEndpoint[]> {
    return this.ctx.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', 'in', (eb) =>
        eb.selectFrom('webhook_deliveries').select('endpoint_id').where('id', 'in', idsIn(deliveryIds)),
      )
      .execute();
  }
  /**
   * A failed attempt: tried again on the schedule, or failed for good; an endpoint failing for 3 days
   * is turned off.
   */
  private async failed(delivery: WebhookDelivery, endpoint: WebhookEndpoint, attempt: Attempt): Promise<void> {
    const now = this.ctx.clock.now();
    const schedule = this.ctx.config.webhooks.retrySchedule;
    const failingSince = endpoint.failing_since ?? now;
    const disable = now.getTime() - failingSince.getTime() >= DISABLE_AFTER_MS;
    await transaction(this.ctx.db, async (trx) => {
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
        await this.outcomes.write(trx, [{ delivery, outcome: { status: 'failed', ...attempt } }]);
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
      this.ctx.logger.error(
        {
          webhookId: endpoint.id,
          organizationId: endpoint.organization_id,
          deliveryId: delivery.id,
          failingSince: failingSince.toISOString(),
          lastStatusCode: attempt.statusCode,
          lastError: attempt.error,
        },
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

  /** Sends a settled delivery again, now, with the same id and payload. */
  async retry(delivery: WebhookDelivery): Promise<WebhookDelivery> {
    const now = this.ctx.clock.now();
    return transaction(this.ctx.db, async (trx) => {
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
 * The ids as a subquery of one parameter (one statement whatever their number). Its limit is their
 * number: it tells the planner how many to expect (a set-returning function counts as 100), so that it
 * finds each delivery by its key rather than read the table whole.
 */
function idsIn(ids: string[]) {
  return sql<string>`(select jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb) limit ${ids.length})`;
}
