import type { ErrorDetail } from '../../core/errors.js';
import type { ContentLimit, SettingsCheck, SettingsOf, StoredSettingsOf } from '../provider-adapter.js';
import { textPostProblems, type TextNetworkLimits } from '../text-rules.js';

const MB = 1024 * 1024;

// A Page's post (Pages API, "Posts"): a message of up to 63,206 characters, with a link, or photos
// (several are uploaded unpublished and attached with `attached_media`), or one video.
// Photos (Graph API, Photo reference): JPEG, PNG, GIF (BMP and TIFF too, which media here never are;
// not WebP), under 10 MB each. Videos go up with the Resumable Upload API, whose `file_type` takes
// MP4 alone among videos; a Page's video may have up to 10 GB and last up to 240 minutes.
export const FACEBOOK_LIMITS: TextNetworkLimits = {
  network: 'Facebook',
  content: { max: 63_206, unit: 'characters', becomes: 'post', count: (text) => text.length },
  maxImages: 10,
  image: { types: ['image/jpeg', 'image/png', 'image/gif'], maxBytes: 10 * MB },
  video: { types: ['video/mp4'], maxBytes: 10 * 1024 * MB, maxDurationMs: 240 * 60_000 },
};
export const FACEBOOK_CONTENT_LIMIT: ContentLimit = FACEBOOK_LIMITS.content;
/** A comment's message (Graph API, "Comments"). */
export const FACEBOOK_COMMENT_MAX = 8000;

/** A post's text and media, and a link only on a post without media (Facebook shows one or the other). */
export function facebookProblems({ item, settings, path }: SettingsCheck<'facebook'>): Promise<ErrorDetail[]> {
  const problems = textPostProblems(item, FACEBOOK_LIMITS);
  if (settings.link !== undefined && (item.media?.length ?? 0) > 0)
    problems.push({
      path: `${path}.link`,
      message: 'Facebook shows a link’s card or the media of a post, not both: leave out the link or the media.',
    });
  return Promise.resolve(problems);
}

export const facebookDefaults = (settings: SettingsOf<'facebook'>): StoredSettingsOf<'facebook'> => ({ ...settings });
