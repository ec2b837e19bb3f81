import type { Db } from '../db/database.js';
import type { JobQueue } from '../jobs/queue.js';
import type { ProvidersContext } from '../providers/registry.js';

/** What the posts feature is built from: the providers' adapters and the job queue. */
export interface PostsContext extends ProvidersContext {
  queue: JobQueue;
}

/**
 * The one scheduling hook: every change that makes a post due at a time plans its publication here,
 * in the transaction of the change, so the plan exists if and only if the change does. A plan that a
 * later change makes wrong (the post drafted, deleted or rescheduled) is left to run: its job finds
 * the post not due at that time and does nothing.
 */
export async function planPublication(
  ctx: PostsContext,
  trx: Db,
  post: { id: string; channel_id: string; provider: string; scheduled_at: Date | null },
): Promise<void> {
  await ctx.queue.plan(
    trx,
    'publish-post',
    { postId: post.id },
    {
      ...(post.scheduled_at ? { startAfter: post.scheduled_at } : {}),
      // The channel's publications are limited together (see the publisher).
      group: { id: post.channel_id, tier: post.provider },
    },
  );
}

/** `planPublication` for several posts at once, in one statement; `sent` as for `JobQueue.planMany`. */
export async function planPublications(
  ctx: PostsContext,
  trx: Db,
  posts: { id: string; channel_id: string; provider: string; scheduled_at: Date | null }[],
  sent?: () => void,
): Promise<void> {
  await ctx.queue.planMany(
    trx,
    'publish-post',
    posts.map((post) => ({
      data: { postId: post.id },
      ...(post.scheduled_at ? { startAfter: post.scheduled_at } : {}),
      group: { id: post.channel_id, tier: post.provider },
    })),
    sent,
  );
}
