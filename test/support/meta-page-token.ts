import type { FakeMeta } from './fake-meta.js';

/**
 * The first Page's token from the fake Meta, as a connection through Facebook Login for Business
 * derives it: the dialog's code, a long-lived user token, then `/me/accounts`. It is the token an
 * Instagram account linked to that Page is published with.
 */
export async function metaPageToken(meta: FakeMeta, version = 'v23.0'): Promise<string> {
  const redirectUri = 'http://127.0.0.1:9/channels/callback/facebook';
  const dialog = new URL(`${meta.wwwUrl}/${version}/dialog/oauth`);
  dialog.search = new URLSearchParams({
    client_id: meta.appId,
    redirect_uri: redirectUri,
    state: 'st',
    response_type: 'code',
    scope: Object.values(meta.configurations)[0]!.join(','),
  }).toString();
  const back = await fetch(dialog, { redirect: 'manual' });
  const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
  const get = async (path: string, params: Record<string, string>) => {
    const url = new URL(`${meta.url}/${version}${path}`);
    url.search = new URLSearchParams(params).toString();
    return (await (await fetch(url)).json()) as Record<string, unknown>;
  };
  const app = { client_id: meta.appId, client_secret: meta.appSecret };
  const short = await get('/oauth/access_token', { ...app, redirect_uri: redirectUri, code });
  const long = await get('/oauth/access_token', {
    ...app,
    grant_type: 'fb_exchange_token',
    fb_exchange_token: short.access_token as string,
  });
  const pages = await get('/me/accounts', { access_token: long.access_token as string });
  return (pages.data as { id: string; access_token: string }[]).find((p) => p.id === meta.pages[0]!.id)!.access_token;
}
