import type { ErrorDetail } from '../../core/errors.js';
import type { ContentLimit, SettingsCheck, SettingsOf, StoredSettingsOf } from '../provider-adapter.js';
import { textPostProblems, type TextNetworkLimits } from '../text-rules.js';

const MB = 1024 * 1024;

// A Page's post (Pages API, "Posts" and "Photos"): a message of up to 63,206 characters, with a link,
// or photos (several are uploaded unpublished and attached with `attached_media`), or one video.
export const FACEBOOK_LIMITS: TextNetworkLimits = {
  network: 'Facebook',
  content: { max: 63_206, unit: 'characters', becomes: 'post', count: (text) => text.length },
  maxImages: 10,
  image: { types: ['image/jpeg', 'image/png', 'image/gif', 'image/webp'], maxBytes: 4 * MB },
  video: { types: ['video/mp4', 'video/quicktime'], maxBytes: 1024 * MB, maxDurationMs: 240 * 60_000 },
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
