import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import { keepHouse } from '../src/housekeeping.js';
import type { Channel } from '../src/channels/tables.js';
import { channelCredentials } from '../src/providers/account-credentials.js';
import { revokeRemovedAccounts } from '../src/providers/account-revocations.js';
import { AccountTokens } from '../src/providers/account-tokens.js';
import type { ConsentConnection } from '../src/providers/connection-contract.js';
import type { InstagramCredentials } from '../src/providers/instagram/credentials.js';
import { ReconnectNeededError } from '../src/providers/publishing-contract.js';
import { publicApi } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { startFakeInstagramLogin, type FakeInstagramLogin } from './support/fake-instagram-login.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';

// Instagram professional accounts without a Facebook Page, connected through the operator's Instagram Login
// app against the fake Instagram: through POST /public/v1/channels/connect and in Settings → Channels, a
// consent the user refused, the 60-day token refreshed once by two workers that need it at once, and a token
// Instagram no longer takes (expired, or the app removed), after which the account must be connected again.
const RETURN_URL = 'https://app.example.org/instagram/done';
const DAY_MS = 86_400_000;
let instagram: FakeInstagramLogin;
let server: TestServer;
let org: TestOrganization;
let channelId: string;

const api = () => publicApi(server, org.auth);

/** Instagram's authorization window, which consents at once: where it sends the browser back. */
async function followConsent(url: string): Promise<URL> {
  const answer = await new Promise<{ status: number; location: string }>((resolve, reject) => {
    http
      .get(url, { agent: false }, (response) => {
        response.resume();
        resolve({ status: response.statusCode!, location: response.headers.location! });
      })
      .on('error', reject);
  });
  expect(answer.status).toBe(302);
  return new URL(answer.location);
}

/** The user's browser: to Instagram's window, back to this server's callback, and on to the return URL. */
async function connectAccount(): Promise<URL> {
  const { authorizationUrl } = dataOf(
    await api().POST('/public/v1/channels/connect', { body: { provider: 'instagram', returnUrl: RETURN_URL } }),
  );
  const back = await followConsent(authorizationUrl);
  const landed = await server.fetch(back.pathname + back.search, { redirect: 'manual' });
  expect(landed.status).toBe(303);
  return new URL(landed.headers.get('location')!);
}

async function channelRow(): Promise<Channel> {
  return server.ctx.db.selectFrom('channels').selectAll().where('id', '=', channelId).executeTakeFirstOrThrow();
}

async function channelStatus(): Promise<string | undefined> {
  return dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === channelId)?.status;
}

async function storedCredentials(): Promise<InstagramCredentials> {
  return channelCredentials(server.ctx.keyring, await channelRow()) as InstagramCredentials;
}

/** A worker's view of the channel's tokens, as an adapter that publishes gets it. */
function tokensOfAWorker(): AccountTokens {
  const connection = server.ctx.providers.instagram.connection as ConsentConnection;
  return new AccountTokens(server.ctx.db, server.ctx.keyring, connection, server.clock, server.ctx.metrics);
}

/** When a token issued now on the server's clock expires. */
const sixtyDaysOn = () => new Date(server.clock.now().getTime() + 60 * DAY_MS).toISOString();

const refreshes = () => instagram.requests.filter((r) => r.operation === 'refreshToken').length;

/** Moves the server's clock and Instagram's together, as days pass for both. */
function pass(days: number) {
  instagram.advanceClock(days * 86_400);
  server.setNow(new Date(instagram.now()));
}

beforeAll(async () => {
  instagram = await startFakeInstagramLogin();
  server = await startTestServer({
    env: {
      INSTAGRAM_APP_ID: instagram.appId,
      INSTAGRAM_APP_SECRET: instagram.appSecret,
      INSTAGRAM_AUTHORIZE_URL: instagram.authorizeUrl,
      INSTAGRAM_TOKEN_URL: instagram.url,
      INSTAGRAM_API_URL: instagram.url,
      INSTAGRAM_API_VERSION: instagram.version,
    },
  });
  server.setNow(new Date(instagram.now()));
  org = await createOrganization(server.ctx.db, 'Acme');
  await addReturnOrigin(server.ctx.db, org.id, new URL(RETURN_URL).origin);
}, TIMEOUTS.hook);
afterAll(async () => {
  await server?.close();
  await instagram?.close();
});

describe('an Instagram account connected through the API', () => {
  it('lands on the return URL with its channel, named as Instagram names the account', async () => {
    const landed = await connectAccount();
    expect(landed.origin + landed.pathname).toBe(RETURN_URL);
    channelId = landed.searchParams.get('channelId')!;
    const channel = dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === channelId);
    expect(channel).toMatchObject({
      provider: 'instagram',
      name: 'Acme Studio',
      username: 'acme.studio',
      picture: instagram.account.profilePictureUrl,
      status: 'active',
    });
    // The window was asked for publishing and comments, to come back to this server's callback.
    const consent = instagram.consents.at(-1)!;
    expect(consent.scopes).toEqual([
      'instagram_business_basic',
      'instagram_business_content_publish',
      'instagram_business_manage_comments',
    ]);
    expect(consent.redirectUri).toBe(`${server.ctx.config.publicUrl}/channels/callback/instagram`);
    expect(consent.state).toEqual(expect.any(String));
  });

  it('keeps the 60-day token, for Instagram Login, under the account’s professional id read from /me', async () => {
    // The token endpoint's user_id is a number JSON.parse cannot keep: the id is /me's, exactly.
    expect((await channelRow()).external_id).toBe(instagram.account.userId);
    const credentials = await storedCredentials();
    const token = instagram.tokens.find((t) => t.value === credentials.accessToken)!;
    expect(token.kind).toBe('long');
    expect(credentials).toEqual({
      accessToken: token.value,
      refreshToken: null,
      expiresAt: sixtyDaysOn(),
      scopes: ['instagram_business_basic', 'instagram_business_content_publish', 'instagram_business_manage_comments'],
      instagram: { api: 'instagram' },
    });
  });

  it('reads the token endpoint’s answer inside `data` too, and connecting again updates the same channel', async () => {
    instagram.tokenAnswerInData(true);
    try {
      const landed = await connectAccount();
      expect(landed.searchParams.get('channelId')).toBe(channelId);
      expect(landed.searchParams.get('reconnected')).toBe('true');
    } finally {
      instagram.tokenAnswerInData(false);
    }
    const credentials = await storedCredentials();
    expect(instagram.tokens.find((t) => t.value === credentials.accessToken)!.kind).toBe('long');
    expect(credentials.scopes).toContain('instagram_business_content_publish');
    const channels = dataOf(await api().GET('/public/v1/channels')).data.filter((c) => c.provider === 'instagram');
    expect(channels).toHaveLength(1);
  });

  it('connects nothing when the user refuses on Instagram’s window', async () => {
    instagram.deny();
    const landed = await connectAccount();
    expect(landed.searchParams.get('error')).toBe('access_denied');
    expect(landed.searchParams.get('errorDescription')).toMatch(/did not allow access/);
    expect(landed.searchParams.has('channelId')).toBe(false);
  });

  it('connects nothing when publishing was not allowed', async () => {
    const before = instagram.tokens.length;
    instagram.grantOnly(['instagram_business_manage_comments']);
    const landed = await connectAccount();
    expect(landed.searchParams.get('error')).toBe('refused');
    expect(landed.searchParams.get('errorDescription')).toMatch(/publishing to the account was not allowed/);
    // The short-lived token was not even made long-lived.
    expect(instagram.tokens.slice(before).map((t) => t.kind)).toEqual(['short']);
  });
});

describe('an Instagram account connected in Settings → Channels', () => {
  it('shows Connect Instagram, sends the user to Instagram’s window, and lists the channel with its username', async () => {
    const other = await createOrganization(server.ctx.db, 'Acme Web');
    const session = new BrowserSession(server);
    await session.logIn(other.email, other.password);
    const page = await session.get('/settings/channels');
    const html = await page.text();
    expect(html).toContain('action="/settings/channels/connect/instagram"');
    expect(html).toContain('Connect Instagram</button>');
    // The form is sent on to Instagram's window, which the page's policy allows as a form target.
    expect(page.headers.get('content-security-policy')).toContain(instagram.url);

    const started = await session.submit('/settings/channels', '/settings/channels/connect/instagram', {});
    expect(started.status).toBe(303);
    const back = await followConsent(started.headers.get('location')!);
    const finished = await session.get(back.pathname + back.search);
    expect(finished.headers.get('location')).toBe('/settings/channels?done=connected');
    const listed = await (await session.get('/settings/channels')).text();
    expect(listed).toContain('Acme Studio');
    expect(listed).toContain('instagram · acme.studio');

    // Removed again: the tests below follow the one channel of the account.
    const theirs = dataOf(await publicApi(server, other.auth).GET('/public/v1/channels')).data;
    const id = theirs.find((c) => c.provider === 'instagram')!.id;
    const removed = await publicApi(server, other.auth).DELETE('/public/v1/channels/{id}', {
      params: { path: { id } },
    });
    expect(removed.response.status).toBe(204);
  });

  it('says so when the user refuses on Instagram’s window', async () => {
    const other = await createOrganization(server.ctx.db, 'Acme Refusing');
    const session = new BrowserSession(server);
    await session.logIn(other.email, other.password);
    await session.get('/settings/channels');
    instagram.deny();
    const started = await session.submit('/settings/channels', '/settings/channels/connect/instagram', {});
    const back = await followConsent(started.headers.get('location')!);
    expect(back.searchParams.get('error')).toBe('access_denied');
    const finished = await session.get(back.pathname + back.search);
    expect(finished.headers.get('location')).toBe('/settings/channels?failed=denied&network=instagram');
    expect(await (await session.get('/settings/channels?failed=denied&network=instagram')).text()).toContain(
      'Instagram: Access was not allowed on the network',
    );
  });
});

describe('the 60-day token', () => {
  it('is used as it is while more than 30 days are left', async () => {
    const { accessToken } = await storedCredentials();
    const before = refreshes();
    pass(29);
    expect(await tokensOfAWorker().accessToken(await channelRow())).toBe(accessToken);
    expect(refreshes()).toBe(before);
  });

  it('is refreshed once for two workers that need it at once, and both go on with the new token', async () => {
    const old = await storedCredentials();
    const before = refreshes();
    pass(2);
    const channel = await channelRow();
    const [first, second] = await Promise.all([
      tokensOfAWorker().accessToken(channel),
      tokensOfAWorker().accessToken(channel),
    ]);
    expect(refreshes()).toBe(before + 1);
    expect(first).toBe(second);
    expect(first).not.toBe(old.accessToken);
    // Stored at once, for 60 days from now; the next use takes it as it is.
    const fresh = await storedCredentials();
    expect(fresh).toMatchObject({
      accessToken: first,
      expiresAt: sixtyDaysOn(),
      scopes: old.scopes,
      instagram: { api: 'instagram' },
    });
    expect(await tokensOfAWorker().accessToken(await channelRow())).toBe(first);
    expect(refreshes()).toBe(before + 1);
  });

  it('goes on in use while it is good when Instagram fails its early refresh, and is refreshed on the next use', async () => {
    const { accessToken } = await storedCredentials();
    const before = refreshes();
    pass(31);
    instagram.failNext(503, 'refreshToken');
    expect(await tokensOfAWorker().accessToken(await channelRow())).toBe(accessToken);
    expect((await storedCredentials()).accessToken).toBe(accessToken);
    const fresh = await tokensOfAWorker().accessToken(await channelRow());
    expect(fresh).not.toBe(accessToken);
    expect(refreshes()).toBe(before + 2);
  });

  it('of an account with nothing to publish is refreshed by the workers’ housekeeping before it runs out', async () => {
    const { accessToken } = await storedCredentials();
    const before = refreshes();
    pass(29);
    await keepHouse(server.ctx);
    expect(refreshes()).toBe(before);
    pass(2);
    await keepHouse(server.ctx);
    expect(refreshes()).toBe(before + 1);
    const fresh = await storedCredentials();
    expect(fresh.accessToken).not.toBe(accessToken);
    expect(fresh.expiresAt).toBe(sixtyDaysOn());
    await keepHouse(server.ctx);
    expect(refreshes()).toBe(before + 1);
    expect(await channelStatus()).toBe('active');
  });

  it('that expired marks the channel needs_reconnect, and connecting it again makes it active', async () => {
    instagram.expireTokens();
    pass(31);
    await expect(tokensOfAWorker().accessToken(await channelRow())).rejects.toThrow(ReconnectNeededError);
    expect(await channelStatus()).toBe('active');
    await keepHouse(server.ctx);
    expect(await channelStatus()).toBe('needs_reconnect');
    await expect(tokensOfAWorker().accessToken(await channelRow())).rejects.toThrow(/no longer takes/);

    const landed = await connectAccount();
    expect(landed.searchParams.get('channelId')).toBe(channelId);
    expect(landed.searchParams.get('reconnected')).toBe('true');
    expect(await channelStatus()).toBe('active');
    const { accessToken } = await storedCredentials();
    expect(await tokensOfAWorker().accessToken(await channelRow())).toBe(accessToken);
  });

  it('of an account whose owner removed the app marks the channel needs_reconnect', async () => {
    instagram.revokeTokens();
    const worker = tokensOfAWorker();
    const { accessToken } = await storedCredentials();
    // Instagram refused the token a publication used: the refresh is refused too.
    await expect(worker.afterRefusal(await channelRow(), accessToken)).rejects.toThrow(
      /has not authorized application/,
    );
    pass(31);
    await keepHouse(server.ctx);
    expect(await channelStatus()).toBe('needs_reconnect');
    await connectAccount();
  });
});

describe('removing an Instagram Login channel', () => {
  it('forgets its token: Instagram gives an app no way to revoke one', async () => {
    await connectAccount();
    const requests = instagram.requests.length;
    const removed = await api().DELETE('/public/v1/channels/{id}', { params: { path: { id: channelId } } });
    expect(removed.response.status).toBe(204);
    const queued = await server.ctx.db.selectFrom('account_revocations').selectAll().execute();
    expect(queued).toHaveLength(1);
    await revokeRemovedAccounts(server.ctx);
    expect(await server.ctx.db.selectFrom('account_revocations').selectAll().execute()).toHaveLength(0);
    expect(instagram.requests).toHaveLength(requests);
  });
});
