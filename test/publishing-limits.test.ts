import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PostStatus } from '../src/core/contract.js';
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

async function untilPublished(ids: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await statuses(ids)).every((status) => status === 'published')) {
    if (Date.now() > deadline) throw new Error(`not published in time: ${JSON.stringify(await statuses(ids))}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
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

  it('delays the posts of a channel over its starts per minute to the next minute, without holding up other channels', async () => {
    // Begin early in a minute, so that the minute does not turn while the first posts go out.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 40_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 500));
    const [limited, free] = [await channel('Limited'), await channel('Free')];
    const limitedIds = await createNow(limited, 5);
    const freeIds = await createNow(free, 2);

    await untilPublished(freeIds, 5000);
    const deadline = Date.now() + 5000;
    while (
      (await statuses(limitedIds)).filter((status) => status === 'published').length < 3 &&
      Date.now() < deadline
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const minute = Math.floor(Date.now() / 60_000);
    // A moment more, in which a fourth would have started had nothing held it.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const early = await statuses(limitedIds);
    expect(early.filter((status) => status === 'published')).toHaveLength(3);
    expect(early.filter((status) => status === 'scheduled')).toHaveLength(2);

    await untilPublished(limitedIds, 75_000);
    const limitedMinutes = network.published
      .filter((p) => p.channelId === limited)
      .map((p) => Math.floor(p.at / 60_000));
    expect(limitedMinutes.filter((m) => m === minute)).toHaveLength(3);
    expect(limitedMinutes.filter((m) => m === minute + 1)).toHaveLength(2);
    for (const id of limitedIds) expect(network.publicationsOf(id)).toBe(1);
  }, 150_000);
});
