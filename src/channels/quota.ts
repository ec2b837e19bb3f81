import type { components } from '../../generated/public-v1.js';
import type { Provider } from '../core/contract.js';
import type { Db } from '../db/database.js';
import { channelsOf } from './channels.js';

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

/** The organization's channels, as `listChannels` lists them, each with its daily quota: one statement. */
export async function channelQuotas(
  db: Db,
  organizationId: string,
  limits: DailyPostLimits,
  now: Date,
): Promise<ChannelQuotaBody[]> {
  const { start, end } = utcDay(now);
  const rows = await channelsOf(db, organizationId)
    .select('channels.provider')
    .select('channels.id')
    .select((eb) =>
      eb
        .selectFrom('posts')
        .select(eb.fn.countAll<string>().as('count'))
        .whereRef('posts.channel_id', '=', 'channels.id')
        .where('posts.status', 'in', COUNTED_STATUSES)
        .where('posts.scheduled_at', '>=', start)
        .where('posts.scheduled_at', '<', end)
        .as('used'),
    )
    .execute();
  return rows.map((channel) => {
    const limit = limits[channel.provider];
    const count = Number(channel.used ?? 0);
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
