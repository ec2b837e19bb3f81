import type { ProviderFactory } from '../provider.js';
import { tiktokProblems } from './rules.js';

/**
 * TikTok (TikTok for Developers: Login Kit, Content Posting API, Display API). Its rules hold on
 * every server; connecting accounts, creator info and publishing need the operator's TikTok app.
 */
export const tiktokNetwork: ProviderFactory<'tiktok'> = () => ({
  provider: 'tiktok',
  name: 'TikTok',
  connectsAccounts: true,
  needsSettings: true,
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
});
