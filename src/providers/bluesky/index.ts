import type { ProviderFactory } from '../provider-adapter.js';
import { textPostProblems } from '../text-rules.js';
import { BLUESKY_VIDEO_ALT_MAX, BlueskyAdapter } from './adapter.js';
import { BlueskyApi } from './api.js';
import { BlueskyConnection } from './connection.js';
import {
  BLUESKY_ALT_TEXT_MAX,
  BLUESKY_CONTENT_LIMIT,
  BLUESKY_LIMITS,
  BLUESKY_MAX_PARTS,
  blueskyDefaults,
  blueskyProblems,
} from './rules.js';

/**
 * Bluesky (the AT Protocol): its rules hold on every server. Unless the operator turned it off
 * (BLUESKY_ENABLED), users connect accounts of bsky.social or of any PDS with an app password, and
 * posts are published to them.
 */
export const blueskyNetwork: ProviderFactory<'bluesky'> = ({ config, outbound, keyring, clock }) => {
  const rules = {
    provider: 'bluesky',
    name: 'Bluesky',
    connectsAccounts: true,
    needsSettings: false,
    contentLimit: BLUESKY_CONTENT_LIMIT,
    altTextMax: BLUESKY_ALT_TEXT_MAX,
    videoAltTextMax: BLUESKY_VIDEO_ALT_MAX,
    thread: { maxParts: BLUESKY_MAX_PARTS, partProblems: (part) => textPostProblems(part, BLUESKY_LIMITS) },
    settingsProblems: blueskyProblems,
    withDefaults: blueskyDefaults,
  } satisfies ReturnType<ProviderFactory<'bluesky'>>;
  if (!config.bluesky) return rules;
  const api = new BlueskyApi(outbound);
  return {
    ...rules,
    connection: new BlueskyConnection(config.bluesky, api),
    publishing: new BlueskyAdapter(api, outbound, keyring, clock),
  };
};
