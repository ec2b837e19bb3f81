import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../src/accounts/api-keys.js';
import { generateCredential } from '../src/crypto/issued-secrets.js';
import { bodyOf, publicApi, type ApiError } from './support/api.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { anyString } from './support/typed-matchers.js';

let server: TestServer;
let org: TestOrganization;

beforeAll(async () => {
  server = await startTestServer();
  org = await createOrganization(server.ctx.db);
});
afterAll(() => server?.close());

async function expectUnauthorized(response: Response) {
  expect(response.status).toBe(401);
  expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
  expect(response.headers.get('content-type')).toMatch(/application\/json/);
  const body = await bodyOf<ApiError>(response);
  expect(body).toEqual({
    error: { code: 'unauthorized', message: anyString(), requestId: response.headers.get('x-request-id') },
  });
  expect(body.error.requestId).toMatch(/^req_/);
  return body;
}

describe('Public API authentication', () => {
  it('accepts an API key as a Bearer credential and in the bare header', async () => {
    const bearer = await publicApi(server, { Authorization: `Bearer ${org.apiKey}` }).GET('/public/v1/is-connected');
    expect(bearer.response.status).toBe(200);
    expect(bearer.data).toEqual({
      connected: true,
      organization: { id: org.id, name: org.name },
      credential: { type: 'api_key', role: 'owner' },
    });
    const bare = await server.fetch('/public/v1/is-connected', { headers: { Authorization: org.apiKey } });
    expect(bare.status).toBe(200);
  });

  it('reads the scheme name case-insensitively', async () => {
    const response = await server.fetch('/public/v1/channels', { headers: { Authorization: `bEaReR ${org.apiKey}` } });
    expect(response.status).toBe(200);
  });

  it('answers 401 in the envelope with WWW-Authenticate when no credential is sent', async () => {
    const body = await expectUnauthorized(await server.fetch('/public/v1/channels'));
    expect(body.error.message).toMatch(/Authorization: Bearer/);
  });

  it('ignores a credential in the query string', async () => {
    await expectUnauthorized(await server.fetch(`/public/v1/channels?access_token=${org.apiKey}`));
    await expectUnauthorized(await server.fetch(`/public/v1/channels?api_key=${org.apiKey}`));
  });

  it('refuses malformed credentials without a server error', async () => {
    const flipped = org.apiKey.slice(0, 15) + (org.apiKey[15] === 'x' ? 'y' : 'x') + org.apiKey.slice(16);
    for (const credential of [
      flipped, // checksum no longer matches
      org.apiKey.replace('svc_live_', 'svc_test_'),
      `${org.apiKey}0`,
      'svc_live_',
      'x'.repeat(10 * 1024),
      `Bearer ${'y'.repeat(10 * 1024)}`,
      'Basic dXNlcjpwYXNz',
      'Bearer',
      'Bearer two words',
      '\u00e9\u00e8',
    ]) {
      const header =
        credential.startsWith('Bearer') || credential.startsWith('Basic') ? credential : `Bearer ${credential}`;
      await expectUnauthorized(await server.fetch('/public/v1/channels', { headers: { Authorization: header } }));
    }
  });

  it('refuses a well-formed key that was never issued', async () => {
    await expectUnauthorized(
      await server.fetch('/public/v1/channels', {
        headers: { Authorization: `Bearer ${generateCredential('svc_live_')}` },
      }),
    );
  });

  it('refuses a revoked key while the organization’s other keys keep working', async () => {
    const { secret, apiKey } = await createApiKey(server.ctx.db, org.id, 'to revoke');
    const before = await server.fetch('/public/v1/channels', { headers: { Authorization: `Bearer ${secret}` } });
    expect(before.status).toBe(200);
    await revokeApiKey(server.ctx.db, org.id, apiKey.id, new Date());
    await expectUnauthorized(
      await server.fetch('/public/v1/channels', { headers: { Authorization: `Bearer ${secret}` } }),
    );
    const other = await server.fetch('/public/v1/channels', { headers: org.auth });
    expect(other.status).toBe(200);
  });

  it('records when a key was last used', async () => {
    const { secret, apiKey } = await createApiKey(server.ctx.db, org.id, 'usage');
    expect(apiKey.last_used_at).toBeNull();
    server.setNow('2026-11-21T10:00:00.000Z');
    try {
      await server.fetch('/public/v1/channels', { headers: { Authorization: `Bearer ${secret}` } });
      const row = await server.ctx.db
        .selectFrom('api_keys')
        .select('last_used_at')
        .where('id', '=', apiKey.id)
        .executeTakeFirstOrThrow();
      expect(row.last_used_at?.toISOString()).toBe('2026-11-21T10:00:00.000Z');
    } finally {
      server.setNow(undefined);
    }
  });

  it('stores no key in clear', async () => {
    const rows = await server.ctx.db.selectFrom('api_keys').selectAll().execute();
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(org.apiKey);
    expect(dump).not.toContain(org.apiKey.slice(9, 30));
  });

  it('authenticates before revealing whether an operation exists', async () => {
    await expectUnauthorized(await server.fetch('/public/v1/no-such-thing'));
  });
});
