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

// POST /2/tweets: up to 4 images, or 1 video or GIF; alt text (media metadata) of up to 1000 characters.
export const X_LIMITS: TextNetworkLimits = {
  network: 'X',
  content: { max: 280, unit: 'weighted', becomes: 'post', count: xWeightedLength },
  maxImages: 4,
};
export const X_CONTENT_LIMIT: ContentLimit = X_LIMITS.content;
export const X_ALT_TEXT_MAX = 1000;
export const X_MAX_PARTS = 25;

export const xProblems = ({ item }: SettingsCheck<'x'>) => Promise.resolve(textPostProblems(item, X_LIMITS));

export const xDefaults = (settings: SettingsOf<'x'>): StoredSettingsOf<'x'> => ({
  ...settings,
  replySettings: settings.replySettings ?? 'everyone',
});
