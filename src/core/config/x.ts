import type { EnvReader } from './env-reader.js';

/** The operator's X app, through which channels connect X accounts and publish to them. */
export interface XConfig {
  clientId: string;
  clientSecret: string;
  /** Where X's API answers, tokens included (https://api.x.com). */
  apiUrl: string;
  /** X's consent page (https://x.com/i/oauth2/authorize). */
  authorizeUrl: string;
}

/** The operator's X app, when X_CLIENT_ID and X_CLIENT_SECRET are set. */
export function readX(read: EnvReader): XConfig | undefined {
  const app = read.pair('X_CLIENT_ID', 'X_CLIENT_SECRET', 'the X app of this server');
  if (!app) return undefined;
  const [clientId, clientSecret] = app;
  const authorizeUrl = (read.text('X_AUTHORIZE_URL') || 'https://x.com/i/oauth2/authorize').replace(/\/+$/, '');
  const parsed = URL.parse(authorizeUrl);
  if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.search || parsed.hash)
    read.problem(`X_AUTHORIZE_URL must be an http(s) URL without a query, got "${authorizeUrl}"`);
  return { clientId, clientSecret, apiUrl: read.origin('X_API_URL', 'https://api.x.com'), authorizeUrl };
}
