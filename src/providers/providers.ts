import type { AppContext } from '../http/context.js';
import { tiktokNotConfigured, type TikTokCreatorInfoSource } from './tiktok.js';

/** The adapters through which the service talks to the social networks. */
export interface Providers {
  tiktok: TikTokCreatorInfoSource;
}

/** What features that talk to the networks are built from: the application's context and the adapters. */
export interface ProvidersContext extends AppContext {
  providers: Providers;
}

/** The adapters of a server that talks to no network yet; tests replace them with fakes. */
export function defaultProviders(): Providers {
  return { tiktok: tiktokNotConfigured };
}
