import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi } from './support/api.js';
import { TEST_DATABASE_URL } from './support/database.js';
import { eventually } from './support/eventually.js';
import { startFakeNetwork, type FakeNetwork } from './support/fake-network.js';
import { startPublishingRig, type PublishingRig } from './support/publishing-rig.js';
import { scaled } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';

// Threads published by worker processes of the build that are killed with SIGKILL between parts, on
// PostgreSQL (the embedded database belongs to one process), to a fake of the sandbox network that
// records each publication's part and the release it replies to, and any publication sent again.
const onPostgres = describe.skipIf(!TEST_DATABASE_URL);

const THREADS = 10;
const PARTS = 4;
// Each publication takes this long on the network, so that a thread is under way for a few seconds.
const NETWORK_DELAY_MS = 500;
const WORKER_ENV = { PUBLISH_LEASE_SECONDS: '5', PUBLISH_RETRY_BASE_MS: '500' };

/** How many parts of each thread of the rig are recorded as published, by post id. */
async function recordedParts(rig: PublishingRig): Promise<Map<string, number>> {
  const rows = await rig.api.ctx.db
    .selectFrom('posts')
    .select(['id', 'release_id', 'thread'])
    .where('organization_id', '=', rig.org.id)
    .execute();
  return new Map(
    rows.map((row) => [
      row.id,
      (row.release_id === null ? 0 : 1) + row.thread.filter((part) => part.releaseId !== null).length,
    ]),
  );
}

/** The threads that have some of their parts recorded as published, and not all. */
const midway = (parts: Map<string, number>) => [...parts.values()].filter((n) => n > 0 && n < PARTS).length;

onPostgres('threads published by worker processes killed between parts', () => {
  let network: FakeNetwork;
  beforeAll(async () => {
    network = await startFakeNetwork();
    network.delay(NETWORK_DELAY_MS);
  });
  afterAll(async () => {
    await network?.close();
  });

  it(
    'a kill -9 between parts: every thread finishes once, in order, each part replying to the one before',
    { timeout: scaled(180_000) },
    async () => {
      const rig = await startPublishingRig({ channels: THREADS, networkUrl: network.url, workerEnv: WORKER_ENV });
      try {
        const api = publicApi(rig.api, rig.org.auth);
        const created = await api.POST('/public/v1/posts', {
          body: {
            type: 'now',
            posts: rig.channelIds.map((channelId, t) => ({
              channelId,
              content: `Thread ${t + 1}, part 1`,
              thread: Array.from({ length: PARTS - 1 }, (_, p) => ({ content: `Thread ${t + 1}, part ${p + 2}` })),
            })),
          },
        });
        const ids = dataOf(created, 201).data.map((post) => post.id);
        expect(ids).toHaveLength(THREADS);

        // First kill: as soon as a thread has a part recorded as published and the rest not (the other
        // threads' parts are then on their way, or published and not recorded yet).
        const first = await rig.startWorker();
        await eventually(async () => expect(midway(await recordedParts(rig))).toBeGreaterThan(0), {
          timeout: scaled(60_000),
          interval: 20,
        });
        await first.kill();
        // Nothing moves while no worker runs: this is where the threads stood when it died.
        const atFirstKill = await recordedParts(rig);
        expect(midway(atFirstKill), 'threads under way when the first worker died').toBeGreaterThan(0);

        // Second kill: once the next worker took the threads over and published a part of one that it
        // has not finished.
        const second = await rig.startWorker();
        await eventually(
          async () => {
            const now = await recordedParts(rig);
            const movedOn = [...now].filter(([id, n]) => n > atFirstKill.get(id)! && n < PARTS);
            expect(movedOn.length).toBeGreaterThan(0);
          },
          { timeout: scaled(60_000), interval: 20 },
        );
        await second.kill();
        const atSecondKill = await recordedParts(rig);
        expect(midway(atSecondKill), 'threads under way when the second worker died').toBeGreaterThan(0);

        await rig.startWorker();
        expect(await rig.untilSettled(scaled(90_000))).toEqual({ published: THREADS });

        // A part sent again under its key shows as a resend; under another key (another attempt), as a
        // second publication of the part; a part skipped, or recorded late, as a reply to the wrong one.
        expect(network.resends).toEqual([]);
        for (const id of ids) {
          // On the network: each part once, in order, each a reply to the part before.
          const publications = network.published.filter((publication) => publication.postId === id);
          expect(
            publications.map((publication) => publication.part),
            `the parts of ${id} as the network received them`,
          ).toEqual(Array.from({ length: PARTS }, (_, p) => p + 1));
          expect(
            publications.map((publication) => publication.replyTo),
            `what each part of ${id} replies to`,
          ).toEqual([null, ...publications.slice(0, -1).map((publication) => publication.releaseId)]);
          // The post records where each part went.
          const post = dataOf(await api.GET('/public/v1/posts/{id}', { params: { path: { id } } }));
          expect(
            [post.releaseId, ...post.thread.map((part) => part.releaseId)],
            `the recorded releases of ${id}`,
          ).toEqual(publications.map((publication) => publication.releaseId));
        }
        console.log(
          `thread crash drill: ${midway(atFirstKill)} and ${midway(atSecondKill)} of ${THREADS} threads under way ` +
            `at the kills, ${network.published.length} publications`,
        );
      } finally {
        await rig.close();
      }
    },
  );
});
