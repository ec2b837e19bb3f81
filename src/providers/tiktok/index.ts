import { AccountTokens } from '../account-tokens.js';
import type { ProviderFactory } from '../provider-adapter.js';
import { TikTokAdapter } from './adapter.js';
import { TikTokAnalytics } from './analytics.js';
import { TikTokApi } from './api.js';
import { TikTokConnection } from './connection.js';
import { TikTokCreatorInfo } from './creator-info.js';
import { TIKTOK_CONTENT_LIMIT, tiktokProblems } from './rules.js';
import { TikTokTokens } from './tokens.js';

/**
 * TikTok (TikTok for Developers: Login Kit, Content Posting API, Display API). Its rules hold on
 * every server; connecting accounts, creator info, publishing and analytics need the operator's
 * TikTok app (TIKTOK_CLIENT_KEY and TIKTOK_CLIENT_SECRET).
 */
export const tiktokNetwork: ProviderFactory<'tiktok'> = ({ config, outbound, clock, db, keyring, metrics }) => {
  const rules = {
    provider: 'tiktok',
    name: 'TikTok',
    connectsAccounts: true,
    needsSettings: true,
    contentLimit: TIKTOK_CONTENT_LIMIT,
    settingsProblems: tiktokProblems,
    withDefaults: (settings) => ({
      ...settings,
      disableComment: settings.disableComment ?? false,
      disableDuet: settings.disableDuet ?? false,
      disableStitch: settings.disableStitch ?? false,
      brandContentToggle: settings.brandContentToggle ?? false,
      brandOrganicToggle: settings.brandOrganicToggle ?? false,
      isAiGenerated: settings.isAiGenerated ?? false,
    }),
  } satisfies ReturnType<ProviderFactory<'tiktok'>>;
  if (!config.tiktok) return rules;
  const api = new TikTokApi(config.tiktok, outbound);
  const connection = new TikTokConnection(config.tiktok, api, clock);
  const tokens = new TikTokTokens(new AccountTokens(db, keyring, connection, clock, metrics));
  const creatorInfo = new TikTokCreatorInfo(api, tokens, db, clock);
  return {
    ...rules,
    connection,
    creatorInfo,
    analytics: new TikTokAnalytics(api, tokens, db, clock),
    publishing: new TikTokAdapter(config.tiktok, api, tokens, creatorInfo, clock),
  };
};
