import type { components } from '../../generated/public-v1.js';
import type { PostStatus, Provider } from '../core/contract.js';
import type { Post } from './tables.js';

/** A post as the API shows it; this server's posts are in the statuses it knows (the contract's may grow). */
export type PostBody = Omit<components['schemas']['Post'], 'status'> & { status: PostStatus };
export type ProviderSettings = components['schemas']['ProviderSettings'];
/** Settings as stored: what `withDefaults` of the channel's network made of the request's. */
export type StoredProviderSettings = components['schemas']['StoredProviderSettings'];

/** A post with the provider of its channel, which the contract shows on every post. */
export type PostRow = Post & { provider: Provider };

export function toPostBody(post: PostRow): PostBody {
  return {
    id: post.id,
    group: post.group_id,
    channelId: post.channel_id,
    provider: post.provider,
    content: post.content,
    mediaIds: post.media_ids,
    altTexts: post.alt_texts,
    thread: post.thread.map((part) => ({
      content: part.content,
      mediaIds: part.mediaIds,
      altTexts: part.altTexts ?? {},
      releaseId: part.releaseId,
      releaseUrl: part.releaseUrl,
    })),
    firstComment: post.first_comment && {
      content: post.first_comment.content,
      releaseId: post.first_comment.releaseId,
      releaseUrl: post.first_comment.releaseUrl,
    },
    settings: (post.settings ?? null) as StoredProviderSettings | null,
    status: post.status,
    queued: post.queued,
    scheduledAt: post.scheduled_at?.toISOString() ?? null,
    publishedAt: post.published_at?.toISOString() ?? null,
    releaseId: post.release_id,
    releaseUrl: post.release_url,
    error: post.error_code === null ? null : { code: post.error_code, message: post.error_message ?? '' },
    ...(post.series_id && post.occurrence_at
      ? { series: { id: post.series_id, occurrenceAt: post.occurrence_at.toISOString() } }
      : {}),
    createdAt: post.created_at.toISOString(),
    updatedAt: post.updated_at.toISOString(),
  };
}
