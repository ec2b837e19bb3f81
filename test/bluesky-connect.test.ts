import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import { revokeRemovedAccounts } from '../src/providers/account-revocations.js';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { eventually } from './support/eventually.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { png } from './support/media-samples.js';
import { startPds, type PdsAccount, type TestPds } from './support/pds.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';
import { startUpload } from './support/uploads.js';

// Bluesky end to end against the reference PDS (test/support/pds.ts): accounts connected through
// POST /public/v1/channels/connect and in Settings → Channels by signing in with an app password on this
// server's page, the handle resolved to its PDS as Bluesky resolves it (the PDS is the entryway here, its
// PLC directory the DIDs'); then, through the Public API, a text post, images with their alt texts, a
// thread, and an app password revoked by its owner, the channel connected again. The adapter's steps on
// their own are test/bluesky-publishing.test.ts.
const RETURN_URL = 'https://app.example.org/bluesky/done';
const POST = 'app.bsky.feed.post';
let pds: TestPds;
let server: TestServer;
let org: TestOrganization;
let account: PdsAccount;
let channelId: string;

type Post = Schemas['Post'];
const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

beforeAll(async () => {
  pds = await startPds();
  server = await startTestServer({
    worker: true,
    env: {
      BLUESKY_ENTRYWAY_URL: pds.url,
      BLUESKY_PLC_URL: pds.plcUrl,
      // The PDS and its directory are on loopback: allowed as an operator allows a range of their network.
      MEDIA_FETCH_ALLOW_RANGES: '127.0.0.1/32,::1/128',
      PUBLISH_RETRY_BASE_MS: '200',
      DAILY_POST_LIMIT_BLUESKY: '1000',
      RATE_LIMIT_MAX: '100000',
    },
  });
  org = await createOrganization(server.ctx.db, 'Acme');
  await addReturnOrigin(server.ctx.db, org.id, new URL(RETURN_URL).origin);
  account = await pds.createAccount();
}, TIMEOUTS.hook);
afterAll(async () => {
  await server?.close();
  await pds?.close();
});

/** Starts a connection through the Public API: the address of this server's sign-in page. */
async function startThroughApi(state?: string): Promise<URL> {
  const answer = await api().POST('/public/v1/channels/connect', {
    body: { provider: 'bluesky', returnUrl: RETURN_URL, ...(state ? { state } : {}) },
  });
  return new URL(dataOf(answer).authorizationUrl);
}

/** Sends the sign-in page's form as a person would, from the page at `page`. */
async function signIn(
  browser: BrowserSession,
  page: URL,
  fields: { account: string; password: string; server?: string },
): Promise<Response> {
  const form = await browser.get(page.pathname + page.search);
  expect(form.status).toBe(200);
  // The sign-in form's own fields (a signed-in visitor's page has the layout's forms too).
  const html = (await form.text()).split('action="/channels/sign-in/')[1]!;
  return browser.postForm(page.pathname, {
    csrf_token: inputValue(html, 'csrf_token')!,
    state: inputValue(html, 'state')!,
    server: '',
    ...fields,
  });
}

/** The sign-in page's input `id`, as the page has it: which field a refusal marks, and what describes it. */
function fieldOf(html: string, id: 'account' | 'password' | 'server'): string {
  return new RegExp(`<input id="${id}"[^>]*>`).exec(html)![0];
}

async function uploadImage(name: string, bytes: Buffer): Promise<string> {
  const upload = await startUpload(server, org, name, 'image/png', bytes.length);
  expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
  const completed = await api().POST('/public/v1/media/uploads/{uploadId}/complete', {
    params: { path: { uploadId: upload.uploadId } },
  });
  return dataOf(completed).id;
}

async function publishNow(item: Omit<Schemas['CreatePostPerChannel']['posts'][number], 'channelId'>) {
  const created = await api().POST('/public/v1/posts', { body: { type: 'now', posts: [{ channelId, ...item }] } });
  return dataOf(created, 201).data[0]!.id;
}

/** The post once it is published or failed. */
function settled(id: string): Promise<Post> {
  return eventually(
    async () => {
      const post = dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
      expect(['published', 'failed'], `post ${id} is ${post.status}`).toContain(post.status);
      return post;
    },
    { timeout: scaled(30_000), interval: 200 },
  );
}

const channel = async (id = channelId) => dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === id);

describe('a Bluesky account connected through the API', () => {
  it('signs in on this server’s page with the handle and an app password, and lands on the return URL', async () => {
    const page = await startThroughApi('user-1');
    expect(page.origin + page.pathname).toBe(`${server.baseUrl}/channels/sign-in/bluesky`);
    const browser = new BrowserSession(server);

    const wrong = await signIn(browser, page, { account: account.handle, password: 'abcd-efgh-ijkl-mnop' });
    expect(wrong.status).toBe(422);
    const wrongPage = await wrong.text();
    expect(wrongPage).toContain(`Bluesky did not sign in ${account.handle} with this app password`);
    // The handle stays in the form; no password is ever written back into a page.
    expect(inputValue(wrongPage, 'account')).toBe(account.handle);
    expect(wrongPage).not.toContain('abcd-efgh-ijkl-mnop');
    // The password is what to mend: its field is marked and described by the refusal, the handle's is not.
    expect(fieldOf(wrongPage, 'password')).toContain('aria-invalid="true" aria-describedby="sign-in-problem"');
    expect(wrongPage).toContain('role="alert" id="sign-in-problem"');
    expect(fieldOf(wrongPage, 'account')).not.toContain('aria-invalid');

    const own = await signIn(browser, page, { account: account.handle, password: account.password });
    expect(own.status).toBe(422);
    expect(await own.text()).toContain('This is the account’s own password');

    const done = await signIn(browser, page, { account: `@${account.handle}`, password: account.appPassword });
    expect(done.status).toBe(303);
    const landed = new URL(done.headers.get('location')!);
    expect(landed.origin + landed.pathname).toBe(RETURN_URL);
    expect(landed.searchParams.get('state')).toBe('user-1');
    expect(landed.searchParams.get('reconnected')).toBe('false');
    channelId = landed.searchParams.get('channelId')!;
    expect(await channel()).toMatchObject({
      provider: 'bluesky',
      name: account.handle,
      username: account.handle,
      status: 'active',
    });
    const row = await server.ctx.db
      .selectFrom('channels')
      .select(['external_id', 'credentials'])
      .where('id', '=', channelId)
      .executeTakeFirstOrThrow();
    expect(row.external_id).toBe(account.did);
    expect(row.credentials).not.toContain(account.appPassword);

    // The connection is used up: its page answers no more.
    expect((await browser.get(page.pathname + page.search)).status).toBe(400);
  });

  it('refuses a handle that names no account and a server it may not reach, on the same page', async () => {
    const page = await startThroughApi();
    const browser = new BrowserSession(server);
    const unknown = await signIn(browser, page, { account: 'nobody-here.test', password: account.appPassword });
    expect(unknown.status).toBe(422);
    const unknownPage = await unknown.text();
    expect(unknownPage).toContain('No Bluesky account has the handle nobody-here.test');
    expect(fieldOf(unknownPage, 'account')).toContain('aria-invalid="true"');
    expect(fieldOf(unknownPage, 'password')).not.toContain('aria-invalid');
    const plain = await signIn(browser, page, {
      account: account.handle,
      password: account.appPassword,
      server: 'http://pds.example.com',
    });
    expect(plain.status).toBe(422);
    const plainPage = await plain.text();
    expect(plainPage).toContain('A hosting provider is reached over https');
    // The server named is what to mend, not the handle or the password.
    expect(fieldOf(plainPage, 'server')).toContain(
      'aria-describedby="server-help sign-in-problem" aria-invalid="true"',
    );
    expect(fieldOf(plainPage, 'account')).not.toContain('aria-invalid');
    expect(fieldOf(plainPage, 'password')).not.toContain('aria-invalid');
    const notAHandle = await signIn(browser, page, { account: 'not a handle', password: account.appPassword });
    expect(await notAHandle.text()).toContain('Not a handle is not a Bluesky handle');
  });

  it('signs in at the PDS the user names, with the account’s DID', async () => {
    const other = await pds.createAccount();
    const page = await startThroughApi();
    const done = await signIn(new BrowserSession(server), page, {
      account: other.did,
      password: other.appPassword,
      server: pds.url,
    });
    expect(done.status).toBe(303);
    const landed = new URL(done.headers.get('location')!);
    expect(await channel(landed.searchParams.get('channelId')!)).toMatchObject({ username: other.handle });
  });

  it('gives the connection up after five passwords that did not sign in', async () => {
    const page = await startThroughApi('user-2');
    const browser = new BrowserSession(server);
    for (let attempt = 1; attempt <= 5; attempt++) {
      const refused = await signIn(browser, page, { account: account.handle, password: `wrong-${attempt}` });
      expect(refused.status).toBe(422);
    }
    const form = await browser.get(page.pathname + page.search);
    const html = await form.text();
    const given = await browser.postForm(page.pathname, {
      csrf_token: inputValue(html, 'csrf_token')!,
      state: inputValue(html, 'state')!,
      account: account.handle,
      password: account.appPassword,
      server: '',
    });
    expect(given.status).toBe(303);
    const landed = new URL(given.headers.get('location')!);
    expect(landed.searchParams.get('error')).toBe('refused');
    expect(landed.searchParams.get('errorDescription')).toContain('After 5 tries');
    expect(landed.searchParams.get('state')).toBe('user-2');
  });
});

describe('publishing to a connected Bluesky account', () => {
  it('publishes a text post at its bsky.app address', async () => {
    const id = await publishNow({ content: 'Hello from the scheduler #launch https://example.com' });
    const post = await settled(id);
    expect(post.status).toBe('published');
    const rkey = post.releaseId!.split('/').at(-1)!;
    expect(post.releaseUrl).toBe(`https://bsky.app/profile/${account.did}/post/${rkey}`);
    const record = await pds.getRecord(post.releaseId!);
    expect(record?.value).toMatchObject({ $type: POST, text: 'Hello from the scheduler #launch https://example.com' });
  });

  it('publishes a thread of three parts, the first with four images and their alt texts', async () => {
    const first = await uploadImage('one.png', png(4, 3, [255, 0, 0, 255]));
    const second = await uploadImage('two.png', png(2, 2, [0, 0, 255, 255]));
    const third = await uploadImage('three.png', png(3, 5, [0, 255, 0, 255]));
    const fourth = await uploadImage('four.png', png(1, 1, [9, 9, 9, 255]));
    const id = await publishNow({
      content: 'Part one',
      mediaIds: [first, second, third, fourth],
      altTexts: { [first]: 'A red field', [second]: 'A blue square', [fourth]: 'A dark dot' },
      thread: [{ content: 'Part two' }, { content: 'Part three' }],
    });
    const post = await settled(id);
    expect(post.status).toBe('published');
    const root = await pds.getRecord(post.releaseId!);
    expect(root?.value.embed).toMatchObject({
      $type: 'app.bsky.embed.images',
      images: [
        { alt: 'A red field', aspectRatio: { width: 4, height: 3 } },
        { alt: 'A blue square', aspectRatio: { width: 2, height: 2 } },
        { alt: '', aspectRatio: { width: 3, height: 5 } },
        { alt: 'A dark dot', aspectRatio: { width: 1, height: 1 } },
      ],
    });
    const [two, three] = await Promise.all(post.thread.map((part) => pds.getRecord(part.releaseId!)));
    expect(two?.value).toMatchObject({
      text: 'Part two',
      reply: { root: { uri: post.releaseId }, parent: { uri: post.releaseId } },
    });
    expect(three?.value).toMatchObject({
      text: 'Part three',
      reply: { root: { uri: post.releaseId }, parent: { uri: post.thread[0]!.releaseId } },
    });
  });
});

describe('an app password its owner revoked', () => {
  it('makes the channel needs_reconnect; signed in again in Settings → Channels, the post goes out', async () => {
    await pds.revokeAppPassword(account, account.appPasswordName);
    const id = await publishNow({ content: 'After the revocation' });
    const failed = await settled(id);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'channel_needs_reconnect' } });
    expect((await channel())!.status).toBe('needs_reconnect');

    const session = new BrowserSession(server);
    await session.logIn(org.email, org.password);
    const listed = await (await session.get('/settings/channels')).text();
    expect(listed).toContain('action="/settings/channels/connect/bluesky"');
    const start = async () => {
      const started = await session.submit('/settings/channels', '/settings/channels/connect/bluesky', {
        channel: channelId,
      });
      expect(started.status).toBe(303);
      return new URL(started.headers.get('location')!, server.baseUrl);
    };

    // Another browser cannot finish what this session started: the connection is given up.
    const seen = await start();
    const stranger = await signIn(new BrowserSession(server), seen, {
      account: account.handle,
      password: account.appPassword,
    });
    expect(stranger.status).toBe(400);
    expect(await stranger.text()).toContain('started in another browser session');
    expect((await session.get(seen.pathname + seen.search)).status).toBe(400);

    const page = await start();
    expect(page.pathname).toBe('/channels/sign-in/bluesky');
    // Reconnecting names the account already.
    expect(inputValue(await (await session.get(page.pathname + page.search)).text(), 'account')).toBe(account.handle);
    const password = await pds.createAppPassword(account, 'post-scheduler-2');
    const done = await signIn(session, page, { account: account.handle, password });
    expect(done.headers.get('location')).toBe('/settings/channels?done=reconnected');
    expect((await channel())!.status).toBe('active');

    dataOf(
      await api().POST('/public/v1/posts/{id}/schedule', {
        ...byId(id),
        body: { scheduledAt: new Date(server.clock.now().getTime() + 1000).toISOString() },
      }),
    );
    const published = await settled(id);
    expect(published.status).toBe('published');
    const texts = (await pds.listRecords(account.did, POST)).map((record) => record.value.text);
    expect(texts.filter((text) => text === 'After the revocation')).toHaveLength(1);
  });
});

/**
 * A server on loopback that answers every sign-in as `account`, with a token of an app password's scope
 * and a DID document naming itself: what a server a user named could answer to take another's account.
 */
async function startImpostor(account: PdsAccount) {
  const token = (scope: string) =>
    ['e30', Buffer.from(JSON.stringify({ scope, sub: account.did })).toString('base64url'), 'c2ln'].join('.');
  const server = http.createServer((request, response) => {
    request.resume();
    response.writeHead(200, { 'Content-Type': 'application/json' });
    response.end(
      JSON.stringify({
        did: account.did,
        handle: account.handle,
        accessJwt: token('com.atproto.appPass'),
        refreshJwt: token('com.atproto.refresh'),
        didDoc: { service: [{ id: '#atproto_pds', serviceEndpoint: url }] },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('a server that is not the account’s PDS', () => {
  it('signs no one in as another account: the DID document, read at the directory, names the account’s PDS', async () => {
    const impostor = await startImpostor(account);
    try {
      const refused = await signIn(new BrowserSession(server), await startThroughApi(), {
        account: account.handle,
        password: 'abcd-efgh-ijkl-mnop',
        server: impostor.url,
      });
      expect(refused.status).toBe(422);
      expect(await refused.text()).toContain(`The server at ${impostor.url} is not the PDS of ${account.handle}`);
      const row = await server.ctx.db
        .selectFrom('channels')
        .select('credentials')
        .where('id', '=', channelId)
        .executeTakeFirstOrThrow();
      expect(row.credentials).not.toBeNull();
    } finally {
      await impostor.close();
    }
  });
});

describe('a Bluesky channel removed', () => {
  it('forgets the app password, which stays its owner’s to revoke: the account still signs in with it', async () => {
    const other = await pds.createAccount();
    const done = await signIn(new BrowserSession(server), await startThroughApi(), {
      account: other.handle,
      password: other.appPassword,
    });
    const id = new URL(done.headers.get('location')!).searchParams.get('channelId')!;
    expect((await server.fetch(`/public/v1/channels/${id}`, { method: 'DELETE', headers: org.auth })).status).toBe(204);
    const removed = await server.ctx.db
      .selectFrom('channels')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(removed).toMatchObject({ status: 'removed', credentials: null });

    await revokeRemovedAccounts(server.ctx);
    const waiting = await server.ctx.db
      .selectFrom('account_revocations')
      .select('id')
      .where('external_id', '=', other.did)
      .execute();
    expect(waiting).toHaveLength(0);
    // Nothing was revoked at the PDS: the password is the owner's, and signs in as before.
    const again = await signIn(new BrowserSession(server), await startThroughApi(), {
      account: other.handle,
      password: other.appPassword,
    });
    expect(new URL(again.headers.get('location')!).searchParams.get('reconnected')).toBe('true');
  });
});

describe('sign-ins that failed across an organization’s connections', () => {
  // Last: the server's clock goes a window on.
  it('pause the organization’s sign-ins, whatever the connection, saying when to try again', async () => {
    const intruder = await createOrganization(server.ctx.db, 'Initech');
    await addReturnOrigin(server.ctx.db, intruder.id, new URL(RETURN_URL).origin);
    const start = async () => {
      const answer = await publicApi(server, intruder.auth).POST('/public/v1/channels/connect', {
        body: { provider: 'bluesky', returnUrl: RETURN_URL },
      });
      return new URL(dataOf(answer).authorizationUrl);
    };
    const target = await pds.createAccount();
    const browser = new BrowserSession(server);
    // Four connections of five wrong passwords each, none of them given up: the organization's 20.
    for (let connection = 1; connection <= 4; connection++) {
      const page = await start();
      for (let attempt = 1; attempt <= 5; attempt++) {
        const refused = await signIn(browser, page, {
          account: target.handle,
          password: `guess-${connection}-${attempt}`,
        });
        expect(refused.status).toBe(422);
      }
    }

    // A fifth connection tries nothing more, not even the right app password.
    const page = await start();
    const paused = await signIn(browser, page, { account: target.handle, password: target.appPassword });
    expect(paused.status).toBe(429);
    const wait = Number(paused.headers.get('retry-after'));
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(15 * 60);
    const pausedPage = await paused.text();
    expect(pausedPage).toContain('Too many sign-ins failed for this organization’s connections in a short time');
    expect(pausedPage).toContain(`Try again in ${Math.ceil(wait / 60)} minute`);
    expect(inputValue(pausedPage, 'account')).toBe(target.handle);
    expect(pausedPage).not.toContain(target.appPassword);
    // The paused try used up none of the fifth connection's own; the four others stand with their five.
    const pending = await server.ctx.db
      .selectFrom('channel_connections')
      .select('sign_in_attempts')
      .where('organization_id', '=', intruder.id)
      .execute();
    expect(pending.map((c) => c.sign_in_attempts).toSorted()).toEqual([0, 5, 5, 5, 5]);
    // Another organization's sign-ins go on.
    const elsewhere = await signIn(new BrowserSession(server), await startThroughApi(), {
      account: target.handle,
      password: 'not-the-password',
    });
    expect(elsewhere.status).toBe(422);

    // The window over, the organization signs in again.
    await server.clock.advance(wait * 1000);
    const done = await signIn(browser, await start(), { account: target.handle, password: target.appPassword });
    expect(done.status).toBe(303);
    expect(new URL(done.headers.get('location')!).searchParams.get('channelId')).toMatch(/^ch_/);
  });
});
