import type { ProviderFactory } from '../provider-adapter.js';
import { textPostProblems } from '../text-rules.js';
import {
  BLUESKY_ALT_TEXT_MAX,
  BLUESKY_CONTENT_LIMIT,
  BLUESKY_LIMITS,
  BLUESKY_MAX_PARTS,
  blueskyDefaults,
  blueskyProblems,
} from './rules.js';

/**
 * Bluesky (the AT Protocol): its rules hold on every server. Its publishing (adapter.ts) takes part
 * once its accounts can be connected (a handle and an app password), which no flow offers yet.
 */
export const blueskyNetwork: ProviderFactory<'bluesky'> = () => ({
  provider: 'bluesky',
  name: 'Bluesky',
  connectsAccounts: true,
  needsSettings: false,
  contentLimit: BLUESKY_CONTENT_LIMIT,
  altTextMax: BLUESKY_ALT_TEXT_MAX,
  thread: { maxParts: BLUESKY_MAX_PARTS, partProblems: (part) => textPostProblems(part, BLUESKY_LIMITS) },
  settingsProblems: blueskyProblems,
  withDefaults: blueskyDefaults,
});
