import type { EnvReader } from './env-reader.js';

/** The operator's Pinterest app, through which channels connect Pinterest accounts and publish pins. */
export interface PinterestConfig {
  appId: string;
  appSecret: string;
  /** Where Pinterest's API answers, tokens included (https://api.pinterest.com). */
  apiUrl: string;
  /** Pinterest's consent page (https://www.pinterest.com/oauth/). */
  authorizeUrl: string;
}

/** The operator's Pinterest app, when PINTEREST_APP_ID and PINTEREST_APP_SECRET are set. */
export function readPinterest(read: EnvReader): PinterestConfig | undefined {
  const app = read.pair('PINTEREST_APP_ID', 'PINTEREST_APP_SECRET', 'the Pinterest app of this server');
  if (!app) return undefined;
  const [appId, appSecret] = app;
  const authorizeUrl = read.text('PINTEREST_AUTHORIZE_URL') || 'https://www.pinterest.com/oauth/';
  const parsed = URL.parse(authorizeUrl);
  if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.search || parsed.hash)
    read.problem(`PINTEREST_AUTHORIZE_URL must be an http(s) URL without a query, got "${authorizeUrl}"`);
  return {
    appId,
    appSecret,
    apiUrl: read.origin('PINTEREST_API_URL', 'https://api.pinterest.com'),
    authorizeUrl,
  };
}
