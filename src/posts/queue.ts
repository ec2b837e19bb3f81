import type { components } from '../../generated/public-v1.js';
import { DateTime } from 'luxon';
import { acceptsPosts, findChannel, lockChannels } from '../channels/channels.js';
import { assertWithinDailyQuota, countsOnDay, postsOnDay, utcDay, type DailyPostLimits } from '../channels/quota.js';
import {
  channelsWithSlots,
  normalSlots,
  QUEUE_HORIZON_DAYS,
  readSlots,
  slotInstants,
  toSlot,
  toSlotBody,
  writeSlots,
  type ScheduleSlotBody,
  type Slot,
} from '../channels/slots.js';
import type { Channel } from '../channels/tables.js';
import { ConflictError, NotFoundError, UnprocessableError, type ErrorDetail } from '../core/errors.js';
import { assertCan, type Actor } from '../core/roles.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import type { PostsContext } from './context.js';
import { recordPostEvent } from './events.js';
import { toPostBody, type PostRow } from './post-body.js';
import { lockPost, updatePost } from './queries.js';
import { assertNotOnTheNetwork } from './transitions.js';

type ChannelSchedule = components['schemas']['ChannelSchedule'];
type ChannelQueue = components['schemas']['ChannelQueue'];

const DAY_MS = 86_400_000;
const horizonOf = (now: Date) => new Date(now.getTime() + QUEUE_HORIZON_DAYS * DAY_MS);

const channelNotFound = (channelId: string) =>
  new NotFoundError(`There is no channel ${channelId} in this organization.`);

/** The organization's time zone, in which its channels' slots are read. */
export async function organizationTimeZone(db: Db, organizationId: string): Promise<string> {
  const row = await db
    .selectFrom('organizations')
    .select('time_zone')
    .where('id', '=', organizationId)
    .executeTakeFirst();
  return row?.time_zone ?? 'UTC';
}

/** Counts a channel's posts per UTC day as a transaction changes them, to keep its daily cap. */
class DayCounts {
  private readonly used = new Map<number, number>();

  constructor(
    private readonly trx: Db,
    private readonly channel: Pick<Channel, 'id' | 'provider'>,
    private readonly limits: DailyPostLimits,
  ) {}

  private async count(instant: Date): Promise<number> {
    const day = utcDay(instant).start.getTime();
    if (!this.used.has(day)) {
      this.used.set(day, (await postsOnDay(this.trx, [this.channel.id], instant)).get(this.channel.id) ?? 0);
    }
    return this.used.get(day)!;
  }

  async hasRoom(instant: Date): Promise<boolean> {
    return (await this.count(instant)) < this.limits[this.channel.provider];
  }

  async add(instant: Date, change = 1): Promise<void> {
    this.used.set(utcDay(instant).start.getTime(), (await this.count(instant)) + change);
  }
}

/**
 * The statuses of a queued post that holds its slot: one waiting to be published, or waiting for an
 * editor's approval there. A draft, a skipped occurrence or a published post holds none.
 */
const SLOT_HOLDERS = ['scheduled', 'pending_approval'] as const;

/** The instants of the channel's future queued posts: the slots they hold. */
async function takenSlots(trx: Db, channelId: string, after: Date): Promise<Set<number>> {
  const rows = await trx
    .selectFrom('posts')
    .select('scheduled_at')
    .where('channel_id', '=', channelId)
    .where('queued', '=', true)
    .where('status', 'in', SLOT_HOLDERS)
    .where('scheduled_at', '>', after)
    .execute();
  return new Set(rows.map((row) => row.scheduled_at!.getTime()));
}

/** The first slot after `after` that no queued post holds and whose UTC day has room; it is then taken. */
async function takeFreeSlot(
  instants: Iterable<Date>,
  after: Date,
  taken: Set<number>,
  counts: DayCounts,
): Promise<Date | undefined> {
  for (const instant of instants) {
    if (instant.getTime() <= after.getTime() || taken.has(instant.getTime())) continue;
    if (!(await counts.hasRoom(instant))) continue;
    taken.add(instant.getTime());
    await counts.add(instant);
    return instant;
  }
  return undefined;
}

const NO_SLOTS_ADVICE =
  'add posting slots in Settings → Channels → Schedule or with PUT /public/v1/channels/{id}/schedule';

/** A create of `type: queue` to channels without slots, named by their fields: checked with the other rules. */
export async function queueProblems(
  db: Db,
  targets: { channelId: string; path: string }[],
  known: (path: string) => boolean,
): Promise<ErrorDetail[]> {
  const withSlots = await channelsWithSlots(db, [...new Set(targets.map((t) => t.channelId))]);
  return targets
    .filter((t) => !withSlots.has(t.channelId) && known(t.path))
    .map((t) => ({ path: t.path, message: `channel ${t.channelId} has no posting slots: ${NO_SLOTS_ADVICE}` }));
}

/**
 * The slots the posts of a `type: queue` create take, one per target in order (two targets of one
 * channel take two slots): each channel's next free slots with room in their day's quota. Locks the
 * channels, so that two creates never take one slot.
 */
export async function takeQueueSlots(
  ctx: PostsContext,
  trx: Db,
  organizationId: string,
  targets: { channel: Pick<Channel, 'id' | 'provider'>; path: string }[],
  now: Date,
): Promise<Date[]> {
  await lockChannels(
    trx,
    organizationId,
    targets.map((t) => t.channel.id),
  );
  const zone = await organizationTimeZone(trx, organizationId);
  const horizon = horizonOf(now);
  const perChannel = new Map<string, { instants: Date[]; taken: Set<number>; counts: DayCounts }>();
  const slots: Date[] = [];
  const problems: ErrorDetail[] = [];
  for (const { channel, path } of targets) {
    let state = perChannel.get(channel.id);
    if (!state) {
      const weekly = await readSlots(trx, channel.id);
      state = {
        instants: [...slotInstants(weekly, zone, now, horizon)],
        taken: await takenSlots(trx, channel.id, now),
        counts: new DayCounts(trx, channel, ctx.config.dailyPostLimits),
      };
      perChannel.set(channel.id, state);
    }
    const slot = await takeFreeSlot(state.instants, now, state.taken, state.counts);
    if (slot) slots.push(slot);
    else
      problems.push({
        path,
        message:
          state.instants.length === 0
            ? `channel ${channel.id} has no posting slots: ${NO_SLOTS_ADVICE}`
            : `channel ${channel.id} has no free slot with daily quota left within ${QUEUE_HORIZON_DAYS} days`,
      });
  }
  if (problems.length > 0) {
    throw new UnprocessableError('Nothing was created: a channel has no free slot in its queue.', problems);
  }
  return slots;
}

async function lockedChannel(trx: Db, organizationId: string, channelId: string): Promise<Channel> {
  const [channel] = await lockChannels(trx, organizationId, [channelId]);
  if (!channel || channel.status === 'removed') throw channelNotFound(channelId);
  return channel;
}

async function scheduleBody(db: Db, organizationId: string, channelId: string): Promise<ChannelSchedule> {
  const [timeZone, slots] = await Promise.all([organizationTimeZone(db, organizationId), readSlots(db, channelId)]);
  return { channelId, timeZone, slots: slots.map(toSlotBody) };
}

export async function channelSchedule(ctx: PostsContext, actor: Actor, channelId: string): Promise<ChannelSchedule> {
  assertCan(actor, 'channels:read', "see a channel's posting schedule");
  if (!(await findChannel(ctx.db, actor.organizationId, channelId))) throw channelNotFound(channelId);
  return scheduleBody(ctx.db, actor.organizationId, channelId);
}

/**
 * Replaces the channel's slots; its queued posts whose time is no longer a slot move to the next free
 * slots after it (see `reflowQueue`), in the same transaction.
 */
export async function replaceChannelSchedule(
  ctx: PostsContext,
  actor: Actor,
  channelId: string,
  slots: ScheduleSlotBody[],
): Promise<ChannelSchedule> {
  assertCan(actor, 'channels:write', "change a channel's posting schedule");
  return transaction(ctx.db, async (trx) => {
    const channel = await lockedChannel(trx, actor.organizationId, channelId);
    const weekly = normalSlots(slots.map(toSlot));
    await writeSlots(trx, channel.id, weekly);
    const zone = await organizationTimeZone(trx, actor.organizationId);
    await reflowQueue(ctx, trx, channel, weekly, zone, (at) => at);
    return scheduleBody(trx, actor.organizationId, channelId);
  });
}

/**
 * Sets the organization's time zone; every channel's queued posts keep their local time where it is
 * still a slot, and the others move to the next free slots, in the same transaction.
 */
export async function changeOrganizationTimeZone(ctx: PostsContext, actor: Actor, zone: string): Promise<void> {
  assertCan(actor, 'channels:write', "change the organization's time zone");
  await transaction(ctx.db, async (trx) => {
    const previous = await trx
      .selectFrom('organizations')
      .select('time_zone')
      .where('id', '=', actor.organizationId)
      .forUpdate()
      .executeTakeFirstOrThrow();
    if (previous.time_zone === zone) return;
    await trx.updateTable('organizations').set({ time_zone: zone }).where('id', '=', actor.organizationId).execute();
    const channelIds = await trx
      .selectFrom('channel_slots')
      .innerJoin('channels', 'channels.id', 'channel_slots.channel_id')
      .select('channels.id')
      .distinct()
      .where('channels.organization_id', '=', actor.organizationId)
      .where('channels.status', '<>', 'removed')
      .execute();
    // The same wall-clock time in the new zone: a Monday 09:00 post stays a Monday 09:00 post.
    const sameLocalTime = (at: Date) =>
      DateTime.fromJSDate(at, { zone: previous.time_zone }).setZone(zone, { keepLocalTime: true }).toJSDate();
    for (const { id } of channelIds.sort((a, b) => a.id.localeCompare(b.id))) {
      const channel = await lockedChannel(trx, actor.organizationId, id);
      await reflowQueue(ctx, trx, channel, await readSlots(trx, id), zone, sameLocalTime);
    }
  });
}

/**
 * Puts the channel's future queued posts on its slots: a post whose time (as `remap` makes it) is a
 * free slot stays there; the others, in their order, take the next free slot after that time with
 * room in its day's quota, or become drafts when none is left within the horizon. Each move is an
 * event and a publishing plan, as any reschedule; a post given its own time is never touched.
 */
async function reflowQueue(
  ctx: PostsContext,
  trx: Db,
  channel: Channel,
  slots: Slot[],
  zone: string,
  remap: (at: Date) => Date,
): Promise<void> {
  const now = ctx.clock.now();
  const posts = (await trx
    .selectFrom('posts')
    .selectAll()
    .where('channel_id', '=', channel.id)
    .where('queued', '=', true)
    .where('status', '=', 'scheduled')
    .where('scheduled_at', '>', now)
    .orderBy('scheduled_at')
    .orderBy('id')
    .forUpdate()
    .execute()) as Omit<PostRow, 'provider'>[];
  if (posts.length === 0) return;
  const instants = [...slotInstants(slots, zone, now, horizonOf(now))];
  const isSlot = new Set(instants.map((at) => at.getTime()));
  const taken = new Set<number>();
  const counts = new DayCounts(trx, channel, ctx.config.dailyPostLimits);
  const displaced: { post: Omit<PostRow, 'provider'>; after: Date }[] = [];
  const moves: { post: Omit<PostRow, 'provider'>; to: Date | null }[] = [];
  for (const post of posts) {
    const at = remap(post.scheduled_at!);
    if (isSlot.has(at.getTime()) && !taken.has(at.getTime())) {
      taken.add(at.getTime());
      if (at.getTime() !== post.scheduled_at!.getTime()) moves.push({ post, to: at });
    } else {
      displaced.push({ post, after: at.getTime() > now.getTime() ? at : now });
    }
  }
  // The moves of posts that keep a slot change the days' counts before the displaced look for room.
  for (const { post, to } of moves) {
    await counts.add(post.scheduled_at!, -1);
    await counts.add(to!);
  }
  for (const { post, after } of displaced) {
    await counts.add(post.scheduled_at!, -1);
    moves.push({ post, to: (await takeFreeSlot(instants, after, taken, counts)) ?? null });
  }
  for (const { post, to } of moves) {
    const moved = await updatePost(trx, post.organization_id, post.id, {
      ...(to ? { scheduled_at: to } : { status: 'draft', queued: false }),
      updated_at: now,
    });
    await recordPostEvent(trx, moved, to ? 'rescheduled' : 'drafted', now);
    if (to) await ctx.queue.planPublish(trx, [{ ...moved, at: to }]);
  }
}

/** `GET /channels/{id}/queue`: the next slots after `after` (or now), each with its queued post. */
export async function channelQueue(
  ctx: PostsContext,
  actor: Actor,
  channelId: string,
  query: { limit?: number; after?: string },
): Promise<ChannelQueue> {
  assertCan(actor, 'posts:read', "see a channel's queue");
  const { organizationId } = actor;
  if (!(await findChannel(ctx.db, organizationId, channelId))) throw channelNotFound(channelId);
  const now = ctx.clock.now();
  const after = query.after === undefined ? now : new Date(query.after);
  const [timeZone, slots] = await Promise.all([
    organizationTimeZone(ctx.db, organizationId),
    readSlots(ctx.db, channelId),
  ]);
  const limit = query.limit ?? 20;
  const instants: Date[] = [];
  for (const at of slotInstants(slots, timeZone, after, horizonOf(now))) {
    instants.push(at);
    if (instants.length >= limit) break;
  }
  const posts =
    instants.length === 0
      ? []
      : await ctx.db
          .selectFrom('posts')
          .innerJoin('channels', 'channels.id', 'posts.channel_id')
          .selectAll('posts')
          .select('channels.provider')
          .where('posts.organization_id', '=', organizationId)
          .where('posts.channel_id', '=', channelId)
          .where('posts.queued', '=', true)
          .where('posts.status', 'in', SLOT_HOLDERS)
          .where('posts.scheduled_at', '>=', instants[0]!)
          .where('posts.scheduled_at', '<=', instants.at(-1)!)
          .execute();
  const byTime = new Map(posts.map((post) => [post.scheduled_at!.getTime(), post]));
  return {
    channelId,
    timeZone,
    data: instants.map((at) => {
      const post = byTime.get(at.getTime());
      return { at: at.toISOString(), post: post ? toPostBody(post) : null };
    }),
  };
}

/**
 * `POST /posts/{id}/queue`: the post takes the slot at `at` (an upcoming slot of its channel), or the
 * next free one, and is scheduled there as a queued post. A queued post holding that slot swaps with
 * it: it takes the post's former slot, or the next free slot when the post held none.
 */
export async function queuePost(
  ctx: PostsContext,
  actor: Actor,
  postId: string,
  at: Date | undefined,
): Promise<PostRow> {
  assertCan(actor, 'posts:publish', 'schedule posts');
  const { organizationId } = actor;
  return transaction(ctx.db, async (trx) => {
    const now = ctx.clock.now();
    const post = await lockPost(trx, organizationId, postId);
    if (!post) throw new NotFoundError(`There is no post ${postId} in this organization.`);
    assertNotOnTheNetwork(post.status);
    const channel = await lockedChannel(trx, organizationId, post.channel_id);
    if (!acceptsPosts(channel)) {
      throw new UnprocessableError(`The post's channel is ${channel.status.replace('_', ' ')}; it takes no posts.`, [
        { path: 'channelId', message: `channel ${channel.id} takes no posts` },
      ]);
    }
    const zone = await organizationTimeZone(trx, organizationId);
    const instants = [...slotInstants(await readSlots(trx, channel.id), zone, now, horizonOf(now))];
    if (instants.length === 0) {
      throw new UnprocessableError(`Channel ${channel.id} has no posting slots.`, [
        { path: 'channelId', message: `channel ${channel.id} has no posting slots: ${NO_SLOTS_ADVICE}` },
      ]);
    }
    const heldSlot =
      post.queued && post.status === 'scheduled' && post.scheduled_at && post.scheduled_at > now
        ? post.scheduled_at
        : undefined;
    const taken = await takenSlots(trx, channel.id, now);
    if (heldSlot) taken.delete(heldSlot.getTime());
    const counts = new DayCounts(trx, channel, ctx.config.dailyPostLimits);
    let slot: Date;
    let holder: PostRow | undefined;
    if (at === undefined) {
      if (heldSlot) await counts.add(heldSlot, -1);
      const free = await takeFreeSlot(instants, now, taken, counts);
      if (!free) {
        throw new UnprocessableError(
          `Channel ${channel.id} has no free slot with daily quota left within ${QUEUE_HORIZON_DAYS} days.`,
          [{ path: 'channelId', message: `no free slot in the queue of channel ${channel.id}` }],
        );
      }
      slot = free;
    } else {
      if (!instants.some((instant) => instant.getTime() === at.getTime())) {
        throw new UnprocessableError(`${at.toISOString()} is not an upcoming slot of channel ${channel.id}.`, [
          { path: 'at', message: 'is not an upcoming slot of the channel (see GET /public/v1/channels/{id}/queue)' },
        ]);
      }
      slot = at;
      if (taken.has(at.getTime())) holder = await queuedPostAt(trx, organizationId, channel.id, at);
    }
    if (holder?.id === post.id) return post;
    if (holder) {
      // A swap: the slot's day loses the holder and gains the post, so its count stays as it was, unless
      // the holder waits for approval (it counts once approved).
      const to = heldSlot ?? (await takeFreeSlot(instants, slot, taken, counts));
      if (!to) {
        throw new ConflictError(`The slot is held by post ${holder.id}, which has no other free slot to move to.`);
      }
      if (holder.status === 'pending_approval') {
        const claim = { channel, path: 'at', countedAlready: countsOnDay(post, slot) };
        await assertWithinDailyQuota(trx, ctx.config.dailyPostLimits, [claim], slot);
      }
      await placeInSlot(ctx, trx, holder, to, now);
    } else if (at !== undefined) {
      const claim = { channel, path: 'at', countedAlready: countsOnDay(post, slot) };
      await assertWithinDailyQuota(trx, ctx.config.dailyPostLimits, [claim], slot);
    }
    return placeInSlot(ctx, trx, post, slot, now);
  });
}

async function queuedPostAt(
  trx: Db,
  organizationId: string,
  channelId: string,
  at: Date,
): Promise<PostRow | undefined> {
  const row = await trx
    .selectFrom('posts')
    .innerJoin('channels', 'channels.id', 'posts.channel_id')
    .select('posts.id')
    .where('posts.channel_id', '=', channelId)
    .where('posts.queued', '=', true)
    .where('posts.status', 'in', SLOT_HOLDERS)
    .where('posts.scheduled_at', '=', at)
    .executeTakeFirst();
  return row && lockPost(trx, organizationId, row.id);
}

/**
 * Puts a post in a slot of its channel's queue, to be published there. A post waiting for approval that
 * is moved out of a slot another takes keeps waiting, in its new slot.
 */
async function placeInSlot(ctx: PostsContext, trx: Db, post: PostRow, slot: Date, now: Date): Promise<PostRow> {
  if (post.status === 'pending_approval' && post.queued) {
    const moved = await updatePost(trx, post.organization_id, post.id, { scheduled_at: slot, updated_at: now });
    await recordPostEvent(trx, moved, 'rescheduled', now);
    return moved;
  }
  const placed = await updatePost(trx, post.organization_id, post.id, {
    status: 'scheduled',
    scheduled_at: slot,
    queued: true,
    error_code: null,
    error_message: null,
    updated_at: now,
  });
  // An editor putting a post that waits for approval in the queue approves it.
  if (post.status === 'pending_approval') await recordPostEvent(trx, placed, 'approved', now);
  await recordPostEvent(trx, placed, post.status === 'scheduled' ? 'rescheduled' : 'scheduled', now);
  await ctx.queue.planPublish(trx, [{ ...placed, at: slot }]);
  return placed;
}
