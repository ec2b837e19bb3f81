import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, redactUrl } from '../src/core/logger.js';
import { errorOf } from './support/api.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';

const lines: { requestId?: string; req?: { url?: string } }[] = [];
let server: TestServer;
let org: TestOrganization;

beforeAll(async () => {
  const logger = createLogger(
    { logLevel: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) },
  );
  server = await startTestServer({ logger });
  org = await createOrganization(server.ctx.db);
});
afterAll(() => server?.close());

describe('request logs', () => {
  it('carry the request id of the response and no credential', async () => {
    const response = await server.fetch(`/public/v1/channels?access_token=${org.apiKey}`, {
      headers: { Authorization: `Bearer ${org.apiKey}`, Cookie: 'session=secret-cookie' },
    });
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toMatch(/^req_/);
    expect((await errorOf(response)).requestId).toBe(requestId);

    const line = lines.find((entry) => entry.requestId === requestId);
    expect(line).toBeDefined();
    const text = JSON.stringify(lines);
    expect(text).not.toContain(org.apiKey);
    expect(text).not.toContain('secret-cookie');
  });

  it('name an OAuth request without its state or PKCE challenge', async () => {
    const state = 'state-known-only-to-the-app-7f3a';
    const challenge = 'challenge-known-only-to-the-app-0123456789abcdefghi';
    const query = new URLSearchParams({
      client_id: 'pca_unknown',
      response_type: 'code',
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    const response = await server.fetch(`/oauth/authorize?${query.toString()}`, { redirect: 'manual' });
    await response.arrayBuffer();
    const line = lines.find((entry) => entry.requestId === response.headers.get('x-request-id'));
    expect(line?.req?.url).toMatch(
      /^\/oauth\/authorize\?client_id=pca_unknown&response_type=code&state=%5BREDACTED%5D&code_challenge=%5BREDACTED%5D/,
    );
    const text = JSON.stringify(lines);
    expect(text).not.toContain(state);
    expect(text).not.toContain(challenge);
  });

  it('redact sensitive query values', () => {
    expect(redactUrl('/cb?code=abc&state=xyz&client_secret=s')).toBe(
      '/cb?code=%5BREDACTED%5D&state=%5BREDACTED%5D&client_secret=%5BREDACTED%5D',
    );
    expect(redactUrl('/public/v1/posts?limit=5')).toBe('/public/v1/posts?limit=5');
    // The single-use secrets that mails carry in their links' paths.
    expect(redactUrl('/password/reset/pmt_abc123')).toBe('/password/reset/[REDACTED]');
    expect(redactUrl('/email/verify/pmt_abc123?x=1')).toBe('/email/verify/[REDACTED]?x=1');
    expect(redactUrl('/mail/unsubscribe/abc.def')).toBe('/mail/unsubscribe/[REDACTED]');
    expect(redactUrl('/password/forgot')).toBe('/password/forgot');
  });
});
