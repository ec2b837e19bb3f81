import type { Provider } from '../core/contract.js';
import type { AppContext } from '../http/context.js';
import type { OutboundClient } from '../net/outbound-client.js';
import type { PublishingAdapter } from './adapter.js';
import { SandboxAdapter } from './sandbox/adapter.js';
import { tiktokNotConfigured, type TikTokCreatorInfoSource } from './tiktok.js';

/** The adapters through which the service talks to the social networks. */
export interface Providers {
  tiktok: TikTokCreatorInfoSource;
  /** How each network publishes; a network this server has no app of is absent. */
  publishing: Partial<Record<Provider, PublishingAdapter>>;
}

/** What features that talk to the networks are built from: the application's context and the adapters. */
export interface ProvidersContext extends AppContext {
  providers: Providers;
}

export interface ProviderDependencies {
  outbound: OutboundClient;
  /** Where the sandbox network answers (SANDBOX_NETWORK_URL, this server by default). */
  sandboxUrl: () => string;
  /** The key sandbox channels' requests are signed with. */
  sandboxKey: Buffer;
  /** The limits the sandbox declares (SANDBOX_CONCURRENCY_PER_CHANNEL, SANDBOX_STARTS_PER_MINUTE). */
  sandboxLimits: PublishingAdapter['limits'];
}

/** The adapters of the networks this server is configured for; tests replace some with fakes. */
export function defaultProviders(deps: ProviderDependencies): Providers {
  return {
    tiktok: tiktokNotConfigured,
    publishing: { sandbox: new SandboxAdapter(deps.outbound, deps.sandboxUrl, deps.sandboxKey, deps.sandboxLimits) },
  };
}
