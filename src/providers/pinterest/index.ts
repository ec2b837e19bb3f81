import { AccountTokens } from '../account-tokens.js';
import { mediaUnreachableReason } from '../meta/media-reach.js';
import type { ProviderFactory } from '../provider-adapter.js';
import { PinterestAdapter } from './adapter.js';
import { PinterestApi } from './api.js';
import { PinterestBoards } from './boards.js';
import { PinterestConnection } from './connection.js';
import { PINTEREST_ALT_TEXT_MAX, PINTEREST_CONTENT_LIMIT, pinterestDefaults, pinterestProblems } from './rules.js';
import { PinterestTokens } from './tokens.js';

/**
 * Pinterest (API v5). Its rules hold on every server; connecting accounts, reading their boards and
 * publishing pins need the operator's Pinterest app (PINTEREST_APP_ID and PINTEREST_APP_SECRET).
 */
export const pinterestNetwork: ProviderFactory<'pinterest'> = ({ config, outbound, clock, db, keyring, metrics }) => {
  const rules = {
    provider: 'pinterest',
    name: 'Pinterest',
    connectsAccounts: true,
    needsSettings: true,
    contentLimit: PINTEREST_CONTENT_LIMIT,
    altTextMax: PINTEREST_ALT_TEXT_MAX,
    settingsProblems: (check) => pinterestProblems(check, mediaUnreachableReason(config)),
    withDefaults: pinterestDefaults,
  } satisfies ReturnType<ProviderFactory<'pinterest'>> as ReturnType<ProviderFactory<'pinterest'>>;
  if (!config.pinterest) return rules;
  const api = new PinterestApi(config.pinterest, outbound);
  const connection = new PinterestConnection(config.pinterest, api, clock);
  const tokens = new PinterestTokens(new AccountTokens(db, keyring, connection, clock, metrics));
  return {
    ...rules,
    connection,
    boards: new PinterestBoards(api, tokens, db, clock),
    publishing: new PinterestAdapter(api, tokens, clock, mediaUnreachableReason(config) === undefined),
  };
};
