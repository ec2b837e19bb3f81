import type { EnvReader } from './env-reader.js';

/**
 * Mastodon: nothing to register beforehand. The service registers an app of its own on each instance a
 * user names (`POST /api/v1/apps`), under this name and website, which the instance shows on its
 * consent page and under the statuses the app posts.
 */
export interface MastodonConfig {
  /** The app's name on every instance (`client_name`, at most 60 characters). */
  appName: string;
  /** The app's website on every instance; `undefined` names PUBLIC_URL. */
  appWebsite: string | undefined;
}

/** Mastodon's limit of an app's name (Doorkeeper's application validation). */
const MAX_APP_NAME = 60;

/** Mastodon channels, unless MASTODON_ENABLED is false. */
export function readMastodon(read: EnvReader): MastodonConfig | undefined {
  const enabled = read.boolean('MASTODON_ENABLED', true);
  const appName = (read.text('MASTODON_APP_NAME') ?? 'Post Scheduler').trim();
  if (appName === '' || [...appName].length > MAX_APP_NAME)
    read.problem(`MASTODON_APP_NAME must have 1 to ${MAX_APP_NAME} characters, got "${appName}"`);
  const website = read.text('MASTODON_APP_WEBSITE');
  const appWebsite = website === undefined ? undefined : read.origin('MASTODON_APP_WEBSITE', website);
  return enabled ? { appName, appWebsite } : undefined;
}
