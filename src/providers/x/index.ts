import { AccountTokens } from '../account-tokens.js';
import type { ProviderFactory } from '../provider-adapter.js';
import { textPostProblems } from '../text-rules.js';
import { XAdapter } from './adapter.js';
import { XApi } from './api.js';
import { XConnection } from './connection.js';
import { XMedia } from './media.js';
import { X_ALT_TEXT_MAX, X_CONTENT_LIMIT, X_LIMITS, X_MAX_PARTS, xDefaults, xProblems } from './rules.js';
import { XTimeline } from './timeline.js';
import { XTokens } from './tokens.js';

/**
 * X (API v2). Its rules hold on every server; connecting accounts and publishing need the operator's
 * X app (X_CLIENT_ID and X_CLIENT_SECRET).
 */
export const xNetwork: ProviderFactory<'x'> = ({ config, outbound, clock, db, keyring, metrics }) => {
  const rules = {
    provider: 'x',
    name: 'X',
    connectsAccounts: true,
    needsSettings: false,
    contentLimit: X_CONTENT_LIMIT,
    altTextMax: X_ALT_TEXT_MAX,
    thread: { maxParts: X_MAX_PARTS, partProblems: (part) => textPostProblems(part, X_LIMITS) },
    settingsProblems: xProblems,
    withDefaults: xDefaults,
  } satisfies ReturnType<ProviderFactory<'x'>>;
  if (!config.x) return rules;
  const api = new XApi(config.x, outbound);
  const connection = new XConnection(config.x, api, clock);
  const tokens = new XTokens(new AccountTokens(db, keyring, connection, clock, metrics));
  return {
    ...rules,
    connection,
    publishing: new XAdapter(api, tokens, new XMedia(api, tokens, clock), new XTimeline(api, tokens, clock), clock),
  };
};
