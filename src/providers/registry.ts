import type { AppContext } from '../http/context.js';
import type { Provider } from '../core/contract.js';
import type { ProviderAdapter, ProviderDependencies, ProviderFactory, Providers } from './provider-adapter.js';
import { blueskyNetwork } from './bluesky/index.js';
import { facebookNetwork } from './facebook/index.js';
import { instagramNetwork } from './instagram/index.js';
import { linkedinNetwork } from './linkedin/index.js';
import { mastodonNetwork } from './mastodon/index.js';
import { pinterestNetwork } from './pinterest/index.js';
import { sandboxNetwork } from './sandbox/index.js';
import { threadsNetwork } from './threads/index.js';
import { tiktokNetwork } from './tiktok/index.js';
import { xNetwork } from './x/index.js';
import { youtubeNetwork } from './youtube/index.js';

export type { Providers } from './provider-adapter.js';

/**
 * Every network the service knows: adding one is a folder of its own and a line here (and its
 * `Provider` in the contract).
 */
const NETWORKS: { [P in Provider]: ProviderFactory<P> } = {
  sandbox: sandboxNetwork,
  youtube: youtubeNetwork,
  tiktok: tiktokNetwork,
  bluesky: blueskyNetwork,
  mastodon: mastodonNetwork,
  x: xNetwork,
  facebook: facebookNetwork,
  instagram: instagramNetwork,
  threads: threadsNetwork,
  linkedin: linkedinNetwork,
  pinterest: pinterestNetwork,
};

/** What features that talk to the networks are built from: the application's context and the adapters. */
export interface ProvidersContext extends AppContext {
  providers: Providers;
}

/** Parts of some networks' adapters to use instead of the configured ones (tests give fakes). */
export type ProviderOverrides = { [P in Provider]?: Partial<ProviderAdapter<P>> };

/** The adapters of every network, as the configuration makes them, with `overrides` in place of some of their parts. */
export function createProviders(deps: ProviderDependencies, overrides: ProviderOverrides = {}): Providers {
  const build = <P extends Provider>(provider: P): ProviderAdapter<P> => ({
    ...NETWORKS[provider](deps),
    ...overrides[provider],
  });
  return Object.fromEntries(
    (Object.keys(NETWORKS) as Provider[]).map((provider) => [provider, build(provider)]),
  ) as unknown as Providers;
}

/** The networks in a stable order, for pages that list them. */
export function allNetworks(providers: Providers): ProviderAdapter[] {
  return (Object.keys(NETWORKS) as Provider[]).map((provider) => providers[provider] as ProviderAdapter);
}
