import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDatabaseUnreachable } from '../src/db/connection-loss.js';
import type { DatabaseHandle } from '../src/db/database.js';
import { createTestDatabase, TEST_DATABASE_URL } from './support/database.js';
import { eventually } from './support/eventually.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { send, type Answer } from './support/loopback-client.js';
import { createOAuthApp, type TestApp } from './support/oauth.js';
import { freePort, spawnBuilt, stop, untilReady } from './support/processes.js';
import { TEST_ENCRYPTION_KEY } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';

// PostgreSQL going away under a running service (a restart, a failover, an operator's
// pg_terminate_backend) must never end its process: a request in flight answers 503 with Retry-After,
// /readyz answers 503 until the database is back, and everything goes on by itself. The process of the
// build (api and worker in one, ROLE=all) is the subject: its exit code is what is watched. PostgreSQL
// only: the embedded database has no connections to lose. test/database-restart.test.ts restarts a
// PostgreSQL of its own while worker processes publish.
const onPostgres = describe.skipIf(!TEST_DATABASE_URL);

/** How soon the service must answer normally again once the database is back. */
const BACK_WITHIN_MS = 5_000;

describe('what counts as the database out of reach', () => {
  const failure = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});

  it('the lost connections and refusals of PostgreSQL, the socket and the pool', () => {
    const unreachable = [
      failure('terminating connection due to administrator command', '57P01'),
      failure('terminating connection because of crash of another server process', '57P02'),
      failure('the database system is starting up', '57P03'),
      failure('connection failure', '08006'),
      failure('protocol violation', '08P01'),
      failure('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
      failure('read ECONNRESET', 'ECONNRESET'),
      failure('Connection terminated unexpectedly'),
      failure('Connection terminated due to connection timeout'),
      failure('Client has encountered a connection error and is not queryable'),
      failure('timeout exceeded when trying to connect'),
      new Error('the job could not be planned', { cause: failure('read ECONNRESET', 'ECONNRESET') }),
    ];
    for (const error of unreachable) expect(isDatabaseUnreachable(error), error.message).toBe(true);
  });

  it('not the failures of a statement, nor anything else', () => {
    const others = [
      failure('duplicate key value violates unique constraint', '23505'),
      failure('could not serialize access due to concurrent update', '40001'),
      failure('canceling statement due to statement timeout', '57014'),
      failure('division by zero', '22012'),
      new Error('The media is used by a scheduled post'),
      // An outbound call that failed (fetch reports it so), not the database.
      new TypeError('fetch failed', { cause: failure('read ECONNRESET', 'ECONNRESET') }),
      'Connection terminated',
      undefined,
    ];
    for (const error of others) expect(isDatabaseUnreachable(error), String(error)).toBe(false);
  });
});

describe('a statement that fails', () => {
  // On the embedded database there is no connection to lose, and a failing statement must be what it
  // is on PostgreSQL: a rejected promise for its caller, never an 'error' event that ends the process.
  it('rejects its own promise, inside a transaction or a checked-out connection, and the database goes on', async () => {
    const database = await createTestDatabase({ migrate: false });
    try {
      await expect(
        database.db.transaction().execute(async (trx) => {
          await sql`select 1`.execute(trx);
          await sql`select 1 / 0`.execute(trx);
        }),
      ).rejects.toMatchObject({ code: '22012' });
      await expect(
        database.db.connection().execute(async (connection) => {
          await sql`select no_such_column`.execute(connection);
        }),
      ).rejects.toMatchObject({ code: '42703' });
      const { rows } = await sql<{ answer: number }>`select 42 as answer`.execute(database.db);
      expect(rows).toEqual([{ answer: 42 }]);
    } finally {
      await database.close();
    }
  });
});

onPostgres('losing every connection to PostgreSQL', () => {
  let database: DatabaseHandle & { url: string | undefined };
  let databaseName: string;
  let org: TestOrganization;
  let channelId: string;
  let oauth: TestApp;
  /** A post the sandbox network published: its page, and its publication key. */
  const release = { id: 'rel_connection_loss_1', key: 'connection-loss:1' };
  let child: ChildProcess;
  let origin: string;
  let stdout = '';
  let stderr = '';
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'connection-loss-'));

  beforeAll(async () => {
    database = await createTestDatabase();
    databaseName = new URL(database.url!).pathname.slice(1);
    org = await createOrganization(database.db, 'Connection loss');
    channelId = (await createChannel(database.db, org.id, 'sandbox')).id;
    oauth = await createOAuthApp(database.db, org.id);
    await database.db
      .insertInto('sandbox_releases')
      .values({
        id: release.id,
        publication_key: release.key,
        organization_id: org.id,
        channel_id: channelId,
        content: 'Published before the outage',
        media: '[]',
        settings: null,
        published_at: new Date(),
      })
      .execute();
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    child = spawnBuilt('start', [], {
      PATH: process.env.PATH,
      HOME: process.env.HOME ?? os.tmpdir(),
      DATABASE_URL: database.url,
      ROLE: 'all',
      DATA_DIR: dataDir,
      ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      LOG_LEVEL: 'warn',
      PORT: String(port),
      PUBLIC_URL: origin,
      RATE_LIMIT_MAX: '1000000',
      DAILY_POST_LIMIT_SANDBOX: '10000',
      OAUTH_AUTH_FAILURES_PER_CLIENT: '1000000',
      OAUTH_AUTH_FAILURES_PER_ADDRESS: '1000000',
      // A post whose worker lost the database while settling it is taken over once its lease runs out.
      PUBLISH_LEASE_SECONDS: '5',
    });
    // Read, or a process that logs much would block on a full pipe.
    child.stdout?.on('data', (chunk) => (stdout += chunk));
    child.stderr?.on('data', (chunk) => (stderr += chunk));
    await untilReady(`${origin}/readyz`, child, TIMEOUTS.process).catch((error: Error) => {
      throw new Error(`${error.message}\n${stderr}`);
    });
  }, TIMEOUTS.hook);

  afterAll(async () => {
    if (child) await stop(child);
    fs.rmSync(dataDir, { recursive: true, force: true });
    await database?.close();
  }, TIMEOUTS.hook);

  /** A connection of the test's own to the service's database, whose loss is expected. */
  async function connect(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: database.url });
    client.on('error', () => {});
    await client.connect();
    return client;
  }

  /** Terminates every backend of the service's database but the caller's and `spare`, waiting until each has ended. */
  async function terminateBackends(client: pg.Client, spare?: number): Promise<number> {
    const { rows } = await client.query<{ ended: boolean }>(
      `select pg_terminate_backend(pid, 5000) as ended from pg_stat_activity
       where datname = $1 and pid <> pg_backend_pid() and pid is distinct from $2`,
      [databaseName, spare ?? null],
    );
    return rows.length;
  }

  // The requests of each surface: the Public API, the OAuth API, a page (the authorize page), and the
  // sandbox network's API and pages.
  const requests = {
    channels: () => send(`${origin}/public/v1/channels`, { headers: org.auth }),
    createPost: () =>
      send(`${origin}/public/v1/posts`, {
        method: 'POST',
        headers: { ...org.auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          type: 'now',
          posts: [{ channelId, content: 'Hello', settings: { __type: 'sandbox' } }],
        }),
      }),
    token: () =>
      send(`${origin}/api/oauth/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: 'pac_not_a_code',
          client_id: oauth.clientId,
          client_secret: oauth.secret,
        }).toString(),
      }),
    authorizePage: () =>
      send(
        `${origin}/oauth/authorize?${new URLSearchParams({ client_id: oauth.clientId, response_type: 'code' }).toString()}`,
      ),
    releasePage: () => send(`${origin}/sandbox/releases/${release.id}`),
    // Asked without the channel's credentials: the release is looked up, then not shown (404).
    sandboxApi: () => send(`${origin}/sandbox/api/releases/by-key/${encodeURIComponent(release.key)}`),
  };
  type Surface = keyof typeof requests;
  /** What each request answers while the database is there. */
  const NORMAL: Record<Surface, number> = {
    channels: 200,
    createPost: 201,
    token: 400,
    authorizePage: 302,
    releasePage: 200,
    sandboxApi: 404,
  };

  /** A 503 of the database's absence, in the form of the surface that answered it. */
  function expectUnavailable(surface: Surface, answer: Answer): void {
    expect(answer.status, `${surface}: ${answer.body}`).toBe(503);
    expect(Number(answer.headers['retry-after'])).toBeGreaterThan(0);
    if (surface === 'channels' || surface === 'createPost') {
      const body = JSON.parse(answer.body) as { error: { code: string; requestId: string; retryAfter: number } };
      expect(body.error.code).toBe('service_unavailable');
      expect(body.error.requestId).toBe(answer.headers['x-request-id']);
      expect(body.error.retryAfter).toBe(Number(answer.headers['retry-after']));
    } else if (surface === 'token') {
      expect(JSON.parse(answer.body)).toMatchObject({ error: 'temporarily_unavailable' });
      expect(answer.headers['cache-control']).toBe('no-store');
    } else if (surface === 'sandboxApi') {
      // The sandbox network's own shape, as a network's API answers.
      expect(JSON.parse(answer.body)).toMatchObject({
        error: 'service_unavailable',
        message: expect.stringMatching(/database/) as unknown,
      });
    } else {
      expect(answer.headers['content-type']).toMatch(/^text\/html/);
      expect(answer.body).toMatch(/database/i);
    }
  }

  it('requests waiting on the database when their connections are cut answer 503 with Retry-After', async () => {
    const locker = await connect();
    const admin = await connect();
    const { rows } = await locker.query<{ pid: number }>('select pg_backend_pid() as pid');
    // Every request below waits for this lock, so each is in flight in the database when it is cut.
    await locker.query('begin');
    await locker.query('lock table api_keys, oauth_apps, sandbox_releases in access exclusive mode');
    const surfaces = Object.keys(requests) as Surface[];
    const answers = Promise.all(surfaces.map(async (surface) => [surface, await requests[surface]()] as const));
    await eventually(async () => {
      const waiting = await admin.query<{ count: string }>(
        `select count(*) from pg_stat_activity where datname = $1 and wait_event_type = 'Lock'`,
        [databaseName],
      );
      expect(Number(waiting.rows[0]!.count)).toBe(surfaces.length);
    });
    // The waiting ones first, and only then the one holding the lock, so none of them gets through.
    await terminateBackends(admin, rows[0]!.pid);
    await terminateBackends(admin);
    for (const [surface, answer] of await answers) expectUnavailable(surface, answer);
    // The operator sees what happened: the lost connections, and each request answered 503.
    await eventually(() => {
      expect(stdout).toMatch(/"msg":"lost a connection to the database"/);
      expect(stdout.match(/"msg":"database out of reach"/g)?.length).toBeGreaterThanOrEqual(surfaces.length);
    });
    await admin.end().catch(() => {});
    await locker.end().catch(() => {});

    // The service is back at once: the next requests get new connections.
    for (const surface of Object.keys(requests) as Surface[])
      expect((await requests[surface]()).status, surface).toBe(NORMAL[surface]);
    expect(child.exitCode).toBeNull();
  });

  it(
    'every backend terminated again and again under load: no process exit, no 500, and the service back within 5 s',
    async () => {
      const admin = await connect();
      const answers: { surface: Surface; answer: Answer }[] = [];
      let loading = true;
      const load = Array.from({ length: 6 }, async (_, i) => {
        const surfaces = Object.keys(requests) as Surface[];
        for (let n = i; loading; n++) {
          const surface = surfaces[n % surfaces.length]!;
          // A request the server never answered (its process gone) is counted, not thrown.
          const answer = await requests[surface]().catch((error: Error): Answer => ({
            status: 0,
            headers: {},
            body: error.message,
          }));
          answers.push({ surface, answer });
        }
      });
      let terminated = 0;
      for (let round = 0; round < 5; round++) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        terminated += await terminateBackends(admin);
      }
      // The database is there again from this instant: the service must follow within BACK_WITHIN_MS.
      const back = performance.now();
      await eventually(
        async () => {
          expect(child.exitCode, stderr).toBeNull();
          expect((await send(`${origin}/readyz`)).status).toBe(200);
          for (const surface of Object.keys(requests) as Surface[])
            expect((await requests[surface]()).status, surface).toBe(NORMAL[surface]);
        },
        { timeout: scaled(BACK_WITHIN_MS) },
      );
      const backAfterMs = performance.now() - back;
      loading = false;
      await Promise.all(load);
      await admin.end();

      expect(child.exitCode, stderr).toBeNull();
      expect(terminated).toBeGreaterThan(5);
      expect(backAfterMs).toBeLessThan(scaled(BACK_WITHIN_MS));
      for (const { surface, answer } of answers) {
        if (answer.status === 503) expectUnavailable(surface, answer);
        else expect(answer.status, `${surface}: ${answer.body}`).toBe(NORMAL[surface]);
      }
      expect(child.exitCode).toBeNull();
      expect(stderr).not.toMatch(/Unhandled|uncaught/i);

      // Work resumes by itself: every post the API accepted is published.
      const created = answers.filter(({ surface, answer }) => surface === 'createPost' && answer.status === 201).length;
      expect(created).toBeGreaterThan(0);
      await eventually(
        async () => {
          const rows = await database.db
            .selectFrom('posts')
            .select(['status', (eb) => eb.fn.countAll<string>().as('count')])
            .where('organization_id', '=', org.id)
            .groupBy('status')
            .execute();
          const counts = Object.fromEntries(rows.map((row) => [row.status, Number(row.count)]));
          expect(Object.keys(counts)).toEqual(['published']);
          expect(counts.published).toBeGreaterThanOrEqual(created);
        },
        { timeout: TIMEOUTS.process },
      );
    },
    TIMEOUTS.test * 3,
  );
});
