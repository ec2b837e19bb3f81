import type { components } from '../../generated/public-v1.js';
import { recordAudit, type AuditActor } from '../audit/log.js';
import { ConflictError } from '../core/errors.js';
import { assertCan, type Actor } from '../core/roles.js';
import { transaction } from '../db/transaction.js';
import type { PostsContext } from './context.js';
import { recordPostEvent } from './events.js';
import { lockedPost, moveLockedPost, postLabel } from './lifecycle.js';
import type { PostRow } from './post-body.js';
import { updatePost } from './queries.js';
import { approvalTooLate, isTooFarInThePast } from './transitions.js';

/**
 * Approval: a post that a contributor asked to publish waits in `pending_approval` (see
 * `moveLockedPost` and `createPosts`) until an editor or above approves it, which schedules it like any
 * post (the quota is checked and its publication planned then), or rejects it with a comment for its
 * author, which makes it a draft again. Both are in the post's history, and so reach webhooks and mail.
 */

export type ApprovalTime = NonNullable<components['schemas']['ApprovePostRequest']['when']>;

function assertPending(post: PostRow): void {
  if (post.status !== 'pending_approval') {
    throw new ConflictError(`The post is ${post.status}, not waiting for approval: there is nothing to decide.`);
  }
}

/**
 * Schedules a pending post at its `scheduledAt` (`422` when that has passed: the approver chooses now or
 * a new time), or now.
 */
export async function approvePost(ctx: PostsContext, actor: Actor, postId: string, when: ApprovalTime, by: AuditActor) {
  assertCan(actor, 'posts:publish', 'approve posts');
  return transaction(ctx.db, async (trx) => {
    const now = ctx.clock.now();
    const post = await lockedPost(trx, actor.organizationId, postId);
    assertPending(post);
    if (when === 'scheduled' && (!post.scheduled_at || isTooFarInThePast(post.scheduled_at, now))) {
      throw approvalTooLate(post.scheduled_at, 'when');
    }
    const scheduledAt = when === 'now' ? now : post.scheduled_at!;
    const approved = await moveLockedPost(
      ctx,
      trx,
      actor,
      post,
      { status: 'scheduled', scheduledAt, path: 'when' },
      now,
    );
    await recordAudit(trx, {
      organizationId: post.organization_id,
      actor: by,
      action: 'post.approved',
      subject: { type: 'post', id: post.id, label: postLabel(post.content) },
      details: { when },
    });
    return approved;
  });
}

/** Sends a pending post back to draft with the reviewer's comment for its author. */
export async function rejectPost(ctx: PostsContext, actor: Actor, postId: string, comment: string, by: AuditActor) {
  assertCan(actor, 'posts:publish', 'reject posts');
  return transaction(ctx.db, async (trx) => {
    const now = ctx.clock.now();
    const post = await lockedPost(trx, actor.organizationId, postId);
    assertPending(post);
    // A draft again: out of the queue, its slot free for others.
    const rejected = await updatePost(trx, post.organization_id, post.id, {
      status: 'draft',
      queued: false,
      updated_at: now,
    });
    await recordPostEvent(trx, rejected, 'rejected', now, { comment });
    await recordAudit(trx, {
      organizationId: post.organization_id,
      actor: by,
      action: 'post.rejected',
      subject: { type: 'post', id: post.id, label: postLabel(post.content) },
      details: { comment },
    });
    return rejected;
  });
}

/** The comment of the post's last rejection, while it is the last thing that happened to its status. */
export async function lastRejection(ctx: Pick<PostsContext, 'db'>, postId: string) {
  const last = await ctx.db
    .selectFrom('post_events')
    .select(['type', 'at', 'details'])
    .where('post_id', '=', postId)
    .where('type', 'in', ['rejected', 'pending_approval', 'scheduled', 'drafted'])
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (last?.type !== 'rejected') return undefined;
  return { at: last.at, comment: (last.details as { comment?: string }).comment ?? '' };
}
