import type { components } from '../../generated/public-v1.js';
import { acceptsPosts, lockChannels } from '../channels/channels.js';
import { assertWithinDailyQuota, countsOnDay } from '../channels/quota.js';
import { ConflictError, NotFoundError, UnprocessableError, type ErrorDetail } from '../core/errors.js';
import { assertCan, can, type Actor } from '../core/roles.js';
import type { Db } from '../db/database.js';
import { submitterOf } from './approval-submitter.js';
import { recordPostEvent } from './events.js';
import type { PostsContext } from './context.js';
import type { PostRow, ProviderSettings } from './post-body.js';
import {
  assertMediaStillPresent,
  deletePost,
  findPost,
  lockPost,
  mediaOf,
  unpublishedComment,
  unpublishedPart,
  updatePost,
} from './queries.js';
import type { StoredThreadPart } from './tables.js';
import { assertNotInThePast, assertNotOnTheNetwork, isEditable, nextState, type StatusRequest } from './transitions.js';
import { checkDrafts, type CheckedPost } from './validation.js';
import { recordAudit, type AuditActor } from '../audit/log.js';
import { transaction } from '../db/transaction.js';

type UpdatePostRequest = components['schemas']['UpdatePostRequest'];

const notFound = (postId: string) => new NotFoundError(`There is no post ${postId} in this organization.`);

export async function getPost(db: Db, organizationId: string, postId: string): Promise<PostRow> {
  const post = await findPost(db, organizationId, postId);
  if (!post) throw notFound(postId);
  return post;
}

export async function lockedPost(trx: Db, organizationId: string, postId: string): Promise<PostRow> {
  const post = await lockPost(trx, organizationId, postId);
  if (!post) throw notFound(postId);
  return post;
}

/**
 * A role that may only draft changes drafts and the posts waiting for approval (its own requests), and
 * nothing that is scheduled, published or failed.
 */
function assertMayChange(actor: Actor, post: PostRow): void {
  if (post.status !== 'draft' && post.status !== 'pending_approval')
    assertCan(actor, 'posts:publish', `change a post that is ${post.status}`);
}

function assertEditable(post: PostRow): void {
  assertNotOnTheNetwork(post.status);
  if (!isEditable(post.status)) throw new ConflictError(`A ${post.status} post cannot be edited.`);
}

/** The parts of a post that the rules judge together (a YouTube description falls back to the content). */
const checkedParts = (post: PostRow) =>
  JSON.stringify([
    post.content,
    post.media_ids,
    post.alt_texts,
    post.thread,
    post.first_comment,
    post.settings ?? null,
  ]);

/**
 * Changes content, media or settings, checked like a create. The checks read TikTok's creator info,
 * so they run before the transaction; under the post's lock the status is checked again, since the
 * publisher may have taken the post meanwhile, and so is the rest of the post: the fields not sent
 * were judged as they were read, and an edit of them in between could make the combination break a
 * rule that neither edit broke alone.
 */
export async function editPost(
  ctx: PostsContext,
  actor: Actor,
  postId: string,
  changes: UpdatePostRequest,
  /**
   * Moves made in the same transaction, before and after the edit (a form's "save as draft" or
   * "schedule"): a move that is refused leaves the edit unsaved too, and the other way round.
   */
  moves: { before?: StatusRequest; after?: StatusRequest } = {},
): Promise<PostRow> {
  const { organizationId } = actor;
  assertCan(actor, 'posts:draft', 'change posts');
  const post = await getPost(ctx.db, organizationId, postId);
  assertMayChange(actor, post);
  assertEditable(post);
  assertPublishedPartsKept(post, changes);
  const result = await checkEdit(ctx, post, changes);
  return transaction(ctx.db, async (trx) => {
    const now = ctx.clock.now();
    let current = await lockedPost(trx, organizationId, postId);
    assertMayChange(actor, current);
    assertEditable(current);
    if (moves.before) current = await moveLockedPost(ctx, trx, actor, current, moves.before, now);
    if (checkedParts(current) !== checkedParts(post)) {
      throw new ConflictError(
        'The post was changed by another request while this edit was being checked; read it again and retry.',
      );
    }
    if (changes.mediaIds !== undefined || changes.thread !== undefined) {
      await assertMediaStillPresent(trx, organizationId, mediaOf(result));
    }
    let edited = await writeEdit(trx, current, changes, result, now);
    if (changes.scheduledAt !== undefined)
      edited = await retime(ctx, trx, actor, edited, new Date(changes.scheduledAt), now);
    return moves.after ? moveLockedPost(ctx, trx, actor, edited, moves.after, now) : edited;
  });
}

/**
 * Every rule the post as the edit would make it breaks, nothing saved: the composer shows them together
 * with the contract's problems, all in one round.
 */
export async function editRuleProblems(
  ctx: PostsContext,
  post: PostRow,
  changes: UpdatePostRequest,
): Promise<ErrorDetail[]> {
  return (await checkEditedDraft(ctx, post, changes)).problems;
}

/** The post as the edit would make it, checked like a create; 422 with every broken rule. */
async function checkEdit(ctx: PostsContext, post: PostRow, changes: UpdatePostRequest): Promise<CheckedPost> {
  const checked = await checkEditedDraft(ctx, post, changes);
  const [result] = checked.posts;
  if (!result) {
    const broken = checked.problems.length === 1 ? 'a rule is' : `${checked.problems.length} rules are`;
    throw new UnprocessableError(
      `Post ${post.id} cannot be changed as requested: ${broken} broken, listed in details.`,
      checked.problems,
    );
  }
  return result;
}

function checkEditedDraft(ctx: PostsContext, post: PostRow, changes: UpdatePostRequest) {
  return checkDrafts({ db: ctx.db, providers: ctx.providers }, post.organization_id, [
    {
      channelId: post.channel_id,
      content: changes.content ?? post.content,
      mediaIds: changes.mediaIds ?? post.media_ids,
      // New media without new alternative texts keep those of the media that stay.
      altTexts:
        changes.altTexts ??
        Object.fromEntries(
          Object.entries(post.alt_texts).filter(([id]) => (changes.mediaIds ?? post.media_ids).includes(id)),
        ),
      thread: (changes.thread ?? post.thread).map((part) => ({
        content: part.content ?? '',
        mediaIds: part.mediaIds ?? [],
        altTexts: part.altTexts ?? {},
      })),
      firstComment: changes.firstComment === undefined ? post.first_comment : changes.firstComment,
      settings: changes.settings ?? ((post.settings ?? undefined) as ProviderSettings | undefined),
      paths: {
        channel: 'channelId',
        content: 'content',
        mediaIds: 'mediaIds',
        altTexts: 'altTexts',
        settings: 'settings',
        thread: 'thread',
        firstComment: 'firstComment',
      },
    },
  ]);
}

/**
 * A thread whose first parts are published keeps them as they went out: its own content and media,
 * and the published parts of its thread (409 otherwise); the parts not published yet may change.
 */
function assertPublishedPartsKept(post: PostRow, changes: UpdatePostRequest): void {
  if (post.release_id === null) return;
  const same = (
    a: { content?: string; mediaIds?: string[]; altTexts?: Record<string, string> },
    b: { content: string; mediaIds: string[]; altTexts?: Record<string, string> },
  ) =>
    (a.content ?? '') === b.content &&
    JSON.stringify(a.mediaIds ?? []) === JSON.stringify(b.mediaIds) &&
    JSON.stringify(a.altTexts ?? {}) === JSON.stringify(b.altTexts ?? {});
  const published = post.thread.filter((part) => part.releaseId !== null);
  const changed =
    (changes.content !== undefined && changes.content !== post.content) ||
    (changes.mediaIds !== undefined && JSON.stringify(changes.mediaIds) !== JSON.stringify(post.media_ids)) ||
    (changes.altTexts !== undefined && JSON.stringify(changes.altTexts) !== JSON.stringify(post.alt_texts)) ||
    (changes.thread !== undefined &&
      (changes.thread.length < published.length || published.some((part, i) => !same(changes.thread![i]!, part))));
  if (changed) {
    throw new ConflictError(
      `The first ${published.length + 1} part${published.length === 0 ? ' is' : 's are'} of post ${post.id} ` +
        'published and cannot change: send them as they are; the parts after them can change.',
    );
  }
  if (
    post.first_comment?.releaseId &&
    changes.firstComment !== undefined &&
    changes.firstComment?.content !== post.first_comment.content
  )
    throw new ConflictError(`The first comment of post ${post.id} is published and cannot change.`);
}

/** The thread as an edit stores it: the published parts as they are, the others as sent. */
function editedThread(
  post: PostRow,
  thread: { content: string; mediaIds: string[]; altTexts: Record<string, string> }[],
): StoredThreadPart[] {
  return thread.map((part, i) => {
    const stored = post.thread[i];
    return stored?.releaseId ? stored : unpublishedPart(part);
  });
}

/** Writes the fields the edit sent, and only those, so concurrent edits of different fields don't undo each other. */
async function writeEdit(
  trx: Db,
  post: PostRow,
  changes: UpdatePostRequest,
  result: CheckedPost,
  now: Date,
): Promise<PostRow> {
  if (
    changes.content === undefined &&
    changes.mediaIds === undefined &&
    changes.altTexts === undefined &&
    changes.thread === undefined &&
    changes.firstComment === undefined &&
    changes.settings === undefined
  )
    return post;
  const edited = await updatePost(trx, post.organization_id, post.id, {
    ...(changes.content === undefined ? {} : { content: result.content }),
    ...(changes.mediaIds === undefined ? {} : { media_ids: JSON.stringify(result.mediaIds) }),
    ...(changes.altTexts === undefined && changes.mediaIds === undefined
      ? {}
      : { alt_texts: JSON.stringify(result.altTexts) }),
    ...(changes.thread === undefined ? {} : { thread: JSON.stringify(editedThread(post, result.thread)) }),
    ...(changes.firstComment === undefined || post.first_comment?.releaseId
      ? {}
      : { first_comment: result.firstComment && JSON.stringify(unpublishedComment(result.firstComment)) }),
    ...(changes.settings === undefined ? {} : { settings: JSON.stringify(result.settings) }),
    updated_at: now,
  });
  await recordPostEvent(trx, edited, 'edited', now);
  return edited;
}

/**
 * A new time: a scheduled post moves to it; a draft, a failed post or one waiting for approval keeps its
 * status and gets the time it will be scheduled at.
 */
async function retime(
  ctx: PostsContext,
  trx: Db,
  actor: Actor,
  post: PostRow,
  scheduledAt: Date,
  now: Date,
): Promise<PostRow> {
  if (post.status === 'scheduled')
    return moveLockedPost(ctx, trx, actor, post, { status: 'scheduled', scheduledAt, path: 'scheduledAt' }, now);
  assertNotInThePast(scheduledAt, now, 'scheduledAt');
  const edited = await updatePost(trx, post.organization_id, post.id, {
    scheduled_at: scheduledAt,
    queued: false,
    updated_at: now,
  });
  await recordPostEvent(trx, edited, 'edited', now);
  return edited;
}

/**
 * `POST /posts/{id}/schedule`: the post is `scheduled` at the given time, whatever its status was
 * among those a user may move (the calendar's drag and "Move to…" mean the same). `path` names the
 * time's field in the caller's request.
 */
export function schedulePostAt(
  ctx: PostsContext,
  actor: Actor,
  postId: string,
  scheduledAt: Date,
  path = 'scheduledAt',
): Promise<PostRow> {
  return movePost(ctx, actor, postId, { status: 'scheduled', scheduledAt, path });
}

/**
 * Moves a post as `nextState` allows; a move to `scheduled` also checks the channel's quota for that day.
 * A role that may only draft asks for approval instead of scheduling (see `moveLockedPost`).
 */
export async function movePost(
  ctx: PostsContext,
  actor: Actor,
  postId: string,
  request: StatusRequest,
): Promise<PostRow> {
  assertCan(actor, 'posts:draft', request.status === 'scheduled' ? 'schedule posts' : 'unschedule posts');
  return transaction(ctx.db, async (trx) => {
    const post = await lockedPost(trx, actor.organizationId, postId);
    assertMayChange(actor, post);
    return moveLockedPost(ctx, trx, actor, post, request, ctx.clock.now());
  });
}

/**
 * `movePost` on a post the transaction holds: the change, its event and, for a move to `scheduled`,
 * the plan of its publication. A move to `scheduled` asked by a role that may not publish makes the
 * post wait for approval (`pending_approval`, at the time it would have been scheduled at), with
 * neither quota nor publication yet: both come with the approval, which is a pending post moved to
 * `scheduled` by a role that may publish.
 */
export async function moveLockedPost(
  ctx: PostsContext,
  trx: Db,
  actor: Actor,
  post: PostRow,
  request: StatusRequest,
  now: Date,
): Promise<PostRow> {
  const next = nextState({ status: post.status, scheduledAt: post.scheduled_at }, request, now);
  if (!next) return post;
  if (next.status === 'scheduled' && !can(actor.role, 'posts:publish')) {
    return submitLockedPost(trx, actor, post, next.scheduledAt, now);
  }
  if (next.status === 'scheduled' && next.scheduledAt) {
    // A draft's media may have been deleted meanwhile (only scheduled posts hold media back).
    await assertMediaStillPresent(
      trx,
      post.organization_id,
      mediaOf({ mediaIds: post.media_ids, thread: post.thread, paths: { mediaIds: 'mediaIds', thread: 'thread' } }),
    );
    const [channel] = await lockChannels(trx, post.organization_id, [post.channel_id]);
    if (!channel || !acceptsPosts(channel)) {
      const [why, advice] =
        !channel || channel.status === 'removed'
          ? ['was removed', 'the post can no longer be scheduled']
          : channel.status === 'needs_reconnect'
            ? ['needs to be connected again', 'reconnect it in Settings → Channels first']
            : ['is disabled', 'enable it in Settings → Channels first'];
      throw new UnprocessableError(`The post's channel ${why}; ${advice}.`, [
        { path: 'channelId', message: `channel ${post.channel_id} ${why}` },
      ]);
    }
    const claim = {
      channel: { id: post.channel_id, provider: post.provider },
      path: 'scheduledAt' in request ? request.path : 'status',
      countedAlready: countsOnDay(post, next.scheduledAt),
    };
    await assertWithinDailyQuota(trx, ctx.config.dailyPostLimits, [claim], next.scheduledAt);
  }
  const moved = await updatePost(trx, post.organization_id, post.id, {
    status: next.status,
    scheduled_at: next.scheduledAt,
    // A time a person chose, or a draft: the post leaves its channel's queue; approved where it waited
    // in the queue, it keeps its slot.
    queued:
      post.queued &&
      post.status === 'pending_approval' &&
      next.status === 'scheduled' &&
      next.scheduledAt?.getTime() === post.scheduled_at?.getTime(),
    // The error says why publishing failed; a post that leaves `failed` has no such reason any more.
    error_code: null,
    error_message: null,
    updated_at: now,
  });
  if (next.status === 'scheduled') {
    if (post.status === 'pending_approval') await recordPostEvent(trx, moved, 'approved', now);
    await recordPostEvent(trx, moved, post.status === 'scheduled' ? 'rescheduled' : 'scheduled', now);
    await ctx.queue.planPublish(trx, [{ ...moved, at: moved.scheduled_at }]);
  } else {
    await recordPostEvent(trx, moved, 'drafted', now);
  }
  return moved;
}

/**
 * A role that may not publish asks for the post to be published at `scheduledAt`: it waits for approval
 * (a new request, or a new time for one that waits already), and its author is told of the decision.
 */
async function submitLockedPost(
  trx: Db,
  actor: Actor,
  post: PostRow,
  scheduledAt: Date | null,
  now: Date,
): Promise<PostRow> {
  const waiting = post.status === 'pending_approval';
  if (waiting && post.scheduled_at?.getTime() === scheduledAt?.getTime()) return post;
  await assertMediaStillPresent(
    trx,
    post.organization_id,
    mediaOf({ mediaIds: post.media_ids, thread: post.thread, paths: { mediaIds: 'mediaIds', thread: 'thread' } }),
  );
  const submitted = await updatePost(trx, post.organization_id, post.id, {
    status: 'pending_approval',
    scheduled_at: scheduledAt,
    submitted_by_user_id: waiting ? post.submitted_by_user_id : await submitterOf(trx, actor),
    updated_at: now,
  });
  await recordPostEvent(trx, submitted, waiting ? 'rescheduled' : 'pending_approval', now);
  return submitted;
}

/** How the audit log names a post: the start of its text. */
export function postLabel(content: string): string {
  const text = content.replace(/\s+/g, ' ').trim();
  return text.length > 60 ? `${text.slice(0, 59)}…` : text || '(no text)';
}

/**
 * Deletes our record of the post. A published post stays on the network: only the record goes. `by`
 * is who deletes it, as the organization's audit log records it.
 */
export async function removePost(ctx: PostsContext, actor: Actor, postId: string, by: AuditActor): Promise<void> {
  const { organizationId } = actor;
  assertCan(actor, 'posts:draft', 'delete posts');
  await transaction(ctx.db, async (trx) => {
    const post = await lockedPost(trx, organizationId, postId);
    assertMayChange(actor, post);
    if (post.status === 'publishing') {
      throw new ConflictError('The post is publishing; wait until it is published or failed, then delete it.');
    }
    await recordPostEvent(trx, post, 'deleted', ctx.clock.now());
    await recordAudit(trx, {
      organizationId,
      actor: by,
      action: 'post.deleted',
      subject: { type: 'post', id: post.id, label: postLabel(post.content) },
      details: { status: post.status, channelId: post.channel_id },
    });
    await deletePost(trx, organizationId, postId);
  });
}
