import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/accounts/api-keys.js';
import { errorOf } from './support/api.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let org: TestOrganization;
let other: TestOrganization;

beforeAll(async () => {
  server = await startTestServer({ env: { RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_SECONDS: '60' } });
  org = await createOrganization(server.ctx.db, 'Busy');
  other = await createOrganization(server.ctx.db, 'Quiet');
});
afterAll(() => server?.close());

describe('Public API rate limiting', () => {
  it('counts per organization across its keys, with headers on every response and Retry-After on 429', async () => {
    server.setNow('2026-11-21T10:00:10.000Z');
    const { secret: secondKey } = await createApiKey(server.ctx.db, org.id, 'second');

    const first = await server.fetch('/public/v1/channels', { headers: org.auth });
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-limit')).toBe('3');
    expect(first.headers.get('ratelimit-remaining')).toBe('2');
    expect(first.headers.get('ratelimit-reset')).toBe('50');

    // An error response is charged and carries the headers too.
    const notFound = await server.fetch('/public/v1/nothing-here', {
      headers: { Authorization: `Bearer ${secondKey}` },
    });
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('ratelimit-remaining')).toBe('1');

    const third = await server.fetch('/public/v1/channels', { headers: { Authorization: secondKey } });
    expect(third.status).toBe(200);
    expect(third.headers.get('ratelimit-remaining')).toBe('0');

    const limited = await server.fetch('/public/v1/channels', { headers: org.auth });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('50');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    expect(await errorOf(limited)).toMatchObject({ code: 'rate_limited', retryAfter: 50 });

    // Another organization has its own budget.
    const quiet = await server.fetch('/public/v1/channels', { headers: other.auth });
    expect(quiet.status).toBe(200);

    // A new window restores the budget.
    server.setNow('2026-11-21T10:01:00.000Z');
    const later = await server.fetch('/public/v1/channels', { headers: org.auth });
    expect(later.status).toBe(200);
    expect(later.headers.get('ratelimit-remaining')).toBe('2');
    server.setNow(undefined);
  });
});

describe('Public API rate limiting across processes', () => {
  it('refuses at exactly the limit when two servers on one database share the budget', async () => {
    // A second server process of the same installation: its own limiter, the same database.
    const second = await startTestServer({
      database: server.ctx.database,
      env: { RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_SECONDS: '60' },
    });
    try {
      const busy = await createOrganization(server.ctx.db, 'Shared');
      for (const each of [server, second]) each.setNow('2026-11-21T11:00:10.000Z');
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? server : second).fetch('/public/v1/channels', { headers: busy.auth }),
        ),
      );
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 200)).toHaveLength(3);
      expect(statuses.filter((status) => status === 429)).toHaveLength(17);
      const remaining = answers
        .filter((answer) => answer.status === 200)
        .map((answer) => answer.headers.get('ratelimit-remaining'));
      expect(remaining.sort()).toEqual(['0', '1', '2']);
    } finally {
      for (const each of [server, second]) each.setNow(undefined);
      await second.close({ keepDatabase: true });
    }
  });
});

describe('the counts', () => {
  it('are kept in a table without write-ahead log: a count is no WAL record and no commit to flush', async () => {
    // Counting every request in a logged table cost PostgreSQL more per request than the rest of the
    // request (scripts/bench); a crash of PostgreSQL only starts the open windows again.
    const { rows } = await sql<{
      relpersistence: string;
    }>`select relpersistence from pg_class where relname = 'rate_limit_windows'`.execute(server.ctx.db);
    expect(rows).toEqual([{ relpersistence: 'u' }]);
  });
});
