// Lifecycle and the Public API: cases 31–34 and 36 of the OAuth and authentication cases
// (reference/oauth-and-auth-cases.md). API keys (case 35) are in web-pages.test.ts and public-api-*.test.ts.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCredential } from '../src/crypto/issued-secrets.js';
import { errorOf, oauthErrorOf } from './support/api.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { approve, channelsStatus, createOAuthApp, exchange, tokenRequest, type TestApp } from './support/oauth.js';
import { startPictureHost } from './support/picture-host.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let developer: TestOrganization;
let developerBrowser: BrowserSession;
let userX: TestOrganization;
let userY: TestOrganization;

beforeAll(async () => {
  server = await startTestServer({
    env: { OAUTH_AUTH_FAILURES_PER_CLIENT: '100000', OAUTH_AUTH_FAILURES_PER_ADDRESS: '100000' },
  });
  developer = await createOrganization(server.ctx.db, 'Developer');
  userX = await createOrganization(server.ctx.db, 'Organization X');
  userY = await createOrganization(server.ctx.db, 'Organization Y');
  developerBrowser = new BrowserSession(server);
  await developerBrowser.logIn(developer.email, developer.password);
});
afterAll(() => server?.close());

/** Registers an app through Settings → Developers → Apps, as a developer would, and reads what the page shows once. */
async function registerThroughPage(name: string): Promise<TestApp> {
  const response = await developerBrowser.submit('/settings/developers/apps', '/settings/developers/apps', {
    name,
    description: 'Test app',
    pictureUrl: '',
    redirectUri: 'https://app.example.org/cb',
  });
  expect(response.status).toBe(201);
  const html = await response.text();
  const secret = inputValue(html, 'new-secret') ?? /id="new-secret"[^>]*value="([^"]+)"/.exec(html)?.[1];
  const clientId = /id="client-id"[^>]*value="([^"]+)"/.exec(html)?.[1];
  expect(secret).toMatch(/^pcs_/);
  expect(clientId).toMatch(/^pca_/);
  const app = await server.ctx.db
    .selectFrom('oauth_apps')
    .selectAll()
    .where('client_id', '=', clientId!)
    .executeTakeFirstOrThrow();
  return { app, clientId: clientId!, secret: secret! };
}

async function approvedAppsPage(session: BrowserSession): Promise<string> {
  const response = await session.get('/settings/approved-apps');
  expect(response.status).toBe(200);
  return response.text();
}

describe('Rotate secret', () => {
  it('stops the old secret at once, shows the new one once, and keeps issued tokens working', async () => {
    const app = await registerThroughPage('Rotating App');
    const token = await exchange(server, app, await approve(server.ctx.db, app, userX));

    const appPage = `/settings/developers/apps/${app.app.id}`;
    const rotated = await developerBrowser.submit(appPage, `${appPage}/rotate-secret`, {});
    expect(rotated.status).toBe(200);
    const newSecret = /id="new-secret"[^>]*value="([^"]+)"/.exec(await rotated.text())?.[1];
    expect(newSecret).toMatch(/^pcs_/);
    expect(newSecret).not.toBe(app.secret);
    // Shown once: the app's page no longer holds it.
    const later = await (await developerBrowser.get(appPage)).text();
    expect(later).not.toContain(newSecret!);
    expect(later).toContain(`pcs_…${newSecret!.slice(-4)}`);

    const code = await approve(server.ctx.db, app, userX);
    const old = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code,
      client_id: app.clientId,
      client_secret: app.secret,
    });
    expect(old.status).toBe(401);
    expect((await oauthErrorOf(old)).error).toBe('invalid_client');
    const revokeWithOld = await tokenRequest(
      server,
      { token, client_id: app.clientId, client_secret: app.secret },
      { path: '/api/oauth/revoke' },
    );
    expect(revokeWithOld.status).toBe(401);

    expect(await exchange(server, { ...app, secret: newSecret! }, code)).toMatch(/^pos_/);
    expect(await channelsStatus(server, token)).toBe(200);
  });
});

describe('Delete app', () => {
  it('revokes its tokens, fails its pending codes, breaks its authorize link and leaves every Approved apps list', async () => {
    const app = await registerThroughPage('Doomed App');
    const browserX = new BrowserSession(server);
    await browserX.logIn(userX.email, userX.password);
    const browserY = new BrowserSession(server);
    await browserY.logIn(userY.email, userY.password);

    // Both users approve through the consent page.
    const tokens: string[] = [];
    for (const session of [browserX, browserY]) {
      const page = await session.get(`/oauth/authorize?client_id=${app.clientId}&response_type=code&state=s`);
      const html = await page.text();
      const fields = Object.fromEntries(
        ['csrf_token', 'request_id', 'client_id', 'organization_id', 'state'].map((name) => [
          name,
          inputValue(html, name)!,
        ]),
      );
      const approved = await session.postForm('/oauth/consent', { ...fields, decision: 'approve' });
      tokens.push(await exchange(server, app, new URL(approved.headers.get('location')!).searchParams.get('code')!));
      expect(await approvedAppsPage(session)).toContain('Doomed App');
    }
    const pendingCode = await approve(server.ctx.db, app, userX);
    for (const token of tokens) expect(await channelsStatus(server, token)).toBe(200);

    const appPage = `/settings/developers/apps/${app.app.id}`;
    const refused = await developerBrowser.submit(appPage, `${appPage}/delete`, {});
    expect(refused.status).toBe(400);
    const deleted = await developerBrowser.submit(appPage, `${appPage}/delete`, { confirm: 'yes' });
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get('location')).toBe('/settings/developers/apps');

    for (const token of tokens) expect(await channelsStatus(server, token)).toBe(401);
    const redeem = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: pendingCode,
      client_id: app.clientId,
      client_secret: app.secret,
    });
    expect(redeem.status).toBe(401);
    const authorize = await browserX.get(`/oauth/authorize?client_id=${app.clientId}&response_type=code&state=s`);
    expect(authorize.status).toBe(400);
    expect(authorize.headers.get('location')).toBeNull();
    for (const session of [browserX, browserY]) expect(await approvedAppsPage(session)).not.toContain('Doomed App');
    expect((await developerBrowser.get(appPage)).status).toBe(404);
  });
});

describe('Revoke in Approved apps', () => {
  it('revokes one organization’s tokens for the app, and only those', async () => {
    const app = await createOAuthApp(server.ctx.db, developer.id, { name: 'Shared App' });
    const tokenX = await exchange(server, app, await approve(server.ctx.db, app, userX));
    const tokenY = await exchange(server, app, await approve(server.ctx.db, app, userY));
    const pendingX = await approve(server.ctx.db, app, userX);
    const otherApp = await createOAuthApp(server.ctx.db, developer.id, { name: 'Other App' });
    const otherTokenX = await exchange(server, otherApp, await approve(server.ctx.db, otherApp, userX));

    const browserX = new BrowserSession(server);
    await browserX.logIn(userX.email, userX.password);
    const html = await approvedAppsPage(browserX);
    expect(html).toContain('Organization X');
    expect(html).toContain('Shared App');
    expect(html).not.toContain('Organization Y');
    const grant = await server.ctx.db
      .selectFrom('oauth_grants')
      .select('id')
      .where('app_id', '=', app.app.id)
      .where('organization_id', '=', userX.id)
      .executeTakeFirstOrThrow();
    expect(html).toContain(`/settings/approved-apps/${grant.id}/revoke`);

    // Nobody else can revoke X's grant, even knowing its id.
    const browserY = new BrowserSession(server);
    await browserY.logIn(userY.email, userY.password);
    const foreign = await browserY.submit('/settings/approved-apps', `/settings/approved-apps/${grant.id}/revoke`, {});
    expect(foreign.status).toBe(404);
    expect(await channelsStatus(server, tokenX)).toBe(200);

    const revoked = await browserX.submit('/settings/approved-apps', `/settings/approved-apps/${grant.id}/revoke`, {});
    expect(revoked.status).toBe(303);
    expect(await channelsStatus(server, tokenX)).toBe(401);
    expect(await channelsStatus(server, tokenY)).toBe(200);
    expect(await channelsStatus(server, otherTokenX)).toBe(200);
    const redeem = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: pendingX,
      client_id: app.clientId,
      client_secret: app.secret,
    });
    expect((await oauthErrorOf(redeem)).error).toBe('invalid_grant');
    const after = await approvedAppsPage(browserX);
    expect(after).not.toContain('Shared App');
    expect(after).toContain('Other App');
  });
});

describe('Approved apps page', () => {
  it('shows the apps’ pictures from this site, and loads nothing from elsewhere', async () => {
    const pictureHost = await startPictureHost();
    try {
      const pictured = await createOAuthApp(server.ctx.db, developer.id, {
        name: 'Pictured App',
        pictureUrl: `${pictureHost.origin}/logo.png`,
      });
      const plain = await createOAuthApp(server.ctx.db, developer.id, { name: 'plain App' });
      await approve(server.ctx.db, pictured, userY);
      await approve(server.ctx.db, plain, userY);
      const browserY = new BrowserSession(server);
      await browserY.logIn(userY.email, userY.password);
      const response = await browserY.get('/settings/approved-apps');
      const html = await response.text();
      expect(html).toContain(`<img class="app-picture small" src="/oauth/apps/${pictured.clientId}/picture" alt="">`);
      // An app without a picture shows its initial.
      expect(html).toContain('<span class="app-picture app-initial small" aria-hidden="true">P</span>');
      expect(html).not.toContain(pictureHost.origin);
      const csp = response.headers.get('content-security-policy')!;
      expect(csp).toContain("img-src 'self';");
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("frame-ancestors 'none'");
      const picture = await browserY.get(`/oauth/apps/${pictured.clientId}/picture`);
      expect(picture.status).toBe(200);
      expect(picture.headers.get('content-type')).toBe('image/png');
    } finally {
      await pictureHost.close();
    }
  });
});

describe('OAuth tokens on the Public API', () => {
  let app: TestApp;
  let token: string;

  beforeAll(async () => {
    app = await createOAuthApp(server.ctx.db, developer.id, { name: 'API App' });
    token = await exchange(server, app, await approve(server.ctx.db, app, userX));
  });

  async function expectUnauthorized(headers: Record<string, string>, path = '/public/v1/channels') {
    const response = await server.fetch(path, { headers });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await errorOf(response)).code).toBe('unauthorized');
  }

  it('accepts a token on every kind of Public API path, like an API key, with a case-insensitive scheme', async () => {
    for (const header of [`Bearer ${token}`, `bEaReR ${token}`, token]) {
      const response = await server.fetch('/public/v1/channels', { headers: { Authorization: header } });
      expect(response.status).toBe(200);
    }
    expect(
      (await server.fetch('/public/v1/channels/quota', { headers: { Authorization: `Bearer ${token}` } })).status,
    ).toBe(200);
    const unknown = await server.fetch('/public/v1/posts/post_doesnotexist', {
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(unknown.status).not.toBe(401);
  });

  it('refuses no credential, a revoked, garbled or huge token, and a token in the query string, with 401', async () => {
    await expectUnauthorized({});
    const flipped = token.slice(0, 10) + (token[10] === 'x' ? 'y' : 'x') + token.slice(11);
    for (const credential of [
      flipped,
      token.replace('pos_', 'poz_'),
      `${token}0`,
      'pos_',
      generateCredential('pos_'),
      'p'.repeat(10 * 1024),
      `pos_${'y'.repeat(10 * 1024)}`,
    ]) {
      await expectUnauthorized({ Authorization: `Bearer ${credential}` });
    }
    const inQuery = await server.fetch(`/public/v1/channels?access_token=${token}`);
    expect(inQuery.status).toBe(401);

    const revokedToken = await exchange(server, app, await approve(server.ctx.db, app, userX));
    await tokenRequest(
      server,
      { token: revokedToken, client_id: app.clientId, client_secret: app.secret },
      { path: '/api/oauth/revoke' },
    );
    await expectUnauthorized({ Authorization: `Bearer ${revokedToken}` });
  });

  it('shares the organization’s rate-limit budget with its API keys', async () => {
    const withKey = await server.fetch('/public/v1/channels', { headers: userX.auth });
    const withToken = await server.fetch('/public/v1/channels', { headers: { Authorization: `Bearer ${token}` } });
    expect(Number(withToken.headers.get('ratelimit-remaining'))).toBe(
      Number(withKey.headers.get('ratelimit-remaining')) - 1,
    );
  });

  it('records when a token was last used', async () => {
    const noon = new Date('2026-11-21T12:00:00.000Z');
    server.setNow(noon);
    try {
      const fresh = await exchange(server, app, await approve(server.ctx.db, app, userX, { now: noon }));
      await channelsStatus(server, fresh);
      const rows = await server.ctx.db
        .selectFrom('oauth_tokens')
        .select('last_used_at')
        .where('last_used_at', '=', new Date('2026-11-21T12:00:00.000Z'))
        .execute();
      expect(rows).toHaveLength(1);
    } finally {
      server.setNow(undefined);
    }
  });
});

describe('storage of secrets', () => {
  it('keeps only hashes: a dump of every table holds no key, secret, code, token, session or password', async () => {
    const app = await registerThroughPage('Dumped App');
    const code = await approve(server.ctx.db, app, userX);
    const token = await exchange(server, app, code);
    const pendingCode = await approve(server.ctx.db, app, userX);
    const sessionToken = developerBrowser.cookie('session');
    expect(sessionToken).toBeTruthy();

    const created = await developerBrowser.submit('/settings/developers/access', '/settings/developers/access', {
      name: 'dump check',
    });
    const apiKey = /id="new-secret"[^>]*value="([^"]+)"/.exec(await created.text())?.[1];
    expect(apiKey).toMatch(/^svc_live_/);

    const tables = await sql<{ table_name: string }>`
      select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'
    `.execute(server.ctx.db);
    let dump = '';
    for (const { table_name } of tables.rows) {
      const rows = await sql`select * from ${sql.table(table_name)}`.execute(server.ctx.db);
      dump += JSON.stringify(rows.rows);
    }
    expect(dump).toContain(app.clientId);
    for (const secret of [
      app.secret,
      code,
      pendingCode,
      token,
      sessionToken!,
      apiKey!,
      developer.password,
      userX.apiKey,
    ]) {
      expect(dump).not.toContain(secret);
      // Not even the random middle of it.
      expect(dump).not.toContain(secret.slice(4, 24));
    }
  });
});
