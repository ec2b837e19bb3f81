// Case 30 of the OAuth and authentication cases: repeated wrong client secrets are throttled.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/core/config.js';
import { oauthErrorOf } from './support/api.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { approve, createOAuthApp, tokenRequest, type TestApp } from './support/oauth.js';
import { startTestServer, type TestServer } from './support/server.js';
import { stringMatching } from './support/typed-matchers.js';

let server: TestServer;
let org: TestOrganization;
let appA: TestApp;
let appB: TestApp;
let appC: TestApp;
// The start of a window (of a minute, and of the default five minutes), so Retry-After is predictable
// and every attempt of a test counts in one window however long the machine takes to send them.
const start = new Date(Math.floor(Date.now() / 300_000) * 300_000 + 300_000);

beforeAll(async () => {
  server = await startTestServer({
    env: {
      OAUTH_AUTH_FAILURES_PER_CLIENT: '3',
      OAUTH_AUTH_FAILURES_PER_ADDRESS: '5',
      OAUTH_AUTH_FAILURES_WINDOW_SECONDS: '60',
    },
  });
  org = await createOrganization(server.ctx.db);
  appA = await createOAuthApp(server.ctx.db, org.id, { name: 'A' });
  appB = await createOAuthApp(server.ctx.db, org.id, { name: 'B' });
  appC = await createOAuthApp(server.ctx.db, org.id, { name: 'C' });
});
afterAll(() => server?.close());

const attempt = (app: TestApp, secret: string, code: string) =>
  tokenRequest(server, { grant_type: 'authorization_code', code, client_id: app.clientId, client_secret: secret });

async function expectThrottled(response: Response, retryAfter: string) {
  expect(response.status).toBe(429);
  expect(response.headers.get('retry-after')).toBe(retryAfter);
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(await oauthErrorOf(response)).toEqual({
    error: 'rate_limited',
    error_description: stringMatching(/^[\x20\x21\x23-\x5B\x5D-\x7E]+$/),
  });
}

describe('throttling of failed client authentication', () => {
  it('answers 429 with Retry-After after repeated wrong secrets, per client from an address and then per address, until the window ends', async () => {
    server.setNow(new Date(start.getTime() + 10_000));
    const codeA = await approve(server.ctx.db, appA, org, { now: start });
    const codeC = await approve(server.ctx.db, appC, org, { now: start });

    for (let i = 0; i < 3; i++) expect((await attempt(appA, 'pcs_wrong', codeA)).status).toBe(401);
    // A's budget is spent: even the right secret is refused now, so guessing on learns nothing.
    await expectThrottled(await attempt(appA, appA.secret, codeA), '50');
    // Revocation shares the count.
    await expectThrottled(
      await tokenRequest(
        server,
        { token: 'x', client_id: appA.clientId, client_secret: appA.secret },
        { path: '/api/oauth/revoke' },
      ),
      '50',
    );

    // Another client from the same address still gets through until the address's budget is spent.
    expect((await attempt(appB, 'pcs_wrong', codeA)).status).toBe(401);
    expect(
      (
        await tokenRequest(server, {
          grant_type: 'authorization_code',
          code: codeA,
          client_id: 'pca_guess',
          client_secret: 'x',
        })
      ).status,
    ).toBe(401);
    await expectThrottled(await attempt(appC, appC.secret, codeC), '50');

    // A new window: the right secrets work again, and the codes were never touched.
    server.setNow(new Date(start.getTime() + 61_000));
    expect((await attempt(appA, appA.secret, codeA)).status).toBe(200);
    expect((await attempt(appC, appC.secret, codeC)).status).toBe(200);
    server.setNow(undefined);
  });
});

describe('throttling of guesses sent all at once', () => {
  it('tries no more wrong secrets than the limit, and successes spend none of it', async () => {
    // A window of its own, after the one the test above uses.
    server.setNow(new Date(start.getTime() + 10 * 60_000));
    try {
      const code = await approve(server.ctx.db, appB, org, { now: new Date(start.getTime() + 10 * 60_000) });
      const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => attempt(appB, `pcs_wrong${i}`, code)));
      const statuses = responses.map((response) => response.status);
      // Never more secrets tried than the limit. Attempts refused by one limit are counted by the other
      // until they are taken back, so a burst may be refused a little early: fewer than 3 may be tried.
      expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(3);
      expect(statuses.filter((status) => status === 401 || status === 429)).toHaveLength(20);

      // In the next window, more successes than either limit leave the whole budget for failures.
      const later = new Date(start.getTime() + 12 * 60_000);
      server.setNow(later);
      for (let i = 0; i < 6; i++)
        expect((await attempt(appC, appC.secret, await approve(server.ctx.db, appC, org, { now: later }))).status).toBe(
          200,
        );
      for (let i = 0; i < 3; i++) expect((await attempt(appC, 'pcs_wrong', code)).status).toBe(401);
      await expectThrottled(await attempt(appC, 'pcs_wrong', code), '60');
    } finally {
      server.setNow(undefined);
    }
  });
});

describe('client addresses', () => {
  const guess = (target: TestServer, clientId: string, forwardedFor: string) =>
    target.fetch('/api/oauth/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': forwardedFor },
      body: JSON.stringify({
        grant_type: 'authorization_code',
        code: 'pac_x',
        client_id: clientId,
        client_secret: 'pcs_wrong',
      }),
    });

  it('are the connection’s by default: X-Forwarded-For cannot buy a fresh budget', async () => {
    server.setNow(new Date(start.getTime() + 20 * 60_000));
    try {
      for (let i = 1; i <= 5; i++) expect((await guess(server, `pca_guess${i}`, `203.0.113.${i}`)).status).toBe(401);
      expect((await guess(server, 'pca_guess6', '203.0.113.6')).status).toBe(429);
    } finally {
      server.setNow(undefined);
    }
  });

  describe('behind a trusted proxy, with a limit per client', () => {
    let proxied: TestServer;
    beforeAll(async () => {
      proxied = await startTestServer({ env: { TRUST_PROXY: 'loopback', OAUTH_AUTH_FAILURES_PER_CLIENT: '2' } });
      proxied.setNow(start);
    });
    afterAll(() => proxied?.close());

    it('keep one address’s wrong secrets from throttling the same client elsewhere', async () => {
      // Client ids are public: a stranger who sends wrong secrets for an app must not lock the app's own
      // server out of its token exchanges.
      const owner = await createOrganization(proxied.ctx.db);
      const app = await createOAuthApp(proxied.ctx.db, owner.id);
      const exchange = async (secret: string, forwardedFor: string) =>
        proxied.fetch('/api/oauth/token', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': forwardedFor },
          body: JSON.stringify({
            grant_type: 'authorization_code',
            code: await approve(proxied.ctx.db, app, owner, { now: start }),
            client_id: app.clientId,
            client_secret: secret,
          }),
        });
      for (let i = 0; i < 2; i++) expect((await exchange('pcs_wrong', '203.0.113.66')).status).toBe(401);
      // The guesser's address is throttled for this client, even with the right secret …
      expect((await exchange(app.secret, '203.0.113.66')).status).toBe(429);
      // … and the app's server, elsewhere, is not.
      expect((await exchange(app.secret, '198.51.100.7')).status).toBe(200);
      expect((await exchange('pcs_wrong', '198.51.100.7')).status).toBe(401);
    });
  });

  describe('behind a trusted proxy, with a limit per address', () => {
    let proxied: TestServer;
    beforeAll(async () => {
      proxied = await startTestServer({ env: { TRUST_PROXY: 'loopback', OAUTH_AUTH_FAILURES_PER_ADDRESS: '2' } });
      proxied.setNow(start);
    });
    afterAll(() => proxied?.close());

    it('are read from X-Forwarded-For, so clients behind it do not share one budget', async () => {
      for (let i = 1; i <= 2; i++) expect((await guess(proxied, `pca_guess${i}`, '203.0.113.1')).status).toBe(401);
      expect((await guess(proxied, 'pca_guess3', '203.0.113.1')).status).toBe(429);
      expect((await guess(proxied, 'pca_guess4', '203.0.113.2')).status).toBe(401);
    });
  });
});

describe('throttle settings', () => {
  it('have defaults and refuse values that are not positive integers', () => {
    expect(loadConfig({}).oauthClientAuthFailures).toEqual({
      perClientAddress: 10,
      perAddress: 50,
      windowSeconds: 300,
    });
    expect(() => loadConfig({ OAUTH_AUTH_FAILURES_PER_CLIENT: '0' })).toThrow(/OAUTH_AUTH_FAILURES_PER_CLIENT/);
    expect(() => loadConfig({ OAUTH_AUTH_FAILURES_WINDOW_SECONDS: 'soon' })).toThrow(
      /OAUTH_AUTH_FAILURES_WINDOW_SECONDS/,
    );
  });

  it('trust no proxy unless told which', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8, 192.0.2.7' }).trustProxy).toEqual([
      'loopback',
      '10.0.0.0/8',
      '192.0.2.7',
    ]);
    for (const value of ['true', 'everyone', '10.0.0.0/33', '0'])
      expect(() => loadConfig({ TRUST_PROXY: value }), value).toThrow(/TRUST_PROXY/);
  });
});
