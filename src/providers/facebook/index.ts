import type { ProviderFactory } from '../provider-adapter.js';
import { FACEBOOK_COMMENT_MAX, FACEBOOK_CONTENT_LIMIT, facebookDefaults, facebookProblems } from './rules.js';

/** Facebook Pages (the Graph API): its rules hold on every server. */
export const facebookNetwork: ProviderFactory<'facebook'> = () => ({
  provider: 'facebook',
  name: 'Facebook',
  // Its accounts connect once its connection flow is built (Facebook Login, Instagram Login, Threads's OAuth).
  connectsAccounts: false,
  needsSettings: false,
  contentLimit: FACEBOOK_CONTENT_LIMIT,
  firstComment: { maxLength: FACEBOOK_COMMENT_MAX },
  settingsProblems: facebookProblems,
  withDefaults: facebookDefaults,
});
