import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PostStatus } from '../src/core/contract.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { json } from './support/http.js';
import { send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';

// The worker runs in the server, publishing to a fake of the sandbox network that records what it
// receives; retries wait a fifth of a second instead of five.
let network: FakeNetwork;
let server: TestServer;
let org: TestOrganization;

beforeAll(async () => {
  network = await startFakeNetwork();
  server = await startTestServer({
    worker: true,
    env: {
      SANDBOX_NETWORK_URL: network.url,
      PUBLISH_RETRY_BASE_MS: '200',
      RATE_LIMIT_MAX: '100000',
      DAILY_POST_LIMIT_SANDBOX: '1000',
    },
  });
  org = await createOrganization(server.ctx.db, 'Publishing');
});
afterAll(async () => {
  await server?.close();
  await network?.close();
});
afterEach(() => {
  network.failNext(0, 0);
  network.delay(0);
  network.lookupsAnswer(undefined);
});

interface Post {
  id: string;
  status: PostStatus;
  scheduledAt: string | null;
  publishedAt: string | null;
  releaseId: string | null;
  releaseUrl: string | null;
  error: { code: string; message: string } | null;
}

async function channel(name = 'Sandbox'): Promise<string> {
  return (await createChannel(server.ctx.db, org.id, 'sandbox', name)).id;
}

/** Creates one post on `channelId`, or, with `count`, that many posts (the per-channel form). */
async function create(
  channelId: string,
  body: { type: 'now' | 'schedule'; date?: string; count?: number },
): Promise<Post[]> {
  const { count, ...rest } = body;
  const request =
    count === undefined
      ? { content: 'Hello from the publisher', channelIds: [channelId], ...rest }
      : {
          ...rest,
          posts: Array.from({ length: count }, (_, i) => ({
            channelId,
            content: `Post ${i}`,
            settings: { __type: 'sandbox' },
          })),
        };
  const response = await send(server, org.auth, 'POST', '/public/v1/posts', request);
  const answer = await json(response);
  expect(response.status, JSON.stringify(answer)).toBe(201);
  return answer.data;
}

async function get(id: string): Promise<Post> {
  return json(await send(server, org.auth, 'GET', `/public/v1/posts/${id}`));
}

async function history(
  id: string,
): Promise<{ type: string; reason?: string; attempt?: number; error?: { code: string } }[]> {
  return (await json(await send(server, org.auth, 'GET', `/public/v1/posts/${id}/history?limit=100`))).data;
}

/** Waits until every post is in one of `statuses`; their last state. */
async function until(ids: string[], statuses: PostStatus[], timeoutMs = 20_000): Promise<Post[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const posts = await Promise.all(ids.map(get));
    if (posts.every((post) => statuses.includes(post.status))) return posts;
    if (Date.now() > deadline)
      throw new Error(`not ${statuses.join('/')} in time: ${JSON.stringify(posts.map((p) => [p.id, p.status]))}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const inSeconds = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString();

describe('publishing due posts', () => {
  it('publishes a post at the time it is scheduled for, and a `now` post within 2 seconds', async () => {
    const sandbox = await channel();
    const at = inSeconds(3);
    const [scheduled] = await create(sandbox, { type: 'schedule', date: at });
    const startedNow = Date.now();
    const [now] = await create(sandbox, { type: 'now' });

    const [nowPost] = await until([now!.id], ['published']);
    expect(Date.now() - startedNow).toBeLessThan(2000);
    expect(nowPost).toMatchObject({ status: 'published', releaseId: expect.stringMatching(/^rel_/), error: null });
    expect((await get(scheduled!.id)).status).toBe('scheduled');

    const [published] = await until([scheduled!.id], ['published'], 10_000);
    const lateness = Date.parse(published!.publishedAt!) - Date.parse(at);
    expect(lateness).toBeGreaterThanOrEqual(0);
    // Within the worker's polling interval (half a second) and the publication itself.
    expect(lateness).toBeLessThan(1500);
    expect(published!.releaseUrl).toBe(`${network.url}/releases/${published!.releaseId}`);
    expect(network.publicationsOf(scheduled!.id)).toBe(1);
    expect((await history(scheduled!.id)).map((event) => event.type)).toEqual([
      'created',
      'scheduled',
      'publishing',
      'published',
    ]);
  });

  it('publishes every one of 50 posts that share one time, each once', async () => {
    const sandbox = await channel('Busy');
    const at = inSeconds(2);
    const posts = await create(sandbox, { type: 'schedule', date: at, count: 50 });
    expect(posts).toHaveLength(50);
    await until(
      posts.map((post) => post.id),
      ['published'],
      20_000,
    );
    for (const post of posts) expect(network.publicationsOf(post.id), post.id).toBe(1);
    expect(network.resends).toEqual([]);
  });

  it('never publishes at the old time a post rescheduled, drafted or deleted before it', async () => {
    const sandbox = await channel('Changed');
    const at = inSeconds(2);
    const [rescheduled, drafted, deleted, control] = await create(sandbox, { type: 'schedule', date: at, count: 4 });
    const later = inSeconds(3600);
    expect(
      (await send(server, org.auth, 'POST', `/public/v1/posts/${rescheduled!.id}/schedule`, { scheduledAt: later }))
        .status,
    ).toBe(200);
    expect(
      (await send(server, org.auth, 'PATCH', `/public/v1/posts/${drafted!.id}/status`, { status: 'draft' })).status,
    ).toBe(200);
    expect((await send(server, org.auth, 'DELETE', `/public/v1/posts/${deleted!.id}`)).status).toBe(204);

    await until([control!.id], ['published'], 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    for (const post of [rescheduled!, drafted!, deleted!]) expect(network.publicationsOf(post.id), post.id).toBe(0);
    expect(await get(rescheduled!.id)).toMatchObject({ status: 'scheduled', scheduledAt: later });
    expect((await get(drafted!.id)).status).toBe('draft');
    expect((await history(rescheduled!.id)).map((event) => event.type)).toEqual([
      'created',
      'scheduled',
      'rescheduled',
    ]);
  });

  it('retries passing failures of the network and publishes once they pass', async () => {
    const sandbox = await channel('Flaky');
    network.failNext(2, 503);
    const [post] = await create(sandbox, { type: 'now' });
    const [published] = await until([post!.id], ['published', 'failed'], 15_000);
    expect(published!.status).toBe('published');
    expect(network.publicationsOf(post!.id)).toBe(1);
    const events = await history(post!.id);
    expect(events.map((event) => event.type)).toEqual([
      'created',
      'scheduled',
      'publishing',
      'retrying',
      'retrying',
      'published',
    ]);
    expect(events[3]).toMatchObject({ attempt: 1, reason: 'The network answered 503.' });
  });

  it('fails at once, with a code and the reason, what the network refuses', async () => {
    const sandbox = await channel('Strict');
    network.failNext(1, 422, { error: 'rejected', message: 'Captions may not mention competitors.' });
    const [post] = await create(sandbox, { type: 'now' });
    const [failed] = await until([post!.id], ['published', 'failed']);
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: 'rejected_by_network', message: 'Captions may not mention competitors.' },
      releaseId: null,
    });
    expect((await history(post!.id)).map((event) => event.type)).toEqual([
      'created',
      'scheduled',
      'publishing',
      'failed',
    ]);
  });

  it('fails with channel_needs_reconnect when the network refuses the channel’s credentials', async () => {
    const sandbox = await channel('Revoked');
    network.failNext(1, 401, { error: 'unauthorized', message: 'The token was revoked.' });
    const [post] = await create(sandbox, { type: 'now' });
    const [failed] = await until([post!.id], ['published', 'failed']);
    expect(failed!.error).toEqual({
      code: 'channel_needs_reconnect',
      message: expect.stringContaining('The token was revoked.'),
    });
    // The channel waits for a user to connect it again: it takes no new posts, and its next one fails without a call.
    const channels = (await json(await send(server, org.auth, 'GET', '/public/v1/channels'))).data;
    expect(channels.find((c: { id: string }) => c.id === sandbox)).toMatchObject({
      status: 'needs_reconnect',
      disabled: true,
    });
    const refused = await send(server, org.auth, 'POST', '/public/v1/posts', {
      type: 'now',
      content: 'Again',
      channelIds: [sandbox],
    });
    expect(refused.status).toBe(422);
    expect(JSON.stringify(await json(refused))).toContain('needs to be connected again');
  });

  it('publishes the sandbox’s own failure when a post’s settings ask for it, and a failed post can be scheduled again', async () => {
    // The real sandbox network of this server: settings `outcome: failed` make it refuse the post.
    const local = await startTestServer({ worker: true, env: { PUBLISH_RETRY_BASE_MS: '200' } });
    try {
      local.ctx.config.sandbox.networkUrl = local.baseUrl;
      const owner = await createOrganization(local.ctx.db, 'Sandbox user');
      const sandbox = (await createChannel(local.ctx.db, owner.id, 'sandbox')).id;
      const created = await json(
        await send(local, owner.auth, 'POST', '/public/v1/posts', {
          type: 'now',
          posts: [
            { channelId: sandbox, content: 'Try the failure path', settings: { __type: 'sandbox', outcome: 'failed' } },
          ],
        }),
      );
      const id = created.data[0].id as string;
      const read = async () => json(await send(local, owner.auth, 'GET', `/public/v1/posts/${id}`));
      let post = await read();
      for (let i = 0; i < 100 && !['published', 'failed'].includes(post.status); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        post = await read();
      }
      expect(post).toMatchObject({
        status: 'failed',
        error: { code: 'rejected_by_network', message: expect.stringContaining('outcome: failed') },
      });

      // Scheduled again with the default outcome, it is published, on a page of the server.
      expect(
        (await send(local, owner.auth, 'PATCH', `/public/v1/posts/${id}`, { settings: { __type: 'sandbox' } })).status,
      ).toBe(200);
      expect(
        (await send(local, owner.auth, 'PATCH', `/public/v1/posts/${id}/status`, { status: 'scheduled' })).status,
      ).toBe(200);
      for (let i = 0; i < 100 && post.status !== 'published'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        post = await read();
      }
      expect(post.status).toBe('published');
      expect(post.releaseUrl).toMatch(new RegExp(`^${local.baseUrl}/sandbox/releases/rel_`));
      const page = await fetch(post.releaseUrl);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('Try the failure path');
    } finally {
      await local.close();
    }
  });
});

describe('at most once on the network', () => {
  it('asks the network about a publication whose answer was lost, and never sends it again', async () => {
    const sandbox = await channel('Lost answers');
    network.cutAfterPublishing(1);
    const [post] = await create(sandbox, { type: 'now' });
    const [published] = await until([post!.id], ['published', 'failed']);
    expect(published!.status).toBe('published');
    expect(network.publicationsOf(post!.id)).toBe(1);
    expect(network.resends).toEqual([]);
  });

  it('asks again later when asking meets a passing failure, and still sends nothing again', async () => {
    const sandbox = await channel('Busy answers');
    network.cutAfterPublishing(1);
    network.lookupsAnswer(503);
    const [post] = await create(sandbox, { type: 'now' });
    const deadline = Date.now() + 10_000;
    while ((await history(post!.id)).filter((event) => event.type === 'retrying').length < 2 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await get(post!.id)).status).toBe('publishing');
    network.lookupsAnswer(undefined);

    const [published] = await until([post!.id], ['published', 'failed']);
    expect(published!.status).toBe('published');
    expect(network.publicationsOf(post!.id)).toBe(1);
    expect(network.resends).toEqual([]);
    const events = await history(post!.id);
    expect(events.map((event) => event.type)).toEqual([
      'created',
      'scheduled',
      'publishing',
      'retrying',
      'retrying',
      'published',
    ]);
    expect(events[3]!.reason).toMatch(/asked what became of the post before anything is sent again/);
    expect(events[4]!.reason).toMatch(/503/);
  });

  it('fails with outcome_unknown, and sends nothing again, when the network cannot tell', async () => {
    const sandbox = await channel('Unknowable');
    network.cutAfterPublishing(1);
    network.lookupsAnswer(410);
    const [post] = await create(sandbox, { type: 'now' });
    const [failed] = await until([post!.id], ['published', 'failed']);
    expect(failed!.error).toEqual({
      code: 'outcome_unknown',
      message: expect.stringContaining('Check the channel before scheduling it again'),
    });
    expect(network.publicationsOf(post!.id)).toBe(1);
    expect(network.resends).toEqual([]);
  });
});

describe('crash safety without a crash', () => {
  it('plans the publication of a due post that has no job (reconciliation)', async () => {
    const sandbox = await channel('Orphan');
    // A post made due by a path that planned nothing: it has no job at all.
    const id = await insertPost(server.ctx.db, {
      organizationId: org.id,
      channelId: sandbox,
      status: 'scheduled',
      scheduledAt: new Date(Date.now() - 120_000).toISOString(),
    });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await get(id)).status).toBe('scheduled');
    await server.ctx.publisher!.reconcile();
    await until([id], ['published'], 10_000);
    expect(network.publicationsOf(id)).toBe(1);
  });

  it('lets go of running publications when it stops, and another worker finishes them, each once', async () => {
    const sandbox = await channel('Stopping');
    network.delay(1500);
    const posts = await create(sandbox, { type: 'now', count: 5 });
    await until(
      posts.map((post) => post.id),
      ['publishing'],
      5000,
    );
    await server.ctx.publisher!.stop(100);
    // Nothing is held by the stopped worker: each post is free for the next one at once.
    const held = await server.ctx.db
      .selectFrom('posts')
      .select('id')
      .where('lease_owner', '=', server.ctx.publisher!.id)
      .execute();
    expect(held).toEqual([]);

    // The network finishes what it was sent when the calls were cut; the next worker, asking after
    // the retry delay, finds each publication there instead of sending it again.
    for (let waited = 0; !posts.every((post) => network.publicationsOf(post.id) === 1) && waited < 5000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    network.delay(0);
    const next = await startTestServer({
      worker: true,
      env: { SANDBOX_NETWORK_URL: network.url, PUBLISH_RETRY_BASE_MS: '200' },
      database: server.ctx.database,
    });
    try {
      await until(
        posts.map((post) => post.id),
        ['published'],
        15_000,
      );
      for (const post of posts) expect(network.publicationsOf(post.id)).toBe(1);
      expect(network.resends).toEqual([]);
    } finally {
      await next.close({ keepDatabase: true });
    }
  });
});
