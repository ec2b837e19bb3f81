import { acceptsPosts } from '../channels/channels.js';
import type { components } from '../../generated/public-v1.js';
import type { PostStatus } from '../core/contract.js';
import { UnprocessableError, type ErrorDetail } from '../core/errors.js';
import { assertCan, can, type Actor } from '../core/roles.js';
import { newId } from '../core/ids.js';
import type { Db } from '../db/database.js';
import type { Channel } from '../channels/tables.js';
import { pipelinedTransaction } from '../db/pipelined-transaction.js';
import {
  claimKey,
  findStoredResponse,
  idempotentRequest,
  storeResponse,
  type IdempotentRequest,
} from './idempotency.js';
import { toPostBody, type PostRow } from './post-body.js';
import { submitterOf } from './approval-submitter.js';
import { recordPostEvents } from './events.js';
import type { PostsContext } from './context.js';
import { assertMediaStillPresent, mediaOf, unpublishedComment, unpublishedPart } from './queries.js';
import { lockChannelStates } from '../channels/channels.js';
import { assertWithinDailyQuota, insertPostsWithinQuota } from '../channels/quota.js';
import type { NewPost } from './tables.js';
import { queueProblems, takeQueueSlots } from './queue.js';
import { isTooFarInThePast } from './transitions.js';
import { checkDrafts, type CheckedPost, type MediaOfPost, type PostDraft } from './validation.js';

type CreatePostRequest = components['schemas']['CreatePostRequest'];
type CreatePostResponse = components['schemas']['CreatePostResponse'];

export interface CreateResult {
  body: CreatePostResponse;
  /** `true` when this is the stored answer to an earlier request with the same `Idempotency-Key`. */
  replayed: boolean;
}

/** Both forms of the request as one list of posts, each knowing where its fields sit in the request. */
function draftsOf(request: CreatePostRequest): PostDraft[] {
  if ('posts' in request) {
    return request.posts.map((item, i) => ({
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
        channel: `posts[${i}].channelId`,
        content: `posts[${i}].content`,
        mediaIds: `posts[${i}].mediaIds`,
        altTexts: `posts[${i}].altTexts`,
        settings: `posts[${i}].settings`,
        thread: `posts[${i}].thread`,
        firstComment: `posts[${i}].firstComment`,
      },
    }));
  }
  return request.channelIds.map((channelId, i) => ({
    channelId,
    content: request.content,
    mediaIds: request.mediaIds ?? [],
    altTexts: request.altTexts ?? {},
    thread: [],
    firstComment: null,
    settings: undefined,
    paths: {
      channel: `channelIds[${i}]`,
      content: 'content',
      mediaIds: 'mediaIds',
      altTexts: 'altTexts',
      settings: undefined,
      thread: undefined,
      firstComment: undefined,
    },
  }));
}

/** What `type` means: the status the posts start in and when they are due. */
function timingOf(request: CreatePostRequest, now: Date): Timing {
  const date = request.date === undefined ? null : new Date(request.date);
  switch (request.type) {
    case 'schedule':
      return { status: 'scheduled', scheduledAt: date };
    case 'now':
      return { status: 'scheduled', scheduledAt: now };
    case 'draft':
      return { status: 'draft', scheduledAt: date };
    case 'queue':
      // Each post's slot is taken under its channel's lock (`takeQueueSlots`).
      return { status: 'scheduled', scheduledAt: null, queued: true };
  }
}

function withoutRepeats(details: ErrorDetail[]): ErrorDetail[] {
  const seen = new Set<string>();
  return details.filter((d) => {
    const key = `${d.path}\n${d.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** What `type` asks for: the status the posts start in and when they are due. */
interface Timing {
  status: PostStatus;
  scheduledAt: Date | null;
  /** `type: queue`: each post takes its channel's next free slot. */
  queued?: boolean;
}

/** A create request that keeps every rule: what its transaction writes. */
export interface CheckedCreate {
  organizationId: string;
  now: Date;
  timing: Timing;
  drafts: PostDraft[];
  posts: CheckedPost[];
}

/**
 * Creates one post per target, all or none, tied by one group id. With an `Idempotency-Key`, a retry
 * of a create that succeeded gets the stored response, and concurrent requests with the key create
 * the posts once (see `claimKey`).
 */
export async function createPosts(
  ctx: PostsContext,
  actor: Actor,
  request: CreatePostRequest,
  idempotencyKey: string | undefined,
): Promise<CreateResult> {
  const { organizationId } = actor;
  assertCan(actor, 'posts:draft', 'create posts');
  // A role that may not publish asks for it: its `schedule` and `now` posts wait for approval.
  const approval = request.type !== 'draft' && !can(actor.role, 'posts:publish');
  const now = ctx.clock.now();
  const idempotent = idempotencyKey === undefined ? undefined : idempotentRequest(idempotencyKey, request);
  if (idempotent) {
    // Before any rule: a retry gets the first answer even when, say, its date has passed meanwhile.
    const stored = await findStoredResponse(ctx.db, organizationId, idempotent, now);
    if (stored) return { body: stored.body as CreatePostResponse, replayed: true };
  }
  const checked = await checkCreate(ctx, organizationId, request, now);
  if (approval) checked.timing = { ...checked.timing, status: 'pending_approval' };
  const submitter = approval ? await submitterOf(ctx.db, actor) : null;

  // Two round trips: BEGIN, the locks and the insert; then the events, the jobs and COMMIT.
  return pipelinedTransaction(ctx.db, async ({ trx, commit }) => {
    if (idempotent && !(await claimKey(trx, organizationId, idempotent, now))) {
      const replay = await replayAfterConcurrentCreate(trx, organizationId, idempotent, now);
      await commit();
      return replay;
    }
    const { group, posts } = await insertPosts(ctx, trx, checked, submitter);
    const scheduled = posts.filter((post) => post.status === 'scheduled');
    const pending = posts.filter((post) => post.status === 'pending_approval');
    const body: CreatePostResponse = { group, data: posts.map(toPostBody) };
    await commit(
      () =>
        recordPostEvents(trx, [
          ...posts.map((post) => ({ post, type: 'created' as const, at: now })),
          ...scheduled.map((post) => ({ post, type: 'scheduled' as const, at: now })),
          ...pending.map((post) => ({ post, type: 'pending_approval' as const, at: now })),
        ]),
      async () => {
        if (idempotent) await storeResponse(trx, organizationId, idempotent, { status: 201, body });
      },
      () =>
        ctx.queue.planPublish(
          trx,
          scheduled.map((post) => ({ ...post, at: post.scheduled_at })),
        ),
    );
    return { body, replayed: false };
  });
}

/**
 * The rules a create request breaks beyond its contract, each once: what `createPosts` would refuse it
 * for. The composer asks for them with the contract's problems, so that a person sees every problem of
 * the form at once; the request need not keep the contract (the rules read what is there).
 */
export async function createRuleProblems(
  ctx: PostsContext,
  organizationId: string,
  request: CreatePostRequest,
): Promise<ErrorDetail[]> {
  return (await checkRules(ctx, organizationId, request, ctx.clock.now())).problems;
}

async function checkRules(
  ctx: PostsContext,
  organizationId: string,
  request: CreatePostRequest,
  now: Date,
  unstoredMedia?: MediaOfPost[],
) {
  const timing = timingOf(request, now);
  const problems: ErrorDetail[] = [];
  if (request.type === 'schedule' && timing.scheduledAt && isTooFarInThePast(timing.scheduledAt, now)) {
    problems.push({ path: 'date', message: `is more than 1 minute in the past (it is ${now.toISOString()} now)` });
  }
  const drafts = draftsOf(request);
  const checked = await checkDrafts({ db: ctx.db, providers: ctx.providers, unstoredMedia }, organizationId, drafts);
  problems.push(...checked.problems);
  if (timing.queued) {
    const targets = drafts.map((d) => ({ channelId: d.channelId, path: d.paths.channel }));
    problems.push(...(await queueProblems(ctx.db, targets, (path) => !checked.problems.some((p) => p.path === path))));
  }
  return { timing, drafts, checked, problems: withoutRepeats(problems) };
}

/**
 * The rules a create request breaks, or the request checked and ready to write when it breaks none:
 * for callers that report problems instead of refusing at the first request (an import). Its media
 * may include `unstoredMedia`, not in the library (a dry run's downloads): such a request is checked, never
 * written.
 */
export async function checkCreateRequest(
  ctx: PostsContext,
  organizationId: string,
  request: CreatePostRequest,
  now: Date,
  unstoredMedia?: MediaOfPost[],
): Promise<{ checked: CheckedCreate | undefined; problems: ErrorDetail[] }> {
  const { timing, drafts, checked, problems } = await checkRules(ctx, organizationId, request, now, unstoredMedia);
  if (problems.length > 0) return { checked: undefined, problems };
  return { checked: { organizationId, now, timing, drafts, posts: checked.posts }, problems };
}

/**
 * Writes a checked create inside the caller's transaction: the posts (within their channels' quotas),
 * their events and their publishing jobs, as `createPosts` does in its own.
 */
export async function writeCheckedCreate(
  ctx: PostsContext,
  trx: Db,
  checked: CheckedCreate,
): Promise<{ group: string; posts: PostRow[] }> {
  // An import schedules only as a role that may publish (a contributor imports drafts): no one to wait for.
  const { group, posts } = await insertPosts(ctx, trx, checked, null);
  const scheduled = posts.filter((post) => post.status === 'scheduled');
  await recordPostEvents(trx, [
    ...posts.map((post) => ({ post, type: 'created' as const, at: checked.now })),
    ...scheduled.map((post) => ({ post, type: 'scheduled' as const, at: checked.now })),
  ]);
  await ctx.queue.planPublish(
    trx,
    scheduled.map((post) => ({ ...post, at: post.scheduled_at })),
  );
  return { group, posts };
}

/** Checks the request against every rule before anything is written; a request that breaks any is refused whole. */
async function checkCreate(
  ctx: PostsContext,
  organizationId: string,
  request: CreatePostRequest,
  now: Date,
): Promise<CheckedCreate> {
  const { timing, drafts, checked, problems } = await checkRules(ctx, organizationId, request, now);
  if (problems.length > 0) {
    const details = problems;
    throw new UnprocessableError(
      `Nothing was created: the request breaks ${details.length === 1 ? 'a rule' : `${details.length} rules`}, ` +
        'listed in details.',
      details,
    );
  }
  return { organizationId, now, timing, drafts, posts: checked.posts };
}

/**
 * Inserts the posts of a checked request, with a new group id, within their channels' daily quotas.
 * The channels and media were read and checked before the transaction. Under their locks only
 * whether they still take the posts is read again, and the insert counts the quota after them.
 */
async function insertPosts(
  ctx: PostsContext,
  trx: Db,
  { organizationId, now, timing, drafts, posts }: CheckedCreate,
  submitter: string | null,
): Promise<{ group: string; posts: PostRow[] }> {
  const claims =
    timing.status === 'scheduled' && timing.scheduledAt
      ? posts.map((post) => ({ channel: post.channel, path: post.paths.channel }))
      : [];
  const group = newId('grp');
  const slots = timing.queued
    ? await takeQueueSlots(
        ctx,
        trx,
        organizationId,
        posts.map((post) => ({ channel: post.channel, path: post.paths.channel })),
        now,
      )
    : undefined;
  const planned = posts.map((post, i) => ({
    row: {
      ...newPostRow(post, organizationId, group, slots ? { ...timing, scheduledAt: slots[i]! } : timing, now),
      submitted_by_user_id: submitter,
    },
    provider: post.channel.provider,
  }));
  // Without claims (drafts) the day is not read: any day will do.
  const quota = {
    limits: ctx.config.dailyPostLimits,
    claims,
    instant: claims.length > 0 && timing.scheduledAt ? timing.scheduledAt : now,
  };
  const [channels, , rows] = await Promise.all([
    lockChannelStates(
      trx,
      organizationId,
      drafts.map((d) => d.channelId),
    ),
    assertMediaStillPresent(
      trx,
      organizationId,
      posts.flatMap((post) => mediaOf(post)),
    ),
    insertPostsWithinQuota(
      trx,
      planned.map((p) => p.row),
      quota,
    ),
  ]);
  assertChannelsStillAccept(channels, drafts);
  if (!rows) {
    await assertWithinDailyQuota(trx, quota.limits, claims, quota.instant);
    throw new Error('the posts were refused by their daily quota, which has room for them');
  }
  const inserted = new Map(rows.map((row) => [row.id, row]));
  return { group, posts: planned.map(({ row, provider }) => ({ ...inserted.get(row.id)!, provider })) };
}

function newPostRow(post: CheckedPost, organizationId: string, group: string, timing: Timing, now: Date): NewPost {
  return {
    id: newId('post'),
    organization_id: organizationId,
    group_id: group,
    channel_id: post.channel.id,
    content: post.content,
    media_ids: JSON.stringify(post.mediaIds),
    alt_texts: JSON.stringify(post.altTexts),
    thread: JSON.stringify(post.thread.map((part) => unpublishedPart(part))),
    first_comment: post.firstComment && JSON.stringify(unpublishedComment(post.firstComment)),
    settings: JSON.stringify(post.settings),
    status: timing.status,
    queued: timing.queued ?? false,
    scheduled_at: timing.scheduledAt,
    created_at: now,
    updated_at: now,
  };
}

/**
 * The channels were checked before the transaction; under their lock, make sure none was disabled or
 * removed meanwhile.
 */
function assertChannelsStillAccept(locked: Pick<Channel, 'id' | 'status'>[], drafts: PostDraft[]): void {
  const channels = new Map(locked.map((c) => [c.id, c]));
  const problems = drafts
    .filter((d) => {
      const channel = channels.get(d.channelId);
      return !channel || !acceptsPosts(channel);
    })
    .map((d) => ({
      path: d.paths.channel,
      message: `Channel ${d.channelId} was disabled or removed while the posts were being created.`,
    }));
  if (problems.length > 0)
    throw new UnprocessableError('A channel stopped accepting posts; nothing was created.', withoutRepeats(problems));
}

async function replayAfterConcurrentCreate(
  trx: Db,
  organizationId: string,
  idempotent: IdempotentRequest,
  now: Date,
): Promise<CreateResult> {
  const stored = await findStoredResponse(trx, organizationId, idempotent, now);
  if (!stored) throw new Error('an idempotency key was claimed by a transaction that stored no response');
  return { body: stored.body as CreatePostResponse, replayed: true };
}
