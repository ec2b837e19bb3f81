import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Service, { ServiceError } from '../src/sdk/src/index.js';
import { dataOf, publicApi, type RequestBody } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { startFakeGoogle, youtubeEnv, type FakeGoogle } from './support/fake-google.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { approve, createOAuthApp, exchange, type TestApp } from './support/oauth.js';
import { startTestServer, type TestServer } from './support/server.js';

// An integrator connects its user's YouTube channel through the Public API: it asks for the
// network's consent page, the user's browser goes there and comes back to this server's callback
// (no session of this server involved), and is sent on to the integrator's return URL.
const RETURN_URL = 'https://app.example.org/integrations/youtube/done?from=settings';
let google: FakeGoogle;
let server: TestServer;
let org: TestOrganization;
let app: TestApp;
let appToken: string;

beforeAll(async () => {
  google = await startFakeGoogle({
    account: { channelId: 'UC_api_connect_0001', title: 'Acme via API', handle: '@acmeapi' },
  });
  server = await startTestServer({ env: youtubeEnv(google) });
  org = await createOrganization(server.ctx.db, 'Acme');
  app = await createOAuthApp(server.ctx.db, org.id, { redirectUri: 'https://app.example.org/oauth/callback' });
  appToken = await exchange(server, app, await approve(server.ctx.db, app, org));
});
afterAll(async () => {
  await server?.close();
  await google?.close();
});

/** Asks for a connection as the app (or as `auth`). */
function connect(
  body: RequestBody<'connectChannel'>,
  auth: { Authorization: string } = { Authorization: `Bearer ${appToken}` },
) {
  return publicApi(server, auth).POST('/public/v1/channels/connect', { body });
}

/** Sends, as the app, a body the contract refuses. */
function connectRequest(body: unknown): Promise<Response> {
  return server.fetch('/public/v1/channels/connect', {
    method: 'POST',
    headers: { Authorization: `Bearer ${appToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** The user's browser: to Google's consent page, back to this server's callback, and on to wherever it sends them. */
async function followAsUser(authorizationUrl: string): Promise<URL> {
  const atGoogle = await fetch(authorizationUrl, { redirect: 'manual' });
  expect(atGoogle.status).toBe(302);
  const callback = new URL(atGoogle.headers.get('location')!);
  const back = await server.fetch(callback.pathname + callback.search, { redirect: 'manual' });
  expect(back.status).toBe(303);
  return new URL(back.headers.get('location')!);
}

async function youtubeChannelsOf(organizationId: string) {
  return server.ctx.db
    .selectFrom('channels')
    .select(['id', 'status', 'external_id'])
    .where('organization_id', '=', organizationId)
    .where('provider', '=', 'youtube')
    .execute();
}

describe('POST /public/v1/channels/connect with an OAuth app token', () => {
  it('answers Google’s consent page, and the user lands on the return URL with the new channel and the state', async () => {
    const body = await dataOf(connect({ provider: 'youtube', returnUrl: RETURN_URL, state: 'user-8841' }), 200);
    const authorize = new URL(body.authorizationUrl);
    expect(authorize.origin + authorize.pathname).toBe(`${google.url}/o/oauth2/v2/auth`);
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${server.ctx.config.publicUrl}/channels/callback/youtube`);
    // The integrator's state stays here; Google gets one of this server's.
    expect(authorize.searchParams.get('state')).not.toBe('user-8841');
    expect(Date.parse(body.expiresAt) - Date.now()).toBeGreaterThan(14 * 60_000);

    const landed = await followAsUser(body.authorizationUrl);
    expect(landed.origin + landed.pathname).toBe('https://app.example.org/integrations/youtube/done');
    expect(landed.searchParams.get('from')).toBe('settings');
    expect(landed.searchParams.get('state')).toBe('user-8841');
    expect(landed.searchParams.get('reconnected')).toBe('false');
    const [channel] = await youtubeChannelsOf(org.id);
    expect(landed.searchParams.get('channelId')).toBe(channel!.id);
    expect(channel).toMatchObject({ status: 'active', external_id: 'UC_api_connect_0001' });

    // The same account again updates that channel.
    const again = await dataOf(connect({ provider: 'youtube', returnUrl: RETURN_URL }), 200);
    const relanded = await followAsUser(again.authorizationUrl);
    expect(relanded.searchParams.get('channelId')).toBe(channel!.id);
    expect(relanded.searchParams.get('reconnected')).toBe('true');
    expect(relanded.searchParams.has('state')).toBe(false);
    expect(await youtubeChannelsOf(org.id)).toHaveLength(1);
  });

  it('sends the user back with error=access_denied when they refuse on Google’s page, and connects nothing', async () => {
    const other = await createOrganization(server.ctx.db, 'Refusers');
    const token = await exchange(server, app, await approve(server.ctx.db, app, other));
    const { authorizationUrl } = await dataOf(
      connect({ provider: 'youtube', returnUrl: RETURN_URL, state: 's1' }, { Authorization: `Bearer ${token}` }),
      200,
    );
    google.deny();
    const landed = await followAsUser(authorizationUrl);
    expect(landed.searchParams.get('error')).toBe('access_denied');
    expect(landed.searchParams.get('errorDescription')).toMatch(/did not allow access/);
    expect(landed.searchParams.get('state')).toBe('s1');
    expect(landed.searchParams.has('channelId')).toBe(false);
    expect(await youtubeChannelsOf(other.id)).toHaveLength(0);
  });

  it('connects nothing when the organization revoked the app while the user was at Google', async () => {
    const other = await createOrganization(server.ctx.db, 'Revokers');
    const token = await exchange(server, app, await approve(server.ctx.db, app, other));
    const { authorizationUrl } = await dataOf(
      connect({ provider: 'youtube', returnUrl: RETURN_URL }, { Authorization: `Bearer ${token}` }),
      200,
    );
    await server.ctx.db.deleteFrom('oauth_grants').where('organization_id', '=', other.id).execute();
    const landed = await followAsUser(authorizationUrl);
    expect(landed.searchParams.get('error')).toBe('refused');
    expect(await youtubeChannelsOf(other.id)).toHaveLength(0);
  });

  it('sends the user back with error=expired after 15 minutes, and a replayed answer gets no redirect', async () => {
    const { authorizationUrl } = await dataOf(
      connect({ provider: 'youtube', returnUrl: RETURN_URL, state: 'late' }),
      200,
    );
    const atGoogle = await fetch(authorizationUrl, { redirect: 'manual' });
    const callback = new URL(atGoogle.headers.get('location')!);
    await server.ctx.db
      .updateTable('channel_connections')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .execute();
    const late = await server.fetch(callback.pathname + callback.search, { redirect: 'manual' });
    expect(late.status).toBe(303);
    const landed = new URL(late.headers.get('location')!);
    expect(landed.searchParams.get('error')).toBe('expired');
    expect(landed.searchParams.get('state')).toBe('late');
    // Used up: the same answer again belongs to no connection, and goes nowhere but an error page.
    const replayed = await server.fetch(callback.pathname + callback.search, { redirect: 'manual' });
    expect(replayed.status).toBe(400);
    expect(replayed.headers.get('location')).toBeNull();
  });

  it('refuses a return URL off the app’s registered origin, or not https', async () => {
    for (const returnUrl of [
      'https://evil.example/done',
      'https://app.example.org.evil.example/done',
      'http://app.example.org/done',
      'https://user:pw@app.example.org/done',
      'https://app.example.org/done#frag',
    ]) {
      const { error, response } = await connect({ provider: 'youtube', returnUrl });
      expect(response.status, returnUrl).toBe(422);
      expect(error?.error.code).toBe('unprocessable');
      expect(error?.error.details?.[0]?.path).toBe('returnUrl');
    }
    expect(
      await server.ctx.db
        .selectFrom('channel_connections')
        .select('id')
        .where('return_url', 'like', '%evil%')
        .execute(),
    ).toHaveLength(0);
  });

  it('validates the request against the contract', async () => {
    expect((await connectRequest({ provider: 'sandbox', returnUrl: RETURN_URL })).status).toBe(400);
    expect((await connectRequest({ provider: 'youtube' })).status).toBe(400);
    expect((await connectRequest({ provider: 'youtube', returnUrl: RETURN_URL, state: 'x'.repeat(501) })).status).toBe(
      400,
    );
    expect((await connectRequest({ provider: 'youtube', returnUrl: RETURN_URL, extra: 1 })).status).toBe(400);
  });

  it('refuses a network the operator has not configured', async () => {
    const { error, response } = await connect({ provider: 'tiktok', returnUrl: RETURN_URL });
    expect(response.status).toBe(422);
    expect(error?.error.message).toMatch(/not configured by the operator/);
  });
});

describe('POST /public/v1/channels/connect with an API key', () => {
  it('returns only to the origins the organization lists in Settings → Channels', async () => {
    const keyOrg = await createOrganization(server.ctx.db, 'Keyholders');
    const service = new Service(keyOrg.apiKey, server.baseUrl, { maxRetries: 0 });
    const refused = await service
      .connectChannel({ provider: 'youtube', returnUrl: 'https://partner.example.com/back' })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ServiceError);
    expect((refused as ServiceError).status).toBe(422);
    expect((refused as ServiceError).message).toMatch(/not one of the organization's return origins/);

    const session = new BrowserSession(server);
    await session.logIn(keyOrg.email, keyOrg.password);
    for (const bad of [
      'not a url',
      'ftp://partner.example.com',
      'http://partner.example.com',
      'https://partner.example.com/path',
    ]) {
      const added = await session.submit('/settings/channels', '/settings/channels/return-origins', { origin: bad });
      expect(added.status, bad).toBe(400);
    }
    const added = await session.submit('/settings/channels', '/settings/channels/return-origins', {
      origin: 'https://partner.example.com/',
    });
    expect(added.status).toBe(303);
    const page = await (await session.get('/settings/channels?done=origin_added')).text();
    expect(page).toContain('https://partner.example.com');

    const { authorizationUrl } = await service.connectChannel({
      provider: 'youtube',
      returnUrl: 'https://partner.example.com/back',
      state: 'k',
    });
    const landed = await followAsUser(authorizationUrl);
    expect(landed.origin).toBe('https://partner.example.com');
    expect(landed.searchParams.get('channelId')).toMatch(/^ch_/);
    expect(landed.searchParams.get('state')).toBe('k');
    const channels = await service.channels();
    expect(channels.data.map((c) => c.id)).toContain(landed.searchParams.get('channelId'));

    // Another organization's list does not count, and a removed origin no longer works.
    expect(
      (await connect({ provider: 'youtube', returnUrl: 'https://partner.example.com/back' }, org.auth)).response.status,
    ).toBe(422);
    const removed = await session.submit('/settings/channels', '/settings/channels/return-origins/remove', {
      origin: 'https://partner.example.com',
    });
    expect(removed.status).toBe(303);
    expect(
      (await connect({ provider: 'youtube', returnUrl: 'https://partner.example.com/back' }, keyOrg.auth)).response
        .status,
    ).toBe(422);
  });

  it('accepts http only on loopback, for development', async () => {
    const devOrg = await createOrganization(server.ctx.db, 'Developers');
    const session = new BrowserSession(server);
    await session.logIn(devOrg.email, devOrg.password);
    expect(
      (
        await session.submit('/settings/channels', '/settings/channels/return-origins', {
          origin: 'http://localhost:5173',
        })
      ).status,
    ).toBe(303);
    const started = await connect({ provider: 'youtube', returnUrl: 'http://localhost:5173/cb' }, devOrg.auth);
    expect(started.response.status).toBe(200);
  });
});
