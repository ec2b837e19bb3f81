import type { Provider } from '../core/contract.js';
import type { AppContext } from '../http/context.js';
import type { OutboundClient } from '../net/outbound-client.js';
import type { PublishingAdapter } from './adapter.js';
import type { ConnectionAdapter } from './connection.js';
import { SandboxAdapter } from './sandbox/adapter.js';
import { YouTubeAdapter } from './youtube/adapter.js';
import { YouTubeConnection, type YouTubeSettings } from './youtube/connection.js';
import { AccountTokens } from './account-tokens.js';
import type { Db } from '../db/database.js';
import type { Keyring } from '../crypto/keyring.js';
import { tiktokNotConfigured, type TikTokCreatorInfoSource } from './tiktok.js';

/** The adapters through which the service talks to the social networks. */
export interface Providers {
  tiktok: TikTokCreatorInfoSource;
  /** How each network publishes; a network this server has no app of is absent. */
  publishing: Partial<Record<Provider, PublishingAdapter>>;
  /** How a user connects an account of each network; a network this server has no app of is absent. */
  connections: Partial<Record<Provider, ConnectionAdapter>>;
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
  /** The operator's Google app, if configured. */
  youtube: (YouTubeSettings & { uploadChunkBytes: number }) | undefined;
  clock: () => Date;
  db: Db;
  keyring: Keyring;
}

/** The adapters of the networks this server is configured for; tests replace some with fakes. */
export function defaultProviders(deps: ProviderDependencies): Providers {
  const youtube = deps.youtube ? new YouTubeConnection(deps.youtube, deps.outbound, deps.clock) : undefined;
  return {
    tiktok: tiktokNotConfigured,
    publishing: {
      sandbox: new SandboxAdapter(deps.outbound, deps.sandboxUrl, deps.sandboxKey, deps.sandboxLimits),
      ...(youtube ? { youtube: new YouTubeAdapter(deps.youtube!, deps.outbound, new AccountTokens(deps.db, deps.keyring, youtube, deps.clock), deps.youtube!.uploadChunkBytes) } : {}),
    },
    connections: youtube ? { youtube } : {},
  };
}
