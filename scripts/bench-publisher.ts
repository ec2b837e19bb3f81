/**
 * How fast and how punctually the publisher publishes, on PostgreSQL, with worker processes of the
 * build (`npm start -- --role worker`) and the sandbox adapter publishing to a stand-in of the sandbox
 * network in this process (it answers at once, or after the latency asked for). Prints numbers;
 * asserts nothing.
 *
 *   npx tsx scripts/bench-publisher.ts [postgresql://postgres@127.0.0.1:5432/test] [a|b|c ...]
 *
 * (a) 10,000 posts due at one time, 2 workers: publications per second, and the time from the due
 *     time until the last is published;
 * (b) 100 posts a second falling due evenly for 60 s: lateness (publishedAt − scheduledAt), p50,
 *     p99 and max;
 * (c) (b) with a network that takes 1 s to answer each publication.
 *
 * It creates a scratch database next to the one named, and drops it at the end. The server bundle
 * must be built (`npm run build`, which `npm install` runs).
 */
process.env.TEST_DATABASE_URL =
  process.argv.slice(2).find((arg) => arg.startsWith('postgres')) ??
  process.env.TEST_DATABASE_URL ??
  'postgresql://postgres@127.0.0.1:5432/test';
const scenarios = process.argv.slice(2).filter((arg) => /^[abc]$/.test(arg));

const { startFakeNetwork } = await import('../test/support/fake-network.js');
const { latenesses, startPublishingRig } = await import('../test/support/publishing-rig.js');

const WORKERS = 2;
// BENCH_PROFILE_DIR: the workers write CPU profiles there (open them in Chrome's DevTools).
const workerEnv: Record<string, string> = process.env.BENCH_PROFILE_DIR
  ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}` }
  : {};
const COUNT_A = Number(process.env.BENCH_POSTS ?? 10_000);
const CHANNELS = 100;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function burst(count: number): Promise<void> {
  const network = await startFakeNetwork();
  const rig = await startPublishingRig({ channels: CHANNELS, networkUrl: network.url, workerEnv });
  try {
    // Created well before they fall due, so the workers meet them all at once.
    const dueAt = new Date(Date.now() + 10_000 + count * 6);
    const created = Date.now();
    await rig.createDuePosts(count, dueAt, 0);
    console.log(`(a) created ${count} posts in ${seconds(Date.now() - created)}; due at one time`);
    const workers = [];
    for (let i = 0; i < WORKERS; i++) workers.push(await rig.startWorker());
    await new Promise((resolve) => setTimeout(resolve, dueAt.getTime() - Date.now()));
    const outcomes = await rig.untilSettled(600_000);
    await Promise.all(workers.map((worker) => worker.terminate()));
    const last = await rig.api.ctx.db
      .selectFrom('posts')
      .select((eb) => eb.fn.max('published_at').as('last'))
      .where('organization_id', '=', rig.org.id)
      .executeTakeFirstOrThrow();
    const took = new Date(last.last as Date).getTime() - dueAt.getTime();
    console.log(
      `(a) ${JSON.stringify(outcomes)}: the last published ${seconds(took)} after the due time, ` +
        `${Math.round(count / (took / 1000))} publications/s; ${network.published.length} received by the network`,
    );
  } finally {
    await rig.close();
    await network.close();
  }
}

async function steady(label: string, perSecond: number, forSeconds: number, latencyMs: number): Promise<void> {
  const network = await startFakeNetwork();
  network.delay(latencyMs);
  const rig = await startPublishingRig({ channels: CHANNELS, networkUrl: network.url, workerEnv });
  try {
    const count = perSecond * forSeconds;
    const perRequest = 10;
    const firstDueAt = new Date(Date.now() + 60_000);
    const created = Date.now();
    await rig.createDuePosts(count, firstDueAt, forSeconds * 1000 - 1000 / (perSecond / perRequest), perRequest);
    console.log(
      `${label} created ${count} posts in ${seconds(Date.now() - created)}; ` +
        `${perSecond}/s fall due for ${forSeconds} s, network latency ${latencyMs} ms`,
    );
    const workers = [];
    for (let i = 0; i < WORKERS; i++) workers.push(await rig.startWorker());
    const outcomes = await rig.untilSettled(forSeconds * 1000 + 600_000);
    await Promise.all(workers.map((worker) => worker.terminate()));
    const late = await latenesses(rig);
    console.log(
      `${label} ${JSON.stringify(outcomes)}: lateness p50 ${Math.round(percentile(late, 50))} ms, ` +
        `p99 ${Math.round(percentile(late, 99))} ms, max ${Math.round(late.at(-1) ?? NaN)} ms`,
    );
  } finally {
    await rig.close();
    await network.close();
  }
}

const run = scenarios.length > 0 ? scenarios : ['a', 'b', 'c'];
console.log(
  `publisher benchmark: ${WORKERS} worker processes, ${CHANNELS} sandbox channels, PostgreSQL; Node ${process.version}`,
);
if (run.includes('a')) await burst(COUNT_A);
if (run.includes('b')) await steady('(b)', 100, 60, 0);
if (run.includes('c')) await steady('(c)', 100, 60, 1000);
process.exit(0);
