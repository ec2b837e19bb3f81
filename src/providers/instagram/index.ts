import { GraphApi } from '../meta/graph.js';
import type { ProviderFactory } from '../provider-adapter.js';
import { InstagramLoginConnection } from './connection.js';
import { INSTAGRAM_COMMENT_MAX, INSTAGRAM_CONTENT_LIMIT, instagramDefaults, instagramProblems } from './rules.js';

/**
 * Instagram professional accounts: its rules hold on every server; accounts without a Facebook Page
 * connect through the operator's Instagram Login app (INSTAGRAM_APP_ID and INSTAGRAM_APP_SECRET).
 */
export const instagramNetwork: ProviderFactory<'instagram'> = ({ config, outbound, clock }) => {
  const rules = {
    provider: 'instagram',
    name: 'Instagram',
    // Its accounts connect once a login is configured (Instagram Login here; Facebook Login's accounts too).
    connectsAccounts: false,
    needsSettings: false,
    contentLimit: INSTAGRAM_CONTENT_LIMIT,
    firstComment: { maxLength: INSTAGRAM_COMMENT_MAX },
    settingsProblems: instagramProblems,
    withDefaults: instagramDefaults,
  } satisfies ReturnType<ProviderFactory<'instagram'>>;
  if (!config.instagramLogin) return rules;
  const { graphUrl, graphVersion } = config.instagramLogin;
  const graph = new GraphApi({ network: 'Instagram', url: graphUrl, version: graphVersion }, outbound);
  return {
    ...rules,
    connectsAccounts: true,
    connection: new InstagramLoginConnection(config.instagramLogin, graph, clock),
  };
};
