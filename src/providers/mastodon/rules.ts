import type { ErrorDetail } from '../../core/errors.js';
import type { ContentLimit, SettingsCheck, StoredSettingsOf, SettingsOf } from '../provider-adapter.js';
import { graphemeCount, textPostProblems, type TextNetworkLimits } from '../text-rules.js';
import { MASTODON_DEFAULT_LIMITS, type InstanceLimits } from './instance.js';

// Mastodon's StatusLengthValidator: the content warning and the text together, in grapheme
// clusters, every URL as the instance's characters_reserved_per_url (23 by default) and a mention
// of another instance's account (@user@domain) as @user.
const URL_RE = /(?<![\p{L}\p{N}@#$])https?:\/\/[^\s<>"]+/giu;
const REMOTE_MENTION_RE = /(?<![=/\p{L}\p{N}_])(@[a-z0-9_]+(?:[.-]+[a-z0-9_]+)*)@[\p{L}\p{N}_.-]+/giu;

/** The length Mastodon gives a status's text (its content warning counts too, see `mastodonProblems`). */
export function mastodonLength(text: string, urlLength = 23): number {
  if (text.trim() === '') return 0;
  const shortened = text.replace(URL_RE, 'x'.repeat(urlLength)).replace(REMOTE_MENTION_RE, '$1');
  return graphemeCount(shortened);
}

/**
 * Mastodon's rules for a status by an instance's limits (`configuration` of its `/api/v2/instance`):
 * `statuses.max_characters` less the content warning's graphemes, every URL as
 * `characters_reserved_per_url`, `max_media_attachments` images or one video alone (Mastodon refuses
 * images with a video), each of a type in `media_attachments.supported_mime_types` and within
 * `image_size_limit` or `video_size_limit` (a GIF is an image there).
 */
export function mastodonRules(limits: InstanceLimits, spoilerGraphemes = 0): TextNetworkLimits {
  const types = (prefix: string) => limits.supportedMimeTypes.filter((type) => type.startsWith(prefix));
  return {
    network: 'Mastodon',
    content: {
      max: limits.maxCharacters - spoilerGraphemes,
      unit: 'graphemes',
      becomes: 'status',
      count: (text) => mastodonLength(text, limits.charactersReservedPerUrl),
    },
    maxImages: limits.maxMediaAttachments,
    image: { types: types('image/'), maxBytes: limits.imageSizeLimit },
    video: { types: types('video/'), maxBytes: limits.videoSizeLimit },
  };
}

// The defaults of a Mastodon instance (its /api/v2/instance configuration), until the channel's own
// instance says otherwise.
export const MASTODON_LIMITS: TextNetworkLimits = mastodonRules(MASTODON_DEFAULT_LIMITS);
export const MASTODON_CONTENT_LIMIT: ContentLimit = MASTODON_LIMITS.content;
export const MASTODON_ALT_TEXT_MAX = 1500;
export const MASTODON_MAX_PARTS = 25;

/** A status: the content warning counts toward the instance's limit with the text. */
export const mastodonProblems = (check: SettingsCheck<'mastodon'>) =>
  Promise.resolve([
    ...textPostProblems(
      check.item,
      mastodonRules(MASTODON_DEFAULT_LIMITS, graphemeCount(check.settings.spoilerText ?? '')),
    ),
    ...focusProblems(check),
  ]);

/** The focal points name media of the post, its own or its thread's parts'. */
export function focusProblems({ settings, mediaIds, path }: SettingsCheck<'mastodon'>): ErrorDetail[] {
  return Object.keys(settings.focus ?? {})
    .filter((id) => !mediaIds.includes(id))
    .map((id) => ({
      path: `${path}.focus.${id}`,
      message: `${id} is not among the media of the post or of its thread's parts.`,
    }));
}

export const mastodonDefaults = (settings: SettingsOf<'mastodon'>): StoredSettingsOf<'mastodon'> => ({
  ...settings,
  visibility: settings.visibility ?? 'public',
  spoilerText: settings.spoilerText ?? '',
  sensitive: settings.sensitive ?? false,
});
