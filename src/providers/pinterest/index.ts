import type { ProviderFactory } from '../provider-adapter.js';
import { PINTEREST_ALT_TEXT_MAX, PINTEREST_CONTENT_LIMIT, pinterestDefaults, pinterestProblems } from './rules.js';

/**
 * Pinterest (API v5). Its rules hold on every server; connecting accounts, reading their boards and
 * publishing pins need the operator's Pinterest app (PINTEREST_APP_ID and PINTEREST_APP_SECRET).
 */
export const pinterestNetwork: ProviderFactory<'pinterest'> = () => ({
  provider: 'pinterest',
  name: 'Pinterest',
  connectsAccounts: true,
  needsSettings: true,
  contentLimit: PINTEREST_CONTENT_LIMIT,
  altTextMax: PINTEREST_ALT_TEXT_MAX,
  settingsProblems: pinterestProblems,
  withDefaults: pinterestDefaults,
});
