import type { components } from '../../generated/public-v1.js';
import type { Actor } from '../core/roles.js';
import type { PostsContext } from './context.js';
import { createPosts } from './create.js';
import { getPost } from './lifecycle.js';
import type { ProviderSettings } from './post-body.js';

type CreatePostRequest = components['schemas']['CreatePostRequest'];
type Post = components['schemas']['Post'];

/**
 * A new draft with everything a person wrote in the post (its channel, content, media, alternative
 * texts, thread, first comment and settings), in a group of its own and without a date. It is created
 * as any draft is, by every rule of a create: a channel removed or media deleted since is refused.
 */
export async function duplicatePost(ctx: PostsContext, actor: Actor, postId: string): Promise<Post> {
  const post = await getPost(ctx.db, actor.organizationId, postId);
  const request: CreatePostRequest = {
    type: 'draft',
    posts: [
      {
        channelId: post.channel_id,
        content: post.content,
        mediaIds: post.media_ids,
        altTexts: post.alt_texts,
        thread: post.thread.map((part) => ({
          content: part.content,
          mediaIds: part.mediaIds,
          altTexts: part.altTexts ?? {},
        })),
        ...(post.first_comment ? { firstComment: { content: post.first_comment.content } } : {}),
        // Stored settings are the request's with the network's defaults filled in: a request in their own right.
        ...(post.settings ? { settings: post.settings as ProviderSettings } : {}),
      },
    ],
  };
  const { body } = await createPosts(ctx, actor, request, undefined);
  return body.data[0]!;
}
