/**
 * How fast webhook deliveries go out, on PostgreSQL, with worker processes of the build, to an
 * organization with 10 endpoints subscribed to `post.published` on receivers on loopback that
 * answer at once. Prints the deliveries per second (first to last arrival) and the time from each
 * event (the post's `publishedAt`) to its arrival, p50, p99 and max. Asserts nothing.
 *
 *   npx tsx scripts/bench-webhooks.ts [postgresql://postgres@127.0.0.1:5432/test] [a|b ...]
 *
 * (a) 1,000 posts published at one time: a burst of 10,000 deliveries;
 * (b) 50 posts a second for 30 s: 500 deliveries a second, steadily.
 *
 * It creates a scratch database next to the one named, and drops it at the end. The server bundle
 * must be built (`npm run build`, which `npm install` runs).
 */
process.env.TEST_DATABASE_URL =
  process.argv.slice(2).find((arg) => arg.startsWith('postgres')) ??
  process.env.TEST_DATABASE_URL ??
  'postgresql://postgres@127.0.0.1:5432/test';

const { startFakeNetwork } = await import('../test/support/fake-network.js');
const { startPublishingRig } = await import('../test/support/publishing-rig.js');
const { startWebhookReceiver } = await import('../test/support/webhook-receiver.js');

const scenarios = process.argv.slice(2).filter((arg) => /^[ab]$/.test(arg));
const ENDPOINTS = 10;
const WORKERS = 2;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

async function run(label: string, posts: number, dueOverMs: number): Promise<void> {
  const network = await startFakeNetwork();
  const receivers = await Promise.all(Array.from({ length: ENDPOINTS }, () => startWebhookReceiver()));
  const env = { WEBHOOK_ALLOW_RANGES: '127.0.0.1/32', LOG_LEVEL: 'warn' };
  const rig = await startPublishingRig({ channels: 50, networkUrl: network.url, workerEnv: env, apiEnv: env });
  try {
    for (const receiver of receivers) {
      const created = await rig.api.fetch('/public/v1/webhooks', {
        method: 'POST',
        headers: { ...rig.org.auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ url: receiver.url, eventTypes: ['post.published'] }),
      });
      if (created.status !== 201) throw new Error(`creating an endpoint answered ${created.status}`);
    }
    const dueAt = new Date(Date.now() + 10_000);
    await rig.createDuePosts(posts, dueAt, dueOverMs);
    for (let i = 0; i < WORKERS; i++) await rig.startWorker();
    const expected = posts * ENDPOINTS;
    const received = () => receivers.reduce((sum, receiver) => sum + receiver.received.length, 0);
    const deadline = Date.now() + 600_000;
    while (received() < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));

    const arrivals = receivers.flatMap((receiver) => receiver.received);
    const delays = arrivals
      .map(
        (message) =>
          message.at - Date.parse((JSON.parse(message.body) as { data: { publishedAt: string } }).data.publishedAt),
      )
      .sort((a, b) => a - b);
    const times = arrivals.map((message) => message.at).sort((a, b) => a - b);
    const spanSeconds = (times.at(-1)! - times[0]!) / 1000;
    console.log(
      `(${label}) ${arrivals.length} of ${expected} deliveries arrived ` +
        `(${posts} posts × ${ENDPOINTS} endpoints, ${WORKERS} workers)`,
    );
    console.log(
      `(${label}) throughput: ${Math.round(arrivals.length / spanSeconds)} deliveries/s ` +
        `over ${spanSeconds.toFixed(2)} s`,
    );
    console.log(
      `(${label}) event → delivery: p50 ${percentile(delays, 50)} ms, p99 ${percentile(delays, 99)} ms, ` +
        `max ${delays.at(-1)} ms`,
    );
  } finally {
    await rig.close();
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await network.close();
  }
}

if (scenarios.length === 0 || scenarios.includes('a')) await run('a', Number(process.env.BENCH_POSTS ?? 1000), 0);
if (scenarios.length === 0 || scenarios.includes('b')) await run('b', 1500, 30_000);
