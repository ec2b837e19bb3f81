import { Kysely, PostgresDialect } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresPool, type DatabaseHandle, type Db } from '../src/db/database.js';
import { NamingPool } from '../src/db/statement-names.js';
import { BASELINE_SQL } from '../scripts/bench/baseline-sql.mjs';
import { createChannel, createOrganization, insertMedia, type TestOrganization } from './support/fixtures.js';
import { createTestDatabase, DIALECT } from './support/database.js';
import { startTestServer, type TestServer } from './support/server.js';

/**
 * The statements each hot Public API operation sends, counted at the database driver: every one is a
 * round trip (on PostgreSQL), so a change that adds one fails here. The benchmark's bare baseline
 * (scripts/bench/baseline-sql.mjs) sends the same statements; they are compared too, so its figures
 * stay the ceiling of this service's own SQL.
 */
let server: TestServer;
let org: TestOrganization;
let channelId: string;
let postId: string;
let recording: string[] | undefined;
/** Times a connection sent a statement while it waited for no answer: the round trips (PostgreSQL). */
let roundTrips = 0;
let counted: Db;

const normalized = (statement: string) =>
  statement.replace(/\s+/g, ' ').replace(/\( /g, '(').replace(/ \)/g, ')').trim();

/**
 * Counts a client's round trips: a statement started while none of the client's is waiting for its
 * answer starts one. The others go out at once only because the service's connections are pipelined,
 * which the test checks of the pool it uses.
 */
function countRoundTrips(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
  let waiting = 0;
  const answered = () => {
    waiting -= 1;
  };
  client.query = ((...args: unknown[]) => {
    if (waiting === 0 && recording) roundTrips += 1;
    // Recorded as sent: pipelined answers that arrive together are told to their callers in an order
    // of their promise chains, not necessarily the connection's.
    const [statement] = args as [string | { text: string }];
    recording?.push(normalized(typeof statement === 'string' ? statement : statement.text));
    waiting += 1;
    const running = query(...args);
    running.then(answered, answered);
    return running;
  }) as typeof client.query;
}

/**
 * The test database, with a Kysely instance that records every statement it sends (on the service's own
 * pool on PostgreSQL).
 */
async function countingDatabase(): Promise<DatabaseHandle> {
  const handle = await createTestDatabase();
  // On the embedded database, statements run one at a time: recorded as Kysely completes them. On
  // PostgreSQL they are recorded as the connection sends them (countRoundTrips).
  const log = (event: { query: { sql: string } }) => {
    if (!handle.url) recording?.push(normalized(event.query.sql));
  };
  let pool: pg.Pool | undefined;
  if (handle.url) {
    pool = postgresPool(handle.url);
    expect((pool.options as { pipeline?: boolean }).pipeline).toBe(true);
    pool.on('connect', countRoundTrips);
  }
  counted = pool
    ? new Kysely({ dialect: new PostgresDialect({ pool: new NamingPool(pool) }), log })
    : new Kysely({ dialect: new PGliteDialect(handle.pglite!), log });
  return {
    ...handle,
    db: counted,
    close: async () => {
      if (handle.url) await counted.destroy();
      await handle.close();
    },
  };
}

async function statementsOf(path: string, init: RequestInit = {}): Promise<string[]> {
  recording = [];
  roundTrips = 0;
  const response = await server.fetch(path, { ...init, headers: { ...org.auth, ...init.headers } });
  const body = await response.text();
  expect(response.status, body).toBeLessThan(300);
  const statements = recording;
  recording = undefined;
  return statements;
}

const inOneDay = () => new Date(Date.now() + 86_400_000).toISOString();

beforeAll(async () => {
  server = await startTestServer({ database: await countingDatabase(), env: { RATE_LIMIT_MAX: '100000' } });
  org = await createOrganization(server.ctx.db);
  channelId = (await createChannel(server.ctx.db, org.id, 'sandbox')).id;
  await insertMedia(server.ctx.db, org.id, 'image');
  const created = await server.fetch('/public/v1/posts', {
    method: 'POST',
    headers: { ...org.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'schedule', date: inOneDay(), channelIds: [channelId], content: 'first' }),
  });
  postId = ((await created.json()) as { data: { id: string }[] }).data[0]!.id;
});
afterAll(() => server?.close());

describe('round trips of the hot Public API operations', () => {
  it('authenticate and count the rate limit in one statement before each operation', async () => {
    const [credential] = await statementsOf('/public/v1/channels');
    expect(credential).toMatch(
      /^with credential as \(select .* from "api_keys" .*insert into rate_limit_windows .* select credential\.id, credential\.organization_id, .*counted\.count from credential, counted$/,
    );
  });

  it('answer each GET with one statement besides that one, the statement the baseline sends: 2 round trips', async () => {
    const gets: [string, string][] = [
      ['/public/v1/is-connected', BASELINE_SQL.organization],
      ['/public/v1/channels', BASELINE_SQL.channels],
      ['/public/v1/channels/quota', BASELINE_SQL.quota],
      ['/public/v1/posts?limit=20', BASELINE_SQL.listPosts],
      [`/public/v1/posts/${postId}`, BASELINE_SQL.getPost],
      ['/public/v1/media', BASELINE_SQL.listMedia],
    ];
    for (const [path, expected] of gets) {
      const statements = await statementsOf(path);
      expect(statements.slice(1), path).toEqual([normalized(expected)]);
      if (DIALECT === 'postgres') expect(roundTrips, path).toBe(2);
    }
  });

  it('create a scheduled post in the statements the baseline sends, in 4 round trips on PostgreSQL', async () => {
    const statements = await statementsOf('/public/v1/posts', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'schedule', date: inOneDay(), channelIds: [channelId], content: 'second' }),
    });
    expect(statements.slice(1)).toEqual(BASELINE_SQL.createPost(1).map(normalized));
    // The credential; the channels and media; BEGIN, the lock and the insert; the events, the jobs and COMMIT.
    if (DIALECT === 'postgres') expect(roundTrips).toBe(4);
  });
});
