import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { eventually } from './eventually.js';
import { startFakeNetwork } from './fake-network.js';
import { createChannel, createOrganization } from './fixtures.js';
import { freePort, spawnBuilt, untilReady, untilWorkerRunning } from './processes.js';
import { createDuePosts, postOutcomes } from './publishing-rig.js';
import { TEST_ENCRYPTION_KEY } from './server.js';
import { TIMEOUTS } from './timeouts.js';

/**
 * The database outage drill, as `scripts/drill-database-restart.ts` runs it on the machine's
 * PostgreSQL and `test/database-restart.test.ts` on a cluster of its own: an installation as an
 * operator runs it on PostgreSQL (one `ROLE=api` and `ROLE=worker` processes of the build), posts
 * falling due over a window and published to a fake sandbox network, requests to the API all along,
 * and the database taken away 40% into the window. What came of it is the report: whether a process
 * exited, what every request answered, how soon the API and the workers were back after the
 * database, and whether every post reached the network exactly once.
 */

/** An outage of the database: from when it was gone (`down`) to when it answered again (`back`), as Date.now(). */
export interface Outage {
  what: string;
  down: number;
  back: number;
  /** Why the outage did not go as meant (the restart command failed). */
  failure?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Whether the database answers a fresh connection now. */
async function databaseAnswers(databaseUrl: string): Promise<boolean> {
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

/**
 * Restarts the database with `restart`, watching it from outside with a fresh connection every 50 ms:
 * it is down from the first refusal, and back at the first answer after it, or when `restart` returned
 * if that came first (`pg_ctl -w` returns once the server accepts connections).
 */
export async function restartWatched(
  databaseUrl: string,
  command: string,
  restart: () => Promise<unknown>,
): Promise<Outage> {
  // Down, back (as the watch saw them) and when `restart` returned.
  const seen: { down?: number; back?: number; returned?: number } = {};
  const started = Date.now();
  const watch = (async () => {
    const deadline = started + TIMEOUTS.process;
    while (seen.back === undefined && Date.now() < deadline) {
      const up = await databaseAnswers(databaseUrl);
      if (!up) seen.down ??= Date.now();
      else if (seen.down !== undefined) seen.back = Date.now();
      // A restart too quick for the watch to see: the database was down while the command ran.
      else if (seen.returned !== undefined) [seen.down, seen.back] = [started, seen.returned];
      if (seen.back === undefined) await sleep(50);
    }
  })();
  const failure = await restart().then(
    () => undefined,
    (error: Error) => `the restart failed: ${error.message}`,
  );
  const returned = Date.now();
  seen.returned = returned;
  await watch;
  const outage = { down: seen.down ?? started, back: Math.min(seen.back ?? returned, returned) };
  return {
    what:
      `restarted PostgreSQL (${command}, ${seconds(returned - started)}): it refused connections ` +
      `for ${seconds(outage.back - outage.down)}`,
    ...outage,
    ...(failure ? { failure } : {}),
  };
}

/**
 * Cuts every connection to the database but the caller's (pg_terminate_backend), leaving the rest of its
 * cluster alone.
 */
export async function cutConnections(databaseUrl: string): Promise<Outage> {
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

export interface OutageDrillOptions {
  /** A PostgreSQL database of the drill's own; it is migrated here. */
  databaseUrl: string;
  /** How many posts fall due, evenly over `seconds`. */
  posts: number;
  seconds: number;
  /** How many `ROLE=worker` processes publish them. */
  workers: number;
  /** Takes the database away and gives it back; called 40% into the window. */
  outage: () => Promise<Outage>;
  /** More environment for every process (a shorter lease, for a test). */
  env?: Record<string, string>;
  /** How long the posts may take to be settled after the window's end. */
  settleMs: number;
  /**
   * Aborted when the drill is abandoned (a test that timed out): its processes are killed at once
   * rather than left running.
   */
  signal?: AbortSignal;
}

/** A request to the API during the drill and its answer: status 0 when there was none (refused, reset, timed out). */
export interface ApiAnswer {
  path: string;
  /** When the answer came (Date.now()). */
  at: number;
  status: number;
  retryAfter: string | null;
  /** The body of an answer that was neither the request's success nor a 503. */
  body?: string;
}

export interface ServiceExit {
  name: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The end of what it printed on standard error. */
  stderr: string;
}

export interface OutageReport {
  outage: Outage;
  seconds: number;
  /** How far into the window of due posts the database went away. */
  intoWindowMs: number;
  processes: number;
  /** The processes that exited during the drill, unasked. */
  exits: ServiceExit[];
  /** How many connections to the database each process said it lost (`lost a connection to the database`). */
  lostConnections: Record<string, number>;
  answers: ApiAnswer[];
  /** Answers other than the request's success (`200`, `201` for a new post) or a `503` with `Retry-After`. */
  unexpected: ApiAnswer[];
  /** How many answers of each kind (`<path> <status>`) came from the outage until a second after it. */
  duringOutage: Record<string, number>;
  /**
   * How soon after the database `/readyz` and a request of the API both answered 200; undefined: not
   * within TIMEOUTS.eventually.
   */
  apiBackMs: number | undefined;
  /** How soon after the database the network received a publication again. */
  firstPublicationMs: number | undefined;
  /** Publications the network received before the outage began. */
  publishedBefore: number;
  /** The posts due over the window, and those created by the requests during the drill. */
  due: number;
  createdDuring: number;
  /** How many posts are in each state at the end (all should be `published`). */
  outcomes: Record<string, number>;
  /** When the last post was settled, after the database was back. */
  settledMs: number;
  /** Posts that never reached the network, and posts it received more than once. */
  lost: string[];
  twice: string[];
  /** Publication requests for a key the network had published already (asked again, not published again). */
  resends: number;
  /** The exit codes of the processes stopped with SIGTERM at the end. */
  stopCodes: (number | null)[];
}

interface ServiceProcess {
  name: string;
  child: ChildProcess;
  exited?: { code: number | null; signal: NodeJS.Signals | null };
  stderr: string;
  lostConnections: number;
}

/** The request each kind of load sends, and what it answers while the database is there. */
const LOADS = {
  readyz: { path: '/readyz', success: 200 },
  channels: { path: '/public/v1/channels', success: 200 },
  createPost: { path: '/public/v1/posts', success: 201 },
} as const;

/**
 * Stops a process with SIGTERM, and with SIGKILL if it has not exited after TIMEOUTS.process: its exit
 * code (null: killed).
 */
function stopService(service: ServiceProcess): Promise<number | null> {
  const { child } = service;
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const killer = setTimeout(() => child.kill('SIGKILL'), TIMEOUTS.process);
    child.once('exit', (code) => {
      clearTimeout(killer);
      resolve(code);
    });
    child.kill('SIGTERM');
  });
}

export async function runOutageDrill(options: OutageDrillOptions): Promise<OutageReport> {
  const { databaseUrl, posts: POSTS, seconds: SECONDS } = options;
  const database = await openDatabase({ databaseUrl, poolSize: 4 });
  const network = await startFakeNetwork();
  // Each publication takes a moment, so that the outage lands in the middle of some.
  network.delay(100);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'database-outage-'));
  const running: ServiceProcess[] = [];
  let stopping = false;
  let report: Omit<OutageReport, 'stopCodes'>;
  let stopCodes: (number | null)[];

  const start = (name: string, role: 'api' | 'worker', env: Record<string, string>): ServiceProcess => {
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
      ...options.env,
      ...env,
    });
    const service: ServiceProcess = { name, child, stderr: '', lostConnections: 0 };
    // Both read: a process that logs much (every lost connection is a warning) would block on a full pipe.
    let partial = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop()!;
      service.lostConnections += lines.filter((line) =>
        line.includes('"msg":"lost a connection to the database"'),
      ).length;
    });
    child.stderr?.on('data', (chunk) => (service.stderr = (service.stderr + chunk).slice(-20_000)));
    child.on('exit', (code, signal) => {
      if (!stopping) service.exited = { code, signal };
    });
    running.push(service);
    if (options.signal?.aborted) child.kill('SIGKILL');
    return service;
  };
  const abandon = () => {
    for (const { child } of running) child.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  options.signal?.addEventListener('abort', abandon);

  try {
    await migrateToLatest(database.db);
    const org = await createOrganization(database.db, 'Database outage drill');
    const channelIds: string[] = [];
    for (let i = 0; i < 20; i++)
      channelIds.push((await createChannel(database.db, org.id, 'sandbox', `Sandbox ${i + 1}`)).id);

    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const api = start('api', 'api', { PORT: String(port), PUBLIC_URL: origin });
    await untilReady(`${origin}/readyz`, api.child).catch((error: Error) => {
      throw new Error(`${error.message}: ${api.stderr}`);
    });
    // Each one watched from its start: it says once that it runs.
    await Promise.all(
      Array.from({ length: options.workers }, (_, i) => {
        const worker = start(`worker ${i + 1}`, 'worker', { PUBLIC_URL: origin });
        return untilWorkerRunning(worker.child, () => worker.stderr);
      }),
    );

    // The posts, created through the API process, due evenly over the window.
    const firstDueAt = Date.now() + 5_000 + POSTS * 10;
    const dueIds = await createDuePosts((p, init) => fetch(`${origin}${p}`, init), org, channelIds, {
      count: POSTS,
      firstDueAt: new Date(firstDueAt),
      dueOverMs: SECONDS * 1000,
      // Ten at a time, each ten with its own time: due over the window rather than in three steps.
      perRequest: 10,
    });

    // Requests to the API all along: /readyz, the channels and, every half second, a post to publish at once.
    const answers: ApiAnswer[] = [];
    const createdIds: string[] = [];
    let loading = true;
    let creating = true;
    const ask = async (kind: keyof typeof LOADS) => {
      const { path: target, success } = LOADS[kind];
      const init: RequestInit =
        kind === 'createPost'
          ? {
              method: 'POST',
              headers: { ...org.auth, 'Content-Type': 'application/json' },
              body: JSON.stringify({
                type: 'now',
                posts: [
                  {
                    channelId: channelIds[createdIds.length % channelIds.length],
                    content: 'Now',
                    settings: { __type: 'sandbox' },
                  },
                ],
              }),
            }
          : { headers: org.auth };
      const answer = await fetch(`${origin}${target}`, { ...init, signal: AbortSignal.timeout(15_000) }).then(
        async (response): Promise<ApiAnswer> => {
          const body = await response.text();
          if (response.status === 201)
            createdIds.push(...(JSON.parse(body) as { data: { id: string }[] }).data.map((post) => post.id));
          return {
            path: target,
            at: Date.now(),
            status: response.status,
            retryAfter: response.headers.get('retry-after'),
            ...(response.status !== success && response.status !== 503 ? { body: body.slice(0, 500) } : {}),
          };
        },
        (error: Error): ApiAnswer => ({
          path: target,
          at: Date.now(),
          status: 0,
          retryAfter: null,
          body: error.message,
        }),
      );
      answers.push(answer);
    };
    const load = [
      (async () => {
        while (loading) await ask('readyz').then(() => sleep(50));
      })(),
      ...Array.from({ length: 3 }, async () => {
        while (loading) await ask('channels').then(() => sleep(50));
      }),
      (async () => {
        while (loading && creating) await ask('createPost').then(() => sleep(500));
      })(),
    ];

    try {
      // The outage, 40% into the window.
      await sleep(Math.max(0, firstDueAt + SECONDS * 400 - Date.now()));
      const publishedBefore = network.published.length;
      const outage = await options.outage();
      const { down, back } = outage;

      // Back: /readyz and a request of the API both answered 200 after the database was.
      const answered = (path: string) => answers.find((a) => a.at >= back && a.path === path && a.status === 200);
      const apiBack = await eventually(
        () => {
          const readyz = answered(LOADS.readyz.path);
          const request = answered(LOADS.channels.path);
          if (!readyz || !request) throw new Error('the API has not answered 200 since the database was back');
          return Math.max(readyz.at, request.at) - back;
        },
        { timeout: TIMEOUTS.eventually, interval: 50 },
      ).catch(() => undefined);
      creating = false;
      const firstPublication = await eventually(
        () => {
          const next = network.published.find((publication) => publication.at >= back);
          if (!next) throw new Error('no publication since the database was back');
          return next.at - back;
        },
        { timeout: TIMEOUTS.eventually, interval: 50 },
      ).catch(() => undefined);

      // Every post settled: published, or given up on (which counts as lost).
      const settledBy = Math.max(0, firstDueAt + SECONDS * 1000 - Date.now()) + options.settleMs;
      const outcomes = await eventually(
        async () => {
          const now = await postOutcomes(database.db, org.id);
          if (now.scheduled || now.publishing) throw new Error(`not settled: ${JSON.stringify(now)}`);
          return now;
        },
        { timeout: settledBy, interval: 200 },
      ).catch(() => postOutcomes(database.db, org.id));
      const settledMs = Date.now() - back;
      loading = false;
      await Promise.all(load);

      // Every post of the organization, those a 503 left behind included, and every one the API accepted.
      const stored = await database.db.selectFrom('posts').select('id').where('organization_id', '=', org.id).execute();
      const ids = [...new Set([...stored.map((row) => row.id), ...dueIds, ...createdIds])];
      const duringOutage: Record<string, number> = {};
      for (const { status, path: target } of answers.filter((a) => a.at >= down && a.at <= back + 1000)) {
        const key = `${target} ${status}`;
        duringOutage[key] = (duringOutage[key] ?? 0) + 1;
      }
      const success = Object.fromEntries(Object.values(LOADS).map((l) => [l.path, l.success])) as Record<
        string,
        number
      >;
      report = {
        outage,
        seconds: SECONDS,
        intoWindowMs: down - firstDueAt,
        processes: running.length,
        exits: running
          .filter((p) => p.exited)
          .map((p) => ({ name: p.name, ...p.exited!, stderr: p.stderr.slice(-2000) })),
        lostConnections: Object.fromEntries(running.map((p) => [p.name, p.lostConnections])),
        answers,
        unexpected: answers.filter(
          (a) => a.status !== success[a.path] && !(a.status === 503 && Number(a.retryAfter) > 0),
        ),
        duringOutage,
        apiBackMs: apiBack,
        firstPublicationMs: firstPublication,
        publishedBefore,
        due: POSTS,
        createdDuring: ids.length - dueIds.length,
        outcomes,
        settledMs,
        lost: ids.filter((id) => network.publicationsOf(id) === 0),
        twice: ids.filter((id) => network.publicationsOf(id) > 1),
        resends: network.resends.length,
      };
    } finally {
      loading = false;
      await Promise.all(load);
    }
  } finally {
    options.signal?.removeEventListener('abort', abandon);
    stopping = true;
    stopCodes = await Promise.all(running.map(stopService));
    await network.close();
    await database.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  return { ...report, stopCodes };
}

/** The report as the drill prints it, a line for each thing it tells. */
export function describeReport(report: OutageReport): string[] {
  const { outage } = report;
  const apiBack = report.apiBackMs === undefined ? 'never' : seconds(report.apiBackMs);
  const firstPublication =
    report.firstPublicationMs === undefined ? 'none' : `after ${seconds(report.firstPublicationMs)}`;
  return [
    ...(outage.failure ? [outage.failure] : []),
    `${outage.what}, ${seconds(report.intoWindowMs)} into the window of ${report.seconds} s`,
    `processes: ${report.processes} (api, ${report.processes - 1} workers); exited during the drill: ${report.exits.length}`,
    ...report.exits.map((exit) => `  ${exit.name} exited with ${exit.code ?? exit.signal}:\n${exit.stderr}`),
    `connections to the database each process said it lost: ${JSON.stringify(report.lostConnections)}`,
    `API answers from the outage until a second after the database was back: ${JSON.stringify(report.duringOutage)}`,
    `API answers other than 200, 201 or 503 with Retry-After during the whole drill: ${report.unexpected.length}` +
      report.unexpected
        .slice(0, 5)
        .map((a) => `\n  ${a.path} ${a.status}${a.status === 503 ? ' without Retry-After' : ''}: ${a.body ?? ''}`)
        .join(''),
    `API back (readyz and a request answered 200) ${apiBack} after the database`,
    `publications before the outage: ${report.publishedBefore}; the first after the database was back: ${firstPublication}`,
    `${report.due} posts due over ${report.seconds} s and ${report.createdDuring} created during the drill: ` +
      `${JSON.stringify(report.outcomes)}, settled ${seconds(report.settledMs)} after the database was back`,
    `lost (never on the network): ${report.lost.length}; published twice: ${report.twice.length}; ` +
      `sent again with a key already published: ${report.resends}`,
    `stopped with SIGTERM: exit codes ${report.stopCodes.join(', ')}`,
  ];
}

/** What went wrong in the drill, one line each; none when the service came through it. */
export function reportFailures(report: OutageReport, backWithinMs: number): string[] {
  const published = report.outcomes.published ?? 0;
  const total = report.due + report.createdDuring;
  return [
    report.outage.failure,
    report.exits.length > 0 && `${report.exits.length} process exits`,
    report.unexpected.length > 0 && `${report.unexpected.length} answers other than 200, 201 or 503 with Retry-After`,
    report.apiBackMs === undefined && 'the API was not back',
    report.apiBackMs !== undefined &&
      report.apiBackMs > backWithinMs &&
      `the API was back ${seconds(report.apiBackMs)} after the database, not within ${seconds(backWithinMs)}`,
    report.lost.length > 0 && `${report.lost.length} posts lost`,
    report.twice.length > 0 && `${report.twice.length} posts published twice`,
    published !== total && `${published} of ${total} posts published`,
    report.stopCodes.some((code) => code !== 0) && `exit codes at SIGTERM: ${report.stopCodes.join(', ')}`,
  ].filter((failure): failure is string => typeof failure === 'string');
}
