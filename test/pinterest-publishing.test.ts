import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import Service from '../src/sdk/src/index.js';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { pinterestEnv, startFakePinterest, type FakePinterest } from './support/fake-pinterest.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';

// Pinterest end to end against the fake Pinterest: an account connected through
// POST /public/v1/channels/connect and in Settings → Channels, its boards and their sections listed through
// the Public API and the SDK, page by page.
const RETURN_URL = 'https://app.example.org/pinterest/done';
let pinterest: FakePinterest;
let server: TestServer;
let org: TestOrganization;
let channelId: string;

const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

/** Pinterest's consent page, which consents at once: where it sends the browser back. */
async function followConsent(url: string): Promise<{ status: number; location: string }> {
  const answer = await new Promise<{ status: number; location: string }>((resolve, reject) => {
    http
      .get(url, { agent: false }, (response) => {
        response.resume();
        resolve({ status: response.statusCode!, location: response.headers.location! });
      })
      .on('error', reject);
  });
  expect(answer.status).toBe(302);
  return answer;
}

/** The user's browser: to Pinterest's consent page, back to this server's callback, and on to the return URL. */
async function connectAccount(): Promise<URL> {
  const { authorizationUrl } = dataOf(
    await api().POST('/public/v1/channels/connect', { body: { provider: 'pinterest', returnUrl: RETURN_URL } }),
  );
  const atPinterest = await followConsent(authorizationUrl);
  const callback = new URL(atPinterest.location);
  const back = await server.fetch(callback.pathname + callback.search, { redirect: 'manual' });
  expect(back.status).toBe(303);
  return new URL(back.headers.get('location')!);
}

beforeAll(async () => {
  pinterest = await startFakePinterest({ account: { username: 'acmestudio', businessName: 'Acme Studio' } });
  pinterest.addBoard({ name: 'Summer recipes', description: 'Salads and soups', sections: ['Salads', 'Soups'] });
  pinterest.addBoard({ name: 'Winter collection', privacy: 'SECRET' });
  pinterest.addBoard({ name: 'Behind the scenes' });
  server = await startTestServer({
    worker: true,
    env: { ...pinterestEnv(pinterest), PUBLISH_RETRY_BASE_MS: '200', RATE_LIMIT_MAX: '100000' },
  });
  org = await createOrganization(server.ctx.db, 'Acme');
  await addReturnOrigin(server.ctx.db, org.id, new URL(RETURN_URL).origin);
}, TIMEOUTS.hook);
afterAll(async () => {
  await server?.close();
  await pinterest?.close();
});

describe('a Pinterest account connected through the API', () => {
  it('lands on the return URL with its channel, named as Pinterest names the account', async () => {
    const landed = await connectAccount();
    expect(landed.origin + landed.pathname).toBe(RETURN_URL);
    channelId = landed.searchParams.get('channelId')!;
    const channel = dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === channelId);
    expect(channel).toMatchObject({
      provider: 'pinterest',
      name: 'Acme Studio',
      username: 'acmestudio',
      picture: pinterest.account.profileImage,
      status: 'active',
    });
    expect(pinterest.grantedScopes()).toEqual([
      'boards:read',
      'boards:write',
      'pins:read',
      'pins:write',
      'user_accounts:read',
    ]);
  });
});

describe('a Pinterest account connected in Settings → Channels', () => {
  it('shows Connect Pinterest, sends the user to Pinterest’s consent page, and lists the channel', async () => {
    const other = await createOrganization(server.ctx.db, 'Acme Web');
    const session = new BrowserSession(server);
    await session.logIn(other.email, other.password);
    const page = await session.get('/settings/channels');
    const html = await page.text();
    expect(html).toContain('action="/settings/channels/connect/pinterest"');
    expect(html).toContain('Connect Pinterest</button>');
    expect(page.headers.get('content-security-policy')).toContain(pinterest.url);
    const started = await session.submit('/settings/channels', '/settings/channels/connect/pinterest', {});
    const consent = await followConsent(started.headers.get('location')!);
    const back = new URL(consent.location);
    const finished = await session.get(back.pathname + back.search);
    expect(finished.headers.get('location')).toBe('/settings/channels?done=connected');
    expect(await (await session.get('/settings/channels')).text()).toContain('Acme Studio');
  });
});

describe('the boards of a Pinterest account', () => {
  it('are listed with their sections, page by page, through the API and the SDK', async () => {
    const first = dataOf(
      await api().GET('/public/v1/channels/{id}/pinterest/boards', {
        params: { path: { id: channelId }, query: { limit: 2 } },
      }),
    );
    const [summer, winter] = pinterest.boards;
    expect(first.data).toEqual([
      {
        id: summer!.id,
        name: 'Summer recipes',
        description: 'Salads and soups',
        privacy: 'PUBLIC',
        sections: summer!.sections,
      },
      { id: winter!.id, name: 'Winter collection', description: null, privacy: 'SECRET', sections: [] },
    ]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const rest = dataOf(
      await api().GET('/public/v1/channels/{id}/pinterest/boards', {
        params: { path: { id: channelId }, query: { limit: 2, cursor: first.nextCursor! } },
      }),
    );
    expect([rest.data.map((board) => board.name), rest.nextCursor]).toEqual([['Behind the scenes'], null]);

    const sdk = new Service(org.apiKey, server.baseUrl, { maxRetries: 0 });
    const names: string[] = [];
    for await (const board of sdk.iteratePinterestBoards(channelId, { limit: 1 })) names.push(board.name);
    expect(names).toEqual(['Summer recipes', 'Winter collection', 'Behind the scenes']);
  });

  it('answer 404 for a channel of another organization and 422 for a channel of another network', async () => {
    const other = await createOrganization(server.ctx.db, 'Elsewhere');
    const foreign = await publicApi(server, other.auth).GET(
      '/public/v1/channels/{id}/pinterest/boards',
      byId(channelId),
    );
    expect(foreign.response.status).toBe(404);
    expect((foreign.error as Schemas['Error']).error.code).toBe('not_found');
    const sandbox = await createChannel(server.ctx.db, org.id, 'sandbox', 'Sandbox');
    const wrong = await api().GET('/public/v1/channels/{id}/pinterest/boards', byId(sandbox.id));
    expect(wrong.response.status).toBe(422);
  });
});
