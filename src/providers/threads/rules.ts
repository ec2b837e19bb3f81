import type { ContentLimit, SettingsCheck, SettingsOf, StoredSettingsOf } from '../provider-adapter.js';
import { textPostProblems, type TextNetworkLimits } from '../text-rules.js';

const MB = 1024 * 1024;

// A Threads post (Threads API, "Posts"): text of up to 500 characters, an image, a video, or a carousel;
// replies to it make a thread.
export const THREADS_LIMITS: TextNetworkLimits = {
  network: 'Threads',
  content: { max: 500, unit: 'characters', becomes: 'post', count: (text) => [...text].length },
  maxImages: 10,
  image: { types: ['image/jpeg', 'image/png'], maxBytes: 8 * MB },
  video: { types: ['video/mp4', 'video/quicktime'], maxBytes: 1024 * MB, maxDurationMs: 5 * 60_000 },
};
export const THREADS_CONTENT_LIMIT: ContentLimit = THREADS_LIMITS.content;
export const THREADS_MAX_PARTS = 25;

export const threadsProblems = ({ item }: SettingsCheck<'threads'>) =>
  Promise.resolve(textPostProblems(item, THREADS_LIMITS));

export const threadsDefaults = (settings: SettingsOf<'threads'>): StoredSettingsOf<'threads'> => ({
  ...settings,
  replyControl: settings.replyControl ?? 'everyone',
});
