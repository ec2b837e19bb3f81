/**
 * How the hot paths' reads grow with the database: the same operations on a small and on a big
 * database, seeded as use fills one (test/support/grown-database.ts: posts with their history, media,
 * webhook deliveries, the queue's finished jobs, over many organizations; the one measured holds one
 * row in 30), their p50 and p99, and how much the p99 grew. On indexes a read grows with the page it
 * returns, not with the table: a ratio far above 1 names a read to look at (with `EXPLAIN`, as
 * test/query-plans.test.ts does). Prints numbers; asserts nothing.
 *
 *   npx tsx scripts/bench-scale.ts [postgresql://postgres@127.0.0.1:5432/test]
 *   BENCH_SCALE_POSTS=30000,1000000 npx tsx scripts/bench-scale.ts
 *
 * BENCH_SCALE_POSTS lists the sizes in posts (20,000 and 200,000 by default); the other tables grow
 * with them (media a third, deliveries a half, finished jobs as many). For each size it creates a
 * scratch database next to the one named, and drops it at the end.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { createOrganizationWithOwner } from '../src/accounts/organizations.js';
import { addChannel, listChannels } from '../src/channels/channels.js';
import { systemClock } from '../src/core/clock.js';
import { createLogger } from '../src/core/logger.js';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { JobQueue } from '../src/jobs/queue.js';
import { listMediaPage } from '../src/media/queries.js';
import { listPostEvents } from '../src/posts/events.js';
import { listPosts } from '../src/posts/queries.js';
import { postsWithoutLiveJob } from '../src/publisher/ledger.js';
import { listDeliveries } from '../src/webhooks/delivery-list.js';
import { growDatabase } from '../test/support/grown-database.js';

const url =
  process.argv.slice(2).find((arg) => arg.startsWith('postgres')) ??
  process.env.BENCH_DATABASE_URL ??
  'postgresql://postgres@127.0.0.1:5432/test';
const sizes = (process.env.BENCH_SCALE_POSTS ?? '20000,200000').split(',').map(Number);
const RUNS = 200;
const PAGE = 51;
const SHARE = 30;

async function withAdmin(statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}

async function scratchDatabase(): Promise<DatabaseHandle> {
  const name = `bench_scale_${randomBytes(4).toString('hex')}`;
  await withAdmin(`create database ${name}`);
  const scratch = new URL(url);
  scratch.pathname = `/${name}`;
  const handle = await openDatabase({ databaseUrl: scratch.toString() });
  return {
    ...handle,
    close: async () => {
      await handle.close();
      await withAdmin(`drop database if exists ${name} with (force)`);
    },
  };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

/** p50 and p99 of `RUNS` runs of each operation, in ms, on a database grown to `posts` posts. */
async function measure(posts: number): Promise<Map<string, { p50: number; p99: number }>> {
  const database = await scratchDatabase();
  const { db } = database;
  const queue = new JobQueue(database, createLogger({ logLevel: 'silent' }), systemClock, {
    runsSchedules: false,
    keepFinishedJobsDays: 7,
  });
  try {
    await migrateToLatest(db);
    await queue.start([{ name: 'publish-post' }]);
    const { organization } = await createOrganizationWithOwner(db, {
      organizationName: 'Measured',
      email: 'scale@example.com',
      password: 'correct horse battery staple',
    });
    const channel = await addChannel(db, {
      organization_id: organization.id,
      provider: 'sandbox',
      name: 'Measured',
      username: null,
      picture: null,
    });
    await db
      .insertInto('webhook_endpoints')
      .values({
        id: 'whe_measured',
        organization_id: organization.id,
        url: 'https://example.com/hooks',
        event_types: JSON.stringify(['post.published']),
        enabled: false,
        secret: 'unused',
      })
      .execute();
    const started = performance.now();
    const sizes = {
      organizations: Math.max(100, Math.round(posts / 150)),
      posts,
      media: Math.round(posts / 3),
      deliveries: Math.round(posts / 2),
      finishedJobs: posts,
    };
    await growDatabase(db, sizes, {
      organizationId: organization.id,
      channelId: channel.id,
      endpointId: 'whe_measured',
      eventPost: '{}',
      share: SHARE,
    });
    console.log(`${posts} posts: seeded ${JSON.stringify(sizes)} in ${Math.round(performance.now() - started)} ms`);

    const middle = await listPosts(db, organization.id, {}, undefined, Math.round(posts / SHARE / 2));
    const deep = middle.at(-1)!;
    const now = new Date();
    const week = { from: now, to: new Date(now.getTime() + 7 * 86_400_000) };
    const operations: [string, () => Promise<unknown>][] = [
      ['posts, first page', () => listPosts(db, organization.id, {}, undefined, PAGE)],
      [
        'posts, a page halfway',
        () => listPosts(db, organization.id, {}, { scheduledAt: deep.scheduled_at, id: deep.id }, PAGE),
      ],
      ['posts of a week (calendar)', () => listPosts(db, organization.id, week, undefined, PAGE)],
      ['posts, scheduled only', () => listPosts(db, organization.id, { statuses: ['scheduled'] }, undefined, PAGE)],
      ["a post's history", () => listPostEvents(db, deep.id, undefined, PAGE)],
      ['media, first page', () => listMediaPage(db, organization.id, PAGE, undefined)],
      ['channels', () => listChannels(db, organization.id)],
      ["an endpoint's deliveries", () => listDeliveries(db, 'whe_measured', undefined, PAGE)],
      [
        'reconciliation (lost jobs)',
        () => postsWithoutLiveJob(db, (id) => queue.noLiveJob('publish-post', 'postId', id), 60, 100, new Date()),
      ],
      ["the queue's load", () => queue.load()],
    ];
    const results = new Map<string, { p50: number; p99: number }>();
    for (const [name, run] of operations) {
      for (let i = 0; i < 10; i++) await run();
      const times: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        await run();
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      results.set(name, { p50: percentile(times, 50), p99: percentile(times, 99) });
    }
    return results;
  } finally {
    await queue.stop(1000);
    await database.close();
  }
}

async function main() {
  const measured = [];
  for (const posts of sizes) measured.push({ posts, results: await measure(posts) });
  const header = measured.map(({ posts }) => `p50 / p99 at ${posts}`);
  console.log(`\n| operation | ${header.join(' | ')} | p99 growth |`);
  console.log(`|---|${header.map(() => '---|').join('')}---|`);
  for (const name of measured[0]!.results.keys()) {
    const cells = measured.map(({ results }) => {
      const { p50, p99 } = results.get(name)!;
      return `${p50.toFixed(2)} / ${p99.toFixed(2)} ms`;
    });
    const first = measured[0]!.results.get(name)!.p99;
    const last = measured.at(-1)!.results.get(name)!.p99;
    console.log(`| ${name} | ${cells.join(' | ')} | ×${(last / first).toFixed(2)} |`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
