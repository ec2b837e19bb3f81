import type { ContentLimit, SettingsCheck, StoredSettingsOf, SettingsOf } from '../provider-adapter.js';
import { graphemeCount, textPostProblems, type TextNetworkLimits } from '../text-rules.js';

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

// The defaults of a Mastodon instance (its /api/v2/instance configuration), until the channel's own
// instance says otherwise.
export const MASTODON_LIMITS: TextNetworkLimits = {
  network: 'Mastodon',
  content: { max: 500, unit: 'graphemes', becomes: 'status', count: (text) => mastodonLength(text) },
  maxImages: 4,
};
export const MASTODON_CONTENT_LIMIT: ContentLimit = MASTODON_LIMITS.content;
export const MASTODON_ALT_TEXT_MAX = 1500;
export const MASTODON_MAX_PARTS = 25;

/** A status: the content warning counts toward the instance's limit with the text. */
export const mastodonProblems = ({ item, settings }: SettingsCheck<'mastodon'>) => {
  const spoiler = graphemeCount(settings.spoilerText ?? '');
  const limits = {
    ...MASTODON_LIMITS,
    content: { ...MASTODON_LIMITS.content, max: MASTODON_LIMITS.content.max - spoiler },
  };
  return Promise.resolve(textPostProblems(item, limits));
};

export const mastodonDefaults = (settings: SettingsOf<'mastodon'>): StoredSettingsOf<'mastodon'> => ({
  ...settings,
  visibility: settings.visibility ?? 'public',
  spoilerText: settings.spoilerText ?? '',
  sensitive: settings.sensitive ?? false,
});
