import { afterAll, afterEach, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import { START_WINDOW_MS } from '../src/publisher/start-limit.js';
import type { JobQueue } from '../src/jobs/queue.js';
import { publicApi } from './support/api.js';
import { eventually } from './support/eventually.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';

// The sandbox given the limits of a strict network: two publications of one channel at once, and
// three started per channel per minute (TikTok's is six).
let network: FakeNetwork;
let server: TestServer;
let org: TestOrganization;
/** Every plan to publish posts the service makes: creating them, and the publisher's plans to try later. */
let plans: MockInstance<JobQueue['planPublish']>;

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
  plans = vi.spyOn(server.ctx.queue, 'planPublish');
});
afterAll(async () => {
  await server?.close();
  await network?.close();
});
afterEach(() => network.delay(0));

const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

async function createNow(channelId: string, count: number): Promise<string[]> {
  const posts = Array.from({ length: count }, (_, i) => ({
    channelId,
    content: `Post ${i}`,
    settings: { __type: 'sandbox' as const },
  }));
  const created = await api().POST('/public/v1/posts', { body: { type: 'now', posts } });
  return dataOf(created, 201).data.map((post) => post.id);
}

async function statuses(ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => dataOf(await api().GET('/public/v1/posts/{id}', byId(id))).status));
}

/** Waits until `count` of the posts are published (all of them by default). */
function untilPublished(ids: string[], count = ids.length, timeout = scaled(10_000)): Promise<void> {
  return eventually(
    async () => expect((await statuses(ids)).filter((status) => status === 'published')).toHaveLength(count),
    { timeout, interval: 200 },
  );
}

/** When the post began publishing, on the server's clock (its `publishing` event). */
async function startedAt(id: string): Promise<number | undefined> {
  const history = dataOf(await api().GET('/public/v1/posts/{id}/history', byId(id))).data;
  const started = history.find((event) => event.type === 'publishing');
  return started && Date.parse(started.at);
}

/** The times the service planned a post's publication for after its first plan (the one of its creation). */
const replansOf = (id: string) =>
  plans.mock.calls
    .flatMap(([, planned]) => planned)
    .filter((plan) => plan.id === id)
    .slice(1)
    .map((plan) => plan.at);

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
    await untilPublished(ids, ids.length, scaled(20_000));
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

    await untilPublished(freeIds);
    await untilPublished(limitedIds, 3);
    // The other two were held back: the publisher planned them again for when a start frees up.
    const early = await statuses(limitedIds);
    const waiting = limitedIds.filter((_, i) => early[i] === 'scheduled');
    expect(early.filter((status) => status === 'published')).toHaveLength(3);
    expect(waiting).toHaveLength(2);
    await eventually(() => {
      for (const id of waiting) expect(replansOf(id), id).not.toEqual([]);
    });
    expect((await statuses(limitedIds)).filter((status) => status === 'published')).toHaveLength(3);

    // Each start counts for the network's minute and a margin: the held posts are planned for when the
    // first one frees up. The clock is moved to just before then, where nothing more starts, then past
    // the last of them, where the rest do.
    const starts = (await Promise.all(limitedIds.map((id) => startedAt(id)))).filter((at) => at !== undefined);
    expect(starts).toHaveLength(3);
    const justBefore = Math.min(...starts) + START_WINDOW_MS - 5000;
    for (const id of waiting) expect(replansOf(id)[0]!.getTime(), id).toBeGreaterThan(justBefore);
    await advanceTo(justBefore);
    expect((await statuses(limitedIds)).filter((status) => status === 'published')).toHaveLength(3);
    await advanceTo(Math.max(...starts) + START_WINDOW_MS + 500);
    await untilPublished(limitedIds);

    const later = (await Promise.all(limitedIds.map((id) => startedAt(id)))).filter(
      (at) => at !== undefined && !starts.includes(at),
    );
    expect(later).toHaveLength(2);
    for (const at of later) expect(at! - Math.min(...starts)).toBeGreaterThanOrEqual(60_000);
    for (const id of limitedIds) expect(network.publicationsOf(id)).toBe(1);
  });
});
