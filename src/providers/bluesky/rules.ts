import type { ContentLimit, SettingsCheck, StoredSettingsOf, SettingsOf } from '../provider-adapter.js';
import { graphemeCount, textPostProblems, type TextNetworkLimits } from '../text-rules.js';

// The app.bsky.feed.post lexicon: `text` of at most 300 graphemes, up to 4 images in an
// app.bsky.embed.images embed, each with an `alt` text; a reply names its thread's root and parent.
export const BLUESKY_LIMITS: TextNetworkLimits = {
  network: 'Bluesky',
  content: { max: 300, unit: 'graphemes', becomes: 'post', count: graphemeCount },
  maxImages: 4,
};
export const BLUESKY_CONTENT_LIMIT: ContentLimit = BLUESKY_LIMITS.content;
/** The lexicon does not bound `alt`; Bluesky's app stops at 2000 characters. */
export const BLUESKY_ALT_TEXT_MAX = 2000;
/** Threads of any length are replies; longer than this is rarely read and easily a mistake. */
export const BLUESKY_MAX_PARTS = 25;

export const blueskyProblems = ({ item }: SettingsCheck<'bluesky'>) =>
  Promise.resolve(textPostProblems(item, BLUESKY_LIMITS));

export const blueskyDefaults = (settings: SettingsOf<'bluesky'>): StoredSettingsOf<'bluesky'> => ({
  ...settings,
  languages: settings.languages ?? [],
  linkCard: settings.linkCard ?? true,
});
