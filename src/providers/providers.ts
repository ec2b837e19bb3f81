import { tiktokNotConfigured, type TikTokCreatorInfoSource } from './tiktok.js';

/** The adapters through which the service talks to the social networks. */
export interface Providers {
  tiktok: TikTokCreatorInfoSource;
}

/** The adapters of a server that talks to no network yet; tests replace them with fakes. */
export function defaultProviders(): Providers {
  return { tiktok: tiktokNotConfigured };
}
