import type { components } from '../../generated/public-v1.js';
import { ConflictError, NotFoundError, UnprocessableError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { assertCan, type Actor } from '../core/roles.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import type { PostsContext } from '../posts/context.js';
import { recordPostEvent } from '../posts/events.js';
import { claimKey, findStoredResponse, idempotentRequest, storeResponse } from '../posts/idempotency.js';
import { assertNotInThePast } from '../posts/transitions.js';
import { checkItems, horizonOf, planOccurrences, type CheckedItems } from './planning.js';
import { assertTimeZone, describeRule, nextOccurrences, normalizeRule } from './rule.js';
import type { PostItem, PostSeries } from './tables.js';
import { sql } from 'kysely';

type SeriesBody = components['schemas']['Series'];
type CreateSeriesRequest = components['schemas']['CreateSeriesRequest'];
type SplitSeriesRequest = components['schemas']['SplitSeriesRequest'];

/** RFC 5545 counts in whole seconds: an instant's milliseconds would put the first occurrence before its start. */
const wholeSeconds = (instant: string) => new Date(Math.floor(Date.parse(instant) / 1000) * 1000);

const notFound = (id: string) => new NotFoundError(`There is no series ${id} in this organization.`);

export function toSeriesBody(series: PostSeries, now: Date): SeriesBody {
  return {
    id: series.id,
    rule: series.rule,
    timeZone: series.time_zone,
    startsAt: series.starts_at.toISOString(),
    endsAt: series.ends_at?.toISOString() ?? null,
    summary: describeRule(series.rule),
    posts: series.posts,
    nextOccurrences: nextOccurrences(
      { rule: series.rule, timeZone: series.time_zone, startsAt: series.starts_at, endsAt: series.ends_at },
      now,
    ).map((at) => at.toISOString()),
    splitFrom: series.split_from,
    createdAt: series.created_at.toISOString(),
    updatedAt: series.updated_at.toISOString(),
  };
}

/** The rule, zone and items of a new series, checked like a create of posts: `422` with every problem. */
async function checkNewSeries(
  ctx: PostsContext,
  organizationId: string,
  request: { rule: string; timeZone: string; posts: PostItem[] },
): Promise<{ rule: string; checked: CheckedItems }> {
  const rule = normalizeRule(request.rule);
  assertTimeZone(request.timeZone);
  const checked = await checkItems(ctx, { organization_id: organizationId, posts: request.posts });
  if (checked.problems.length > 0) {
    const broken = checked.problems.length === 1 ? 'a rule' : `${checked.problems.length} rules`;
    throw new UnprocessableError(
      `Nothing was created: the series' posts break ${broken}, listed in details.`,
      checked.problems,
    );
  }
  return { rule, checked };
}

/** Writes a new series and creates its occurrences up to the horizon, in the caller's transaction. */
async function insertSeries(
  ctx: PostsContext,
  trx: Db,
  values: Omit<PostSeries, 'created_at' | 'updated_at' | 'planned_until' | 'id'>,
  checked: CheckedItems,
  now: Date,
): Promise<PostSeries> {
  const series = await trx
    .insertInto('post_series')
    .values({
      ...values,
      id: newId('ser'),
      posts: JSON.stringify(values.posts),
      planned_until: values.starts_at,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const plannedUntil = await planOccurrences(ctx, trx, series, checked, horizonOf(ctx, now), now);
  return trx
    .updateTable('post_series')
    .set({ planned_until: plannedUntil })
    .where('id', '=', series.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** `POST /public/v1/series`: the series and, in the same transaction, its occurrences within the horizon. */
/**
 * `POST /public/v1/series`. With `idempotencyKey` (the composer's, one per load of its page), a request
 * sent again (a double click, the form sent again from the browser's history) answers the series the
 * first one made instead of making another.
 */
export async function createSeries(
  ctx: PostsContext,
  actor: Actor,
  request: CreateSeriesRequest,
  idempotencyKey?: string,
): Promise<SeriesBody> {
  assertCan(actor, 'posts:publish', 'create recurring series');
  const now = ctx.clock.now();
  const idempotent = idempotencyKey === undefined ? undefined : idempotentRequest(`series:${idempotencyKey}`, request);
  if (idempotent) {
    const stored = await findStoredResponse(ctx.db, actor.organizationId, idempotent, now);
    if (stored) return stored.body as SeriesBody;
  }
  const startsAt = wholeSeconds(request.startsAt);
  assertNotInThePast(startsAt, now, 'startsAt');
  const endsAt = request.endsAt === undefined ? null : new Date(request.endsAt);
  if (endsAt && endsAt <= startsAt) {
    throw new UnprocessableError('The series ends before it starts.', [
      { path: 'endsAt', message: 'is not after startsAt' },
    ]);
  }
  const { rule, checked } = await checkNewSeries(ctx, actor.organizationId, request);
  return transaction(ctx.db, async (trx) => {
    // The key first: a request sent again meanwhile waits on it, then answers what this one made.
    if (idempotent && !(await claimKey(trx, actor.organizationId, idempotent, now))) {
      const stored = await findStoredResponse(trx, actor.organizationId, idempotent, now);
      if (!stored) throw new Error('an idempotency key was claimed by a transaction that stored no response');
      return stored.body as SeriesBody;
    }
    const series = await insertSeries(
      ctx,
      trx,
      {
        organization_id: actor.organizationId,
        rule,
        time_zone: request.timeZone,
        starts_at: startsAt,
        ends_at: endsAt,
        posts: request.posts,
        split_from: null,
      },
      checked,
      now,
    );
    const body = toSeriesBody(series, now);
    if (idempotent) await storeResponse(trx, actor.organizationId, idempotent, { status: 201, body });
    return body;
  });
}

export async function getSeries(ctx: PostsContext, organizationId: string, id: string): Promise<SeriesBody> {
  const series = await ctx.db
    .selectFrom('post_series')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!series) throw notFound(id);
  return toSeriesBody(series, ctx.clock.now());
}

async function lockedSeries(trx: Db, organizationId: string, id: string): Promise<PostSeries> {
  const series = await trx
    .selectFrom('post_series')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
  if (!series) throw notFound(id);
  return series;
}

/**
 * Ends a locked series at `at`: no occurrence from then on, and the posts of its occurrences from then
 * on that are not on their way to the network (or on it), nor skipped, are deleted, each with its
 * `deleted` event.
 */
async function endAt(trx: Db, series: PostSeries, at: Date, now: Date): Promise<PostSeries> {
  const doomed = await sql<{ id: string }>`
    select id from posts
    where series_id = ${series.id} and occurrence_at >= ${at}
      and status not in ('publishing', 'published', 'skipped')
    order by id
    for update`.execute(trx);
  if (doomed.rows.length > 0) {
    const posts = await trx
      .selectFrom('posts')
      .innerJoin('channels', 'channels.id', 'posts.channel_id')
      .selectAll('posts')
      .select('channels.provider')
      .where(
        'posts.id',
        'in',
        doomed.rows.map((row) => row.id),
      )
      .execute();
    for (const post of posts)
      await recordPostEvent(trx, post, 'deleted', now, { reason: 'the series was changed or ended' });
    await trx
      .deleteFrom('posts')
      .where(
        'id',
        'in',
        doomed.rows.map((row) => row.id),
      )
      .execute();
  }
  return trx
    .updateTable('post_series')
    .set({ ends_at: at, updated_at: now })
    .where('id', '=', series.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** `POST /public/v1/series/{id}/end`: ends the series now. */
export async function endSeries(ctx: PostsContext, actor: Actor, id: string): Promise<SeriesBody> {
  assertCan(actor, 'posts:publish', 'end recurring series');
  const now = ctx.clock.now();
  const series = await transaction(ctx.db, async (trx) => {
    const series = await lockedSeries(trx, actor.organizationId, id);
    if (series.ends_at && series.ends_at <= now) return series;
    return endAt(trx, series, now, now);
  });
  return toSeriesBody(series, now);
}

/**
 * `POST /public/v1/series/{id}/split`: the series ends at `from`, and a new one with the changes
 * continues it from there; the old series' occurrences from `from` on that are not on the network are
 * replaced by the new series' occurrences, in one transaction.
 */
export async function splitSeries(
  ctx: PostsContext,
  actor: Actor,
  id: string,
  request: SplitSeriesRequest,
): Promise<SeriesBody> {
  assertCan(actor, 'posts:publish', 'change recurring series');
  const now = ctx.clock.now();
  const from = wholeSeconds(request.from);
  assertNotInThePast(from, now, 'from');
  const current = await ctx.db
    .selectFrom('post_series')
    .selectAll()
    .where('organization_id', '=', actor.organizationId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!current) throw notFound(id);
  const changes = {
    rule: request.rule ?? current.rule,
    timeZone: request.timeZone ?? current.time_zone,
    posts: request.posts ?? current.posts,
  };
  const { rule, checked } = await checkNewSeries(ctx, actor.organizationId, changes);
  const next = await transaction(ctx.db, async (trx) => {
    const series = await lockedSeries(trx, actor.organizationId, id);
    if (series.ends_at && series.ends_at <= from) {
      throw new ConflictError(`Series ${id} ended at ${series.ends_at.toISOString()}, before ${request.from}.`);
    }
    const ended = await endAt(trx, series, from, now);
    return insertSeries(
      ctx,
      trx,
      {
        organization_id: actor.organizationId,
        rule,
        time_zone: changes.timeZone,
        starts_at: from,
        ends_at: series.ends_at,
        posts: changes.posts,
        split_from: ended.id,
      },
      checked,
      now,
    );
  });
  return toSeriesBody(next, now);
}

/** A post of a series' occurrence, as the series' page lists it. */
export interface OccurrencePost {
  id: string;
  channelId: string;
  status: string;
  occurrenceAt: Date;
  scheduledAt: Date | null;
}

/**
 * The posts of a series' occurrences around `now`: the latest `past` ones since `since`, and the next
 * `upcoming` ones, oldest first; and the series that continues it from its end (`split`), if one does.
 */
export async function seriesOccurrences(
  db: Db,
  organizationId: string,
  seriesId: string,
  { now, since, past, upcoming }: { now: Date; since: Date; past: number; upcoming: number },
): Promise<{ posts: OccurrencePost[]; continuedBy: string | undefined }> {
  const occurrences = () =>
    db
      .selectFrom('posts')
      .select(['id', 'channel_id', 'status', 'occurrence_at', 'scheduled_at'])
      .where('series_id', '=', seriesId)
      .where('organization_id', '=', organizationId);
  const [before, ahead, continuation] = await Promise.all([
    occurrences()
      .where('occurrence_at', '>=', since)
      .where('occurrence_at', '<', now)
      .orderBy('occurrence_at', 'desc')
      .orderBy('channel_id', 'desc')
      .limit(past)
      .execute(),
    occurrences()
      .where('occurrence_at', '>=', now)
      .orderBy('occurrence_at')
      .orderBy('channel_id')
      .limit(upcoming)
      .execute(),
    // A series changed twice from its occurrences on is continued by the series that starts at its end.
    db
      .selectFrom('post_series')
      .select('id')
      .where('organization_id', '=', organizationId)
      .where('split_from', '=', seriesId)
      .orderBy('starts_at')
      .limit(1)
      .executeTakeFirst(),
  ]);
  return {
    posts: [...before.reverse(), ...ahead].map((post) => ({
      id: post.id,
      channelId: post.channel_id,
      status: post.status,
      occurrenceAt: post.occurrence_at!,
      scheduledAt: post.scheduled_at,
    })),
    continuedBy: continuation?.id,
  };
}
