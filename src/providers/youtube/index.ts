import { AccountTokens } from '../account-tokens.js';
import type { ProviderFactory } from '../provider-adapter.js';
import { YouTubeAdapter } from './adapter.js';
import { YouTubeConnection } from './connection.js';
import { YOUTUBE_CONTENT_LIMIT, youtubeProblems } from './rules.js';

/**
 * YouTube (YouTube Data API v3, Google's OAuth 2.0 for web server apps). Accounts are connected and
 * videos published only when the operator configured a Google app (YOUTUBE_CLIENT_ID and
 * YOUTUBE_CLIENT_SECRET).
 */
export const youtubeNetwork: ProviderFactory<'youtube'> = ({ config, outbound, clock, db, keyring, metrics }) => {
  const rules = {
    provider: 'youtube',
    name: 'YouTube',
    connectsAccounts: true,
    needsSettings: true,
    contentLimit: YOUTUBE_CONTENT_LIMIT,
    settingsProblems: (check) => Promise.resolve(youtubeProblems(check)),
    withDefaults: (settings) => ({ ...settings, tags: settings.tags ?? [] }),
  } satisfies ReturnType<ProviderFactory<'youtube'>>;
  if (!config.youtube) return rules;
  const connection = new YouTubeConnection(config.youtube, outbound, clock);
  const tokens = new AccountTokens(db, keyring, connection, clock, metrics);
  return {
    ...rules,
    connection,
    publishing: new YouTubeAdapter(config.youtube, outbound, tokens, config.youtube.uploadChunkBytes, clock),
  };
};
