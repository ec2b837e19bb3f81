import type { components } from '../../generated/public-v1.js';
import type { Provider } from '../core/contract.js';
import type { Db } from '../db/database.js';
import type { Channel } from './tables.js';

export type ChannelQuotaBody = components['schemas']['ChannelQuota'];
export type DailyPostLimits = Record<Provider, number>;

const DAY_MS = 86_400_000;

/** The UTC day that contains `instant`: [start, end). */
export function utcDay(instant: Date): { start: Date; end: Date } {
  const start = Math.floor(instant.getTime() / DAY_MS) * DAY_MS;
  return { start: new Date(start), end: new Date(start + DAY_MS) };
}

/** Posts that count against a channel's daily cap: everything on its way to the network or already there. */
export const COUNTED_STATUSES = ['scheduled', 'publishing', 'published'] as const;

/** How many counted posts each channel has in the UTC day that contains `instant`. */
export async function postsOnDay(db: Db, channelIds: string[], instant: Date): Promise<Map<string, number>> {
  const used = new Map<string, number>();
  if (channelIds.length === 0) return used;
  const { start, end } = utcDay(instant);
  const rows = await db
    .selectFrom('posts')
    .select(['channel_id', (eb) => eb.fn.countAll<string>().as('count')])
    .where('channel_id', 'in', channelIds)
    .where('status', 'in', COUNTED_STATUSES)
    .where('scheduled_at', '>=', start)
    .where('scheduled_at', '<', end)
    .groupBy('channel_id')
    .execute();
  for (const row of rows) used.set(row.channel_id, Number(row.count));
  return used;
}

export async function channelQuotas(
  db: Db,
  channels: Channel[],
  limits: DailyPostLimits,
  now: Date,
): Promise<ChannelQuotaBody[]> {
  const used = await postsOnDay(
    db,
    channels.map((channel) => channel.id),
    now,
  );
  const { end } = utcDay(now);
  return channels.map((channel) => {
    const limit = limits[channel.provider];
    const count = used.get(channel.id) ?? 0;
    return {
      channelId: channel.id,
      provider: channel.provider,
      window: 'day',
      limit,
      used: count,
      remaining: Math.max(0, limit - count),
      resetsAt: end.toISOString(),
    };
  });
}
