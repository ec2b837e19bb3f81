import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import { revokeRemovedAccounts } from '../src/providers/account-revocations.js';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession, decodeEntities } from './support/browser-session.js';
import { eventually } from './support/eventually.js';
import { startFakeMastodon, type FakeMastodon } from './support/fake-mastodon.js';
import { createOrganization, insertMedia, type TestOrganization } from './support/fixtures.js';
import { mp4, png } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { stringMatching } from './support/typed-matchers.js';
import { startUpload } from './support/uploads.js';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver.js';

// Mastodon end to end against the fake Mastodon, through the server under test and its worker: an
// account connected in Settings → Channels and through the Public API on the instance the user names
// (the app registered once per instance, PKCE where the instance has it), statuses with media and
// alt text, threads, a lost answer, media the instance still processes, a revoked token (the channel
// connected again in Settings → Channels and through the Public API, and reported by webhook), a rate
// limit, and an instance at an address the outbound policy refuses.
const RETURN_URL = 'https://app.example.org/integrations/mastodon/done';
let mastodon: FakeMastodon;
let older: FakeMastodon;
let server: TestServer;
let receiver: WebhookReceiver;
let org: TestOrganization;
let session: BrowserSession;
let channelId: string;
/** The channel on the older instance, connected through the page that asks for the instance. */
let olderChannelId: string;

const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

beforeAll(async () => {
  mastodon = await startFakeMastodon({ account: { username: 'acme', displayName: 'Acme on Mastodon' } });
  // An older instance (no PKCE) whose admin changed its limits.
  older = await startFakeMastodon({
    supportsPkce: false,
    account: { username: 'elder', displayName: 'Elder' },
    limits: {
      maxCharacters: 1000,
      maxMediaAttachments: 2,
      charactersReservedPerUrl: 30,
      supportedMimeTypes: ['image/jpeg', 'image/png', 'video/mp4'],
      imageSizeLimit: 64 * 1024,
      videoSizeLimit: 2 * 1024 * 1024,
    },
  });
  receiver = await startWebhookReceiver();
  server = await startTestServer({
    worker: true,
    env: {
      // The fakes and the webhook receiver are on loopback: allowed as an operator allows a range of their network.
      MEDIA_FETCH_ALLOW_RANGES: '127.0.0.1/32',
      WEBHOOK_ALLOW_RANGES: '127.0.0.1/32',
      MASTODON_APP_NAME: 'Acme Scheduler',
      PUBLISH_RETRY_BASE_MS: '200',
      RATE_LIMIT_MAX: '100000',
      DAILY_POST_LIMIT_MASTODON: '1000',
    },
  });
});
beforeAll(async () => {
  org = await createOrganization(server.ctx.db, 'Acme');
  await addReturnOrigin(server.ctx.db, org.id, new URL(RETURN_URL).origin);
  session = new BrowserSession(server);
  await session.logIn(org.email, org.password);
  expect(await connectInWebApp(mastodon.url)).toBe('/settings/channels?done=connected');
  channelId = (
    await server.ctx.db
      .selectFrom('channels')
      .select('id')
      .where('organization_id', '=', org.id)
      .where('provider', '=', 'mastodon')
      .executeTakeFirstOrThrow()
  ).id;
}, TIMEOUTS.hook);
afterAll(async () => {
  await server?.close();
  await mastodon?.close();
  await older?.close();
  await receiver?.close();
});

/** The link of the page that sends the user on to the instance's consent page. */
async function continueLink(page: Response): Promise<string> {
  expect(page.status).toBe(200);
  const html = await page.text();
  const href = /<a class="button" href="([^"]+)">Continue to /.exec(html)?.[1];
  expect(href, html).toBeDefined();
  return decodeEntities(href!);
}

/** To the instance (which consents at once) and back to this server's callback: where it sends the browser. */
async function throughInstance(authorizationUrl: string, browser?: BrowserSession): Promise<string> {
  const atInstance = await fetch(authorizationUrl, { redirect: 'manual' });
  expect(atInstance.status).toBe(302);
  const callback = new URL(atInstance.headers.get('location')!);
  expect(callback.pathname).toBe('/channels/callback/mastodon');
  const back = browser
    ? await browser.get(callback.pathname + callback.search)
    : await server.fetch(callback.pathname + callback.search, { redirect: 'manual' });
  expect(back.status).toBe(303);
  return back.headers.get('location')!;
}

/** Settings → Channels: Connect Mastodon with the instance typed in (or Reconnect a channel). */
async function connectInWebApp(site: string | { channel: string }): Promise<string> {
  const fields = typeof site === 'string' ? { site } : site;
  const page = await session.submit('/settings/channels', '/settings/channels/connect/mastodon', fields);
  return throughInstance(await continueLink(page), session);
}

async function uploadFile(name: string, contentType: string, bytes: Buffer): Promise<string> {
  const upload = await startUpload(server, org, name, contentType, bytes.length);
  expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
  const completed = await api().POST('/public/v1/media/uploads/{uploadId}/complete', {
    params: { path: { uploadId: upload.uploadId } },
  });
  return dataOf(completed).id;
}

async function publishNow(item: Omit<Schemas['PostItem'], 'channelId'>): Promise<string> {
  const created = await api().POST('/public/v1/posts', { body: { type: 'now', posts: [{ channelId, ...item }] } });
  return dataOf(created, 201).data[0]!.id;
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

function settled(id: string): Promise<Schemas['Post']> {
  return eventually(
    async () => {
      const post = dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
      expect(['published', 'failed'], `post ${id} is ${post.status}`).toContain(post.status);
      return post;
    },
    { timeout: scaled(30_000), interval: 200 },
  );
}

async function history(id: string): Promise<Schemas['PostEvent'][]> {
  const page = await api().GET('/public/v1/posts/{id}/history', { params: { path: { id }, query: { limit: 100 } } });
  return dataOf(page).data;
}

const statusOf = (id: string | null) => mastodon.statuses.find((s) => s.id === id)!;

describe('connecting Mastodon accounts', () => {
  it('connects in Settings → Channels on the instance typed in, registering the app there once, with PKCE', async () => {
    const page = await (await session.get('/settings/channels')).text();
    expect(page).toContain('<label for="mastodon-site">Your Mastodon instance</label>');
    expect(page).toContain(`@acme@${mastodon.domain}`);
    expect(mastodon.apps).toHaveLength(1);
    expect(mastodon.apps[0]).toMatchObject({
      name: 'Acme Scheduler',
      scopes: ['read:accounts', 'write:statuses', 'write:media'],
      redirectUris: [`${server.baseUrl}/channels/callback/mastodon`],
    });
    expect(mastodon.authorizations.at(-1)).toMatchObject({ outcome: 'approved', codeChallengeMethod: 'S256' });
    const channels = dataOf(await api().GET('/public/v1/channels'));
    expect(channels.data.find((c) => c.id === channelId)).toMatchObject({
      provider: 'mastodon',
      name: 'Acme on Mastodon',
      username: `@acme@${mastodon.domain}`,
      status: 'active',
    });
  });

  it('refuses an instance it cannot use, saying why, and connects nothing', async () => {
    const page = await session.submit('/settings/channels', '/settings/channels/connect/mastodon', {
      site: 'http://mastodon.example',
    });
    expect(page.status).toBe(422);
    expect(await page.text()).toContain('Mastodon: An instance is reached over https.');
  });

  it('connects through the Public API with the instance given: the answer is its consent page', async () => {
    const other = mastodon.createAccount({ username: 'partner', displayName: 'Partner' });
    mastodon.signInAs(other);
    try {
      const answer = await api().POST('/public/v1/channels/connect', {
        body: { provider: 'mastodon', instance: mastodon.url, returnUrl: RETURN_URL, state: 's1' },
      });
      const { authorizationUrl } = dataOf(answer);
      const authorize = new URL(authorizationUrl);
      expect(authorize.origin + authorize.pathname).toBe(`${mastodon.url}/oauth/authorize`);
      expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
      expect(authorize.searchParams.get('scope')).toBe('read:accounts write:statuses write:media');
      const landed = new URL(await throughInstance(authorizationUrl));
      expect(landed.origin + landed.pathname).toBe(RETURN_URL);
      expect(landed.searchParams.get('state')).toBe('s1');
      expect(landed.searchParams.get('reconnected')).toBe('false');
      const channel = await server.ctx.db
        .selectFrom('channels')
        .selectAll()
        .where('id', '=', landed.searchParams.get('channelId'))
        .executeTakeFirstOrThrow();
      expect(channel).toMatchObject({ provider: 'mastodon', external_id: `${other.id}@${mastodon.domain}` });
      // The app of the first connection, not a second one.
      expect(mastodon.apps).toHaveLength(1);
    } finally {
      mastodon.signInAs(mastodon.account);
    }
  });

  it('asks the user for their instance on a page of this server when the caller did not name it', async () => {
    const answer = await api().POST('/public/v1/channels/connect', {
      body: { provider: 'mastodon', returnUrl: RETURN_URL, state: 's2' },
    });
    const { authorizationUrl } = dataOf(answer);
    const page = new URL(authorizationUrl);
    expect(page.origin + page.pathname).toBe(`${server.baseUrl}/channels/site/mastodon`);

    // The user's browser, without a session of this server.
    const browser = new BrowserSession(server);
    const asked = await browser.get(page.pathname + page.search);
    expect(asked.status).toBe(200);
    expect(await asked.text()).toContain('<label for="site">Your Mastodon instance</label>');
    const state = page.searchParams.get('state')!;
    const refused = await browser.submit(page.pathname + page.search, page.pathname, { state, site: 'http://x y' });
    expect(refused.status).toBe(422);
    // An older instance, without PKCE: no challenge is sent to it.
    const chosen = await browser.submit(page.pathname + page.search, page.pathname, { state, site: older.url });
    const landed = new URL(await throughInstance(await continueLink(chosen)));
    expect(landed.searchParams.get('state')).toBe('s2');
    expect(landed.searchParams.get('channelId')).toMatch(/^ch_/);
    olderChannelId = landed.searchParams.get('channelId')!;
    expect(older.apps).toHaveLength(1);
    expect(older.authorizations.at(-1)).toMatchObject({ outcome: 'approved', codeChallenge: null });

    // The state is used: its page is gone.
    expect((await browser.get(page.pathname + page.search)).status).toBe(400);
  });

  it('revokes the token at its instance once the channel is removed', async () => {
    const leaving = older.createAccount({ username: 'leaving' });
    older.signInAs(leaving);
    let landed: URL;
    try {
      const answer = await api().POST('/public/v1/channels/connect', {
        body: { provider: 'mastodon', instance: older.url, returnUrl: RETURN_URL },
      });
      landed = new URL(await throughInstance(dataOf(answer).authorizationUrl));
    } finally {
      older.signInAs(older.account);
    }
    const token = older.tokens.find((t) => t.accountId === leaving.id)!;
    const removed = await api().DELETE('/public/v1/channels/{id}', byId(landed.searchParams.get('channelId')!));
    expect(removed.response.status).toBe(204);
    expect(token.revoked).toBe(false);
    await revokeRemovedAccounts(server.ctx);
    expect(token.revoked).toBe(true);
  });

  it('refuses an instance at an address the outbound policy refuses, naming instance', async () => {
    const port = new URL(mastodon.url).port;
    const answer = await api().POST('/public/v1/channels/connect', {
      body: { provider: 'mastodon', instance: `http://127.0.0.2:${port}`, returnUrl: RETURN_URL },
    });
    expect(refusalOf(answer, 422).details).toEqual([
      { path: 'instance', message: stringMatching(/127\.0\.0\.2 is a loopback address/) },
    ]);
    const metadata = await api().POST('/public/v1/channels/connect', {
      body: { provider: 'mastodon', instance: '169.254.169.254', returnUrl: RETURN_URL },
    });
    expect(refusalOf(metadata, 422).details?.[0]?.message).toMatch(/cloud metadata address/);
  });
});

describe('the rules of a post', () => {
  const draft = (item: Schemas['PostItem']) =>
    api().POST('/public/v1/posts', { body: { type: 'draft', posts: [item] } });

  it('take the limits of the channel’s own instance: characters, URLs, media, on every part', async () => {
    dataOf(await draft({ channelId: olderChannelId, content: 'a'.repeat(1000) }), 201);
    const url = `https://example.com/${'x'.repeat(100)}`;
    dataOf(await draft({ channelId: olderChannelId, content: `${'a'.repeat(969)} ${url}` }), 201);
    const images = [];
    for (const name of ['a', 'b', 'c']) images.push(await uploadFile(`${name}.png`, 'image/png', png(2, 2)));
    const refused = refusalOf(
      await draft({
        channelId: olderChannelId,
        content: `${'a'.repeat(970)} ${url}`,
        mediaIds: images,
        settings: { __type: 'mastodon', spoilerText: 'cw' },
        thread: [{ content: 'b'.repeat(999) }, { content: 'fine' }],
      }),
      422,
    );
    expect(refused.details).toEqual([
      { path: 'posts[0].content', message: stringMatching(/Mastodon takes 998 graphemes .*this has 1001/) },
      { path: 'posts[0].mediaIds', message: stringMatching(/up to 2 images/) },
      { path: 'posts[0].thread[0].content', message: stringMatching(/Mastodon takes 998 graphemes .*this has 999/) },
    ]);
    // The channel on an instance of Mastodon's own limits.
    refusalOf(await draft({ channelId, content: 'a'.repeat(501) }), 422);
  });

  it('take the media types and sizes of the channel’s own instance, on every part', async () => {
    const [webp, large, video] = await Promise.all([
      insertMedia(server.ctx.db, org.id, 'image', null, { contentType: 'image/webp' }),
      insertMedia(server.ctx.db, org.id, 'image', null, { contentType: 'image/png', size: 64 * 1024 + 1 }),
      insertMedia(server.ctx.db, org.id, 'video', 5_000, { size: 2 * 1024 * 1024 + 1 }),
    ]);
    const fits = await insertMedia(server.ctx.db, org.id, 'image', null, { contentType: 'image/png', size: 64 * 1024 });
    dataOf(await draft({ channelId: olderChannelId, mediaIds: [fits] }), 201);
    const refused = refusalOf(
      await draft({
        channelId: olderChannelId,
        mediaIds: [fits, webp],
        thread: [
          { content: 'Large', mediaIds: [large] },
          { content: 'Clip', mediaIds: [video] },
        ],
      }),
      422,
    );
    expect(refused.details).toEqual([
      {
        path: 'posts[0].mediaIds[1]',
        message: stringMatching(/^Mastodon takes images of type image\/jpeg or image\/png; this one is image\/webp/),
      },
      {
        path: 'posts[0].thread[0].mediaIds[0]',
        message: stringMatching(/^Mastodon takes images of up to 65,536 bytes; this one has 65,537 bytes/),
      },
      {
        path: 'posts[0].thread[1].mediaIds[0]',
        message: stringMatching(/^Mastodon takes videos of up to 2 MB \(2,097,152 bytes\); this one has 2,097,153/),
      },
    ]);
    // An instance of Mastodon's own limits takes all three.
    dataOf(
      await draft({
        channelId,
        mediaIds: [webp],
        thread: [
          { content: 'Two', mediaIds: [large] },
          { content: 'Three', mediaIds: [video] },
        ],
      }),
      201,
    );
  });
});

describe('publishing to Mastodon', () => {
  it('posts a text status with the post’s settings', async () => {
    const id = await publishNow({
      content: 'Hello from the scheduler https://example.com/launch',
      settings: { __type: 'mastodon', visibility: 'unlisted', spoilerText: 'Launch news', language: 'en' },
    });
    const post = await settled(id);
    expect(post).toMatchObject({ status: 'published', releaseUrl: `${mastodon.url}/@acme/${post.releaseId}` });
    expect(statusOf(post.releaseId)).toMatchObject({
      text: 'Hello from the scheduler https://example.com/launch',
      visibility: 'unlisted',
      spoilerText: 'Launch news',
      sensitive: true,
      language: 'en',
      idempotencyKey: `${id}-1-1`,
    });
  });

  it('posts four images with their alt text', async () => {
    const ids = [];
    for (const name of ['one', 'two', 'three', 'four'])
      ids.push(await uploadFile(`${name}.png`, 'image/png', png(8, 6)));
    const altTexts = { [ids[0]!]: 'A red door', [ids[1]!]: 'A blue sky', [ids[3]!]: 'Four steps' };
    const post = await settled(await publishNow({ content: 'Four pictures', mediaIds: ids, altTexts }));
    expect(post.status).toBe('published');
    const status = statusOf(post.releaseId);
    expect(status.mediaIds.map((m) => mastodon.media.find((x) => x.id === m)!.description)).toEqual([
      'A red door',
      'A blue sky',
      null,
      'Four steps',
    ]);
  });

  it('posts a three-part thread as a chain of replies', async () => {
    const id = await publishNow({
      content: '1/3 A thread',
      thread: [{ content: '2/3 goes on' }, { content: '3/3 and ends' }],
    });
    const post = await settled(id);
    expect(post.status).toBe('published');
    const [second, third] = post.thread.map((part) => statusOf(part.releaseId));
    expect(statusOf(post.releaseId).inReplyToId).toBeNull();
    expect(second).toMatchObject({ text: '2/3 goes on', inReplyToId: post.releaseId, idempotencyKey: `${id}-1-2` });
    expect(third).toMatchObject({ text: '3/3 and ends', inReplyToId: second!.id, idempotencyKey: `${id}-1-3` });
    expect(post.thread[1]!.releaseUrl).toBe(`${mastodon.url}/@acme/${third!.id}`);
  });

  it('publishes once after a lost answer: the status is sent again with its key and found', async () => {
    mastodon.loseNextStatusAnswer();
    const id = await publishNow({ content: 'Said once' });
    const post = await settled(id);
    expect(post.status).toBe('published');
    const created = mastodon.statuses.filter((s) => s.text === 'Said once');
    expect(created).toHaveLength(1);
    expect(post.releaseId).toBe(created[0]!.id);
    expect(mastodon.idempotencyKeys.filter((k) => k.key === `${id}-1-1`).map((k) => k.replayed)).toEqual([false, true]);
    expect((await history(id)).map((e) => e.type)).toContain('retrying');
  });

  it('waits while the instance processes a video, then publishes', async () => {
    const video = await uploadFile('clip.mp4', 'video/mp4', mp4(16_384));
    mastodon.processNextMedia(2);
    const post = await settled(await publishNow({ content: 'A clip', mediaIds: [video] }));
    expect(post.status).toBe('published');
    const status = statusOf(post.releaseId);
    expect(mastodon.media.find((m) => m.id === status.mediaIds[0])).toMatchObject({ type: 'video', processing: false });
    const polls = mastodon.requests.filter(
      (r) => r.method === 'GET' && r.path === `/api/v1/media/${status.mediaIds[0]}`,
    );
    expect(polls).toHaveLength(3);
  });

  it('waits for the rate limit’s reset after a 429, then publishes', async () => {
    const draft = await api().POST('/public/v1/posts', {
      body: { type: 'draft', posts: [{ channelId, content: 'After the limit' }] },
    });
    const id = dataOf(draft, 201).data[0]!.id;
    const resetAt = Date.now() + 3000;
    mastodon.rateLimitNext(1, 3);
    dataOf(
      await api().POST('/public/v1/posts/{id}/schedule', {
        ...byId(id),
        body: { scheduledAt: new Date().toISOString() },
      }),
    );
    const post = await settled(id);
    expect(post.status).toBe('published');
    const retry = (await history(id)).find((e) => e.type === 'retrying')!;
    expect(retry.reason).toMatch(/rate limit/);
    expect(Date.parse(retry.nextAttemptAt!)).toBeGreaterThanOrEqual(resetAt - 1000);
  });

  it('fails the post with the instance’s words when it refuses the status', async () => {
    mastodon.refuseNextStatus('Validation failed: Visibility is not included in the list');
    const post = await settled(await publishNow({ content: 'Refused' }));
    expect(post.error).toEqual({
      code: 'rejected_by_network',
      message: 'Mastodon refused the status: Validation failed: Visibility is not included in the list.',
    });
  });

  it('marks the channel needs_reconnect when the user revoked the access, and publishes again once reconnected', async () => {
    mastodon.revokeAll();
    const failed = await settled(await publishNow({ content: 'After the revocation' }));
    expect(failed.error?.code).toBe('channel_needs_reconnect');
    const channels = dataOf(await api().GET('/public/v1/channels'));
    expect(channels.data.find((c) => c.id === channelId)?.status).toBe('needs_reconnect');

    expect(await connectInWebApp({ channel: channelId })).toBe('/settings/channels?done=reconnected');
    const again = dataOf(await api().GET('/public/v1/channels'));
    expect(again.data.find((c) => c.id === channelId)?.status).toBe('active');
    const post = await settled(await publishNow({ content: 'Connected again' }));
    expect(post.status).toBe('published');
  });

  it('through the Public API: the revoked channel reported by webhook, connected again, and the failed post published', async () => {
    const created = await api().POST('/public/v1/webhooks', {
      body: { url: receiver.url, eventTypes: ['channel.needs_reconnect', 'channel.connected'] },
    });
    const endpoint = dataOf(created, 201);
    try {
      mastodon.revokeAll();
      const id = await publishNow({ content: 'Revoked, then connected again' });
      const failed = await settled(id);
      expect(failed).toMatchObject({ status: 'failed', error: { code: 'channel_needs_reconnect' } });
      const channel = async () => dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === channelId);
      expect((await channel())?.status).toBe('needs_reconnect');
      expect(await channelEvent('channel.needs_reconnect')).toMatchObject({
        data: { id: channelId, provider: 'mastodon', status: 'needs_reconnect' },
      });

      const answer = await api().POST('/public/v1/channels/connect', {
        body: { provider: 'mastodon', instance: mastodon.url, returnUrl: RETURN_URL, state: 'again' },
      });
      const landed = new URL(await throughInstance(dataOf(answer).authorizationUrl));
      expect(landed.origin + landed.pathname).toBe(RETURN_URL);
      expect(Object.fromEntries(landed.searchParams)).toMatchObject({
        channelId,
        reconnected: 'true',
        state: 'again',
      });
      expect((await channel())?.status).toBe('active');
      expect(await channelEvent('channel.connected')).toMatchObject({ data: { id: channelId, status: 'active' } });

      // Scheduled again, as the API retries a failed post: published under the new token, once.
      const scheduled = await api().POST('/public/v1/posts/{id}/schedule', {
        ...byId(id),
        body: { scheduledAt: new Date(server.clock.now().getTime() + 1000).toISOString() },
      });
      expect(dataOf(scheduled).status).toBe('scheduled');
      const published = await settled(id);
      const sent = mastodon.statuses.filter((s) => s.text === 'Revoked, then connected again');
      expect(sent).toHaveLength(1);
      expect(published).toMatchObject({
        status: 'published',
        releaseId: sent[0]!.id,
        releaseUrl: `${mastodon.url}/@acme/${sent[0]!.id}`,
      });
    } finally {
      await api().DELETE('/public/v1/webhooks/{id}', byId(endpoint.id));
    }
  });
});
