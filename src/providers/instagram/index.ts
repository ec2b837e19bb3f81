import type { ProviderFactory } from '../provider-adapter.js';
import { INSTAGRAM_COMMENT_MAX, INSTAGRAM_CONTENT_LIMIT, instagramDefaults, instagramProblems } from './rules.js';

/** Instagram professional accounts (the Instagram Graph API): its rules hold on every server. */
export const instagramNetwork: ProviderFactory<'instagram'> = () => ({
  provider: 'instagram',
  name: 'Instagram',
  // Its accounts connect once its connection flow is built (Facebook Login, Instagram Login, Threads's OAuth).
  connectsAccounts: false,
  needsSettings: false,
  contentLimit: INSTAGRAM_CONTENT_LIMIT,
  firstComment: { maxLength: INSTAGRAM_COMMENT_MAX },
  settingsProblems: instagramProblems,
  withDefaults: instagramDefaults,
});
