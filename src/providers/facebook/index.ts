import { GraphApi } from '../meta/graph.js';
import type { ProviderFactory } from '../provider-adapter.js';
import { FacebookAdapter } from './adapter.js';
import { FacebookConnection } from './connection.js';
import { FACEBOOK_COMMENT_MAX, FACEBOOK_CONTENT_LIMIT, facebookDefaults, facebookProblems } from './rules.js';

/**
 * Facebook Pages (the Graph API). Its rules hold on every server; connecting Pages (and the Instagram
 * accounts linked to them) and publishing need the operator's Meta app (META_APP_ID and META_APP_SECRET).
 */
export const facebookNetwork: ProviderFactory<'facebook'> = ({ config, outbound, clock, keyring }) => {
  const rules = {
    provider: 'facebook',
    name: 'Facebook',
    connectsAccounts: true,
    needsSettings: false,
    contentLimit: FACEBOOK_CONTENT_LIMIT,
    firstComment: { maxLength: FACEBOOK_COMMENT_MAX },
    settingsProblems: facebookProblems,
    withDefaults: facebookDefaults,
  } satisfies ReturnType<ProviderFactory<'facebook'>>;
  if (!config.meta) return rules;
  const graph = new GraphApi(
    { network: 'Facebook', url: config.meta.graphUrl, version: config.meta.graphVersion },
    outbound,
  );
  return {
    ...rules,
    connection: new FacebookConnection(config.meta, graph, clock),
    publishing: new FacebookAdapter(graph, keyring, config.meta.appId, clock),
  };
};
