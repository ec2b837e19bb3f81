/**
 * What the service costs as the data grows: every Public API list and get, the calendar's week and month,
 * the Posts page and the quota, through HTTP against the real service, on a small database (the
 * organization measured alone) and on a grown one (the same organization among a thousand, with a
 * million posts, ten million events of history, a hundred thousand media and a million finished jobs),
 * both in one run, the requests to the two alternating so that the machine's load weighs on both
 * alike. Prints the p50 and p99 of each (each round's, the median of `--rounds` rounds of `--runs`
 * runs), the ratio grown / small (goal: p99 within 1.5×), and what the request's statements cost
 * PostgreSQL on each (pages read and execution time, from `EXPLAIN (ANALYZE, BUFFERS)`: unlike the
 * times, the pages do not depend on the machine's load); `--plans` prints the plan of each statement on
 * the grown database (which index it reads, the rows it reads and drops, the pages). Asserts nothing.
 * Then, unless `--growth-only`, the publisher's 9 o'clock spike at 0 ms and 1 s of network latency and
 * the hour (scripts/bench-publisher.ts a a1 h, 1,000 channels, 2 worker processes; `--hour-seconds=N`
 * runs the hour's rate for N seconds instead of 3,600), and a first start on an empty data directory
 * (the time until the server answers, and the most memory it held; `--start-only` runs that alone).
 *
 *   npx tsx scripts/bench-scale.ts [postgresql://postgres@127.0.0.1:5432/test] [--scale=1] [--runs=300]
 *     [--rounds=3] [--growth-only | --start-only] [--plans] [--hour-seconds=3600]
 *
 * `--scale` multiplies the grown database's organizations and finished jobs (0.01: 10 organizations,
 * 10,000 posts; 1, the default: 1,000 organizations, 10,000 channels, 1,000,000 posts, 10,000,000
 * events, 100,000 media, 1,000,000 finished jobs, about 10 GB on disk and half an hour of seeding on
 * a 2-core machine). Every organization holds the same rows (scripts/bench/scale-seed.ts), so the
 * organization measured reads the same page on both databases. Each database is a scratch one
 * (`bench_scale_…`) next to the one named, dropped at the end.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { BrowserSession } from '../test/support/browser-session.js';
import { createChannel, createOrganization, type TestOrganization } from '../test/support/fixtures.js';
import { startTestServer, type TestServer } from '../test/support/server.js';
import { startService } from './bench/processes.js';
import { PER_ORGANIZATION, seedScale } from './bench/scale-seed.js';

const args = process.argv.slice(2);
const option = (name: string) => args.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1];
const url =
  args.find((arg) => arg.startsWith('postgres')) ??
  process.env.BENCH_DATABASE_URL ??
  'postgresql://postgres@127.0.0.1:5432/test';
const scale = Number(option('scale') ?? 1);
const RUNS = Number(option('runs') ?? 300);
const ROUNDS = Number(option('rounds') ?? 3);
const WARM_UP = 20;

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
  const handle = await openDatabase({ databaseUrl: scratch.toString(), poolSize: 10 });
  return {
    ...handle,
    close: async () => {
      await handle.close();
      await withAdmin(`drop database if exists ${name} with (force)`);
    },
  };
}

/**
 * The statements this process sends while `recording` (text and parameters), to measure what each
 * request costs PostgreSQL in pages read (shared buffers), which the machine's load does not change.
 */
const sent: { text: string; values: unknown[] }[] = [];
let recording = false;
// eslint-disable-next-line @typescript-eslint/unbound-method -- called with its client as `this`, below
const sendQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const [config, values] = args as [string | { text?: string; values?: unknown[] } | undefined, unknown];
  const text = typeof config === 'string' ? config : config?.text;
  if (recording && text) {
    const parameters = typeof config === 'object' && config.values ? config.values : values;
    sent.push({ text, values: Array.isArray(parameters) ? (parameters as unknown[]) : [] });
  }
  return (sendQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof pg.Client.prototype.query;

interface Plan {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: Plan[];
}

/** A plan as an indented outline: each node, the table or index it reads, its rows and pages. */
function outline(plan: Plan, depth = 0): string[] {
  const on = plan['Index Name'] ?? plan['Relation Name'];
  const removed = plan['Rows Removed by Filter'] ? `, ${plan['Rows Removed by Filter']} removed` : '';
  const pages = (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
  const node = `${plan['Node Type']}${on ? ` on ${on}` : ''}`;
  const loops = (plan['Actual Loops'] ?? 1) > 1 ? ` × ${plan['Actual Loops']} loops` : '';
  return [
    // Rows per loop, as PostgreSQL counts them: a subquery run for each row of a page runs in as many loops.
    `${'  '.repeat(depth + 1)}${node}: ${plan['Actual Rows']} rows${loops}${removed}, ${pages} pages`,
    ...(plan.Plans ?? []).flatMap((child) => outline(child, depth + 1)),
  ];
}

/**
 * The shared buffers (8 kB pages, from cache or disk) and the execution time of the statements that one
 * request sends, as `EXPLAIN (ANALYZE, BUFFERS)` reports them, each in a transaction rolled back.
 */
async function databaseCost(
  installation: Installation,
  name: string,
): Promise<{ pages: number; ms: number; plans: string[] }> {
  sent.length = 0;
  recording = true;
  try {
    await timed(installation, name);
  } finally {
    recording = false;
  }
  // What the request sent; pg-boss's own polling, which may fall in the same moment, is not the request's.
  const statements = sent
    .splice(0)
    .filter(({ text }) => /^\s*(select|with|insert|update|delete)\b/i.test(text) && !text.includes('pgboss'));
  const client = await installation.server.ctx.database.pool!.connect();
  let pages = 0;
  let ms = 0;
  const plans: string[] = [];
  try {
    for (const { text, values } of statements) {
      await client.query('begin');
      const { rows } = await client.query<{ 'QUERY PLAN': { Plan: Plan; 'Execution Time': number }[] }>(
        `explain (analyze, buffers, format json) ${text}`,
        values,
      );
      await client.query('rollback');
      const [{ Plan: plan, 'Execution Time': executionTime }] = rows[0]!['QUERY PLAN'] as [
        { Plan: Plan; 'Execution Time': number },
      ];
      pages += (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
      ms += executionTime;
      plans.push(`  ${text.replace(/\s+/g, ' ').slice(0, 160)}`, ...outline(plan));
    }
  } finally {
    client.release();
  }
  return { pages, ms, plans };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
const loadAverage = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(1))
    .join(' ');
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

interface Installation {
  label: string;
  server: TestServer;
  org: TestOrganization;
  browser: BrowserSession;
  /** The requests measured, by name: a path (and whether it is a page, sent with the session). */
  requests: Map<string, { path: string; page: boolean }>;
}

/** A service on a scratch database seeded with `otherOrganizations` besides the one measured. */
async function install(label: string, otherOrganizations: number, finishedJobs: number): Promise<Installation> {
  const database = await scratchDatabase();
  let server: TestServer;
  try {
    server = await startTestServer({ database, env: { RATE_LIMIT_MAX: '1000000' } });
  } catch (error) {
    await database.close();
    throw error;
  }
  try {
    return await seeded(label, server, otherOrganizations, finishedJobs);
  } catch (error) {
    await server.close();
    throw error;
  }
}

async function seeded(
  label: string,
  server: TestServer,
  otherOrganizations: number,
  finishedJobs: number,
): Promise<Installation> {
  const database = server.ctx.database;
  const org = await createOrganization(server.ctx.db, 'Measured');
  const api = (path: string, init?: RequestInit) =>
    server.fetch(`/public/v1${path}`, { ...init, headers: { ...org.auth, 'Content-Type': 'application/json' } });
  // Each seeded event shows a post as the API does: a draft's, made through the API.
  const channel = await createChannel(server.ctx.db, org.id, 'sandbox', 'Example');
  const draft = await api('/posts', {
    method: 'POST',
    body: JSON.stringify({ type: 'draft', content: 'As the API shows a post', channelIds: [channel.id] }),
  });
  if (draft.status !== 201) throw new Error(`the draft: ${draft.status} ${await draft.text()}`);
  const draftId = ((await draft.json()) as { data: { id: string }[] }).data[0]!.id;
  const { post } = await server.ctx.db
    .selectFrom('post_events')
    .select('post')
    .where('post_id', '=', draftId)
    .executeTakeFirstOrThrow();
  await server.ctx.db.deleteFrom('posts').where('organization_id', '=', org.id).execute();
  await server.ctx.db.deleteFrom('channels').where('organization_id', '=', org.id).execute();

  const started = performance.now();
  await seedScale(server.ctx.db, {
    otherOrganizations,
    finishedJobs,
    eventPost: JSON.stringify(post),
    progress: (step, ms) => console.log(`${label}: ${step} in ${seconds(ms)}`),
  });
  const counts = await server.ctx.db
    .selectNoFrom((eb) => [
      eb.selectFrom('organizations').select(eb.fn.countAll<string>().as('n')).as('organizations'),
      eb.selectFrom('channels').select(eb.fn.countAll<string>().as('n')).as('channels'),
      eb.selectFrom('posts').select(eb.fn.countAll<string>().as('n')).as('posts'),
      eb.selectFrom('post_events').select(eb.fn.countAll<string>().as('n')).as('events'),
      eb.selectFrom('media').select(eb.fn.countAll<string>().as('n')).as('media'),
      eb.selectFrom('webhook_deliveries').select(eb.fn.countAll<string>().as('n')).as('deliveries'),
    ])
    .executeTakeFirstOrThrow();
  const { rows } = await database.pool!.query<{ state: string; n: string }>(
    'select state, count(*) as n from pgboss.job group by state order by state',
  );
  const size = await database.pool!.query<{ size: string }>(
    'select pg_size_pretty(pg_database_size(current_database())) as size',
  );
  console.log(
    `${label}: seeded in ${seconds(performance.now() - started)}: ${Object.entries(counts)
      .map(([table, n]) => `${Number(n).toLocaleString('en')} ${table}`)
      .join(', ')}, jobs ${rows.map(({ state, n }) => `${Number(n).toLocaleString('en')} ${state}`).join(', ')}; ${
      size.rows[0]!.size
    }`,
  );

  // What the measured requests name: a post deep in the list (a cursor halfway), a channel, a post.
  let cursor: string | null = null;
  const total = PER_ORGANIZATION.channels * PER_ORGANIZATION.postsPerChannel;
  for (let seen = 0; seen < total / 2; seen += 100) {
    const page = await api(`/posts?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    cursor = ((await page.json()) as { nextCursor: string | null }).nextCursor;
  }
  const channels = (await (await api('/channels')).json()) as { data: { id: string }[] };
  const published = await server.ctx.db
    .selectFrom('posts')
    .select('id')
    .where('organization_id', '=', org.id)
    .where('status', '=', 'published')
    .orderBy('id')
    .limit(1)
    .executeTakeFirstOrThrow();
  const endpoint = await server.ctx.db
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('organization_id', '=', org.id)
    .executeTakeFirstOrThrow();
  const now = Date.now();
  const week = `from=${new Date(now).toISOString()}&to=${new Date(now + 7 * 86_400_000).toISOString()}`;
  const api_ = (path: string) => ({ path: `/public/v1${path}`, page: false });
  const page = (path: string) => ({ path, page: true });
  const requests = new Map([
    ['GET /is-connected', api_('/is-connected')],
    ['GET /channels', api_('/channels')],
    ['GET /channels/quota', api_('/channels/quota')],
    ['GET /posts (first page)', api_('/posts?limit=20')],
    ['GET /posts (a page halfway)', api_(`/posts?limit=20&cursor=${encodeURIComponent(cursor!)}`)],
    ['GET /posts?status=scheduled', api_('/posts?limit=20&status=scheduled')],
    ['GET /posts?channelId=…', api_(`/posts?limit=20&channelId=${channels.data[0]!.id}`)],
    ['GET /posts?from=…&to=… (a week)', api_(`/posts?limit=100&${week}`)],
    ['GET /posts/{id}', api_(`/posts/${published.id}`)],
    ['GET /posts/{id}/history', api_(`/posts/${published.id}/history`)],
    ['GET /media', api_('/media?limit=20')],
    ['GET /webhooks', api_('/webhooks')],
    ['GET /webhooks/{id}', api_(`/webhooks/${endpoint.id}`)],
    ['GET /webhooks/{id}/deliveries', api_(`/webhooks/${endpoint.id}/deliveries`)],
    ['calendar, week', page('/calendar?view=week')],
    ['calendar, month', page('/calendar?view=month')],
    ['Posts page', page('/posts')],
  ]);
  const browser = new BrowserSession(server);
  await browser.logIn(org.email, org.password);
  return { label, server, org, browser, requests };
}

/** One request, its time in ms (the body read whole); throws on anything but 200. */
async function timed(installation: Installation, name: string): Promise<number> {
  const { path, page } = installation.requests.get(name)!;
  const started = performance.now();
  const response = page
    ? await installation.browser.get(path)
    : await installation.server.fetch(path, { headers: installation.org.auth });
  await response.arrayBuffer();
  const took = performance.now() - started;
  if (response.status !== 200) throw new Error(`${installation.label} ${name}: ${response.status}`);
  return took;
}

async function growth(): Promise<void> {
  const otherOrganizations = Math.max(1, Math.round(1000 * scale) - 1);
  const finishedJobs = Math.max(1000, Math.round(1_000_000 * scale));
  console.log(
    `growth: Node ${process.version}, PostgreSQL at ${new URL(url).host}; scale ${scale}; ${ROUNDS} rounds of ` +
      `${RUNS} runs per request and database, alternating; load average ${loadAverage()}`,
  );
  const small = await install('small', 0, 1000);
  let grown: Installation;
  try {
    grown = await install('grown', otherOrganizations, finishedJobs);
  } catch (error) {
    await small.server.close();
    throw error;
  }
  try {
    console.log(`measuring; load average ${loadAverage()}`);
    const rows: string[] = [];
    const plans: string[] = [];
    // Rounds over every request in turn, so that a moment of the machine (a collection of the process's
    // garbage, another process's burst) falls in one round of a request and not in all of them: the
    // figures are each round's percentiles, their median over the rounds.
    const rounds = new Map(
      [...small.requests.keys()].map((name) => [name, { small: [] as number[][], grown: [] as number[][] }]),
    );
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, times] of rounds) {
        if (round === 0) {
          for (let i = 0; i < WARM_UP; i++) {
            await timed(small, name);
            await timed(grown, name);
          }
        }
        const these = { small: [] as number[], grown: [] as number[] };
        for (let i = 0; i < RUNS; i++) {
          // In turn, and which goes first alternates, so that both meet the machine's moments alike.
          const order = i % 2 === 0 ? [small, grown] : [grown, small];
          for (const installation of order)
            these[installation.label as 'small' | 'grown'].push(await timed(installation, name));
        }
        times.small.push(these.small.sort((a, b) => a - b));
        times.grown.push(these.grown.sort((a, b) => a - b));
      }
    }
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    for (const [name, times] of rounds) {
      const [s50, s99, g50, g99] = [
        median(times.small.map((sorted) => percentile(sorted, 50))),
        median(times.small.map((sorted) => percentile(sorted, 99))),
        median(times.grown.map((sorted) => percentile(sorted, 50))),
        median(times.grown.map((sorted) => percentile(sorted, 99))),
      ];
      // Warm: the pages the request reads are in the cache, as they are for a request that runs often.
      const cost = { small: await databaseCost(small, name), grown: await databaseCost(grown, name) };
      rows.push(
        `| ${name} | ${s50.toFixed(2)} / ${s99.toFixed(2)} ms | ${g50.toFixed(2)} / ${g99.toFixed(2)} ms | ` +
          `${(g50 / s50).toFixed(2)} | ${(g99 / s99).toFixed(2)} | ${cost.small.pages} / ${cost.grown.pages} | ` +
          `${cost.small.ms.toFixed(2)} / ${cost.grown.ms.toFixed(2)} ms |`,
      );
      if (args.includes('--plans')) plans.push(`${name}, on the grown database:`, ...cost.grown.plans);
    }
    console.log(`load average ${loadAverage()}\n`);
    console.log(
      '| request | small: p50 / p99 | grown: p50 / p99 | p50 ratio | p99 ratio | pages read: small / grown | ' +
        'execution: small / grown |',
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const row of rows) console.log(row);
    console.log();
    if (plans.length > 0) console.log(`${plans.join('\n')}\n`);
  } finally {
    await small.server.close();
    await grown.server.close();
  }
}

/** The publisher's spike and hour, in a process of their own (it starts worker processes of the build). */
function publisher(): void {
  const hourSeconds = option('hour-seconds') ?? '3600';
  console.log(`publisher: the 9 o'clock spike and the hour (${hourSeconds} s); load average ${loadAverage()}`);
  const result = spawnSync(process.execPath, [...process.execArgv, 'scripts/bench-publisher.ts', url, 'a', 'a1', 'h'], {
    stdio: 'inherit',
    env: { ...process.env, BENCH_CHANNELS: '1000', BENCH_HOUR_SECONDS: hourSeconds },
  });
  console.log(`load average ${loadAverage()}`);
  if (result.status !== 0) throw new Error(`the publisher's benchmark ended with ${result.status ?? result.signal}`);
}

/**
 * A newcomer's first start: the built server as `npm start` runs it (plain node, its options), on an
 * empty data directory and the embedded database, until /readyz answers, with the most memory it held
 * meanwhile; then a restart of the same directory.
 */
async function firstStart(): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-start-'));
  try {
    for (const [name, label] of [
      ['first', 'first start on an empty data directory'],
      ['restart', 'restart of that directory'],
    ] as const) {
      const began = performance.now();
      const server = await startService(name, { DATA_DIR: path.join(work, 'data'), LOG_LEVEL: 'warn' }, work);
      const ready = performance.now() - began;
      const peak = server.peakRssMb();
      await server.stop();
      console.log(`${label} (PGlite): /readyz answered after ${seconds(ready)}, ${peak} MB at the most`);
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

async function main() {
  if (args.includes('--start-only')) return firstStart();
  await growth();
  if (args.includes('--growth-only')) return;
  publisher();
  await firstStart();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
