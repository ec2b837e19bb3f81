import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';

// One of each kind of answer: health, a page, a page's error, an asset, the Public API (success and
// error), the OAuth endpoints and their metadata, and an address nobody serves.
const REQUESTS: [string, RequestInit?][] = [
  ['/healthz'],
  ['/login'],
  ['/settings/developers/apps'],
  ['/assets/style.css'],
  ['/public/v1/channels'],
  ['/public/v1/nowhere'],
  ['/api/oauth/token', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' }],
  ['/.well-known/oauth-authorization-server'],
  ['/openapi/public-v1.yaml'],
  ['/no/such/page'],
];

describe('Strict-Transport-Security', () => {
  let secure: TestServer;
  let plain: TestServer;
  let org: TestOrganization;

  // One server per hook: a hook's time is a server's start, however busy the machine.
  beforeAll(async () => {
    secure = await startTestServer({ env: { PUBLIC_URL: 'https://scheduler.example.org' } });
    org = await createOrganization(secure.ctx.db);
  });
  beforeAll(async () => {
    plain = await startTestServer({ env: { PUBLIC_URL: 'http://scheduler.example.org' } });
  });
  afterAll(async () => {
    await secure?.close();
    await plain?.close();
  });

  it('is sent on every response when the public URL is https, for a year and for this host only', async () => {
    const requests: [string, RequestInit?][] = [...REQUESTS, ['/public/v1/channels', { headers: org.auth }]];
    for (const [path, init] of requests) {
      const response = await secure.fetch(path, { redirect: 'manual', ...init });
      await response.arrayBuffer();
      expect(
        response.headers.get('strict-transport-security'),
        `${init?.method ?? 'GET'} ${path} (${response.status})`,
      ).toBe('max-age=31536000');
    }
  });

  it('is not sent over plain http, where browsers would ignore it and it would promise what is not served', async () => {
    for (const [path, init] of REQUESTS) {
      const response = await plain.fetch(path, { redirect: 'manual', ...init });
      await response.arrayBuffer();
      expect(response.headers.get('strict-transport-security'), path).toBeNull();
    }
  });
});
