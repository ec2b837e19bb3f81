/**
 * The database restart drill: an installation as an operator runs it on PostgreSQL (one `ROLE=api`
 * and two `ROLE=worker` processes of the build, on a scratch database), posts falling due over a
 * window and published to a fake sandbox network, and the machine's PostgreSQL restarted in the middle
 * of it. Then: whether any process exited, what every request to the API answered meanwhile, how soon
 * the API answered again once the database was back, and whether every post reached the network
 * exactly once. Prints the numbers; exits 1 if a process exited, a request answered anything but 200
 * or 503, the API was not back within 5 s of the database, or a post was lost or published twice.
 *
 *   npx tsx scripts/drill-database-restart.ts [postgresql://postgres@127.0.0.1:5432/test] [posts=300] [seconds=20] [terminate]
 *
 * With `terminate`, the database is not restarted: every connection to the scratch database is cut
 * with pg_terminate_backend instead, which touches nothing else of the machine's PostgreSQL.
 *
 * It RESTARTS THE POSTGRESQL CLUSTER OF THIS MACHINE (`pg_ctlcluster … main restart`, as root or the
 * cluster's owner): every other client of it loses its connections for the second or two it takes.
 * Not part of the suite for that reason. It creates a scratch database next to the one named and
 * drops it at the end. The server bundle must be built (`npm run build`, which `npm install` runs).
 */
import { execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { drillArguments } from './drill-arguments.js';

// First: it sets TEST_DATABASE_URL, which the test support reads when imported below.
const { numbers, words } = drillArguments({ numbers: { posts: 300, seconds: 20 }, words: ['terminate'] });
const { posts: POSTS, seconds: SECONDS } = numbers;
const TERMINATE = words.terminate;
/** The API must answer normally again this soon after the database accepts connections. */
const BACK_WITHIN_MS = 5_000;

const { createTestDatabase } = await import('../test/support/database.js');
const { createChannel, createOrganization } = await import('../test/support/fixtures.js');
const { startFakeNetwork } = await import('../test/support/fake-network.js');
const { freePort, spawnBuilt, untilReady } = await import('../test/support/processes.js');
const { TEST_ENCRYPTION_KEY } = await import('../test/support/server.js');

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The cluster of this machine that serves the database (Debian's layout: /etc/postgresql/<version>/main). */
function restartCommand(): [string, string[]] {
  const version = fs.readdirSync('/etc/postgresql')[0];
  if (!version) throw new Error('no PostgreSQL cluster in /etc/postgresql');
  return ['pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'restart']];
}

interface Running {
  name: string;
  child: ChildProcess;
  /** When it exited, unasked, and with what. */
  exited?: { code: number | null; signal: NodeJS.Signals | null; at: number };
  stderr: string;
}

const database = await createTestDatabase();
const databaseUrl = database.url!;
const network = await startFakeNetwork();
// Each publication takes a moment, so that the restart lands in the middle of some.
network.delay(100);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'drill-database-restart-'));
const running: Running[] = [];
let stopping = false;
let failed: boolean | undefined;

function start(name: string, role: 'api' | 'worker', env: Record<string, string>): Running {
  const child = spawnBuilt('start', ['--role', role], {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? os.tmpdir(),
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    LOG_LEVEL: 'warn',
    SANDBOX_NETWORK_URL: network.url,
    RATE_LIMIT_MAX: '1000000',
    DAILY_POST_LIMIT_SANDBOX: '10000',
    ...env,
  });
  const process_: Running = { name, child, stderr: '' };
  // Both read: a process that logs much (every lost connection is a warning) would block on a full pipe.
  child.stdout?.on('data', () => {});
  child.stderr?.on('data', (chunk) => (process_.stderr += chunk));
  child.on('exit', (code, signal) => {
    if (!stopping) process_.exited = { code, signal, at: Date.now() };
  });
  running.push(process_);
  return process_;
}

/** Answers the database gives a fresh connection now: up (true) or not (false). */
async function databaseAnswers(): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 1000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** What an outage was: from when the database was gone (`down`) to when it answered again (`back`). */
interface Outage {
  what: string;
  down: number;
  back: number;
  failure?: string;
}

/**
 * Restarts the machine's PostgreSQL, watching it from outside with a fresh connection every 50 ms: the
 * database is down from the first refusal and back at the first answer after it.
 */
async function restartPostgres(): Promise<Outage> {
  const [command, commandArgs] = restartCommand();
  let down: number | undefined;
  let back: number | undefined;
  let watching = true;
  const watch = (async () => {
    while (watching && back === undefined) {
      const up = await databaseAnswers();
      if (!up) down ??= Date.now();
      else if (down !== undefined) back = Date.now();
      if (back === undefined) await sleep(50);
    }
  })();
  const started = Date.now();
  const failure = await promisify(execFile)(command, commandArgs).then(
    () => undefined,
    (error: Error) => `the restart failed: ${error.message}`,
  );
  const took = Date.now() - started;
  await Promise.race([watch, sleep(30_000)]);
  watching = false;
  const outage = { down: down ?? started, back: back ?? Date.now() };
  return {
    what:
      `restarted PostgreSQL (${command} ${commandArgs.join(' ')}, ${seconds(took)}): it refused connections ` +
      `for ${seconds(outage.back - outage.down)}`,
    ...outage,
    ...(failure ? { failure } : {}),
  };
}

/** Cuts every connection to the scratch database but the caller's (the `terminate` form of the drill). */
async function cutConnections(): Promise<Outage> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => {});
  await client.connect();
  const down = Date.now();
  try {
    const { rows } = await client.query(
      'select pg_terminate_backend(pid, 5000) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
      [new URL(databaseUrl).pathname.slice(1)],
    );
    return { what: `cut all ${rows.length} connections of the service (pg_terminate_backend)`, down, back: Date.now() };
  } finally {
    await client.end().catch(() => {});
  }
}

try {
  const org = await createOrganization(database.db, 'Restart drill');
  const channelIds: string[] = [];
  for (let i = 0; i < 20; i++)
    channelIds.push((await createChannel(database.db, org.id, 'sandbox', `Sandbox ${i + 1}`)).id);

  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const api = start('api', 'api', { PORT: String(port), PUBLIC_URL: origin });
  await untilReady(`${origin}/readyz`, api.child).catch((error: Error) => {
    throw new Error(`${error.message}: ${api.stderr}`);
  });
  for (const name of ['worker 1', 'worker 2']) {
    const worker = start(name, 'worker', { PUBLIC_URL: origin });
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const onData = (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('worker is running')) resolve();
      };
      worker.child.stdout?.on('data', onData);
      worker.child.once('exit', (code) => reject(new Error(`${name} exited with ${code}: ${worker.stderr}`)));
    });
  }

  // The posts, created through the API process, due evenly over the window.
  const firstDueAt = Date.now() + 5_000 + POSTS * 10;
  const ids: string[] = [];
  for (let start = 0; start < POSTS; start += 50) {
    const size = Math.min(50, POSTS - start);
    const date = new Date(firstDueAt + Math.round((SECONDS * 1000 * start) / Math.max(1, POSTS - 1)));
    const posts = Array.from({ length: size }, (_, i) => ({
      channelId: channelIds[(start + i) % channelIds.length]!,
      content: `Post ${start + i + 1}`,
      settings: { __type: 'sandbox' },
    }));
    const response = await fetch(`${origin}/public/v1/posts`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${org.apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'schedule', date: date.toISOString(), posts }),
    });
    const answer = (await response.json()) as { data: { id: string }[] };
    if (response.status !== 201)
      throw new Error(`creating posts answered ${response.status}: ${JSON.stringify(answer)}`);
    ids.push(...answer.data.map((post) => post.id));
  }

  // Requests to the API all along: what each answered, and when.
  const answers: { at: number; status: number; path: string }[] = [];
  let loading = true;
  const load = Array.from({ length: 4 }, async (_, i) => {
    const target = i === 0 ? '/readyz' : '/public/v1/channels';
    while (loading) {
      const status = await fetch(`${origin}${target}`, {
        headers: { Authorization: `Bearer ${org.apiKey}` },
        signal: AbortSignal.timeout(15_000),
      }).then(
        async (response) => {
          await response.arrayBuffer();
          return response.status;
        },
        () => 0, // no answer: refused, reset or timed out
      );
      answers.push({ at: Date.now(), status, path: target });
      await sleep(50);
    }
  });

  // The outage, 40% into the window.
  await sleep(Math.max(0, firstDueAt + SECONDS * 400 - Date.now()));
  const outage = TERMINATE ? await cutConnections() : await restartPostgres();
  const { down, back } = outage;
  if (outage.failure) console.log(outage.failure);
  console.log(`${outage.what}, ${seconds(down - firstDueAt)} into the window of ${SECONDS} s`);

  // Back: /readyz and a request of the API both answered 200 after the database was.
  const apiBack = await (async () => {
    const deadline = back + 60_000;
    while (Date.now() < deadline) {
      const readyz = answers.find((a) => a.at >= back && a.path === '/readyz' && a.status === 200);
      const request = answers.find((a) => a.at >= back && a.path !== '/readyz' && a.status === 200);
      if (readyz && request) return Math.max(readyz.at, request.at) - back;
      await sleep(100);
    }
    return undefined;
  })();
  const firstPublicationAfter = async () => {
    const deadline = back + 60_000;
    while (Date.now() < deadline) {
      const next = network.published.find((publication) => publication.at >= back);
      if (next) return next.at - back;
      await sleep(100);
    }
    return undefined;
  };
  const workersBack = await firstPublicationAfter();

  // Every post settled: published, or given up on (which the drill counts as lost).
  const settledBy = Date.now() + SECONDS * 1000 + 300_000;
  let outcomes: Record<string, number> = {};
  for (;;) {
    const rows = await database.db
      .selectFrom('posts')
      .select(['status', (eb) => eb.fn.countAll<string>().as('count')])
      .where('organization_id', '=', org.id)
      .groupBy('status')
      .execute();
    outcomes = Object.fromEntries(rows.map((row) => [row.status, Number(row.count)]));
    if ((!outcomes.scheduled && !outcomes.publishing) || Date.now() > settledBy) break;
    await sleep(500);
  }
  const settledAfter = Date.now() - back;
  loading = false;
  await Promise.all(load);

  const lost = ids.filter((id) => network.publicationsOf(id) === 0);
  const twice = ids.filter((id) => network.publicationsOf(id) > 1);
  const statuses: Record<string, number> = {};
  for (const { status, path: target } of answers.filter((a) => a.at >= down && a.at <= back + 1000)) {
    const key = `${target} ${status}`;
    statuses[key] = (statuses[key] ?? 0) + 1;
  }
  const unexpected = answers.filter((a) => a.status !== 200 && a.status !== 503);
  const exits = running.filter((p) => p.exited);

  console.log(`processes: ${running.length} (api, 2 workers); exited during the drill: ${exits.length}`);
  for (const p of exits)
    console.log(`  ${p.name} exited with ${p.exited!.code ?? p.exited!.signal}:\n${p.stderr.slice(-2000)}`);
  console.log(`API answers from the outage until a second after the database was back: ${JSON.stringify(statuses)}`);
  console.log(`API answers other than 200 or 503 during the whole drill: ${unexpected.length}`);
  const apiBackIn = apiBack === undefined ? 'never' : seconds(apiBack);
  const workersBackIn = workersBack === undefined ? 'none' : `after ${seconds(workersBack)}`;
  console.log(`API back (readyz and a request answered 200) ${apiBackIn} after the database`);
  console.log(`first publication after the database was back: ${workersBackIn}`);
  console.log(
    `${POSTS} posts due over ${SECONDS} s: ${JSON.stringify(outcomes)}, ` +
      `settled ${seconds(settledAfter)} after the database was back`,
  );
  console.log(
    `lost (never on the network): ${lost.length}; published twice: ${twice.length}; ` +
      `sent again with a key already published: ${network.resends.length}`,
  );
  failed =
    outage.failure !== undefined ||
    exits.length > 0 ||
    unexpected.length > 0 ||
    apiBack === undefined ||
    apiBack > BACK_WITHIN_MS ||
    lost.length > 0 ||
    twice.length > 0 ||
    outcomes.published !== POSTS;
} finally {
  stopping = true;
  const codes = await Promise.all(
    running.map(
      (p) =>
        new Promise<number | null>((resolve) => {
          if (p.child.exitCode !== null || p.child.signalCode !== null) return resolve(p.child.exitCode);
          p.child.once('exit', (code) => resolve(code));
          p.child.kill('SIGTERM');
        }),
    ),
  );
  console.log(`stopped with SIGTERM: exit codes ${codes.join(', ')}`);
  if (codes.some((code) => code !== 0)) failed = true;
  await network.close();
  await database.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed === false ? 0 : 1);
