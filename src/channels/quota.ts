import type { components } from '../../generated/public-v1.js';
import { sql, type Insertable, type Selectable } from 'kysely';
import type { PostStatus, Provider } from '../core/contract.js';
import { UnprocessableError, type ErrorDetail } from '../core/errors.js';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { channelsOf } from './channels.js';
import type { Channel } from './tables.js';

export type ChannelQuotaBody = components['schemas']['ChannelQuota'];
export type DailyPostLimits = Record<Provider, number>;

// The posts as the database holds them (the posts feature declares the table, see src/db/schema.ts).
type NewPost = Insertable<Database['posts']>;
type Post = Selectable<Database['posts']>;

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

/** A post about to count against its channel's daily cap, and where the request names its channel. */
export interface QuotaClaim {
  channel: Pick<Channel, 'id' | 'provider'>;
  path: string;
  /** The post counts on that day already (a scheduled post getting a new time within its day). */
  countedAlready?: boolean;
}

/**
 * Inserts the posts, all or none: none when the claims would take a channel past its cap on the UTC day
 * of `instant` (then `undefined`). The count is part of the insert, so it costs no statement of its own;
 * call it with the channels locked (`lockChannels`), so the count cannot change before the insert ends.
 */
export async function insertPostsWithinQuota(
  trx: Db,
  posts: NewPost[],
  quota: { limits: DailyPostLimits; claims: QuotaClaim[]; instant: Date },
): Promise<Post[] | undefined> {
  const adding = new Map<string, { channel_id: string; adding: number; daily_limit: number }>();
  for (const { channel } of quota.claims) {
    const entry = adding.get(channel.id) ?? {
      channel_id: channel.id,
      adding: 0,
      daily_limit: quota.limits[channel.provider],
    };
    entry.adding += 1;
    adding.set(channel.id, entry);
  }
  const { start, end } = utcDay(quota.instant);
  // jsonb columns as JSON values, so the record type of `posts` reads every column as the table has it.
  const rows = posts.map((post) => ({
    ...post,
    media_ids: JSON.parse(post.media_ids) as unknown,
    thread: JSON.parse(post.thread ?? '[]') as unknown,
    alt_texts: JSON.parse(post.alt_texts ?? '{}') as unknown,
    first_comment: post.first_comment ? (JSON.parse(post.first_comment) as unknown) : null,
    settings: post.settings === null || post.settings === undefined ? null : (JSON.parse(post.settings) as unknown),
  }));
  const { rows: inserted } = await sql<Post>`
    insert into posts (
      id, organization_id, group_id, channel_id, content, media_ids, alt_texts, thread, first_comment, settings,
      status, queued, scheduled_at, series_id, occurrence_at, submitted_by_user_id, created_at, updated_at
    )
    select
      id, organization_id, group_id, channel_id, content, media_ids, alt_texts, thread, first_comment, settings,
      status, coalesce(queued, false), scheduled_at, series_id, occurrence_at, submitted_by_user_id, created_at,
      updated_at
    from jsonb_populate_recordset(null::posts, ${JSON.stringify(rows)}::jsonb)
    where not exists (
      select from jsonb_to_recordset(${JSON.stringify([...adding.values()])}::jsonb)
        as claim(channel_id text, adding int, daily_limit int)
      where claim.adding + (
        select count(*) from posts
        where posts.channel_id = claim.channel_id and posts.status in (${sql.join(COUNTED_STATUSES)})
          and posts.scheduled_at >= ${start} and posts.scheduled_at < ${end}
      ) > claim.daily_limit
    )
    returning *`.execute(trx);
  return inserted.length === posts.length ? inserted : undefined;
}

/** Whether a post in this state already counts against its channel on the UTC day of `instant`. */
export function countsOnDay(post: { status: PostStatus; scheduled_at: Date | null }, instant: Date): boolean {
  return (
    (COUNTED_STATUSES as readonly PostStatus[]).includes(post.status) &&
    post.scheduled_at !== null &&
    utcDay(post.scheduled_at).start.getTime() === utcDay(instant).start.getTime()
  );
}

/**
 * Refuses (422) posts that would take a channel past its cap on the UTC day of `instant`, counting the
 * posts already there and every claim of the same request. Call it with the channels locked
 * (`lockChannels`).
 */
export async function assertWithinDailyQuota(
  trx: Db,
  limits: DailyPostLimits,
  claims: QuotaClaim[],
  instant: Date,
): Promise<void> {
  if (claims.length === 0) return;
  const used = await postsOnDay(trx, [...new Set(claims.map((c) => c.channel.id))], instant);
  const day = utcDay(instant).start.toISOString().slice(0, 10);
  const planned = new Map(used);
  for (const claim of claims) {
    if (claim.countedAlready) planned.set(claim.channel.id, (planned.get(claim.channel.id) ?? 1) - 1);
  }
  const taken = new Map(planned);
  const problems: ErrorDetail[] = [];
  const full = new Set<string>();
  for (const claim of claims) {
    const { id, provider } = claim.channel;
    const limit = limits[provider];
    const before = taken.get(id) ?? 0;
    taken.set(id, before + 1);
    if (before >= limit) {
      problems.push({ path: claim.path, message: `daily quota of ${postCount(limit)} used up for ${day}` });
      full.add(id);
    }
  }
  if (problems.length === 0) return;
  const describe = (id: string) => {
    const claim = claims.find((c) => c.channel.id === id)!;
    const stored = planned.get(id) ?? 0;
    const added = (taken.get(id) ?? 0) - stored;
    const limit = postCount(limits[claim.channel.provider]);
    return `channel ${id} may publish ${limit} on ${day} (UTC), has ${stored} already and this request adds ${added}`;
  };
  const message = `Daily quota exceeded: ${[...full].map(describe).join('; ')}.`;
  throw new UnprocessableError(message, problems);
}

const postCount = (count: number) => (count === 1 ? '1 post' : `${count} posts`);
