import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import type { Db } from '../../src/db/database.js';
import { createTestDatabase } from './database.js';
import { eventually } from './eventually.js';
import type { FakeNetwork } from './fake-network.js';
import { createChannel, createOrganization, type TestOrganization } from './fixtures.js';
import { spawnBuilt, untilExit, untilWorkerRunning } from './processes.js';
import { startTestServer, TEST_ENCRYPTION_KEY, type TestServer } from './server.js';

/**
 * An installation on PostgreSQL as an operator runs it at scale, for the crash tests and the
 * publisher's benchmark: a scratch database; an API in this process (it creates the posts, as an
 * integrator would, through the Public API); and worker processes of the build (`npm start -- --role
 * worker`) that can be stopped, killed with SIGKILL and started again.
 */
export interface PublishingRig {
  api: TestServer;
  org: TestOrganization;
  channelIds: string[];
  /** The environment every worker gets (the scratch database, the network's address, …). */
  workerEnv: Record<string, string>;
  startWorker(): Promise<Worker>;
  /**
   * Creates `count` sandbox posts over the channels in turn, due evenly from `firstDueAt` over
   * `dueOverMs` (one time for all when 0), through `POST /public/v1/posts` in requests of
   * `perRequest` posts (50, the most a create takes), which share their time.
   */
  createDuePosts(count: number, firstDueAt: Date, dueOverMs: number, perRequest?: number): Promise<string[]>;
  /** How many posts are in each state: `published`, `failed/<code>`, `scheduled`, `publishing` … */
  outcomes(): Promise<Record<string, number>>;
  /** Waits until no post is `scheduled` or `publishing`, or `timeoutMs` passed; the outcomes then. */
  untilSettled(timeoutMs: number): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export interface Worker {
  process: ChildProcess;
  /** What it printed on standard error so far (its warnings and errors: LOG_LEVEL=warn). */
  output(): string;
  kill(): Promise<void>;
  /** SIGTERM; resolves with its exit code. */
  terminate(): Promise<number | null>;
}

export async function startPublishingRig(options: {
  channels: number;
  networkUrl?: string;
  workerEnv?: Record<string, string>;
  apiEnv?: Record<string, string>;
}): Promise<PublishingRig> {
  const database = await createTestDatabase();
  if (!database.url) throw new Error('the publishing rig runs on PostgreSQL: set TEST_DATABASE_URL');
  const api = await startTestServer({
    database,
    env: {
      DATABASE_URL: database.url,
      ROLE: 'api',
      RATE_LIMIT_MAX: '1000000',
      DAILY_POST_LIMIT_SANDBOX: '10000',
      ...options.apiEnv,
    },
  });
  const org = await createOrganization(api.ctx.db, 'Publishing rig');
  const channelIds: string[] = [];
  for (let i = 0; i < options.channels; i++)
    channelIds.push((await createChannel(api.ctx.db, org.id, 'sandbox', `Sandbox ${i + 1}`)).id);

  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'publishing-rig-'));
  const workerEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? os.tmpdir(),
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    // The installation's key, shared by the API in this process and every worker.
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    LOG_LEVEL: 'warn',
    // The sandbox network of the API in this process, unless the caller brings its own (a fake).
    SANDBOX_NETWORK_URL: options.networkUrl ?? api.baseUrl,
    PUBLIC_URL: api.baseUrl,
    ...options.workerEnv,
  };
  const workers = new Set<Worker>();

  const startWorker = async (): Promise<Worker> => {
    const child = spawnBuilt('start', ['--role', 'worker'], workerEnv);
    let stderr = '';
    child.stderr?.on('data', (chunk) => (stderr += chunk));
    const exited = untilExit(child, 24 * 3_600_000);
    await untilWorkerRunning(child, () => stderr);
    const worker: Worker = {
      process: child,
      output: () => stderr,
      kill: async () => {
        child.kill('SIGKILL');
        await exited;
        workers.delete(worker);
      },
      terminate: async () => {
        child.kill('SIGTERM');
        const { code } = await exited;
        workers.delete(worker);
        return code;
      },
    };
    workers.add(worker);
    return worker;
  };

  const outcomes = () => postOutcomes(api.ctx.db, org.id);

  return {
    api,
    org,
    channelIds,
    workerEnv,
    startWorker,
    createDuePosts: (count, firstDueAt, dueOverMs, perRequest) =>
      createDuePosts((p, init) => api.fetch(p, init), org, channelIds, { count, firstDueAt, dueOverMs, perRequest }),
    outcomes,
    untilSettled: (timeoutMs) =>
      eventually(
        async () => {
          const now = await outcomes();
          if (now.scheduled || now.publishing) throw new Error(`not settled: ${JSON.stringify(now)}`);
          return now;
        },
        { timeout: timeoutMs, interval: 200 },
      ).catch(() => outcomes()),
    close: async () => {
      await Promise.all([...workers].map((worker) => worker.kill()));
      await api.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** How many posts of the organization are in each state: `published`, `failed/<code>`, `scheduled` … */
export async function postOutcomes(db: Db, organizationId: string): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('posts')
    .select(['status', 'error_code', (eb) => eb.fn.countAll<string>().as('count')])
    .where('organization_id', '=', organizationId)
    .groupBy(['status', 'error_code'])
    .execute();
  return Object.fromEntries(
    rows.map((row) => [row.error_code ? `${row.status}/${row.error_code}` : row.status, Number(row.count)]),
  );
}

/**
 * Creates `count` sandbox posts over `channelIds` in turn, due evenly from `firstDueAt` over
 * `dueOverMs` (one time for all when 0), through `POST /public/v1/posts` of the API `send` reaches, in
 * requests of `perRequest` posts (50, the most a create takes), which share their time. The posts' ids.
 */
export async function createDuePosts(
  send: (path: string, init: RequestInit) => Promise<Response>,
  org: TestOrganization,
  channelIds: string[],
  options: { count: number; firstDueAt: Date; dueOverMs: number; perRequest?: number | undefined },
): Promise<string[]> {
  const { count, firstDueAt, dueOverMs, perRequest = 50 } = options;
  const ids: string[] = [];
  for (let start = 0; start < count; start += perRequest) {
    const size = Math.min(perRequest, count - start);
    const date = new Date(firstDueAt.getTime() + (count > 1 ? Math.round((dueOverMs * start) / (count - 1)) : 0));
    const posts = Array.from({ length: size }, (_, i) => ({
      channelId: channelIds[(start + i) % channelIds.length]!,
      content: `Post ${start + i + 1}`,
      settings: { __type: 'sandbox' },
    }));
    const response = await send('/public/v1/posts', {
      method: 'POST',
      headers: { ...org.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'schedule', date: date.toISOString(), posts }),
    });
    const answer = (await response.json()) as { data: { id: string }[] };
    if (response.status !== 201)
      throw new Error(`creating posts answered ${response.status}: ${JSON.stringify(answer)}`);
    ids.push(...answer.data.map((post) => post.id));
  }
  return ids;
}

/** Lateness of each published post (publishedAt − scheduledAt), in milliseconds, sorted. */
export async function latenesses(rig: PublishingRig): Promise<number[]> {
  const { rows } = await sql<{ ms: string }>`
    select extract(epoch from (published_at - scheduled_at)) * 1000 as ms
    from posts where organization_id = ${rig.org.id} and status = 'published'`.execute(rig.api.ctx.db);
  return rows.map((row) => Number(row.ms)).sort((a, b) => a - b);
}

/** Posts the network received more than once, and published posts it never received. */
export function duplicatesAndMissing(network: FakeNetwork, ids: string[], published: Set<string>) {
  const duplicates = ids.filter((id) => network.publicationsOf(id) > 1);
  const missing = [...published].filter((id) => network.publicationsOf(id) === 0);
  return { duplicates, missing };
}

/** The ids of the rig's posts that are `published`. */
export async function publishedIds(rig: PublishingRig): Promise<Set<string>> {
  const rows = await rig.api.ctx.db
    .selectFrom('posts')
    .select('id')
    .where('organization_id', '=', rig.org.id)
    .where('status', '=', 'published')
    .execute();
  return new Set(rows.map((row) => row.id));
}
