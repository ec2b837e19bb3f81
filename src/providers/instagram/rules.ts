import type { ErrorDetail } from '../../core/errors.js';
import { mediaReachProblems } from '../meta/media-reach.js';
import {
  mediaBytes,
  type ContentLimit,
  type MediaFacts,
  type SettingsCheck,
  type SettingsOf,
  type StoredSettingsOf,
} from '../provider-adapter.js';

// Instagram's content publishing (Instagram Graph API, "Content Publishing"): a caption of up to 2,200
// characters and 30 hashtags; a feed post is one image, or a carousel of 2 to 10 images and videos; a
// reel is one video; a story one image or video, without a caption.
export const INSTAGRAM_CONTENT_LIMIT: ContentLimit = { max: 2200, unit: 'characters', becomes: 'caption' };
export const INSTAGRAM_MAX_HASHTAGS = 30;
export const INSTAGRAM_CAROUSEL_MAX = 10;
/** A comment's text: Instagram holds it to a caption's length. */
export const INSTAGRAM_COMMENT_MAX = 2200;

const HASHTAG = /(?:^|[^\p{L}\p{N}_&])#[\p{L}\p{N}_]+/gu;

const MB = 1024 * 1024;
/**
 * The media Instagram publishes (Instagram Platform, "IG User Media" and "Content Publishing",
 * limitations): images are JPEG of at most 8 MB; videos MP4 or MOV, a reel's of 3 seconds to 15
 * minutes and at most 300 MB, a story's or a carousel item's of 3 to 60 seconds and at most 100 MB.
 */
export const INSTAGRAM_IMAGE_MAX_BYTES = 8 * MB;
/**
 * A feed image's shape (IG User Media, `image_url`): its width to its height from 4:5 to 1.91:1, compared
 * as a ratio to two decimals as Meta writes the bounds. A story's image has no such rule (9:16 is only
 * advised), nor has a video a rule the server could check (its pixel size is not read from its container).
 */
export const INSTAGRAM_FEED_ASPECT = { min: 0.8, max: 1.91, range: '4:5 to 1.91:1' };
const VIDEO_TYPES = ['video/mp4', 'video/quicktime'];
const VIDEO_LIMITS = {
  reel: { maxBytes: 300 * MB, minSeconds: 3, maxSeconds: 15 * 60, what: 'a reel' },
  short: { maxBytes: 100 * MB, minSeconds: 3, maxSeconds: 60, what: 'a story or a carousel item' },
};

/**
 * The caption's length and hashtags, the media each kind of post takes (and whether Instagram can
 * fetch it: `mediaUnreachable` says why not, see meta/media-reach.ts), who it names, and its first comment.
 */
export function instagramProblems(
  { item, settings, path }: SettingsCheck<'instagram'>,
  mediaUnreachable?: string,
): Promise<ErrorDetail[]> {
  const problems: ErrorDetail[] = [];
  const postType = settings.postType ?? 'feed';
  const { max } = INSTAGRAM_CONTENT_LIMIT;
  const length = item.content.length;
  if (length > max)
    problems.push({
      path: item.paths.content,
      message: `Instagram takes a caption of ${max} characters (channel ${item.channelId}); this has ${length}.`,
    });
  const hashtags = item.content.match(HASHTAG)?.length ?? 0;
  if (hashtags > INSTAGRAM_MAX_HASHTAGS)
    problems.push({
      path: item.paths.content,
      message: `Instagram takes ${INSTAGRAM_MAX_HASHTAGS} hashtags in a caption; this has ${hashtags}.`,
    });
  const media = item.media;
  if (media) {
    const videos = media.filter((m) => m.kind === 'video').length;
    if (postType === 'reel' && (media.length !== 1 || videos !== 1))
      problems.push({ path: item.paths.mediaIds, message: 'An Instagram reel is one video.' });
    if (postType === 'story' && media.length !== 1)
      problems.push({ path: item.paths.mediaIds, message: 'An Instagram story is one image or one video.' });
    if (postType === 'feed' && (media.length === 0 || media.length > INSTAGRAM_CAROUSEL_MAX))
      problems.push({
        path: item.paths.mediaIds,
        message: `An Instagram post is one image, or a carousel of 2 to ${INSTAGRAM_CAROUSEL_MAX} images and videos.`,
      });
  }
  problems.push(...mediaReachProblems(item, 'Instagram', mediaUnreachable));
  media?.forEach((m, index) => {
    const message = mediaProblem(
      m,
      postType === 'reel' || (postType === 'feed' && media.length === 1) ? 'reel' : 'short',
      postType === 'feed',
    );
    if (message) problems.push({ path: `${item.paths.mediaIds}[${index}]`, message });
  });
  if (postType === 'story' && item.hasFirstComment && item.paths.firstComment)
    problems.push({ path: item.paths.firstComment, message: 'An Instagram story takes no comments.' });
  if (postType === 'story' && (settings.userTags?.length ?? 0) > 0)
    problems.push({ path: `${path}.userTags`, message: 'Tags are placed on the images of a post, not on a story.' });
  if (postType === 'story' && (settings.collaborators?.length ?? 0) > 0)
    problems.push({ path: `${path}.collaborators`, message: 'An Instagram story has no collaborators.' });
  settings.userTags?.forEach((tag, index) => {
    if (postType === 'reel') {
      problems.push({ path: `${path}.userTags[${index}]`, message: 'Tags are placed on images, not on a reel.' });
      return;
    }
    if (postType === 'story') return;
    const tagged = media?.find((m) => m.id === tag.mediaId);
    if (media && tagged?.kind !== 'image')
      problems.push({
        path: `${path}.userTags[${index}].mediaId`,
        message: `${tag.mediaId} is not an image of the post: a tag is placed on one of its images.`,
      });
  });
  return Promise.resolve(problems);
}

/** Why Instagram would refuse one media of the post (in the feed or not), or `undefined`. */
function mediaProblem(media: MediaFacts, video: keyof typeof VIDEO_LIMITS, feed: boolean): string | undefined {
  const megabytes = (bytes: number) => `${Math.round((bytes / MB) * 10) / 10} MB`;
  const size = mediaBytes(media);
  if (media.kind === 'image') {
    if (media.content_type !== 'image/jpeg')
      return `Instagram publishes JPEG images only; ${media.id} is ${media.content_type}.`;
    if (size > INSTAGRAM_IMAGE_MAX_BYTES)
      return `Instagram takes images of up to 8 MB; ${media.id} has ${megabytes(size)}.`;
    if (feed && media.width !== null && media.height !== null) {
      const ratio = Math.round((media.width / media.height) * 100) / 100;
      const { min, max, range } = INSTAGRAM_FEED_ASPECT;
      if (ratio < min || ratio > max)
        return (
          `Instagram takes feed images of an aspect ratio from ${range} (width to height); ` +
          `${media.id} is ${media.width}×${media.height} (${ratio}:1).`
        );
    }
    return undefined;
  }
  const limits = VIDEO_LIMITS[video];
  if (!VIDEO_TYPES.includes(media.content_type))
    return `Instagram publishes MP4 or MOV videos only; ${media.id} is ${media.content_type}.`;
  if (size > limits.maxBytes)
    return `Instagram takes ${limits.what} of up to ${megabytes(limits.maxBytes)}; ${media.id} has ${megabytes(size)}.`;
  const seconds = media.duration_ms === null ? undefined : media.duration_ms / 1000;
  if (seconds !== undefined && (seconds < limits.minSeconds || seconds > limits.maxSeconds))
    return (
      `Instagram takes ${limits.what} of ${limits.minSeconds} to ${limits.maxSeconds} seconds; ` +
      `${media.id} lasts ${Math.round(seconds * 10) / 10}.`
    );
  return undefined;
}

export const instagramDefaults = (settings: SettingsOf<'instagram'>): StoredSettingsOf<'instagram'> => ({
  ...settings,
  postType: settings.postType ?? 'feed',
  shareToFeed: settings.shareToFeed ?? true,
  collaborators: settings.collaborators ?? [],
  userTags: settings.userTags ?? [],
});
