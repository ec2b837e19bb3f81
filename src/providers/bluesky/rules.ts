import type { ContentLimit, SettingsCheck, StoredSettingsOf, SettingsOf } from '../provider-adapter.js';
import { graphemeCount, textPostProblems, type TextNetworkLimits } from '../text-rules.js';
import { BLUESKY_IMAGE_MAX_BYTES, BLUESKY_VIDEO_MAX_BYTES } from './adapter.js';

// The app.bsky.feed.post lexicon: `text` of at most 300 graphemes, up to 4 images in an
// app.bsky.embed.images embed, each with an `alt` text; a reply names its thread's root and parent.
// app.bsky.embed.images takes blobs of `image/*` up to 1,000,000 bytes; app.bsky.embed.video one
// blob of `video/mp4` up to 100,000,000 bytes, and Bluesky plays videos of up to 3 minutes (its
// announcement of March 2025; the lexicon says no length). An image beyond the blob's limit is
// refused rather than re-encoded: a smaller JPEG is the person's choice of quality, not ours.
export const BLUESKY_LIMITS: TextNetworkLimits = {
  network: 'Bluesky',
  content: { max: 300, unit: 'graphemes', becomes: 'post', count: graphemeCount },
  maxImages: 4,
  image: { types: ['image/*'], maxBytes: BLUESKY_IMAGE_MAX_BYTES },
  video: { types: ['video/mp4'], maxBytes: BLUESKY_VIDEO_MAX_BYTES, maxDurationMs: 180_000 },
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
