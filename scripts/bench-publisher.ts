/**
 * How fast and how punctually the publisher publishes, on PostgreSQL, with worker processes of the
 * build (`npm start -- --role worker`) and the sandbox adapter publishing to a stand-in of the sandbox
 * network in this process (it answers at once, or after the latency asked for). Prints numbers;
 * asserts nothing.
 *
 *   npx tsx scripts/bench-publisher.ts [postgresql://postgres@127.0.0.1:5432/test] [a|a1|b|c|h ...]
 *
 * (a) 10,000 posts due at one time (the 9 o'clock spike): publications per second, the time from the
 *     due time until the last is published, and the lateness (publishedAt − scheduledAt) p50, p99, max;
 * (a1) (a) with a network that takes 1 s to answer each publication;
 * (b) 100 posts a second falling due evenly for 60 s: lateness p50, p99 and max;
 * (c) (b) with a network that takes 1 s to answer each publication;
 * (h) the hour: 100,000 posts due evenly over an hour, 27.8 a second; BENCH_HOUR_SECONDS (3600 by
 *     default) runs the same rate for a shorter time.
 *
 * BENCH_WORKERS (2), BENCH_CHANNELS (100), BENCH_POSTS (10,000, for a and a1) and BENCH_CONCURRENCY (the
 * workers' PUBLISH_CONCURRENCY) change the rig.
 *
 * It creates a scratch database next to the one named, and drops it at the end. The server bundle
 * must be built (`npm run build`, which `npm install` runs).
 */
process.env.TEST_DATABASE_URL =
  process.argv.slice(2).find((arg) => arg.startsWith('postgres')) ??
  process.env.TEST_DATABASE_URL ??
  'postgresql://postgres@127.0.0.1:5432/test';
const scenarios = process.argv.slice(2).filter((arg) => /^(a|a1|b|c|h)$/.test(arg));

const { startFakeNetwork } = await import('../test/support/fake-network.js');
const { latenesses, startPublishingRig } = await import('../test/support/publishing-rig.js');

const WORKERS = Number(process.env.BENCH_WORKERS ?? 2);
// BENCH_PROFILE_DIR: the workers write CPU profiles there (open them in Chrome's DevTools).
// BENCH_CONCURRENCY: the workers' PUBLISH_CONCURRENCY (their default otherwise).
const workerEnv: Record<string, string> = {
  ...(process.env.BENCH_PROFILE_DIR
    ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}` }
    : {}),
  ...(process.env.BENCH_CONCURRENCY ? { PUBLISH_CONCURRENCY: process.env.BENCH_CONCURRENCY } : {}),
};
const COUNT_A = Number(process.env.BENCH_POSTS ?? 10_000);
const CHANNELS = Number(process.env.BENCH_CHANNELS ?? 100);
const HOUR_SECONDS = Number(process.env.BENCH_HOUR_SECONDS ?? 3600);

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function burst(label: string, count: number, latencyMs: number): Promise<void> {
  const network = await startFakeNetwork();
  network.delay(latencyMs);
  const rig = await startPublishingRig({ channels: CHANNELS, networkUrl: network.url, workerEnv });
  try {
    // Created well before they fall due (on a busy machine too: 10,000 took 79 s under a load average
    // of 20), so the workers meet them all at once.
    const dueAt = new Date(Date.now() + 10_000 + count * 15);
    const created = Date.now();
    await rig.createDuePosts(count, dueAt, 0);
    console.log(
      `${label} created ${count} posts in ${seconds(Date.now() - created)}; due at one time, ` +
        `network latency ${latencyMs} ms`,
    );
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
    const late = await latenesses(rig);
    console.log(
      `${label} ${JSON.stringify(outcomes)}: the last published ${seconds(took)} after the due time, ` +
        `${Math.round(count / (took / 1000))} publications/s; ${network.published.length} received by the network; ` +
        `lateness p50 ${seconds(percentile(late, 50))}, p99 ${seconds(percentile(late, 99))}, ` +
        `max ${seconds(late.at(-1) ?? NaN)}`,
    );
  } finally {
    await rig.close();
    await network.close();
  }
}

async function steady(
  label: string,
  perSecond: number,
  forSeconds: number,
  latencyMs: number,
  perRequest = 10,
): Promise<void> {
  const network = await startFakeNetwork();
  network.delay(latencyMs);
  const rig = await startPublishingRig({ channels: CHANNELS, networkUrl: network.url, workerEnv });
  try {
    const count = Math.round(perSecond * forSeconds);
    // Far enough ahead that every post exists before the first falls due.
    const firstDueAt = new Date(Date.now() + 60_000 + count * 3);
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

const run = scenarios.length > 0 ? scenarios : ['a', 'a1', 'b', 'c'];
console.log(
  `publisher benchmark: ${WORKERS} worker processes, ${CHANNELS} sandbox channels, PUBLISH_CONCURRENCY ` +
    `${process.env.BENCH_CONCURRENCY ?? 'default'}, PostgreSQL; Node ${process.version}`,
);
if (run.includes('a')) await burst('(a)', COUNT_A, 0);
if (run.includes('a1')) await burst('(a1)', COUNT_A, 1000);
if (run.includes('b')) await steady('(b)', 100, 60, 0);
if (run.includes('c')) await steady('(c)', 100, 60, 1000);
// 100,000 an hour: a post every 36 ms, each request creating one.
if (run.includes('h')) await steady('(h)', 100_000 / 3600, HOUR_SECONDS, 0, 1);
process.exit(0);
