import { ConflictError, NotFoundError } from '../core/errors.js';
import { assertCan, type Actor } from '../core/roles.js';
import { transaction } from '../db/transaction.js';
import type { PostsContext } from '../posts/context.js';
import { recordPostEvent } from '../posts/events.js';
import type { PostRow } from '../posts/post-body.js';
import { lockPost, updatePost } from '../posts/queries.js';

/**
 * `POST /public/v1/posts/{id}/skip`: one occurrence of a series is not published. The post stays,
 * `skipped`, so that the series never creates the occurrence again.
 */
export async function skipPost(ctx: PostsContext, actor: Actor, postId: string): Promise<PostRow> {
  assertCan(actor, 'posts:publish', 'skip posts');
  return transaction(ctx.db, async (trx) => {
    const post = await lockPost(trx, actor.organizationId, postId);
    if (!post) throw new NotFoundError(`There is no post ${postId} in this organization.`);
    if (post.status === 'skipped') return post;
    if (post.series_id === null) {
      throw new ConflictError(
        `Post ${postId} is no occurrence of a series; make it a draft or delete it instead of skipping it.`,
      );
    }
    if (post.status === 'publishing' || post.status === 'published') {
      throw new ConflictError(`Post ${postId} is ${post.status}; it can no longer be skipped.`);
    }
    const now = ctx.clock.now();
    const skipped = await updatePost(trx, actor.organizationId, postId, {
      status: 'skipped',
      error_code: null,
      error_message: null,
      updated_at: now,
    });
    await recordPostEvent(trx, skipped, 'skipped', now, { reason: 'skipped by a person' });
    return skipped;
  });
}
