import { AccountTokens } from '../account-tokens.js';
import { GraphApi } from '../meta/graph.js';
import { mediaUnreachableReason } from '../meta/media-reach.js';
import type { ProviderFactory } from '../provider-adapter.js';
import { StoredInstagramAccounts } from './accounts.js';
import { InstagramAdapter } from './adapter.js';
import { InstagramLoginConnection } from './connection.js';
import { INSTAGRAM_COMMENT_MAX, INSTAGRAM_CONTENT_LIMIT, instagramDefaults, instagramProblems } from './rules.js';

/**
 * Instagram professional accounts: its rules hold on every server; accounts without a Facebook Page
 * connect through the operator's Instagram Login app (INSTAGRAM_APP_ID and INSTAGRAM_APP_SECRET).
 * Publishing goes through the API the channel was connected with: the Meta app's (META_APP_ID, an
 * account linked to a Facebook Page) or the Instagram Login app's.
 */
export const instagramNetwork: ProviderFactory<'instagram'> = ({ config, outbound, clock, db, keyring, metrics }) => {
  const rules = {
    provider: 'instagram',
    name: 'Instagram',
    // Connect Instagram is Instagram Login (the accounts of a Facebook Page also come with Connect Facebook);
    // without the operator's app, the page says it is not configured.
    connectsAccounts: true,
    needsSettings: false,
    contentLimit: INSTAGRAM_CONTENT_LIMIT,
    firstComment: { maxLength: INSTAGRAM_COMMENT_MAX },
    settingsProblems: (check) => instagramProblems(check, mediaUnreachableReason(config)),
    withDefaults: instagramDefaults,
  } satisfies ReturnType<ProviderFactory<'instagram'>>;
  const { meta, instagramLogin } = config;
  const facebookGraph =
    meta && new GraphApi({ network: 'Instagram', url: meta.graphUrl, version: meta.graphVersion }, outbound);
  const instagramGraph =
    instagramLogin &&
    new GraphApi(
      { network: 'Instagram', url: instagramLogin.graphUrl, version: instagramLogin.graphVersion },
      outbound,
    );
  const connection =
    instagramLogin && instagramGraph && new InstagramLoginConnection(instagramLogin, instagramGraph, clock);
  // An Instagram Login token is refreshed on use once it is near its end (a Page's token does not expire).
  const tokens = connection && new AccountTokens(db, keyring, connection, clock, metrics);
  const publishing =
    facebookGraph || instagramGraph
      ? new InstagramAdapter(
          {
            ...(facebookGraph ? { facebook: facebookGraph } : {}),
            ...(instagramGraph ? { instagram: instagramGraph } : {}),
          },
          new StoredInstagramAccounts(db, keyring, tokens),
          clock,
        )
      : undefined;
  return {
    ...rules,
    ...(connection ? { connection } : {}),
    ...(publishing ? { publishing } : {}),
  };
};
