import type { ErrorDetail } from '../../core/errors.js';
import type { ContentLimit, SettingsCheck, SettingsOf, StoredSettingsOf } from '../provider-adapter.js';

// Instagram's content publishing (Instagram Graph API, "Content Publishing"): a caption of up to 2,200
// characters and 30 hashtags; a feed post is one image, or a carousel of 2 to 10 images and videos; a
// reel is one video; a story one image or video, without a caption.
export const INSTAGRAM_CONTENT_LIMIT: ContentLimit = { max: 2200, unit: 'characters', becomes: 'caption' };
export const INSTAGRAM_MAX_HASHTAGS = 30;
export const INSTAGRAM_CAROUSEL_MAX = 10;
/** A comment's text: Instagram holds it to a caption's length. */
export const INSTAGRAM_COMMENT_MAX = 2200;

const HASHTAG = /(?:^|[^\p{L}\p{N}_&])#[\p{L}\p{N}_]+/gu;

/** The caption's length and hashtags, the media each kind of post takes, and who it names. */
export function instagramProblems({ item, settings, path }: SettingsCheck<'instagram'>): Promise<ErrorDetail[]> {
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
  if (postType === 'story' && (settings.collaborators?.length ?? 0) > 0)
    problems.push({ path: `${path}.collaborators`, message: 'An Instagram story has no collaborators.' });
  settings.userTags?.forEach((tag, index) => {
    if (postType === 'reel') {
      problems.push({ path: `${path}.userTags[${index}]`, message: 'Tags are placed on images, not on a reel.' });
      return;
    }
    const tagged = media?.find((m) => m.id === tag.mediaId);
    if (media && tagged?.kind !== 'image')
      problems.push({
        path: `${path}.userTags[${index}].mediaId`,
        message: `${tag.mediaId} is not an image of the post: a tag is placed on one of its images.`,
      });
  });
  return Promise.resolve(problems);
}

export const instagramDefaults = (settings: SettingsOf<'instagram'>): StoredSettingsOf<'instagram'> => ({
  ...settings,
  postType: settings.postType ?? 'feed',
  shareToFeed: settings.shareToFeed ?? true,
  collaborators: settings.collaborators ?? [],
  userTags: settings.userTags ?? [],
});
