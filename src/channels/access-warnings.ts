import { sql } from 'kysely';
import type { Db } from '../db/database.js';

/** How long before a channel's access ends its users are warned. */
export const ACCESS_WARNING_MS = 7 * 24 * 60 * 60_000;

/**
 * Warns of the active channels whose access ends within a week (`channel_access_ends`, where the network
 * said when and nothing renews it): an `access_ending` event each, once per connection, which Settings →
 * Channels shows until the channel is connected again. The event is no webhook event of the contract,
 * so it is written as dispatched already.
 */
export async function warnOfEndingAccess(db: Db, now: Date): Promise<void> {
  await sql`
    insert into channel_events (organization_id, channel_id, type, at, webhooks_dispatched_at)
    select c.organization_id, c.id, 'access_ending', ${now}::timestamptz, ${now}::timestamptz
    from channel_access_ends e join channels c on c.id = e.channel_id
    where c.status = 'active' and e.ends_at <= ${new Date(now.getTime() + ACCESS_WARNING_MS)}::timestamptz
      and not exists (
        select 1 from channel_events w
        where w.channel_id = c.id and w.type = 'access_ending' and w.at >= c.connected_at
      )`.execute(db);
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
          .where('w.type', '=', 'access_ending')
          .whereRef('w.at', '>=', 'c.connected_at'),
      ),
    )
    .execute();
  return new Map(rows.map((row) => [row.id, row.ends_at]));
}
