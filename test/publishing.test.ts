import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PostStatus } from '../src/core/contract.js';
import { publicApi, type Schemas } from './support/api.js';
import { eventually } from './support/eventually.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';
import { stringContaining, stringMatching } from './support/typed-matchers.js';

// The worker runs in the server, publishing to a fake of the sandbox network that records what it
// receives; retries wait a fifth of a second instead of five. Tests about the time a post is due move
// the server's clock (and its job queue) instead of waiting for it.
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
  server.setNow(undefined);
  network.failNext(0, 0);
  network.delay(0);
  network.lookupsAnswer(undefined);
  network.cutAfterPublishing(0);
});

type Post = Schemas['Post'];
const HOUR = 3_600_000;

async function channel(name = 'Sandbox'): Promise<string> {
  return (await createChannel(server.ctx.db, org.id, 'sandbox', name)).id;
}

const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

/** Creates one post on `channelId`, or, with `count`, that many posts (the per-channel form). */
async function create(
  channelId: string,
  body: { type: 'now' } | { type: 'schedule'; date: string },
  count?: number,
): Promise<Post[]> {
  const request: Schemas['CreatePostRequest'] =
    count === undefined
      ? { ...body, content: 'Hello from the publisher', channelIds: [channelId] }
      : {
          ...body,
          posts: Array.from({ length: count }, (_, i) => ({
            channelId,
            content: `Post ${i}`,
            settings: { __type: 'sandbox' },
          })),
        };
  return dataOf(await api().POST('/public/v1/posts', { body: request }), 201).data;
}

async function get(id: string): Promise<Post> {
  return dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
}

async function history(id: string): Promise<Schemas['PostEvent'][]> {
  const page = await api().GET('/public/v1/posts/{id}/history', { params: { path: { id }, query: { limit: 100 } } });
  return dataOf(page).data;
}

/**
 * Waits until every post is in one of `statuses`; their last state, as the API answers it. It watches
 * them in the database, with one query every 200 ms: asking the API for 50 posts every few
 * milliseconds would slow down the worker it waits for.
 */
async function until(ids: string[], statuses: PostStatus[], timeout = scaled(20_000)): Promise<Post[]> {
  await eventually(
    async () => {
      const rows = await server.ctx.db.selectFrom('posts').select(['id', 'status']).where('id', 'in', ids).execute();
      expect(rows).toHaveLength(ids.length);
      for (const row of rows) expect(statuses, `${row.id} is ${row.status}`).toContain(row.status);
    },
    { timeout, interval: 200 },
  );
  return Promise.all(ids.map(get));
}

/** Whether no job to publish the post waits or runs any more: the jobs planned for it have all run. */
async function noJobLeft(postId: string): Promise<boolean> {
  const { rows } = await sql<{ done: boolean }>`select ${server.ctx.queue.noLiveJob(
    'publish-post',
    'postId',
    sql.val(postId),
  )} as done`.execute(server.ctx.db);
  return rows[0]!.done;
}

/** An instant `ms` after the server's clock reads now. */
const fromNow = (ms: number) => new Date(server.clock.now().getTime() + ms).toISOString();

describe('publishing due posts', () => {
  it('publishes a `now` post at once, and a post at the time it is scheduled for', async () => {
    const sandbox = await channel();
    // The clock stands still: what is published now is published without any time passing.
    const start = server.clock.now();
    server.setNow(start);
    const at = fromNow(HOUR);
    const [scheduled] = await create(sandbox, { type: 'schedule', date: at });
    const [now] = await create(sandbox, { type: 'now' });

    const [nowPost] = await until([now!.id], ['published']);
    expect(nowPost).toMatchObject({
      status: 'published',
      publishedAt: start.toISOString(),
      releaseId: stringMatching(/^rel_/),
      error: null,
    });
    expect((await get(scheduled!.id)).status).toBe('scheduled');

    // The hour passes; the clock, still held, reads the scheduled time.
    await server.clock.advance(HOUR);
    const [published] = await until([scheduled!.id], ['published']);
    expect(published!.publishedAt).toBe(at);
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
    const at = fromNow(2000);
    const posts = await create(sandbox, { type: 'schedule', date: at }, 50);
    expect(posts).toHaveLength(50);
    await until(
      posts.map((post) => post.id),
      ['published'],
    );
    for (const post of posts) expect(network.publicationsOf(post.id), post.id).toBe(1);
    expect(network.resends).toEqual([]);
  });

  it('never publishes at the old time a post rescheduled, drafted or deleted before it', async () => {
    const sandbox = await channel('Changed');
    // The clock stands still until the test moves it: every change is made before the old time.
    server.setNow(server.clock.now());
    const at = fromNow(HOUR);
    const [rescheduled, drafted, deleted, control] = await create(sandbox, { type: 'schedule', date: at }, 4);
    const later = fromNow(2 * HOUR);
    const schedule = await api().POST('/public/v1/posts/{id}/schedule', {
      ...byId(rescheduled!.id),
      body: { scheduledAt: later },
    });
    dataOf(schedule);
    dataOf(await api().PATCH('/public/v1/posts/{id}/status', { ...byId(drafted!.id), body: { status: 'draft' } }));
    dataOf(await api().DELETE('/public/v1/posts/{id}', byId(deleted!.id)), 204);

    // The old time: the jobs planned for it run, and only the control post goes out.
    await server.clock.advance(HOUR);
    await until([control!.id], ['published']);
    await eventually(async () => {
      expect(await noJobLeft(drafted!.id), 'the drafted post’s job has run').toBe(true);
      expect(await noJobLeft(deleted!.id), 'the deleted post’s job has run').toBe(true);
    });
    for (const post of [rescheduled!, drafted!, deleted!]) expect(network.publicationsOf(post.id), post.id).toBe(0);
    expect(await get(rescheduled!.id)).toMatchObject({ status: 'scheduled', scheduledAt: later });
    expect((await get(drafted!.id)).status).toBe('draft');
    expect((await history(rescheduled!.id)).map((event) => event.type)).toEqual([
      'created',
      'scheduled',
      'rescheduled',
    ]);

    // The new time: the rescheduled post goes out then, once, whichever of its jobs takes it.
    await server.clock.advance(HOUR);
    const [published] = await until([rescheduled!.id], ['published']);
    expect(published!.publishedAt).toBe(later);
    expect(network.publicationsOf(rescheduled!.id)).toBe(1);
  });

  it('retries passing failures of the network and publishes once they pass', async () => {
    const sandbox = await channel('Flaky');
    network.failNext(2, 503);
    const [post] = await create(sandbox, { type: 'now' });
    const [published] = await until([post!.id], ['published', 'failed']);
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
      message: stringContaining('The token was revoked.'),
    });
    // The channel waits for a user to connect it again: it takes no new posts, and its next one fails
    // without a call.
    const channels = dataOf(await api().GET('/public/v1/channels')).data;
    expect(channels.find((c) => c.id === sandbox)).toMatchObject({
      status: 'needs_reconnect',
      disabled: true,
    });
    const refused = await api().POST('/public/v1/posts', {
      body: { type: 'now', content: 'Again', channelIds: [sandbox] },
    });
    expect(refused.response.status).toBe(422);
    expect(JSON.stringify(refused.error)).toContain('needs to be connected again');
  });

  describe('on the sandbox network of the server itself', () => {
    // The real sandbox network of this server: settings `outcome: failed` make it refuse the post.
    let local: TestServer;
    beforeAll(async () => {
      local = await startTestServer({ worker: true, env: { PUBLISH_RETRY_BASE_MS: '200' } });
      local.ctx.config.sandbox.networkUrl = local.baseUrl;
    });
    afterAll(() => local?.close());

    it('publishes the sandbox’s own failure when a post’s settings ask for it, and a failed post can be scheduled again', async () => {
      const owner = await createOrganization(local.ctx.db, 'Sandbox user');
      const sandbox = (await createChannel(local.ctx.db, owner.id, 'sandbox')).id;
      const localApi = publicApi(local, owner.auth);
      const created = await localApi.POST('/public/v1/posts', {
        body: {
          type: 'now',
          posts: [
            { channelId: sandbox, content: 'Try the failure path', settings: { __type: 'sandbox', outcome: 'failed' } },
          ],
        },
      });
      const id = dataOf(created, 201).data[0]!.id;
      const settled = (statuses: PostStatus[]) =>
        eventually(async () => {
          const post = dataOf(await localApi.GET('/public/v1/posts/{id}', byId(id)));
          expect(statuses).toContain(post.status);
          return post;
        });
      expect(await settled(['published', 'failed'])).toMatchObject({
        status: 'failed',
        error: { code: 'rejected_by_network', message: stringContaining('outcome: failed') },
      });

      // Scheduled again with the default outcome, it is published, on a page of the server.
      dataOf(await localApi.PATCH('/public/v1/posts/{id}', { ...byId(id), body: { settings: { __type: 'sandbox' } } }));
      dataOf(await localApi.PATCH('/public/v1/posts/{id}/status', { ...byId(id), body: { status: 'scheduled' } }));
      const post = await settled(['published']);
      expect(post.releaseUrl).toMatch(new RegExp(`^${local.baseUrl}/sandbox/releases/rel_`));
      const page = await fetch(post.releaseUrl!);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('Try the failure path');
    });
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
    await eventually(async () => {
      const retries = (await history(post!.id)).filter((event) => event.type === 'retrying');
      expect(retries.length).toBeGreaterThanOrEqual(2);
    });
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
      message: stringContaining('Check the channel before scheduling it again'),
    });
    expect(network.publicationsOf(post!.id)).toBe(1);
    expect(network.resends).toEqual([]);
  });
});

describe('a part after the post whose outcome the network cannot tell', () => {
  // The post's own part is published; the part whose answer was lost cannot be found again (410): the
  // post says that part may be on the network, instead of promising that scheduling again is safe.
  const createParted = async (sandbox: string, item: Partial<Schemas['PostItem']>) =>
    dataOf(
      await api().POST('/public/v1/posts', {
        body: { type: 'now', posts: [{ channelId: sandbox, content: 'Opening hours', ...item }] },
      }),
      201,
    ).data[0]!;

  it('says a first comment may have been published, and to check the comments before scheduling again', async () => {
    const sandbox = await channel('Lost comment');
    network.cutAfterPublishing(1, 2);
    network.lookupsAnswer(410);
    const post = await createParted(sandbox, { firstComment: { content: 'Closed on Sundays' } });
    const [failed] = await until([post.id], ['published', 'failed']);
    expect(failed).toMatchObject({
      status: 'failed',
      releaseId: stringContaining('rel_fake'),
      firstComment: { content: 'Closed on Sundays', releaseId: null },
      error: {
        code: 'outcome_unknown',
        message: stringMatching(
          /^The first comment may have been published: The post was sent to the network, which cannot tell .*The post is published; check its comments on the network before scheduling it again, which sends the comment again\.$/,
        ),
      },
    });
    expect(failed!.error!.message).not.toContain('publishes the comment only');
    const events = await history(post.id);
    expect(events.at(-1)).toMatchObject({ type: 'failed', error: failed!.error });
    expect(network.published.filter((p) => p.postId === post.id).map((p) => p.part)).toEqual([1, 2]);
    expect(network.resends).toEqual([]);
  });

  it('says a thread part may have been published, and to check the thread before scheduling again', async () => {
    const sandbox = await channel('Lost reply');
    network.cutAfterPublishing(1, 2);
    network.lookupsAnswer(410);
    const post = await createParted(sandbox, { thread: [{ content: 'Mornings' }, { content: 'Evenings' }] });
    const [failed] = await until([post.id], ['published', 'failed']);
    expect(failed).toMatchObject({
      status: 'failed',
      error: {
        code: 'outcome_unknown',
        message: stringMatching(
          /^The thread's part 2 of 3 may have been published: .* The parts before it are published; scheduling the post again goes on from part 2, sending it again: check the thread on the network first\.$/,
        ),
      },
    });
    const events = await history(post.id);
    expect(events.at(-1)).toMatchObject({ type: 'failed', error: failed!.error });
    expect(network.published.filter((p) => p.postId === post.id).map((p) => p.part)).toEqual([1, 2]);
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
      scheduledAt: fromNow(-120_000),
    });
    expect(await noJobLeft(id)).toBe(true);
    expect((await get(id)).status).toBe('scheduled');
    await server.ctx.publisher!.reconcile();
    await until([id], ['published']);
    expect(network.publicationsOf(id)).toBe(1);
  });

  // It starts a second server.
  it(
    'lets go of running publications when it stops, and another worker finishes them, each once',
    {
      timeout: TIMEOUTS.test + TIMEOUTS.hook,
    },
    async () => {
      const sandbox = await channel('Stopping');
      network.delay(1500);
      const posts = await create(sandbox, { type: 'now' }, 5);
      await until(
        posts.map((post) => post.id),
        ['publishing'],
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
      await eventually(() => {
        for (const post of posts) expect(network.publicationsOf(post.id), post.id).toBe(1);
      });
      network.delay(0);
      // Another process of the installation: the same database, and the same clock (which the tests above
      // moved).
      const next = await startTestServer({
        worker: true,
        env: { SANDBOX_NETWORK_URL: network.url, PUBLISH_RETRY_BASE_MS: '200' },
        database: server.ctx.database,
        clock: server.clock,
      });
      try {
        await until(
          posts.map((post) => post.id),
          ['published'],
        );
        for (const post of posts) expect(network.publicationsOf(post.id)).toBe(1);
        expect(network.resends).toEqual([]);
      } finally {
        await next.close({ keepDatabase: true });
      }
    },
  );
});
