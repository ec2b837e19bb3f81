/**
 * `npm run bench`: the Public API's hot operations against a bare Express + pg server that sends the
 * same statements (scripts/bench/baseline.mjs), interleaved, three rounds each at 10 and 50
 * connections, on PostgreSQL, with the CPU each side and the database used per request; the same
 * operations on the embedded PGlite (service only); two API processes on one PostgreSQL together,
 * and the rate limiter's exactness across them. Prints tables; asserts nothing. Runs in about 8
 * minutes on 2 cores.
 *
 * PostgreSQL: BENCH_DATABASE_URL names a server (a scratch database is made beside the one named and
 * dropped at the end); postgresql://postgres@127.0.0.1:5432/postgres by default.
 * BENCH_SECONDS (3) sets each run's length; BENCH_PROFILE_DIR=dir makes the service write CPU profiles there;
 * BENCH_DATABASES=postgres or pglite runs one part, BENCH_ONLY=text the operations whose name contains it.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createApiKey } from '../../src/accounts/api-keys.js';
import { createOrganizationWithOwner } from '../../src/accounts/organizations.js';
import { openDatabase } from '../../src/db/database.js';
import { buildIfStale } from '../build-if-stale.mjs';
import { countStatuses, load, median, operations, type Operation, type Sample } from './load.js';
import { postgresCpuMs, startBaseline, startService, type Running } from './processes.js';
import { seed, type Seeded } from './seed.js';

const SECONDS = Number(process.env.BENCH_SECONDS || 3);
const ROUNDS = 3;
const CONNECTIONS = [10, 50];
// High enough that no throughput run is refused, while every request is still counted.
const THROUGHPUT_LIMIT = {
  RATE_LIMIT_MAX: '1000000',
  RATE_LIMIT_WINDOW_SECONDS: '60',
  DAILY_POST_LIMIT_SANDBOX: '10000',
};
const EXACTNESS_LIMIT = 300;

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-'));
const profileArgs = process.env.BENCH_PROFILE_DIR
  ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_PROFILE_DIR)}`]
  : [];
const round1 = (value: number) => Math.round(value);
const ratio = (value: number) => value.toFixed(2);
const flagged = (sample: Sample, text: string) => (sample.failed > 0 ? `${text} (${sample.failed} failed)` : text);

async function scratchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const server = process.env.BENCH_DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/postgres';
  const name = `bench_${randomBytes(4).toString('hex')}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: server });
    await client.connect();
    await client.query(statement);
    await client.end();
  };
  await admin(`create database ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}

async function seedDatabase(options: {
  databaseUrl?: string;
  dataDir?: string;
}): Promise<Seeded & { limiterKey: string }> {
  const database = await openDatabase(options);
  try {
    const seeded = await seed(database.db);
    // A second organization, whose budget only the exactness run spends.
    const { organization } = await createOrganizationWithOwner(database.db, {
      organizationName: 'Limited',
      email: 'limited@example.com',
      password: 'correct horse battery staple',
    });
    const { secret } = await createApiKey(database.db, organization.id, 'limited');
    return { ...seeded, limiterKey: secret };
  } finally {
    await database.close();
  }
}

/** CPU per request of one side's runs: its own process, and the local PostgreSQL server's (if local). */
interface CpuPerRequest {
  process: number;
  database: number | undefined;
}

type Comparison = Map<
  string,
  { service: Sample; baseline: Sample; cpu: { service: CpuPerRequest; baseline: CpuPerRequest } }
>;

/** Runs `operation` against `target` and reads the CPU it and the database used per request meanwhile. */
async function measured(
  target: Running,
  seeded: Seeded,
  operation: Operation,
  connections: number,
): Promise<{ sample: Sample; cpu: CpuPerRequest }> {
  const [process0, database0] = [target.cpuMs(), postgresCpuMs()];
  const sample = await load(target.url, seeded.apiKey, operation, connections, SECONDS);
  const [process1, database1] = [target.cpuMs(), postgresCpuMs()];
  const requests = Math.max(1, sample.rps * SECONDS);
  const database = database0 === undefined || database1 === undefined ? undefined : (database1 - database0) / requests;
  return { sample, cpu: { process: (process1 - process0) / requests, database } };
}

/** Service and baseline in turn, the order alternating by round, so neither always runs warmer. */
async function compare(service: Running, baseline: Running, seeded: Seeded, ops: Operation[]): Promise<Comparison> {
  const results: Comparison = new Map();
  for (const operation of ops) {
    for (const connections of CONNECTIONS) {
      const samples = { service: [] as Sample[], baseline: [] as Sample[] };
      const cpu = { service: [] as CpuPerRequest[], baseline: [] as CpuPerRequest[] };
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? (['service', 'baseline'] as const) : (['baseline', 'service'] as const);
        for (const side of order) {
          const run = await measured(side === 'service' ? service : baseline, seeded, operation, connections);
          samples[side].push(run.sample);
          cpu[side].push(run.cpu);
        }
      }
      const cpuOf = (runs: CpuPerRequest[]): CpuPerRequest => {
        const database = runs.map((run) => run.database);
        return {
          process: median(runs.map((run) => run.process)),
          database: database.includes(undefined) ? undefined : median(database as number[]),
        };
      };
      results.set(`${operation.name}|${connections}`, {
        service: summarize(samples.service),
        baseline: summarize(samples.baseline),
        cpu: { service: cpuOf(cpu.service), baseline: cpuOf(cpu.baseline) },
      });
    }
  }
  return results;
}

function summarize(samples: Sample[]): Sample {
  return {
    rps: median(samples.map((s) => s.rps)),
    p99: median(samples.map((s) => s.p99)),
    failed: samples.reduce((sum, s) => sum + s.failed, 0),
  };
}

async function warmUp(targets: Running[], seeded: Seeded, ops: Operation[]): Promise<void> {
  for (const target of targets) for (const operation of ops) await load(target.url, seeded.apiKey, operation, 10, 1);
}

async function main(): Promise<void> {
  buildIfStale();
  const ops = (seeded: Seeded) => {
    const only = process.env.BENCH_ONLY;
    return operations(seeded).filter((op) => !only || op.name.includes(only));
  };
  const began = Date.now();
  console.log(
    `Node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), ` +
      `${new Date().toISOString().slice(0, 10)}; ${SECONDS} s per run, median of ${ROUNDS} rounds`,
  );

  const databases = (process.env.BENCH_DATABASES || 'postgres,pglite').split(',');
  if (databases.includes('postgres')) await onPostgres(ops);
  if (databases.includes('pglite')) await onPglite(ops);
  console.log(`\nThe whole run took ${Math.round((Date.now() - began) / 1000)} s.`);
  // A response that breaks the contract is logged with its stack (production), which costs more than the
  // request: the figures of such a run measure a failure, not the service.
  const broken = fs
    .readdirSync(work)
    .filter((file) => file.endsWith('.log'))
    .flatMap((file) => fs.readFileSync(path.join(work, file), 'utf8').split('\n'))
    .filter((line) => line.includes('response breaks the contract'));
  if (broken.length > 0) {
    console.error(`\n${broken.length} responses broke the contract: the figures above are not valid. The first:`);
    console.error(broken[0]!.slice(0, 2000));
    process.exitCode = 1;
  }
  fs.rmSync(work, { recursive: true, force: true });
}

type Ops = (seeded: Seeded) => Operation[];

async function onPostgres(ops: Ops): Promise<void> {
  // PostgreSQL: the service (ROLE=api, as at scale; the worker runs elsewhere) against the baseline.
  const database = await scratchDatabase();
  const lines: string[] = [];
  try {
    const seeded = await seedDatabase({ databaseUrl: database.url });
    const pgEnv = {
      DATABASE_URL: database.url,
      ROLE: 'api',
      DATA_DIR: path.join(work, 'pg-data'),
      ...THROUGHPUT_LIMIT,
    };
    const service = await startService('service', pgEnv, work, profileArgs);
    const rssAtStart = await settledRss(service);
    const baseline = await startBaseline(database.url, work);
    await warmUp([service, baseline], seeded, ops(seeded));
    const comparison = await compare(service, baseline, seeded, ops(seeded));
    const rssAfterLoad = service.rssMb();

    lines.push('', `PostgreSQL (service: ${memoryText(rssAtStart, rssAfterLoad, service.peakRssMb())})`, '');
    lines.push(
      '| operation | c | service rps / p99 | bare rps / p99 | rps ratio | p99 ratio ' +
        '| CPU ms per request, service: node + db | bare: node + db |',
      '|---|---|---|---|---|---|---|---|',
    );
    const cpuText = ({ process, database }: CpuPerRequest) =>
      `${process.toFixed(3)} + ${database === undefined ? '?' : database.toFixed(3)}`;
    for (const [key, { service: s, baseline: b, cpu }] of comparison) {
      const [name, c] = key.split('|');
      lines.push(
        `| ${name} | ${c} | ${flagged(s, `${round1(s.rps)} / ${s.p99} ms`)} ` +
          `| ${flagged(b, `${round1(b.rps)} / ${b.p99} ms`)} | ${ratio(s.rps / b.rps)} | ${ratio(s.p99 / b.p99)} ` +
          `| ${cpuText(cpu.service)} | ${cpuText(cpu.baseline)} |`,
      );
    }
    console.log(lines.join('\n'));
    await baseline.stop();

    // Two API processes on the one database, each sent half the connections at the same time.
    const second = await startService('service-2', pgEnv, work);
    await warmUp([second], seeded, ops(seeded));
    const together: string[] = [
      '',
      'Two API processes on one PostgreSQL, 25 connections each',
      '',
      '| operation | both rps | p99 A / B | one process at c=50 |',
      '|---|---|---|---|',
    ];
    for (const operation of ops(seeded)) {
      const rounds: Sample[][] = [];
      for (let round = 0; round < ROUNDS; round++) {
        rounds.push(
          await Promise.all([service, second].map((target) => load(target.url, seeded.apiKey, operation, 25, SECONDS))),
        );
      }
      const both = median(rounds.map(([a, b]) => a!.rps + b!.rps));
      const failed = rounds.flat().reduce((sum, s) => sum + s.failed, 0);
      const one = comparison.get(`${operation.name}|50`);
      const p99 = `${median(rounds.map(([a]) => a!.p99))} / ${median(rounds.map(([, b]) => b!.p99))} ms`;
      together.push(
        `| ${operation.name} | ${round1(both)}${failed ? ` (${failed} failed)` : ''} ` +
          `| ${p99} | ${one ? round1(one.service.rps) : '-'} |`,
      );
    }
    console.log(together.join('\n'));
    await Promise.all([service.stop(), second.stop()]);

    // The limiter across processes: more requests than the limit, split between the two.
    const limited = { ...pgEnv, RATE_LIMIT_MAX: String(EXACTNESS_LIMIT), RATE_LIMIT_WINDOW_SECONDS: '86400' };
    const [a, b] = [await startService('limited-1', limited, work), await startService('limited-2', limited, work)];
    const secondsToMidnight = 86_400 - ((Date.now() / 1000) % 86_400);
    if (secondsToMidnight < 30) await new Promise((resolve) => setTimeout(resolve, secondsToMidnight * 1000 + 1000));
    const counts = await Promise.all(
      [a, b].map((target) => countStatuses(target.url, seeded.limiterKey, '/public/v1/channels', 25, EXACTNESS_LIMIT)),
    );
    const passed = counts.reduce((sum, c) => sum + (c.get('200') ?? 0), 0);
    const refused = counts.reduce((sum, c) => sum + (c.get('429') ?? 0), 0);
    console.log(
      `\nRate limit across the two processes: ${EXACTNESS_LIMIT * 2} requests at c=50 ` +
        `against a limit of ${EXACTNESS_LIMIT}: ${passed} answered 200, ${refused} answered 429 ` +
        `(${passed === EXACTNESS_LIMIT ? 'exact' : 'NOT EXACT'})`,
    );
    await Promise.all([a.stop(), b.stop()]);
  } finally {
    await database.drop();
  }
}

/**
 * Resident memory once the start has settled: 5 s after ready, when what runs in the background after
 * start (V8 compiling hot code again, the first housekeeping) has run, with the highest it reached.
 */
async function settledRss(service: Running): Promise<{ rss: number; peak: number }> {
  await new Promise((resolve) => setTimeout(resolve, 5000));
  return { rss: service.rssMb(), peak: service.peakRssMb() };
}

function memoryText(atStart: { rss: number; peak: number }, afterLoad: number, peak: number): string {
  return (
    `RSS ${atStart.rss} MB 5 s after start (peak until then ${atStart.peak} MB), ` +
    `${afterLoad} MB after the runs (peak ${peak} MB)`
  );
}

async function onPglite(ops: Ops): Promise<void> {
  // PGlite: the embedded default, one process with the worker (ROLE=all, as `npm start` without configuration).
  const dataDir = path.join(work, 'pglite-data');
  const seeded = await seedDatabase({ dataDir });
  // The first start of a new data directory sets up the job queue's schema; a restart is what "after
  // start" measures, as on any later start of an installation.
  await (await startService('pglite-setup', { DATA_DIR: dataDir, ...THROUGHPUT_LIMIT }, work)).stop();
  const embedded = await startService('pglite', { DATA_DIR: dataDir, ...THROUGHPUT_LIMIT }, work);
  const rssAtStart = await settledRss(embedded);
  await warmUp([embedded], seeded, ops(seeded));
  const pglite: string[] = ['| operation | c | rps / p99 |', '|---|---|---|'];
  for (const operation of ops(seeded)) {
    for (const connections of CONNECTIONS) {
      const samples: Sample[] = [];
      for (let round = 0; round < ROUNDS; round++)
        samples.push(await load(embedded.url, seeded.apiKey, operation, connections, SECONDS));
      const s = summarize(samples);
      pglite.push(`| ${operation.name} | ${connections} | ${flagged(s, `${round1(s.rps)} / ${s.p99} ms`)} |`);
    }
  }
  const rssAfterLoad = embedded.rssMb();
  const peak = embedded.peakRssMb();
  await embedded.stop();
  console.log(['', `PGlite (service: ${memoryText(rssAtStart, rssAfterLoad, peak)})`, '', ...pglite].join('\n'));
}

main().catch((error: unknown) => {
  console.error(error);
  console.error(`Server logs are in ${work}`);
  process.exit(1);
});
