import { AccountTokens } from '../account-tokens.js';
import type { ProviderFactory } from '../provider-adapter.js';
import { LinkedInAdapter } from './adapter.js';
import { LinkedInApi } from './api.js';
import { LinkedInConnection } from './connection.js';
import {
  LINKEDIN_ALT_TEXT_MAX,
  LINKEDIN_COMMENT_MAX,
  LINKEDIN_CONTENT_LIMIT,
  linkedinDefaults,
  linkedinProblems,
} from './rules.js';
import { LinkedInTokens } from './tokens.js';

/**
 * LinkedIn (the versioned Posts, Images, Videos and Documents APIs): members and the company pages they administer.
 * Its rules hold on every server; connecting accounts and publishing need the operator's LinkedIn app
 * (LINKEDIN_CLIENT_ID and LINKEDIN_CLIENT_SECRET).
 */
export const linkedinNetwork: ProviderFactory<'linkedin'> = ({ config, outbound, clock, db, keyring, metrics }) => {
  const rules = {
    provider: 'linkedin',
    name: 'LinkedIn',
    connectsAccounts: true,
    needsSettings: false,
    contentLimit: LINKEDIN_CONTENT_LIMIT,
    firstComment: { maxLength: LINKEDIN_COMMENT_MAX },
    takesDocuments: true,
    altTextMax: LINKEDIN_ALT_TEXT_MAX,
    settingsProblems: linkedinProblems,
    withDefaults: linkedinDefaults,
  } satisfies ReturnType<ProviderFactory<'linkedin'>>;
  if (!config.linkedin) return rules;
  const api = new LinkedInApi(config.linkedin, outbound);
  const connection = new LinkedInConnection(config.linkedin, api, clock);
  const tokens = new LinkedInTokens(new AccountTokens(db, keyring, connection, clock, metrics));
  return { ...rules, connection, publishing: new LinkedInAdapter(api, tokens, clock) };
};
