import type { ProviderFactory } from '../provider-adapter.js';
import { textPostProblems } from '../text-rules.js';
import { THREADS_CONTENT_LIMIT, THREADS_LIMITS, THREADS_MAX_PARTS, threadsDefaults, threadsProblems } from './rules.js';

/** Threads (the Threads API): its rules hold on every server. */
export const threadsNetwork: ProviderFactory<'threads'> = () => ({
  provider: 'threads',
  name: 'Threads',
  // Its accounts connect once its connection flow is built (Facebook Login, Instagram Login, Threads's OAuth).
  connectsAccounts: false,
  needsSettings: false,
  contentLimit: THREADS_CONTENT_LIMIT,
  thread: { maxParts: THREADS_MAX_PARTS, partProblems: (part) => textPostProblems(part, THREADS_LIMITS) },
  settingsProblems: threadsProblems,
  withDefaults: threadsDefaults,
});
