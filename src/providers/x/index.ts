import type { ProviderFactory } from '../provider-adapter.js';
import { textPostProblems } from '../text-rules.js';
import { X_ALT_TEXT_MAX, X_CONTENT_LIMIT, X_LIMITS, X_MAX_PARTS, xDefaults, xProblems } from './rules.js';

/** X (API v2): its rules hold on every server. */
export const xNetwork: ProviderFactory<'x'> = () => ({
  provider: 'x',
  name: 'X',
  connectsAccounts: true,
  needsSettings: false,
  contentLimit: X_CONTENT_LIMIT,
  altTextMax: X_ALT_TEXT_MAX,
  thread: { maxParts: X_MAX_PARTS, partProblems: (part) => textPostProblems(part, X_LIMITS) },
  settingsProblems: xProblems,
  withDefaults: xDefaults,
});
