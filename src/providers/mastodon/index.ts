import type { ProviderFactory } from '../provider-adapter.js';
import { textPostProblems } from '../text-rules.js';
import { MastodonAdapter } from './adapter.js';
import { MastodonApi } from './api.js';
import { MastodonConnection } from './connection.js';
import { MastodonInstanceRules } from './instance-rules.js';
import { MastodonInstances } from './instance.js';
import {
  MASTODON_ALT_TEXT_MAX,
  MASTODON_CONTENT_LIMIT,
  MASTODON_LIMITS,
  MASTODON_MAX_PARTS,
  mastodonDefaults,
  mastodonProblems,
} from './rules.js';

/**
 * Mastodon (any instance a user names): its rules hold on every server. Unless the operator turned it
 * off (MASTODON_ENABLED=false), accounts are connected and statuses published with an app this
 * server registers on each instance itself, and the rules take the limits of the channel's instance.
 */
export const mastodonNetwork: ProviderFactory<'mastodon'> = ({ config, outbound, clock, db, keyring }) => {
  const rules = {
    provider: 'mastodon',
    name: 'Mastodon',
    connectsAccounts: true,
    needsSettings: false,
    contentLimit: MASTODON_CONTENT_LIMIT,
    altTextMax: MASTODON_ALT_TEXT_MAX,
    thread: { maxParts: MASTODON_MAX_PARTS, partProblems: (part) => textPostProblems(part, MASTODON_LIMITS) },
    settingsProblems: mastodonProblems,
    withDefaults: mastodonDefaults,
  } satisfies ReturnType<ProviderFactory<'mastodon'>>;
  if (!config.mastodon) return rules;
  const api = new MastodonApi(outbound);
  const instances = new MastodonInstances(api, db, keyring, config, clock);
  const instanceRules = new MastodonInstanceRules(instances, keyring);
  return {
    ...rules,
    thread: { maxParts: MASTODON_MAX_PARTS, partProblems: (part) => instanceRules.partProblems(part) },
    settingsProblems: (check) => instanceRules.settingsProblems(check),
    channelContentLimit: (channel) => instanceRules.contentLimit(channel),
    connection: new MastodonConnection(api, instances),
    publishing: new MastodonAdapter(api, db, keyring, clock),
  };
};
