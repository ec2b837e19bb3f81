import type { ProviderFactory } from '../provider-adapter.js';
import { textPostProblems } from '../text-rules.js';
import {
  MASTODON_ALT_TEXT_MAX,
  MASTODON_CONTENT_LIMIT,
  MASTODON_LIMITS,
  MASTODON_MAX_PARTS,
  mastodonDefaults,
  mastodonProblems,
} from './rules.js';

/** Mastodon (any instance a user names): its rules hold on every server. */
export const mastodonNetwork: ProviderFactory<'mastodon'> = () => ({
  provider: 'mastodon',
  name: 'Mastodon',
  connectsAccounts: true,
  needsSettings: false,
  contentLimit: MASTODON_CONTENT_LIMIT,
  altTextMax: MASTODON_ALT_TEXT_MAX,
  thread: { maxParts: MASTODON_MAX_PARTS, partProblems: (part) => textPostProblems(part, MASTODON_LIMITS) },
  settingsProblems: mastodonProblems,
  withDefaults: mastodonDefaults,
});
