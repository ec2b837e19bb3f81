import { acceptsPosts, lockChannels } from '../channels/channels.js';
import { insertPostsWithinQuota } from '../channels/quota.js';
import type { ErrorDetail } from '../core/errors.js';
import { newId } from '../core/ids.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import type { PostsContext } from '../posts/context.js';
import { recordPostEvents, recordPostEvent } from '../posts/events.js';
import type { PostRow } from '../posts/post-body.js';
import { unpublishedComment, unpublishedPart } from '../posts/queries.js';
import type { NewPost } from '../posts/tables.js';
import { checkDrafts, type CheckedPost, type PostDraft } from '../posts/validation.js';
import { occurrencesBetween } from './rule.js';
import type { PostItem, PostSeries } from './tables.js';

/** At most this many occurrences are created per series in one pass; the next pass goes on from there. */
const OCCURRENCES_PER_PASS = 100;

/** The items of a series as the posts' rules read them, each naming its field in the request. */
export function draftsOfItems(items: PostItem[], field = 'posts'): PostDraft[] {
  return items.map((item, i) => ({
    channelId: item.channelId,
    content: item.content ?? '',
    mediaIds: item.mediaIds ?? [],
    altTexts: item.altTexts ?? {},
    thread: (item.thread ?? []).map((part) => ({
      content: part.content ?? '',
      mediaIds: part.mediaIds ?? [],
      altTexts: part.altTexts ?? {},
    })),
    firstComment: item.firstComment ?? null,
    settings: item.settings,
    paths: {
      channel: `${field}[${i}].channelId`,
      content: `${field}[${i}].content`,
      mediaIds: `${field}[${i}].mediaIds`,
      altTexts: `${field}[${i}].altTexts`,
      settings: `${field}[${i}].settings`,
      thread: `${field}[${i}].thread`,
      firstComment: `${field}[${i}].firstComment`,
    },
  }));
}

/** The series' items checked against the posts' rules as they are now (channels, media, networks). */
export type CheckedItems = { posts: CheckedPost[]; problems: ErrorDetail[] };

export function checkItems(ctx: PostsContext, series: Pick<PostSeries, 'organization_id' | 'posts'>) {
  return checkDrafts({ db: ctx.db, providers: ctx.providers }, series.organization_id, draftsOfItems(series.posts));
}

function occurrenceRow(
  post: CheckedPost,
  series: PostSeries,
  group: string,
  at: Date,
  status: 'scheduled' | 'skipped',
  now: Date,
): NewPost {
  return {
    id: newId('post'),
    organization_id: series.organization_id,
    group_id: group,
    channel_id: post.channel.id,
    content: post.content,
    media_ids: JSON.stringify(post.mediaIds),
    alt_texts: JSON.stringify(post.altTexts),
    thread: JSON.stringify(post.thread.map((part) => unpublishedPart(part))),
    first_comment: post.firstComment && JSON.stringify(unpublishedComment(post.firstComment)),
    settings: JSON.stringify(post.settings),
    status,
    scheduled_at: at,
    series_id: series.id,
    occurrence_at: at,
    created_at: now,
    updated_at: now,
  };
}

/**
 * Creates the occurrences of a series the transaction holds (locked) from its `planned_until` up to
 * `until`, each a post per channel: `scheduled` with its publishing job, or `skipped` with the reason
 * (its time passed more than the grace period ago, the channel's daily quota has no room, or the
 * series' posts no longer keep the rules). The unique (series, occurrence, channel) index makes a
 * second pass over the same occurrences impossible. Returns the series' new `planned_until`.
 */
export async function planOccurrences(
  ctx: PostsContext,
  trx: Db,
  series: PostSeries,
  checked: CheckedItems,
  until: Date,
  now: Date,
): Promise<Date> {
  const occurrences = occurrencesBetween(
    { rule: series.rule, timeZone: series.time_zone, startsAt: series.starts_at, endsAt: series.ends_at },
    series.planned_until,
    until,
    OCCURRENCES_PER_PASS,
  );
  const plannedUntil =
    occurrences.length === OCCURRENCES_PER_PASS ? new Date(occurrences.at(-1)!.getTime() + 1) : until;
  if (occurrences.length === 0) return plannedUntil;

  // An occurrence that exists already (a pass over the same time again) is left as it is: skipped,
  // edited, moved or published, it is never made twice; nor is one the series it continues kept when
  // it was split (published, on its way, or skipped by a person).
  const existing = new Set(
    (
      await trx
        .selectFrom('posts')
        .select('occurrence_at')
        .where('series_id', 'in', series.split_from ? [series.id, series.split_from] : [series.id])
        .where('occurrence_at', '>=', occurrences[0]!)
        .where('occurrence_at', '<=', occurrences.at(-1)!)
        .execute()
    ).map((row) => row.occurrence_at!.getTime()),
  );
  const channels = await lockChannels(
    trx,
    series.organization_id,
    series.posts.map((item) => item.channelId),
  );
  const providers = new Map(channels.map((channel) => [channel.id, channel.provider]));
  const stopped = channels.filter((channel) => !acceptsPosts(channel)).map((channel) => channel.id);
  const problems = checked.problems.map((p) => `${p.path} ${p.message}`).join('; ');
  const broken =
    checked.problems.length > 0
      ? `the series' posts no longer keep the rules: ${problems}`
      : stopped.length > 0
        ? `channel ${stopped.join(', ')} does not take posts (disabled, removed or to be reconnected)`
        : undefined;
  const graceEnd = new Date(now.getTime() - ctx.config.recurring.graceMs);

  for (const at of occurrences.filter((occurrence) => !existing.has(occurrence.getTime()))) {
    const group = newId('grp');
    const posts = checked.posts.filter((post) => providers.has(post.channel.id));
    const skip = async (reason: string) => {
      const rows = await insertPostsWithinQuota(
        trx,
        posts.map((post) => occurrenceRow(post, series, group, at, 'skipped', now)),
        { limits: ctx.config.dailyPostLimits, claims: [], instant: at },
      );
      const inserted = (rows ?? []).map((row) => ({ ...row, provider: providers.get(row.channel_id)! }));
      await recordPostEvents(
        trx,
        inserted.map((post) => ({ post, type: 'created' as const, at: now })),
      );
      for (const post of inserted) await recordPostEvent(trx, post, 'skipped', now, { reason });
    };
    if (broken) {
      await skip(broken);
      continue;
    }
    if (at < graceEnd) {
      await skip(
        `missed: due at ${at.toISOString()}, which had passed by more than the grace period when the series ` +
          'could create it (the server was down); a series never publishes missed occurrences late',
      );
      continue;
    }
    const rows = await insertPostsWithinQuota(
      trx,
      posts.map((post) => occurrenceRow(post, series, group, at, 'scheduled', now)),
      {
        limits: ctx.config.dailyPostLimits,
        claims: posts.map((post) => ({ channel: post.channel, path: post.paths.channel })),
        instant: at,
      },
    );
    if (!rows) {
      await skip(`the daily quota of a channel has no room on ${at.toISOString().slice(0, 10)} (UTC)`);
      continue;
    }
    const scheduled: PostRow[] = rows.map((row) => ({ ...row, provider: providers.get(row.channel_id)! }));
    await recordPostEvents(trx, [
      ...scheduled.map((post) => ({ post, type: 'created' as const, at: now })),
      ...scheduled.map((post) => ({ post, type: 'scheduled' as const, at: now })),
    ]);
    await ctx.queue.planPublish(
      trx,
      scheduled.map((post) => ({ ...post, at: post.scheduled_at })),
    );
  }
  return plannedUntil;
}

/** The end of the horizon: occurrences before it exist as posts. */
export function horizonOf(ctx: PostsContext, now: Date): Date {
  return new Date(now.getTime() + ctx.config.recurring.horizonDays * 86_400_000);
}

/** How far behind its horizon a series may fall before the job plans it again. */
const REPLAN_SLACK_MS = 3600_000;

/**
 * The planning job (every 15 minutes, on the workers): each series that goes on and whose planned
 * occurrences fall more than an hour short of the horizon gets the ones up to it, a series per
 * transaction, its row locked so that two workers never plan it at once.
 */
export async function planDueSeries(ctx: PostsContext): Promise<void> {
  const now = ctx.clock.now();
  const horizon = horizonOf(ctx, now);
  const due = await ctx.db
    .selectFrom('post_series')
    .select('id')
    .where('ends_at', 'is', null)
    .where('planned_until', '<', new Date(horizon.getTime() - REPLAN_SLACK_MS))
    .union(
      ctx.db
        .selectFrom('post_series')
        .select('id')
        .where('ends_at', 'is not', null)
        .whereRef('planned_until', '<', 'ends_at')
        .where('planned_until', '<', new Date(horizon.getTime() - REPLAN_SLACK_MS)),
    )
    .execute();
  for (const { id } of due) {
    try {
      await planSeries(ctx, id);
    } catch (error) {
      ctx.logger.error({ err: error, seriesId: id }, 'could not plan the occurrences of a series');
    }
  }
}

/** Plans one series up to the horizon (see `planDueSeries`). */
export async function planSeries(ctx: PostsContext, seriesId: string): Promise<void> {
  const unlocked = await ctx.db.selectFrom('post_series').selectAll().where('id', '=', seriesId).executeTakeFirst();
  if (!unlocked) return;
  // The rules read networks (TikTok's creator info): before the transaction, as a create does.
  const checked = await checkItems(ctx, unlocked);
  await transaction(ctx.db, async (trx) => {
    const series = await trx
      .selectFrom('post_series')
      .selectAll()
      .where('id', '=', seriesId)
      .forUpdate()
      .executeTakeFirst();
    if (!series) return;
    const now = ctx.clock.now();
    let plannedUntil = series.planned_until;
    const horizon = horizonOf(ctx, now);
    // Passes of at most OCCURRENCES_PER_PASS each, until the horizon.
    while (plannedUntil < horizon && (series.ends_at === null || plannedUntil < series.ends_at)) {
      const next = await planOccurrences(ctx, trx, { ...series, planned_until: plannedUntil }, checked, horizon, now);
      if (next.getTime() === plannedUntil.getTime()) break;
      plannedUntil = next;
    }
    await trx.updateTable('post_series').set({ planned_until: plannedUntil }).where('id', '=', seriesId).execute();
  });
}
