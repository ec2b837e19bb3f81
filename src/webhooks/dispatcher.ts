import { sql, type RawBuilder } from 'kysely';
import { toExpiringChannelBody } from '../channels/access-warnings.js';
import { toChannelBody } from '../channels/channels.js';
import type { Db } from '../db/database.js';
import type { components } from '../../generated/public-v1.js';
import { planNotifications, type Notification } from '../mail/notifications.js';
import { APPROVAL_EVENTS, approvalNotification } from './approval-notifications.js';
import { createDeliveries, type WebhookContext } from './deliveries.js';
import { transaction } from '../db/transaction.js';

/** Post events that webhooks deliver, by the event type their endpoints subscribe to. */
const POST_EVENTS: Record<string, string> = {
  scheduled: 'post.scheduled',
  publishing: 'post.publishing',
  published: 'post.published',
  failed: 'post.failed',
  deleted: 'post.deleted',
  pending_approval: 'post.pending_approval',
  approved: 'post.approved',
  rejected: 'post.rejected',
};
/** Channel events, likewise. */
const CHANNEL_EVENTS: Record<string, string> = {
  connected: 'channel.connected',
  needs_reconnect: 'channel.needs_reconnect',
  expiring: 'channel.expiring',
};
type PostBody = components['schemas']['Post'];
const BATCH = 500;
const IDLE_MS = 250;

/** An event of the outbox as the dispatcher reads it; `subject` is the post's or the channel's id. */
interface OutboxEvent {
  id: string;
  organization_id: string;
  subject: string;
  type: string;
  at: Date;
  post: unknown;
  /** What a post event says beyond its type (`null` for channel events). */
  details: unknown;
}

/** A table of events that webhooks deliver from, and what each event's deliveries carry. */
interface EventSource {
  table: 'post_events' | 'channel_events';
  /** The columns of the table that are the event's subject (and, for posts, the post). */
  columns: RawBuilder<unknown>;
  /** Webhook event types, by the table's event types; an event of another type is not delivered. */
  types: Record<string, string>;
  /** Reads what the batch's events carry, at once; `undefined` for an event with nothing left to say. */
  dataOf(trx: Db, events: OutboxEvent[]): Promise<(event: OutboxEvent) => unknown>;
  /** The mail the organization's members get of an event (with what it carries), if any. */
  notification(event: OutboxEvent, data: unknown): Notification | undefined;
}

const POSTS: EventSource = {
  table: 'post_events',
  columns: sql`post_id as subject, post, details`,
  types: POST_EVENTS,
  // The post as the API showed it right after the event.
  dataOf: () => Promise.resolve((event: OutboxEvent) => event.post),
  notification: (event, data) => {
    if (APPROVAL_EVENTS.includes(event.type)) return approvalNotification(event, data as PostBody);
    if (event.type !== 'failed') return undefined;
    const post = data as { id: string; error?: { code?: string; message?: string } | null };
    const unknown = post.error?.code === 'outcome_unknown';
    return {
      organizationId: event.organization_id,
      kind: 'post-failed',
      data: {
        headline: unknown ? 'Whether a post was published is unknown' : 'A post failed',
        details: post.error?.message ?? '',
        path: `/posts/${post.id}`,
      },
    };
  },
};

const CHANNELS: EventSource = {
  table: 'channel_events',
  columns: sql`channel_id as subject, null as post, null as details`,
  types: CHANNEL_EVENTS,
  // Each channel as the API shows it now (with when its access ends, for a warning that still holds): a
  // channel removed since has nothing left to report.
  dataOf: async (trx, events) => {
    const channels = await trx
      .selectFrom('channels')
      .leftJoin('channel_access_ends as ends', 'ends.channel_id', 'channels.id')
      .selectAll('channels')
      .select('ends.ends_at as access_ends_at')
      .where('channels.id', 'in', [...new Set(events.map((event) => event.subject))])
      .execute();
    return (event) => {
      const channel = channels.find((c) => c.id === event.subject);
      if (!channel || channel.status === 'removed') return undefined;
      return event.type === 'expiring'
        ? toExpiringChannelBody(channel, channel.access_ends_at, event.at)
        : toChannelBody(channel);
    };
  },
  notification: (event, data) => {
    const channel = data as { name: string; accessEndsAt?: string };
    if (event.type === 'needs_reconnect')
      return {
        organizationId: event.organization_id,
        kind: 'channel-needs-reconnect',
        data: {
          headline: `${channel.name} needs to be connected again`,
          details: 'Its network no longer accepts this server’s access: connect it again in Settings → Channels.',
          path: '/settings/channels',
        },
      };
    if (event.type === 'expiring')
      return {
        organizationId: event.organization_id,
        kind: 'channel-expiring',
        data: {
          headline: `${channel.name}’s access ends soon`,
          details:
            `Its access ends at ${channel.accessEndsAt ?? 'a date soon'} (UTC): ` +
            'connect it again in Settings → Channels.',
          path: '/settings/channels',
        },
      };
    return undefined;
  },
};

/**
 * Turns post and channel events into webhook deliveries, and into mail to the organization's members.
 * The events are the outbox, written in the transactions that change the posts and channels: the
 * dispatcher takes the ones not yet dispatched, oldest first (several workers take disjoint batches),
 * makes a delivery for every enabled endpoint of the organization subscribed to the event's type, plans
 * the members' mail, and stamps the events, all in one transaction. A worker that dies midway leaves its
 * batch for the next.
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
        const [posts, channels] = [await this.dispatchBatch(POSTS), await this.dispatchBatch(CHANNELS)];
        full = posts === BATCH || channels === BATCH;
      } catch (error) {
        this.ctx.logger.error({ err: error }, 'dispatching webhook events failed');
      }
      if (!this.stopping)
        this.timer = setTimeout(
          () => {
            this.running = loop();
          },
          full ? 0 : IDLE_MS,
        );
    };
    this.running = loop();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /**
   * Dispatches one batch of a table's events: a delivery of each to every enabled endpoint of its
   * organization subscribed to its type, ordered by its subject; how many events there were.
   */
  private async dispatchBatch(source: EventSource): Promise<number> {
    const now = this.ctx.clock.now();
    return transaction(this.ctx.db, async (trx) => {
      const { rows: events } = await sql<OutboxEvent>`
        select id, organization_id, type, at, ${source.columns} from ${sql.table(source.table)}
        where webhooks_dispatched_at is null order by id limit ${BATCH} for update skip locked`.execute(trx);
      if (events.length === 0) return 0;
      const organizations = [...new Set(events.map((event) => event.organization_id))];
      const endpoints = await trx
        .selectFrom('webhook_endpoints')
        .select(['id', 'organization_id', 'event_types'])
        .where('organization_id', 'in', organizations)
        .where('enabled', '=', true)
        .execute();
      const dataOf = await source.dataOf(trx, events);
      const deliveries = events.flatMap((event) => {
        const type = source.types[event.type];
        const data = type && dataOf(event);
        if (!type || data === undefined) return [];
        const subscribed = endpoints
          .filter(
            (endpoint) => endpoint.organization_id === event.organization_id && endpoint.event_types.includes(type),
          )
          .map((endpoint) => endpoint.id);
        return subscribed.length === 0
          ? []
          : [{ endpointIds: subscribed, event: { type, at: event.at, data, orderingKey: event.subject } }];
      });
      await createDeliveries(trx, this.ctx.queue, deliveries, now);
      // The members' mail of the same events, planned with the deliveries (see src/mail/notifications.ts).
      const notifications = events.flatMap((event) => {
        const data = dataOf(event);
        const notification = data === undefined ? undefined : source.notification(event, data);
        return notification ? [notification] : [];
      });
      await planNotifications(this.ctx, trx, notifications);
      await sql`update ${sql.table(source.table)} set webhooks_dispatched_at = ${now}
        where id in (${sql.join(events.map((event) => event.id))})`.execute(trx);
      return events.length;
    });
  }
}
