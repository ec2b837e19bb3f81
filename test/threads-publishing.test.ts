import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { eventually } from './support/eventually.js';
import { startFakeThreads, type FakeThreads } from './support/fake-threads.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { jpeg } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';
import { anyString } from './support/typed-matchers.js';
import { startUpload } from './support/uploads.js';

// Threads end to end against the fake Threads: an account connected through POST /public/v1/channels/connect
// and in Settings → Channels, then, through the Public API and a worker, a text post with its reply control, a
// thread of three parts each a reply to the one before, an image Threads fetches from this server's signed URL,
// the 60-day token refreshed when the channel is used in its last 30 days, a post whose answer was lost found
// and published once, a container Threads ends in ERROR, and an account whose user removed the app, connected
// again and its failed post published. The adapter's parts on their own are test/threads-adapter.test.ts.
const RETURN_URL = 'https://app.example.org/threads/done';
let threads: FakeThreads;
let server: TestServer;
let org: TestOrganization;
let channelId: string;

type Post = Schemas['Post'];
const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

/** Threads's consent page, which consents at once: where it sends the browser back. */
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

/** The user's browser: to Threads's consent page, back to this server's callback, and on to the return URL. */
async function connectAccount(): Promise<URL> {
  const { authorizationUrl } = dataOf(
    await api().POST('/public/v1/channels/connect', { body: { provider: 'threads', returnUrl: RETURN_URL } }),
  );
  const callback = await followConsent(authorizationUrl);
  const back = await server.fetch(callback.pathname + callback.search, { redirect: 'manual' });
  expect(back.status).toBe(303);
  return new URL(back.headers.get('location')!);
}

async function publishNow(item: Omit<Schemas['CreatePostPerChannel']['posts'][number], 'channelId'>) {
  const created = await api().POST('/public/v1/posts', {
    body: { type: 'now', posts: [{ channelId, ...item }] },
  });
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

async function uploadImage(name: string, bytes: Buffer): Promise<string> {
  const upload = await startUpload(server, org, name, 'image/jpeg', bytes.length);
  expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
  const completed = await api().POST('/public/v1/media/uploads/{uploadId}/complete', {
    params: { path: { uploadId: upload.uploadId } },
  });
  return dataOf(completed).id;
}

async function history(id: string): Promise<Schemas['PostEvent'][]> {
  return dataOf(await api().GET('/public/v1/posts/{id}/history', byId(id))).data;
}

/** Moves the server's clock, and its job queue, and Threads's together, as time passes for both. */
async function pass(seconds: number) {
  await server.clock.advance(seconds * 1000);
  threads.advanceClock(seconds);
}

const postsWith = (text: string) => threads.posts.filter((p) => p.text === text);

beforeAll(async () => {
  threads = await startFakeThreads();
  server = await startTestServer({
    worker: true,
    env: {
      THREADS_APP_ID: threads.appId,
      THREADS_APP_SECRET: threads.appSecret,
      THREADS_API_URL: threads.url,
      THREADS_AUTHORIZE_URL: threads.authorizeUrl,
      PUBLISH_RETRY_BASE_MS: '200',
      RATE_LIMIT_MAX: '100000',
    },
  });
});
beforeAll(async () => {
  org = await createOrganization(server.ctx.db, 'Acme');
  await addReturnOrigin(server.ctx.db, org.id, new URL(RETURN_URL).origin);
}, TIMEOUTS.hook);
afterAll(async () => {
  await server?.close();
  await threads?.close();
});

describe('a Threads account connected through the API', () => {
  it('lands on the return URL with its channel, named as Threads names the account', async () => {
    const landed = await connectAccount();
    expect(landed.origin + landed.pathname).toBe(RETURN_URL);
    channelId = landed.searchParams.get('channelId')!;
    const channel = dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === channelId);
    expect(channel).toMatchObject({
      provider: 'threads',
      name: threads.account.name,
      username: threads.account.username,
      picture: threads.account.profilePictureUrl,
      status: 'active',
    });
    expect(threads.consents.at(-1)).toMatchObject({
      redirectUri: `${server.baseUrl}/channels/callback/threads`,
      scopes: ['threads_basic', 'threads_content_publish', 'threads_manage_replies', 'threads_read_replies'],
      outcome: 'granted',
    });
    // The code's short-lived token was exchanged for a 60-day one.
    expect(threads.requests.some((r) => r.operation === 'exchangeToken')).toBe(true);
  });
});

describe('a Threads account connected in Settings → Channels', () => {
  it('shows Connect Threads, sends the user to Threads’s consent page, and lists the channel when Threads sends them back', async () => {
    const other = await createOrganization(server.ctx.db, 'Acme Web');
    const session = new BrowserSession(server);
    await session.logIn(other.email, other.password);
    const page = await session.get('/settings/channels');
    const html = await page.text();
    expect(html).toContain('action="/settings/channels/connect/threads"');
    expect(html).toContain('Connect Threads</button>');
    expect(page.headers.get('content-security-policy')).toContain(threads.url);

    const started = await session.submit('/settings/channels', '/settings/channels/connect/threads', {});
    expect(started.status).toBe(303);
    const back = await followConsent(started.headers.get('location')!);
    const finished = await session.get(back.pathname + back.search);
    expect(finished.headers.get('location')).toBe('/settings/channels?done=connected');
    const listed = await (await session.get('/settings/channels')).text();
    expect(listed).toContain(threads.account.name);
  });
});

describe('publishing to Threads', () => {
  it('publishes a text post with its reply control, at its permalink', async () => {
    const id = await publishNow({
      content: 'Hello Threads, from the scheduler',
      settings: { __type: 'threads', replyControl: 'mentioned_only' },
    });
    const post = await settled(id);
    const [published] = postsWith('Hello Threads, from the scheduler');
    expect(post).toMatchObject({
      status: 'published',
      releaseId: published!.id,
      releaseUrl: published!.permalink,
      settings: { __type: 'threads', replyControl: 'mentioned_only' },
    });
    expect(published).toMatchObject({ mediaType: 'TEXT_POST', replyControl: 'mentioned_only' });
  });

  it('publishes a thread of three parts, each a reply to the one before', async () => {
    const id = await publishNow({
      content: 'A thread, 1/3',
      thread: [{ content: 'A thread, 2/3' }, { content: 'A thread, 3/3' }],
    });
    const post = await settled(id);
    const [first, second, third] = ['A thread, 1/3', 'A thread, 2/3', 'A thread, 3/3'].map((text) => postsWith(text));
    expect([first, second, third].map((sent) => sent!.length)).toEqual([1, 1, 1]);
    expect(first![0]!.repliedTo).toBeNull();
    expect(second![0]!.repliedTo).toBe(first![0]!.id);
    expect(third![0]!.repliedTo).toBe(second![0]!.id);
    expect(third![0]!.rootPost).toBe(first![0]!.id);
    expect(post).toMatchObject({ status: 'published', releaseId: first![0]!.id, releaseUrl: first![0]!.permalink });
    expect(post.thread.map((part) => [part.releaseId, part.releaseUrl])).toEqual([
      [second![0]!.id, second![0]!.permalink],
      [third![0]!.id, third![0]!.permalink],
    ]);
  });
});

describe('media and tokens', () => {
  it(
    'keeps a thread’s reply waiting past a day while the 1,000 replies are used, then publishes it once',
    { timeout: 2 * TIMEOUTS.test },
    async () => {
      threads.usePublishingQuota(0, 1000);
      const id = await publishNow({ content: 'Night bake, 1/2', thread: [{ content: 'Night bake, 2/2' }] });
      const limitReads = () => threads.requests.filter((r) => r.operation === 'publishingLimit').length;
      await eventually(() => expect(postsWith('Night bake, 1/2')).toHaveLength(1), { timeout: scaled(30_000) });
      // More than a day passes, twice, and other apps of the account use the day's replies again each time:
      // each reading is a wait for the limit, and the post stays publishing.
      for (let day = 0; day < 2; day++) {
        const before = limitReads();
        threads.advanceClock(25 * 3600);
        threads.usePublishingQuota(0, 1000);
        await server.clock.advance(25 * 3_600_000);
        // Half an hour more each time, so that a reading planned after the leap (a run still going) comes.
        await eventually(
          async () => {
            await pass(31 * 60);
            expect(limitReads()).toBeGreaterThan(before);
          },
          { timeout: scaled(30_000), interval: 200 },
        );
      }
      expect(dataOf(await api().GET('/public/v1/posts/{id}', byId(id)))).toMatchObject({ status: 'publishing' });
      expect(postsWith('Night bake, 2/2')).toEqual([]);
      // The last day's replies age out: the reply is published, once.
      const post = await eventually(
        async () => {
          await pass(3 * 3600);
          const now = dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
          expect(now.status).toBe('published');
          return now;
        },
        { timeout: scaled(30_000), interval: 200 },
      );
      const reply = postsWith('Night bake, 2/2');
      expect(reply).toHaveLength(1);
      expect(post).toMatchObject({ status: 'published', thread: [{ releaseId: reply[0]!.id }] });
      expect((await history(id)).map((event) => event.type)).not.toContain('failed');
    },
  );

  it('publishes an image Threads fetches from this server’s signed URL, with its alt text', async () => {
    const bytes = jpeg(4096);
    const image = await uploadImage('photo.jpg', bytes);
    const id = await publishNow({ content: 'A photo', mediaIds: [image], altTexts: { [image]: 'A black square' } });
    const post = await settled(id);
    const [published] = postsWith('A photo');
    expect(post).toMatchObject({ status: 'published', releaseId: published!.id });
    expect(published!.mediaType).toBe('IMAGE');
    const download = threads.downloads.find((d) => d.url === published!.mediaUrl)!;
    expect(download).toMatchObject({ status: 200, sniffed: 'image/jpeg', bytes: bytes.length });
    expect(download.url.startsWith(server.baseUrl)).toBe(true);
    const container = threads.containers.find((c) => c.id === published!.containerId)!;
    expect(container.params.alt_text).toBe('A black square');
  });

  it('refreshes the 60-day token when the channel is used in its last 30 days, and publishes with the new one', async () => {
    const refreshes = () => threads.requests.filter((r) => r.operation === 'refreshToken').length;
    const before = refreshes();
    await pass(31 * 86_400);
    const id = await publishNow({ content: 'A month later' });
    expect((await settled(id)).status).toBe('published');
    expect(refreshes()).toBe(before + 1);
    // The refreshed token is the channel's from now on: the next post needs no refresh.
    const next = await publishNow({ content: 'The day after' });
    expect((await settled(next)).status).toBe('published');
    expect(refreshes()).toBe(before + 1);
  });
});

describe('when Threads does not answer as hoped', () => {
  it('finds a post whose answer was lost among the account’s threads, and publishes it once', async () => {
    threads.loseNextAnswer('publish');
    const id = await publishNow({ content: 'Lost on the way back' });
    const post = await settled(id);
    const sent = postsWith('Lost on the way back');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.answerLost).toBe(true);
    expect(post).toMatchObject({ status: 'published', releaseId: sent[0]!.id, releaseUrl: sent[0]!.permalink });
    const events = await history(id);
    expect(events.map((e) => e.type)).toEqual(['created', 'scheduled', 'publishing', 'retrying', 'published']);
  });

  it('fails the post with Meta’s error_message when Threads ends its container in ERROR', async () => {
    threads.endNextContainer('ERROR', 'FAILED_PROCESSING_AUDIO');
    const id = await publishNow({ content: 'Not processed' });
    const post = await settled(id);
    expect(post).toMatchObject({
      status: 'failed',
      error: { code: 'rejected_by_network', message: expect.stringContaining('FAILED_PROCESSING_AUDIO') as string },
    });
    expect(postsWith('Not processed')).toHaveLength(0);
  });

  it('marks the channel needs_reconnect when the user removed the app; connected again, the post goes out', async () => {
    threads.revokeTokens();
    const id = await publishNow({ content: 'After the app was removed' });
    const failed = await settled(id);
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: 'channel_needs_reconnect', message: anyString() },
    });
    const channel = async () => dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === channelId);
    expect((await channel())!.status).toBe('needs_reconnect');

    const landed = await connectAccount();
    expect(landed.searchParams.get('channelId')).toBe(channelId);
    expect(landed.searchParams.get('reconnected')).toBe('true');
    expect((await channel())!.status).toBe('active');
    dataOf(
      await api().POST('/public/v1/posts/{id}/schedule', {
        ...byId(id),
        body: { scheduledAt: new Date(server.clock.now().getTime() + 1000).toISOString() },
      }),
    );
    const published = await settled(id);
    const sent = postsWith('After the app was removed');
    expect(sent).toHaveLength(1);
    expect(published).toMatchObject({ status: 'published', releaseId: sent[0]!.id, releaseUrl: sent[0]!.permalink });
  });
});
