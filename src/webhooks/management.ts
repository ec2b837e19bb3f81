import { ConflictError, NotFoundError, UnprocessableError } from '../core/errors.js';
import { paginateRows } from '../http/pagination.js';
import type { OutboundClient } from '../net/outbound-client.js';
import { createDeliveries, type WebhookContext, type WebhookDelivery } from './deliveries.js';
import type { WebhookDeliverer } from './deliverer.js';
import { DELIVERIES_LIST, listDeliveries } from './delivery-list.js';
import {
  createEndpoint,
  findEndpoint,
  rotateSecret,
  updateEndpoint,
  type WebhookEndpoint,
  type WebhookOwner,
} from './endpoints.js';
import { transaction } from '../db/transaction.js';
import { recordAudit } from '../audit/log.js';

/**
 * What a user or an integrator does with webhook endpoints, for the Public API and the web app
 * alike: the same checks and the same errors wherever it is done.
 */
export class WebhookManagement {
  constructor(
    private readonly ctx: WebhookContext,
    private readonly deliverer: WebhookDeliverer,
    /** The client deliveries go out through: a URL is checked with its address policy and resolver. */
    private readonly outbound: OutboundClient,
  ) {}

  /** A receiver's URL must be one this server may send to: refused now rather than failing at every delivery. */
  async checkUrl(url: string): Promise<void> {
    const problem = await this.outbound.destinationProblem(url);
    if (!problem) return;
    // A receiver on the operator's own network is allowed by the operator: say how, where it may be.
    const allowable = / is an? (loopback|private|shared \(carrier-grade NAT\)|link-local|unique-local) address$/.test(
      problem,
    );
    throw new UnprocessableError(
      `The webhook URL cannot be used: ${problem}.` +
        (allowable
          ? ' The operator of this server can allow receivers on their own network with WEBHOOK_ALLOW_RANGES.'
          : ''),
      [{ path: 'url', message: problem }],
    );
  }

  async create(
    owner: WebhookOwner,
    input: { url: string; eventTypes: string[]; description: string | null },
  ): Promise<{ row: WebhookEndpoint; secret: string }> {
    await this.checkUrl(input.url);
    return createEndpoint(this.ctx.db, this.ctx.keyring, owner, input);
  }

  async update(
    owner: WebhookOwner,
    id: string,
    changes: { url?: string; eventTypes?: string[]; description?: string | null; enabled?: boolean },
  ): Promise<WebhookEndpoint> {
    const row = await findEndpoint(this.ctx.db, owner, id);
    if (changes.url !== undefined) await this.checkUrl(changes.url);
    return transaction(this.ctx.db, async (trx) => {
      const updated = await updateEndpoint(trx, row, changes, this.ctx.clock.now());
      await recordAudit(trx, {
        organizationId: owner.organizationId,
        actor: owner.actor,
        action: 'webhook.updated',
        subject: { type: 'webhook', id: row.id, label: updated.url },
        details: Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined)),
      });
      return updated;
    });
  }

  async remove(owner: WebhookOwner, id: string): Promise<void> {
    const row = await findEndpoint(this.ctx.db, owner, id);
    await transaction(this.ctx.db, async (trx) => {
      const deleted = await trx.deleteFrom('webhook_endpoints').where('id', '=', row.id).executeTakeFirst();
      if (deleted.numDeletedRows === 0n) return;
      await recordAudit(trx, {
        organizationId: owner.organizationId,
        actor: owner.actor,
        action: 'webhook.deleted',
        subject: { type: 'webhook', id: row.id, label: row.url },
      });
    });
  }

  /** Sends a `webhook.test` event to the endpoint, whatever it subscribed to. */
  async test(owner: WebhookOwner, id: string): Promise<WebhookDelivery> {
    const row = await findEndpoint(this.ctx.db, owner, id);
    const now = this.ctx.clock.now();
    const [delivery] = await transaction(this.ctx.db, (trx) =>
      createDeliveries(
        trx,
        this.ctx.queue,
        [
          {
            endpointIds: [row.id],
            event: { type: 'webhook.test', at: now, data: { webhookId: row.id }, orderingKey: null },
          },
        ],
        now,
      ),
    );
    return delivery!;
  }

  async rotate(owner: WebhookOwner, id: string): Promise<{ row: WebhookEndpoint; secret: string }> {
    const row = await findEndpoint(this.ctx.db, owner, id);
    return transaction(this.ctx.db, async (trx) => {
      const rotated = await rotateSecret(trx, this.ctx.keyring, row, this.ctx.clock.now());
      await recordAudit(trx, {
        organizationId: owner.organizationId,
        actor: owner.actor,
        action: 'webhook.secret_rotated',
        subject: { type: 'webhook', id: row.id, label: row.url },
      });
      return rotated;
    });
  }

  /** A page of the endpoint's deliveries, newest first; the cursor is checked before the endpoint is found. */
  deliveries(
    owner: WebhookOwner,
    id: string,
    { limit, cursor }: { limit: number; cursor: string | undefined },
  ): Promise<{ items: WebhookDelivery[]; nextCursor: string | null }> {
    const request = { binding: { organizationId: owner.organizationId, webhookId: id }, cursor, limit };
    return paginateRows(this.ctx.cursors, DELIVERIES_LIST, request, async (before, count) => {
      const endpoint = await findEndpoint(this.ctx.db, owner, id);
      return listDeliveries(this.ctx.db, endpoint.id, before, count);
    });
  }

  /** Sends a delivery that succeeded or failed again; `409` while it is still being tried. */
  async retry(owner: WebhookOwner, id: string, deliveryId: string): Promise<WebhookDelivery> {
    const endpoint = await findEndpoint(this.ctx.db, owner, id);
    const delivery = await this.ctx.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('id', '=', deliveryId)
      .where('endpoint_id', '=', endpoint.id)
      .executeTakeFirst();
    if (!delivery) throw new NotFoundError(`There is no delivery ${deliveryId} of webhook endpoint ${endpoint.id}.`);
    if (delivery.status === 'pending')
      throw new ConflictError(
        `Delivery ${delivery.id} is still being tried; it can be sent again once it succeeded or failed.`,
      );
    return this.deliverer.retry(delivery);
  }
}
