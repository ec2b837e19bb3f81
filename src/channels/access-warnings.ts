import { sql } from 'kysely';
import type { components } from '../../generated/public-v1.js';
import type { Db } from '../db/database.js';
import { toChannelBody } from './channels.js';
import type { Channel } from './tables.js';

/** How long before a channel's access ends its users are warned. */
export const ACCESS_WARNING_MS = 7 * 24 * 60 * 60_000;

export type ExpiringChannelBody = components['schemas']['ExpiringChannel'];

/**
 * Warns of the active channels whose access ends within a week (`channel_access_ends`, where the network
 * said when and nothing renews it): an `expiring` event each, once per connection, which webhooks deliver
 * as `channel.expiring` and Settings → Channels shows until the channel is connected again.
 */
export async function warnOfEndingAccess(db: Db, now: Date): Promise<void> {
  await sql`
    insert into channel_events (organization_id, channel_id, type, at)
    select c.organization_id, c.id, 'expiring', ${now}::timestamptz
    from channel_access_ends e join channels c on c.id = e.channel_id
    where c.status = 'active' and e.ends_at <= ${new Date(now.getTime() + ACCESS_WARNING_MS)}::timestamptz
      and not exists (
        select 1 from channel_events w
        where w.channel_id = c.id and w.type = 'expiring' and w.at >= c.connected_at
      )`.execute(db);
}

/**
 * The channel as a `channel.expiring` event made at `warnedAt` carries it, or `undefined` when the warning
 * no longer holds: the channel was connected again since (its access starts anew), or is no longer active.
 */
export function toExpiringChannelBody(
  channel: Channel,
  accessEndsAt: Date | null,
  warnedAt: Date,
): ExpiringChannelBody | undefined {
  if (channel.status !== 'active' || accessEndsAt === null || (channel.connected_at ?? channel.created_at) > warnedAt)
    return undefined;
  return { ...toChannelBody(channel), accessEndsAt: accessEndsAt.toISOString() };
}

/** When the access of each of the organization's channels that were warned of it ends. */
export async function endingAccessOf(db: Db, organizationId: string): Promise<Map<string, Date>> {
  const rows = await db
    .selectFrom('channel_access_ends as e')
    .innerJoin('channels as c', 'c.id', 'e.channel_id')
    .select(['c.id', 'e.ends_at'])
    .where('c.organization_id', '=', organizationId)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('channel_events as w')
          .select('w.id')
          .whereRef('w.channel_id', '=', 'c.id')
          .where('w.type', '=', 'expiring')
          .whereRef('w.at', '>=', 'c.connected_at'),
      ),
    )
    .execute();
  return new Map(rows.map((row) => [row.id, row.ends_at]));
}
