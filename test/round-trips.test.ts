import { Kysely, PostgresDialect } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle, Db } from '../src/db/database.js';
import { BASELINE_SQL } from '../scripts/bench/baseline-sql.mjs';
import { createChannel, createOrganization, insertMedia, type TestOrganization } from './support/fixtures.js';
import { createTestDatabase } from './support/database.js';
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
let counted: Db;

const normalized = (statement: string) => statement.replace(/\s+/g, ' ').replace(/\( /g, '(').replace(/ \)/g, ')').trim();

/** The test database, with a Kysely instance that records every statement it sends. */
async function countingDatabase(): Promise<DatabaseHandle> {
  const handle = await createTestDatabase();
  const log = (event: { query: { sql: string } }) => {
    recording?.push(normalized(event.query.sql));
  };
  counted = handle.url
    ? new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: handle.url, max: 10 }) }), log })
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
    expect(credential).toMatch(/^with credential as \(select .* from "api_keys" .*insert into rate_limit_windows .* select credential\.id, credential\.organization_id, counted\.count from credential, counted$/);
  });

  it('answer each GET with one statement besides that one, the statement the baseline sends', async () => {
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
    }
  });

  it('create a scheduled post in the statements the baseline sends', async () => {
    const statements = await statementsOf('/public/v1/posts', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'schedule', date: inOneDay(), channelIds: [channelId], content: 'second' }),
    });
    expect(statements.slice(1)).toEqual(BASELINE_SQL.createPost(1).map(normalized));
  });
});
