import type { StoredFacebookCredentials } from '../../src/providers/facebook/credentials.js';
import type { FakeMeta } from './fake-meta.js';

/** The permissions a Page's channel publishes with (Facebook Login for Business). */
export const PAGE_SCOPES = [
  'pages_show_list',
  'pages_read_engagement',
  'pages_manage_posts',
  'pages_manage_engagement',
];

/**
 * A Page's credentials as connecting stores them, from the fake's login: the dialog's code traded for a
 * user token, that one for a long-lived one, and the Page's token from `/me/accounts`.
 */
export async function pageCredentials(meta: FakeMeta, pageId: string): Promise<StoredFacebookCredentials> {
  const version = 'v23.0';
  const dialog = new URL(`${meta.wwwUrl}/${version}/dialog/oauth`);
  dialog.search = new URLSearchParams({
    client_id: meta.appId,
    redirect_uri: 'http://127.0.0.1:9/channels/callback/facebook',
    state: 'st',
    response_type: 'code',
    scope: PAGE_SCOPES.join(','),
  }).toString();
  const back = await fetch(dialog, { redirect: 'manual' });
  const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
  const get = async (path: string, params: Record<string, string>) => {
    const url = new URL(`${meta.url}/${version}/${path}`);
    url.search = new URLSearchParams(params).toString();
    return (await (await fetch(url)).json()) as Record<string, unknown>;
  };
  const short = await get('oauth/access_token', {
    client_id: meta.appId,
    client_secret: meta.appSecret,
    redirect_uri: 'http://127.0.0.1:9/channels/callback/facebook',
    code,
  });
  const long = await get('oauth/access_token', {
    grant_type: 'fb_exchange_token',
    client_id: meta.appId,
    client_secret: meta.appSecret,
    fb_exchange_token: short.access_token as string,
  });
  const userAccessToken = long.access_token as string;
  const accounts = (await get('me/accounts', { access_token: userAccessToken })) as {
    data: { id: string; access_token: string }[];
  };
  const page = accounts.data.find((p) => p.id === pageId)!;
  return {
    accessToken: page.access_token,
    refreshToken: null,
    expiresAt: null,
    scopes: PAGE_SCOPES,
    facebook: { userAccessToken },
  };
}
