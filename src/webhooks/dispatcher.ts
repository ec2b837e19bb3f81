import { sql } from 'kysely';
import { toChannelBody } from '../channels/channels.js';
import { createDeliveries, type WebhookContext } from './deliveries.js';

/** Post events that webhooks deliver, by the event type their endpoints subscribe to. */
const POST_EVENTS: Record<string, string> = {
  scheduled: 'post.scheduled',
  publishing: 'post.publishing',
  published: 'post.published',
  failed: 'post.failed',
  deleted: 'post.deleted',
};
/** Channel events, likewise. */
const CHANNEL_EVENTS: Record<string, string> = {
  connected: 'channel.connected',
  needs_reconnect: 'channel.needs_reconnect',
};
const BATCH = 500;
const IDLE_MS = 250;

/**
 * Turns post and channel events into webhook deliveries. The events are the outbox, written in the
 * transactions that change the posts and channels: the dispatcher takes the ones not yet dispatched, oldest first (several
 * workers take disjoint batches), makes a delivery for every enabled endpoint of the organization
 * subscribed to the event's type, and stamps the events, all in one transaction. A worker that dies
 * midway leaves its batch for the next.
 */
export class WebhookDispatcher {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopping = false;

  constructor(private readonly ctx: WebhookContext) {}

  start(): void {
    const loop = async () => {
      let full = false;
      try {
        const [posts, channels] = [await this.dispatchBatch(), await this.dispatchChannelBatch()];
        full = posts === BATCH || channels === BATCH;
      } catch (error) {
        this.ctx.logger.error({ err: error }, 'dispatching webhook events failed');
      }
      if (!this.stopping) this.timer = setTimeout(() => (this.running = loop()), full ? 0 : IDLE_MS);
    };
    this.running = loop();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** Dispatches one batch of events; how many there were. */
  async dispatchBatch(): Promise<number> {
    const now = this.ctx.clock.now();
    return this.ctx.db.transaction().execute(async (trx) => {
      const { rows: events } = await sql<{
        id: string;
        organization_id: string;
        post_id: string;
        type: string;
        at: Date;
        post: unknown;
      }>`
        select id, organization_id, post_id, type, at, post from post_events
        where webhooks_dispatched_at is null order by id limit ${BATCH} for update skip locked`.execute(trx);
      if (events.length === 0) return 0;
      const organizations = [...new Set(events.map((event) => event.organization_id))];
      const endpoints = await trx
        .selectFrom('webhook_endpoints')
        .select(['id', 'organization_id', 'event_types'])
        .where('organization_id', 'in', organizations)
        .where('enabled', '=', true)
        .execute();
      const deliveries = events.flatMap((event) => {
        const type = POST_EVENTS[event.type];
        if (!type) return [];
        const subscribed = endpoints
          .filter(
            (endpoint) => endpoint.organization_id === event.organization_id && endpoint.event_types.includes(type),
          )
          .map((endpoint) => endpoint.id);
        return subscribed.length === 0
          ? []
          : [{ endpointIds: subscribed, event: { type, at: event.at, data: event.post, orderingKey: event.post_id } }];
      });
      await createDeliveries(trx, this.ctx.queue, deliveries, now);
      await trx
        .updateTable('post_events')
        .set({ webhooks_dispatched_at: now })
        .where(
          'id',
          'in',
          events.map((event) => event.id),
        )
        .execute();
      return events.length;
    });
  }

  /** Dispatches one batch of channel events, with each channel as the API shows it now; how many there were. */
  async dispatchChannelBatch(): Promise<number> {
    const now = this.ctx.clock.now();
    return this.ctx.db.transaction().execute(async (trx) => {
      const { rows: events } = await sql<{
        id: string;
        organization_id: string;
        channel_id: string;
        type: string;
        at: Date;
      }>`
        select id, organization_id, channel_id, type, at from channel_events
        where webhooks_dispatched_at is null order by id limit ${BATCH} for update skip locked`.execute(trx);
      if (events.length === 0) return 0;
      const organizations = [...new Set(events.map((event) => event.organization_id))];
      const endpoints = await trx
        .selectFrom('webhook_endpoints')
        .select(['id', 'organization_id', 'event_types'])
        .where('organization_id', 'in', organizations)
        .where('enabled', '=', true)
        .execute();
      const channels = await trx
        .selectFrom('channels')
        .selectAll()
        .where('id', 'in', [...new Set(events.map((event) => event.channel_id))])
        .execute();
      const deliveries = events.flatMap((event) => {
        const type = CHANNEL_EVENTS[event.type];
        const channel = channels.find((c) => c.id === event.channel_id);
        // A channel removed since has nothing left to report.
        if (!type || !channel || channel.status === 'removed') return [];
        const subscribed = endpoints
          .filter(
            (endpoint) => endpoint.organization_id === event.organization_id && endpoint.event_types.includes(type),
          )
          .map((endpoint) => endpoint.id);
        return subscribed.length === 0
          ? []
          : [
              {
                endpointIds: subscribed,
                event: { type, at: event.at, data: toChannelBody(channel), orderingKey: event.channel_id },
              },
            ];
      });
      await createDeliveries(trx, this.ctx.queue, deliveries, now);
      await trx
        .updateTable('channel_events')
        .set({ webhooks_dispatched_at: now })
        .where(
          'id',
          'in',
          events.map((event) => event.id),
        )
        .execute();
      return events.length;
    });
  }
}
