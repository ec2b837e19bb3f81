import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { eventually } from './support/eventually.js';
import { startFakeX, type FakeX } from './support/fake-x.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { jpeg, png, webp } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';
import { anyString } from './support/typed-matchers.js';
import { startUpload } from './support/uploads.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

// X end to end against the fake X: an account connected through POST /public/v1/channels/connect and in
// Settings → Channels, then, through the Public API, a text post, four images with their alt text, a thread
// of three parts, a post whose answer X lost, a limit X says is used up, and an account whose user removed
// the app (reported by webhook), connected again through the Public API and its failed post published.
// The adapter's parts on their own are test/x-adapter.test.ts.
const RETURN_URL = 'https://app.example.org/x/done';
let x: FakeX;
let server: TestServer;
let receiver: WebhookReceiver;
let org: TestOrganization;
let channelId: string;

type Post = Schemas['Post'];
const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

/**
 * X's consent page, which consents at once: where it sends the browser back. On a connection of its own,
 * since one kept alive from an earlier test may have been closed by the fake meanwhile.
 */
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

/** The user's browser: to X's consent page, back to this server's callback, and on to the return URL. */
async function connectAccount(): Promise<URL> {
  const { authorizationUrl } = dataOf(
    await api().POST('/public/v1/channels/connect', { body: { provider: 'x', returnUrl: RETURN_URL } }),
  );
  const atX = await followConsent(authorizationUrl);
  const callback = new URL(atX.location);
  const back = await server.fetch(callback.pathname + callback.search, { redirect: 'manual' });
  expect(back.status).toBe(303);
  return new URL(back.headers.get('location')!);
}

async function uploadImage(name: string, bytes: Buffer, contentType: string): Promise<string> {
  const upload = await startUpload(server, org, name, contentType, bytes.length);
  expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
  const completed = await api().POST('/public/v1/media/uploads/{uploadId}/complete', {
    params: { path: { uploadId: upload.uploadId } },
  });
  return dataOf(completed).id;
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

/** The channel's last event of this type the webhook receiver got, once it got one. */
function channelEvent(type: Schemas['ChannelWebhookEvent']['type']): Promise<Schemas['ChannelWebhookEvent']> {
  return eventually(() => {
    const events = receiver.received.map((message) => JSON.parse(message.body) as Schemas['ChannelWebhookEvent']);
    const event = events.findLast((e) => e.type === type && e.data.id === channelId);
    expect(event, `a ${type} event of ${channelId}`).toBeDefined();
    return event!;
  });
}

async function history(id: string): Promise<Schemas['PostEvent'][]> {
  return dataOf(await api().GET('/public/v1/posts/{id}/history', byId(id))).data;
}

const tweetsSent = (text: string) => x.tweets.filter((t) => t.sentText === text);

/** Moves the server's clock, and its job queue, and X's together, as time passes for both. */
async function pass(seconds: number) {
  await server.clock.advance(seconds * 1000);
  x.advanceClock(seconds);
}

beforeAll(async () => {
  x = await startFakeX({ account: { username: 'acme', name: 'Acme on X' } });
  receiver = await startWebhookReceiver();
  server = await startTestServer({
    worker: true,
    env: {
      // The webhook receiver is on loopback: allowed as an operator allows a range of their network.
      WEBHOOK_ALLOW_RANGES: '127.0.0.1/32',
      X_CLIENT_ID: x.clientId,
      X_CLIENT_SECRET: x.clientSecret,
      X_API_URL: x.url,
      X_AUTHORIZE_URL: x.authorizeUrl,
      PUBLISH_RETRY_BASE_MS: '200',
      DAILY_POST_LIMIT_X: '1000',
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
  await x?.close();
  await receiver?.close();
});

describe('an X account connected through the API', () => {
  it('lands on the return URL with its channel, named as X names the account', async () => {
    const landed = await connectAccount();
    expect(landed.origin + landed.pathname).toBe(RETURN_URL);
    channelId = landed.searchParams.get('channelId')!;
    const channel = dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === channelId);
    expect(channel).toMatchObject({
      provider: 'x',
      name: 'Acme on X',
      username: 'acme',
      picture: x.account.profileImageUrl,
      status: 'active',
    });
    // X's consent page was asked for the scopes the service needs, with PKCE.
    expect(x.grants.at(-1)!.scopes).toEqual([
      'tweet.read',
      'tweet.write',
      'users.read',
      'media.write',
      'offline.access',
    ]);
  });
});

describe('an X account connected in Settings → Channels', () => {
  it('shows Connect X, sends the user to X’s consent page, and lists the channel when X sends them back', async () => {
    const other = await createOrganization(server.ctx.db, 'Acme Web');
    const session = new BrowserSession(server);
    await session.logIn(other.email, other.password);
    const page = await session.get('/settings/channels');
    const html = await page.text();
    expect(html).toContain('action="/settings/channels/connect/x"');
    expect(html).toContain('Connect X</button>');
    // The form is sent on to X's consent page, which the page's policy allows as a form target.
    expect(page.headers.get('content-security-policy')).toContain(x.url);

    const started = await session.submit('/settings/channels', '/settings/channels/connect/x', {});
    expect(started.status).toBe(303);
    const consent = await followConsent(started.headers.get('location')!);
    const back = new URL(consent.location);
    const finished = await session.get(back.pathname + back.search);
    expect(finished.headers.get('location')).toBe('/settings/channels?done=connected');
    const listed = await (await session.get('/settings/channels')).text();
    expect(listed).toContain('Acme on X');
  });
});

describe('publishing to X', () => {
  it('publishes a text post at X’s URL of the account, with its reply settings', async () => {
    const id = await publishNow({
      content: 'Hello X, from the scheduler',
      settings: { __type: 'x', replySettings: 'mentionedUsers' },
    });
    const post = await settled(id);
    const [tweet] = tweetsSent('Hello X, from the scheduler');
    expect(post).toMatchObject({
      status: 'published',
      releaseId: tweet!.id,
      releaseUrl: `https://x.com/acme/status/${tweet!.id}`,
      settings: { __type: 'x', replySettings: 'mentionedUsers' },
    });
    expect(tweet!.replySettings).toBe('mentionedUsers');
  });

  it('publishes four images, each with its alt text', async () => {
    const images = [
      await uploadImage('one.png', png(4, 4), 'image/png'),
      await uploadImage('two.jpg', jpeg(), 'image/jpeg'),
      await uploadImage('three.webp', webp(), 'image/webp'),
      await uploadImage('four.png', png(6, 3), 'image/png'),
    ];
    const id = await publishNow({
      content: 'Four pictures',
      mediaIds: images,
      altTexts: { [images[0]!]: 'A black square', [images[2]!]: 'A tiny webp', [images[3]!]: 'A wide black strip' },
    });
    expect((await settled(id)).status).toBe('published');
    const [tweet] = tweetsSent('Four pictures');
    const sent = tweet!.mediaIds.map((mediaId) => x.media.find((m) => m.id === mediaId)!);
    expect(sent.map((m) => [m.mediaType, m.altText])).toEqual([
      ['image/png', 'A black square'],
      ['image/jpeg', null],
      ['image/webp', 'A tiny webp'],
      ['image/png', 'A wide black strip'],
    ]);
    expect(x.mediaBytes(sent[0]!.id)).toEqual(png(4, 4));
  });

  it('publishes a thread of three parts, each a reply to the one before', async () => {
    const image = await uploadImage('thread.png', png(5, 5), 'image/png');
    const id = await publishNow({
      content: 'A thread, 1/3',
      thread: [
        { content: 'A thread, 2/3', mediaIds: [image], altTexts: { [image]: 'Five by five' } },
        { content: 'A thread, 3/3' },
      ],
    });
    const post = await settled(id);
    const [first, second, third] = ['A thread, 1/3', 'A thread, 2/3', 'A thread, 3/3'].map((text) => tweetsSent(text));
    expect([first, second, third].map((sent) => sent!.length)).toEqual([1, 1, 1]);
    expect(first![0]!.inReplyToTweetId).toBeNull();
    expect(second![0]!.inReplyToTweetId).toBe(first![0]!.id);
    expect(third![0]!.inReplyToTweetId).toBe(second![0]!.id);
    expect(third![0]!.conversationId).toBe(first![0]!.id);
    expect(x.media.find((m) => m.id === second![0]!.mediaIds[0])!.altText).toBe('Five by five');
    expect(post).toMatchObject({ status: 'published', releaseId: first![0]!.id });
    expect(post.thread.map((part) => [part.releaseId, part.releaseUrl])).toEqual([
      [second![0]!.id, `https://x.com/acme/status/${second![0]!.id}`],
      [third![0]!.id, `https://x.com/acme/status/${third![0]!.id}`],
    ]);
  });
});

describe('when X does not answer as hoped', () => {
  it('finds a post whose answer was lost in the account’s timeline, and publishes it once', async () => {
    x.loseNextAnswer('createPosts');
    const id = await publishNow({ content: 'Lost on the way back' });
    const post = await settled(id);
    const sent = tweetsSent('Lost on the way back');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.answerLost).toBe(true);
    expect(post).toMatchObject({ status: 'published', releaseId: sent[0]!.id });
    const events = await history(id);
    expect(events.map((e) => e.type)).toEqual(['created', 'scheduled', 'publishing', 'retrying', 'published']);
  });

  it('waits for the reset of the limit X says is used up, then publishes', async () => {
    x.exhaustLimit('createPosts', '15min', 900);
    const id = await publishNow({ content: 'After the window' });
    const retrying = await eventually(async () => {
      const event = (await history(id)).find((e) => e.type === 'retrying');
      expect(event).toBeDefined();
      return event!;
    });
    const wait = Date.parse(retrying.nextAttemptAt!) - server.clock.now().getTime();
    expect(wait).toBeGreaterThan(880_000);
    expect(wait).toBeLessThanOrEqual(902_000);
    expect(tweetsSent('After the window')).toHaveLength(0);
    await pass(902);
    const post = await settled(id);
    expect(post.status).toBe('published');
    expect(tweetsSent('After the window')).toHaveLength(1);
  });

  it('marks the channel needs_reconnect when the user removed the app at X; connected again, the post goes out', async () => {
    const endpoint = dataOf(
      await api().POST('/public/v1/webhooks', {
        body: { url: receiver.url, eventTypes: ['channel.needs_reconnect', 'channel.connected'] },
      }),
      201,
    );
    x.revokeAll();
    const id = await publishNow({ content: 'After the app was removed' });
    const failed = await settled(id);
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: 'channel_needs_reconnect', message: anyString() },
    });
    const channel = async () => dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === channelId);
    expect((await channel())!.status).toBe('needs_reconnect');
    expect(await channelEvent('channel.needs_reconnect')).toMatchObject({
      data: { id: channelId, provider: 'x', status: 'needs_reconnect' },
    });

    const landed = await connectAccount();
    expect(landed.searchParams.get('channelId')).toBe(channelId);
    expect(landed.searchParams.get('reconnected')).toBe('true');
    expect((await channel())!.status).toBe('active');
    expect(await channelEvent('channel.connected')).toMatchObject({ data: { id: channelId, status: 'active' } });
    await api().DELETE('/public/v1/webhooks/{id}', byId(endpoint.id));
    dataOf(
      await api().POST('/public/v1/posts/{id}/schedule', {
        ...byId(id),
        body: { scheduledAt: new Date(server.clock.now().getTime() + 1000).toISOString() },
      }),
    );
    const published = await settled(id);
    const sent = tweetsSent('After the app was removed');
    expect(sent).toHaveLength(1);
    expect(published).toMatchObject({
      status: 'published',
      releaseId: sent[0]!.id,
      releaseUrl: `https://x.com/acme/status/${sent[0]!.id}`,
    });
  });
});
