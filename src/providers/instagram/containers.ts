import type { SettingsOf } from '../provider-adapter.js';
import type { PublishableMedia } from '../publishing-contract.js';

type Settings = SettingsOf<'instagram'>;

/**
 * What Instagram publishes a post as (Instagram Platform, "Content Publishing"): a story, a reel (a
 * feed post of one video is a reel too, as Instagram publishes every video since 2022), an image, or a
 * carousel of 2 to 10 items in the order of the post's media.
 */
export type InstagramPostShape = 'STORIES' | 'REELS' | 'IMAGE' | 'CAROUSEL';

export function shapeOf(settings: Settings, media: PublishableMedia[]): InstagramPostShape {
  const postType = settings.postType ?? 'feed';
  if (postType === 'story') return 'STORIES';
  if (postType === 'reel') return 'REELS';
  if (media.length > 1) return 'CAROUSEL';
  return media[0]?.kind === 'video' ? 'REELS' : 'IMAGE';
}

/**
 * The user tags of one image, as `user_tags` takes them (a JSON array of username and x/y from the
 * top left, 0 to 1). They go on the container of the image they name: the image's own, or its item
 * of a carousel; Instagram takes none on the carousel container.
 */
function userTagsOf(settings: Settings, media: PublishableMedia): Record<string, string> {
  const tags = (settings.userTags ?? []).filter((tag) => tag.mediaId === media.id);
  if (tags.length === 0) return {};
  return { user_tags: JSON.stringify(tags.map(({ username, x, y }) => ({ username, x, y }))) };
}

/**
 * Collaborators go on what is published (an image, a reel, the carousel container), never on a
 * carousel's items: Instagram refuses them there.
 */
function collaboratorsOf(settings: Settings): Record<string, string> {
  const collaborators = settings.collaborators ?? [];
  return collaborators.length > 0 ? { collaborators: JSON.stringify(collaborators) } : {};
}

function captionOf(content: string): Record<string, string> {
  return content.trim() === '' ? {} : { caption: content };
}

/** The parameters of `POST /{ig-user-id}/media` for a post of one media: an image, a reel or a story. */
export function singleContainer(
  shape: Exclude<InstagramPostShape, 'CAROUSEL'>,
  settings: Settings,
  content: string,
  media: PublishableMedia,
): Record<string, string> {
  const url: Record<string, string> = media.kind === 'video' ? { video_url: media.url } : { image_url: media.url };
  // A story has no caption, collaborators or tags (the rules refuse them).
  if (shape === 'STORIES') return { media_type: 'STORIES', ...url };
  if (shape === 'REELS')
    return {
      media_type: 'REELS',
      ...url,
      ...captionOf(content),
      share_to_feed: String(settings.shareToFeed ?? true),
      ...collaboratorsOf(settings),
    };
  return { ...url, ...captionOf(content), ...collaboratorsOf(settings), ...userTagsOf(settings, media) };
}

/** The parameters of one item of a carousel (`is_carousel_item`): its media, and the tags placed on it. */
export function carouselItem(settings: Settings, media: PublishableMedia): Record<string, string> {
  if (media.kind === 'video') return { is_carousel_item: 'true', media_type: 'VIDEO', video_url: media.url };
  return { is_carousel_item: 'true', image_url: media.url, ...userTagsOf(settings, media) };
}

/** The parameters of the carousel container: its items in order, the caption and the collaborators. */
export function carouselContainer(settings: Settings, content: string, items: string[]): Record<string, string> {
  return { media_type: 'CAROUSEL', children: items.join(','), ...captionOf(content), ...collaboratorsOf(settings) };
}
