import twitterText from 'twitter-text';
import type { ContentLimit, SettingsCheck, StoredSettingsOf, SettingsOf } from '../provider-adapter.js';
import { textPostProblems, type TextNetworkLimits } from '../text-rules.js';

/**
 * X weighs a post's text with its twitter-text rules: most characters count 1, CJK characters and
 * emoji 2, every URL 23 whatever its length, against 280 (docs.x.com, "Counting characters").
 */
export function xWeightedLength(text: string): number {
  return twitterText.parseTweet(text).weightedLength;
}

const MB = 1024 * 1024;

// POST /2/tweets: up to 4 images, or 1 animated GIF, or 1 video; alt text (media metadata) of up to
// 1000 characters. The media pages (docs.x.com, media "Introduction" and "Best practices"): images as
// JPEG, PNG, GIF or WebP of up to 5 MB, a GIF up to 15 MB, a video as MP4 or MOV (not WebM) of up
// to 512 MB lasting 0.5 to 140 seconds. Where those pages disagree (a later "Best practices" names
// 8 GB and 20 minutes for a video on a post, the introduction still 512 MB), the lower limit holds:
// what passes here is taken by X whichever page is right.
export const X_LIMITS: TextNetworkLimits = {
  network: 'X',
  content: { max: 280, unit: 'weighted', becomes: 'post', count: xWeightedLength },
  maxImages: 4,
  image: { types: ['image/jpeg', 'image/png', 'image/webp'], maxBytes: 5 * MB },
  gif: { types: ['image/gif'], maxBytes: 15 * MB },
  video: { types: ['video/mp4', 'video/quicktime'], maxBytes: 512 * MB, minDurationMs: 500, maxDurationMs: 140_000 },
};
export const X_CONTENT_LIMIT: ContentLimit = X_LIMITS.content;
export const X_ALT_TEXT_MAX = 1000;
export const X_MAX_PARTS = 25;

export const xProblems = ({ item }: SettingsCheck<'x'>) => Promise.resolve(textPostProblems(item, X_LIMITS));

export const xDefaults = (settings: SettingsOf<'x'>): StoredSettingsOf<'x'> => ({
  ...settings,
  replySettings: settings.replySettings ?? 'everyone',
});
