import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../src/accounts/api-keys.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { json } from './support/http.js';
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
    const notFound = await server.fetch('/public/v1/nothing-here', { headers: { Authorization: `Bearer ${secondKey}` } });
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('ratelimit-remaining')).toBe('1');

    const third = await server.fetch('/public/v1/channels', { headers: { Authorization: secondKey } });
    expect(third.status).toBe(200);
    expect(third.headers.get('ratelimit-remaining')).toBe('0');

    const limited = await server.fetch('/public/v1/channels', { headers: org.auth });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('50');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    const body = await json(limited);
    expect(body.error).toMatchObject({ code: 'rate_limited', retryAfter: 50 });

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
