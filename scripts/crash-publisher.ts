/**
 * The publisher's crash drill, with numbers of your choosing: posts falling due over a window, two
 * worker processes of the build on PostgreSQL, one of them killed with SIGKILL at random moments and
 * started again at once; then what became of every post, and what the network received. Prints
 * numbers; exits 1 if a post was published twice, never settled, or is published without the
 * network having it.
 *
 *   npx tsx scripts/crash-publisher.ts [postgresql://postgres@127.0.0.1:5432/test] [posts=1000] [kills=3] [seconds=40]
 *
 * It creates a scratch database next to the one named and drops it at the end. The server bundle
 * must be built (`npm run build`, which `npm install` runs).
 */
import { drillArguments } from './drill-arguments.js';

// First: it sets TEST_DATABASE_URL, which the test support reads when imported below.
const { numbers } = drillArguments({ numbers: { posts: 1000, kills: 3, seconds: 40 } });
const { posts: POSTS, kills: KILLS, seconds: SECONDS } = numbers;

const { startFakeNetwork } = await import('../test/support/fake-network.js');
const { duplicatesAndMissing, publishedIds, startPublishingRig } = await import('../test/support/publishing-rig.js');

const network = await startFakeNetwork();
// Each publication takes a moment, so that kills land in the middle of some.
network.delay(100);
const rig = await startPublishingRig({
  channels: 20,
  networkUrl: network.url,
  workerEnv: { PUBLISH_LEASE_SECONDS: '5', PUBLISH_RETRY_BASE_MS: '500' },
});
let failed: boolean;
try {
  const firstDueAt = new Date(Date.now() + 10_000 + POSTS * 5);
  const ids = await rig.createDuePosts(POSTS, firstDueAt, SECONDS * 1000);
  let victim = await rig.startWorker();
  await rig.startWorker();
  const moments = Array.from({ length: KILLS }, () => firstDueAt.getTime() + Math.random() * SECONDS * 1000).sort(
    (a, b) => a - b,
  );
  for (const moment of moments) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, moment - Date.now())));
    await victim.kill();
    console.log(`killed a worker ${((Date.now() - firstDueAt.getTime()) / 1000).toFixed(1)} s into the window`);
    victim = await rig.startWorker();
  }
  const outcomes = await rig.untilSettled(SECONDS * 1000 + 600_000);
  const { duplicates, missing } = duplicatesAndMissing(network, ids, await publishedIds(rig));
  console.log(`${POSTS} posts due over ${SECONDS} s, ${KILLS} kills: ${JSON.stringify(outcomes)}`);
  console.log(
    `published twice: ${duplicates.length}; published without the network having it: ${missing.length}; ` +
      `sent again with a key already published: ${network.resends.length}`,
  );
  failed = duplicates.length > 0 || missing.length > 0 || Boolean(outcomes.scheduled) || Boolean(outcomes.publishing);
} finally {
  await rig.close();
  await network.close();
}
process.exit(failed ? 1 : 0);
