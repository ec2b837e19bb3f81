import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PostStatus } from '../src/core/contract.js';
import { START_WINDOW_MS } from '../src/publisher/start-limit.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { json } from './support/http.js';
import { send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';

// The sandbox given the limits of a strict network: two publications of one channel at once, and
// three started per channel per minute (TikTok's is six).
let network: FakeNetwork;
let server: TestServer;
let org: TestOrganization;

beforeAll(async () => {
  network = await startFakeNetwork();
  server = await startTestServer({
    worker: true,
    env: {
      SANDBOX_NETWORK_URL: network.url,
      SANDBOX_CONCURRENCY_PER_CHANNEL: '2',
      SANDBOX_STARTS_PER_MINUTE: '3',
      RATE_LIMIT_MAX: '100000',
      DAILY_POST_LIMIT_SANDBOX: '1000',
    },
  });
  org = await createOrganization(server.ctx.db, 'Limited network');
});
afterAll(async () => {
  await server?.close();
  await network?.close();
});
afterEach(() => network.delay(0));

async function createNow(channelId: string, count: number): Promise<string[]> {
  const posts = Array.from({ length: count }, (_, i) => ({
    channelId,
    content: `Post ${i}`,
    settings: { __type: 'sandbox' },
  }));
  const response = await send(server, org.auth, 'POST', '/public/v1/posts', { type: 'now', posts });
  const answer = await json(response);
  expect(response.status, JSON.stringify(answer)).toBe(201);
  return answer.data.map((post: { id: string }) => post.id);
}

async function statuses(ids: string[]): Promise<PostStatus[]> {
  return Promise.all(
    ids.map(async (id) => (await json(await send(server, org.auth, 'GET', `/public/v1/posts/${id}`))).status),
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`not so within ${timeoutMs} ms`);
    await sleep(100);
  }
}

async function untilPublished(ids: string[], timeoutMs: number): Promise<void> {
  await until(async () => (await statuses(ids)).every((status) => status === 'published'), timeoutMs).catch(
    async () => {
      throw new Error(`not published in time: ${JSON.stringify(await statuses(ids))}`);
    },
  );
}

/** When the post began publishing, on the server's clock (its `publishing` event). */
async function startedAt(id: string): Promise<number | undefined> {
  const history = (await json(await send(server, org.auth, 'GET', `/public/v1/posts/${id}/history`))).data as {
    type: string;
    at: string;
  }[];
  const started = history.find((event) => event.type === 'publishing');
  return started && Date.parse(started.at);
}

/** Moves the server's clock forward to `instant` (in ms), if it is not there yet. */
async function advanceTo(instant: number): Promise<void> {
  const ahead = instant - server.clock.now().getTime();
  if (ahead > 0) await server.clock.advance(ahead);
}

const channel = async (name: string) => (await createChannel(server.ctx.db, org.id, 'sandbox', name)).id;

describe('a network’s limits', () => {
  it('never runs more publications of one channel at once than the network allows', async () => {
    const [busy, other] = [await channel('Busy'), await channel('Other')];
    network.delay(600);
    const ids = [...(await createNow(busy, 3)), ...(await createNow(other, 2))];
    await untilPublished(ids, 20_000);
    // Three posts of one channel due together: the third waited for one of the first two.
    expect(network.maxConcurrentPerChannel()).toBe(2);
    const busyTimes = network.published
      .filter((p) => p.channelId === busy)
      .map((p) => p.at)
      .sort((a, b) => a - b);
    expect(busyTimes).toHaveLength(3);
    expect(busyTimes[2]! - busyTimes[0]!).toBeGreaterThanOrEqual(500);
  });

  it('delays the posts of a channel over its starts per minute until a start frees up, without holding up other channels', async () => {
    const [limited, free] = [await channel('Limited'), await channel('Free')];
    const limitedIds = await createNow(limited, 5);
    const freeIds = await createNow(free, 2);

    await untilPublished(freeIds, 5000);
    await until(async () => (await statuses(limitedIds)).filter((status) => status === 'published').length >= 3, 5000);
    // A moment more, in which a fourth would have started had nothing held it.
    await sleep(1500);
    const early = await statuses(limitedIds);
    expect(early.filter((status) => status === 'published')).toHaveLength(3);
    expect(early.filter((status) => status === 'scheduled')).toHaveLength(2);

    // Each start counts for the network's minute and a margin: the clock is moved to just before the
    // first one frees up, where nothing more starts, then past the last of them, where the rest do.
    const starts = (await Promise.all(limitedIds.map((id) => startedAt(id)))).filter((at) => at !== undefined);
    expect(starts).toHaveLength(3);
    await advanceTo(Math.min(...starts) + START_WINDOW_MS - 5000);
    await sleep(1500);
    expect((await statuses(limitedIds)).filter((status) => status === 'published')).toHaveLength(3);
    await advanceTo(Math.max(...starts) + START_WINDOW_MS + 500);
    await untilPublished(limitedIds, 10_000);

    const later = (await Promise.all(limitedIds.map((id) => startedAt(id)))).filter(
      (at) => at !== undefined && !starts.includes(at),
    );
    expect(later).toHaveLength(2);
    for (const at of later) expect(at! - Math.min(...starts)).toBeGreaterThanOrEqual(60_000);
    for (const id of limitedIds) expect(network.publicationsOf(id)).toBe(1);
  });
});
