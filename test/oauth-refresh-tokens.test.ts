// Expiring access tokens and refresh tokens (RFC 6749 §6 with the rotation of RFC 9700 §4.14.2): an app
// chooses them on its page; its code exchange then answers expires_in and a refresh token, which rotates
// on each use, dies when reused (taking its whole chain), idles out, and can be revoked (RFC 7009).
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components as OAuthComponents } from '../generated/oauth.js';
import { keepHouse } from '../src/housekeeping.js';
import { rotateAppSecret } from '../src/oauth/apps.js';
import { revokeGrant } from '../src/oauth/grants.js';
import { oauthErrorOf } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { approve, channelsStatus, createOAuthApp, tokenRequest, type TestApp } from './support/oauth.js';
import { startTestServer, type TestServer } from './support/server.js';

type TokenResponse = OAuthComponents['schemas']['TokenResponse'];

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

let server: TestServer;
let user: TestOrganization;
let developer: TestOrganization;
let expiring: TestApp;
let other: TestApp;

beforeAll(async () => {
  server = await startTestServer({
    env: {
      OAUTH_AUTH_FAILURES_PER_CLIENT: '100000',
      OAUTH_AUTH_FAILURES_PER_ADDRESS: '100000',
      OAUTH_REFRESH_TOKEN_IDLE_DAYS: '7',
    },
  });
  developer = await createOrganization(server.ctx.db, 'Developer');
  user = await createOrganization(server.ctx.db, 'User');
  expiring = await createOAuthApp(server.ctx.db, developer.id, { name: 'Expiring', expiringTokens: true });
  other = await createOAuthApp(server.ctx.db, developer.id, { name: 'Other', expiringTokens: true });
});
afterAll(() => server?.close());

async function tokens(response: Response): Promise<TokenResponse> {
  const body = (await response.json()) as TokenResponse;
  expect(response.status, JSON.stringify(body)).toBe(200);
  expect(response.headers.get('cache-control')).toBe('no-store');
  return body;
}

const codeGrant = (app: TestApp, code: string) => ({
  grant_type: 'authorization_code',
  code,
  client_id: app.clientId,
  client_secret: app.secret,
});

function refresh(app: TestApp, refreshToken: string | undefined, extra: Record<string, string> = {}) {
  return tokenRequest(
    server,
    { grant_type: 'refresh_token', ...(refreshToken === undefined ? {} : { refresh_token: refreshToken }), ...extra },
    { form: true, basic: { clientId: app.clientId, secret: app.secret } },
  );
}

async function refused(response: Response, error: string, status = 400) {
  expect(response.status).toBe(status);
  const body = await oauthErrorOf(response);
  expect(body.error).toBe(error);
  return body.error_description;
}

/** An authorization of `expiring` by `user`, exchanged: an access token with its refresh token. */
async function authorize(options: { scope?: string; resource?: string } = {}) {
  const code = await approve(server.ctx.db, expiring, user, { ...options, now: server.clock.now() });
  return tokens(await tokenRequest(server, codeGrant(expiring, code)));
}

describe('an app whose tokens expire', () => {
  it('gets an hour-long access token and a refresh token; the expired token is refused on the Public API and /mcp', async () => {
    const first = await authorize();
    expect(first).toEqual({
      id: user.id,
      cus: null,
      access_token: expect.stringMatching(/^pos_/) as string,
      token_type: 'bearer',
      expires_in: 3600,
      refresh_token: expect.stringMatching(/^por_/) as string,
    });
    expect(await channelsStatus(server, first.access_token)).toBe(200);

    await server.clock.advance(HOUR_MS + 1000);
    const api = await server.fetch('/public/v1/channels', {
      headers: { Authorization: `Bearer ${first.access_token}` },
    });
    expect(api.status).toBe(401);
    expect(api.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
    expect(api.headers.get('www-authenticate')).toMatch(/has expired/);
    const mcp = await server.fetch('/mcp', {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${first.access_token}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': LATEST_PROTOCOL_VERSION,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(mcp.status).toBe(401);
    expect(mcp.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);

    // The refresh token outlives it: a new hour.
    const next = await tokens(await refresh(expiring, first.refresh_token));
    expect(next.expires_in).toBe(3600);
    expect(await channelsStatus(server, next.access_token)).toBe(200);
  });

  it('rotates the refresh token, and a reused one revokes every token of its authorization', async () => {
    const untouched = await authorize();
    const first = await authorize();
    const second = await tokens(await refresh(expiring, first.refresh_token));
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.access_token).not.toBe(first.access_token);
    const third = await tokens(await refresh(expiring, second.refresh_token));
    expect(await channelsStatus(server, third.access_token)).toBe(200);

    // The first refresh token again: somebody else holds it too.
    expect(await refused(await refresh(expiring, first.refresh_token), 'invalid_grant')).toMatch(/already been used/);
    for (const token of [first.access_token, second.access_token, third.access_token]) {
      expect(await channelsStatus(server, token)).toBe(401);
    }
    expect(await refused(await refresh(expiring, third.refresh_token), 'invalid_grant')).toMatch(/revoked/);
    // Another authorization of the same app and organization is its own chain.
    expect(await channelsStatus(server, untouched.access_token)).toBe(200);
    await tokens(await refresh(expiring, untouched.refresh_token));
  });

  it('ends the token a refresh gave after the app stopped expiring its tokens, when that refresh token is reused', async () => {
    // Another app, so that the token left revoked without expiry is no other test's.
    const code = await approve(server.ctx.db, other, user, { now: server.clock.now() });
    const first = await tokens(await tokenRequest(server, codeGrant(other, code)));
    await server.ctx.db
      .updateTable('oauth_apps')
      .set({ access_token_lifetime_seconds: null })
      .where('id', '=', other.app.id)
      .execute();
    try {
      const lasting = await tokens(await refresh(other, first.refresh_token));
      expect(lasting.expires_in).toBeUndefined();
      expect(lasting.refresh_token).toBeUndefined();
      expect(await channelsStatus(server, lasting.access_token)).toBe(200);
      // The spent refresh token again: the token that never expires goes with its chain.
      await refused(await refresh(other, first.refresh_token), 'invalid_grant');
      expect(await channelsStatus(server, lasting.access_token)).toBe(401);
    } finally {
      await server.ctx.db
        .updateTable('oauth_apps')
        .set({ access_token_lifetime_seconds: 3600 })
        .where('id', '=', other.app.id)
        .execute();
    }
  });

  it('lets a concurrent second use of one refresh token win nothing', async () => {
    const first = await authorize();
    const answers = await Promise.all([refresh(expiring, first.refresh_token), refresh(expiring, first.refresh_token)]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400]);
    const winner = (await answers.find((answer) => answer.status === 200)!.json()) as TokenResponse;
    await answers.find((answer) => answer.status === 400)!.arrayBuffer();
    expect(await channelsStatus(server, winner.access_token)).toBe(401);
  });

  it('narrows the scope of one access token, never widens it, and keeps what the user authorized', async () => {
    const first = await authorize({ scope: 'posts:write channels:read' });
    expect(first.scope).toBe('posts:write channels:read');

    const narrow = await tokens(await refresh(expiring, first.refresh_token, { scope: 'posts:read' }));
    expect(narrow.scope).toBe('posts:read');
    expect(await channelsStatus(server, narrow.access_token)).toBe(403);

    expect(
      await refused(await refresh(expiring, narrow.refresh_token, { scope: 'media:write' }), 'invalid_scope'),
    ).toMatch(/not authorized: media:write/);
    await refused(await refresh(expiring, narrow.refresh_token, { scope: 'posts:read everything' }), 'invalid_scope');
    // A refused request spends nothing: the next refresh gets every scope the user authorized.
    const full = await tokens(await refresh(expiring, narrow.refresh_token));
    expect(full.scope).toBe('posts:write channels:read');
    expect(await channelsStatus(server, full.access_token)).toBe(200);
  });

  it('keeps the resource, which may only be narrowed to one the user authorized', async () => {
    const base = server.baseUrl;
    const forMcp = await authorize({ resource: `${base}/mcp` });
    await refused(await refresh(expiring, forMcp.refresh_token, { resource: `${base}/public/v1` }), 'invalid_target');
    await refused(
      await refresh(expiring, forMcp.refresh_token, { resource: 'https://elsewhere.example/' }),
      'invalid_target',
    );
    const kept = await tokens(await refresh(expiring, forMcp.refresh_token));
    expect(await channelsStatus(server, kept.access_token)).toBe(401);

    const forBoth = await authorize({ resource: base });
    const narrowed = await tokens(await refresh(expiring, forBoth.refresh_token, { resource: `${base}/public/v1` }));
    expect(await channelsStatus(server, narrowed.access_token)).toBe(200);
  });

  it('refuses another client’s refresh token and a wrong secret without spending the token', async () => {
    const first = await authorize();
    expect(await refused(await refresh(other, first.refresh_token), 'invalid_grant')).toBe(
      'The refresh token is not valid.',
    );
    await refused(await refresh({ ...expiring, secret: other.secret }, first.refresh_token), 'invalid_client', 401);
    await refused(await refresh(expiring, undefined), 'invalid_request');
    await refused(await refresh(expiring, 'por_not-a-token'), 'invalid_grant');
    // Still unspent and its chain alive.
    expect(await channelsStatus(server, first.access_token)).toBe(200);
    await tokens(await refresh(expiring, first.refresh_token));
  });

  it('revokes a refresh token with the access tokens of its authorization (RFC 7009)', async () => {
    const first = await authorize();
    const second = await tokens(await refresh(expiring, first.refresh_token));
    const revoked = await tokenRequest(
      server,
      { token: second.refresh_token!, token_type_hint: 'refresh_token' },
      { form: true, basic: { clientId: expiring.clientId, secret: expiring.secret }, path: '/api/oauth/revoke' },
    );
    expect(revoked.status).toBe(200);
    expect(await channelsStatus(server, second.access_token)).toBe(401);
    expect(await refused(await refresh(expiring, second.refresh_token), 'invalid_grant')).toMatch(/revoked/);

    // Another app cannot revoke it: the answer is the same, the token lives on.
    const kept = await authorize();
    const byOther = await tokenRequest(
      server,
      { token: kept.refresh_token! },
      { form: true, basic: { clientId: other.clientId, secret: other.secret }, path: '/api/oauth/revoke' },
    );
    expect(byOther.status).toBe(200);
    await tokens(await refresh(expiring, kept.refresh_token));
  });

  it('keeps refresh tokens across a secret rotation (the refresh needs the new secret) and ends them with the grant', async () => {
    const app = await createOAuthApp(server.ctx.db, developer.id, { name: 'Rotating', expiringTokens: true });
    const code = await approve(server.ctx.db, app, user, { now: server.clock.now() });
    const first = await tokens(await tokenRequest(server, codeGrant(app, code)));
    const rotated = await rotateAppSecret(server.ctx.db, developer.id, app.app.id, server.clock.now());
    await refused(await refresh(app, first.refresh_token), 'invalid_client', 401);
    const withNewSecret = { ...app, secret: rotated.secret };
    const second = await tokens(await refresh(withNewSecret, first.refresh_token));

    // The user's Revoke in Approved apps ends the grant, and its refresh tokens with it.
    const grant = await server.ctx.db
      .selectFrom('oauth_grants')
      .select('id')
      .where('app_id', '=', app.app.id)
      .executeTakeFirstOrThrow();
    await revokeGrant(server.ctx.db, user.userId, grant.id);
    await refused(await refresh(withNewSecret, second.refresh_token), 'invalid_grant');
    expect(await channelsStatus(server, second.access_token)).toBe(401);
  });

  it('revokes the refresh token with the access token when the code is redeemed twice', async () => {
    const code = await approve(server.ctx.db, expiring, user, { now: server.clock.now() });
    const first = await tokens(await tokenRequest(server, codeGrant(expiring, code)));
    await refused(await tokenRequest(server, codeGrant(expiring, code)), 'invalid_grant');
    expect(await refused(await refresh(expiring, first.refresh_token), 'invalid_grant')).toMatch(/revoked/);
  });

  it('lets a refresh token idle out, and housekeeping forgets expired tokens a day later', async () => {
    const first = await authorize();
    await server.clock.advance(6 * DAY_MS);
    const second = await tokens(await refresh(expiring, first.refresh_token));
    await server.clock.advance(6 * DAY_MS);
    // Used within its idle time, each successor lives on.
    const third = await tokens(await refresh(expiring, second.refresh_token));
    await server.clock.advance(7 * DAY_MS + 1000);
    expect(await refused(await refresh(expiring, third.refresh_token), 'invalid_grant')).toMatch(/expired/);

    const chainRows = async () => {
      const refreshRows = await server.ctx.db
        .selectFrom('oauth_refresh_tokens')
        .select('id')
        .where('app_id', '=', expiring.app.id)
        .where('organization_id', '=', user.id)
        .execute();
      return refreshRows.length;
    };
    expect(await chainRows()).toBeGreaterThan(0);
    await server.clock.advance(DAY_MS + 1000);
    await keepHouse(server.ctx);
    expect(await chainRows()).toBe(0);
    const accessRows = await server.ctx.db
      .selectFrom('oauth_tokens')
      .select('id')
      .where('app_id', '=', expiring.app.id)
      .execute();
    expect(accessRows).toEqual([]);
  });

  it('is a choice on the app’s page, which changes the tokens issued from then on', async () => {
    const browser = new BrowserSession(server);
    await browser.logIn(developer.email, developer.password);
    const registered = await browser.submit('/settings/developers/apps', '/settings/developers/apps', {
      name: 'Chosen on the page',
      description: '',
      pictureUrl: '',
      redirectUri: 'https://app.example.org/cb',
      expiringTokens: 'yes',
    });
    expect(registered.status).toBe(201);
    const html = await registered.text();
    expect(html).toMatch(/<input type="checkbox" id="expiringTokens" name="expiringTokens" value="yes" checked/);
    const clientId = /id="client-id"[^>]*value="([^"]+)"/.exec(html)![1]!;
    const secret = /id="new-secret"[^>]*value="([^"]+)"/.exec(html)![1]!;
    const app = await server.ctx.db
      .selectFrom('oauth_apps')
      .selectAll()
      .where('client_id', '=', clientId)
      .executeTakeFirstOrThrow();
    const chosen: TestApp = { app, clientId, secret };
    const withRefresh = await tokens(
      await tokenRequest(
        server,
        codeGrant(chosen, await approve(server.ctx.db, chosen, user, { now: server.clock.now() })),
      ),
    );
    expect(withRefresh.expires_in).toBe(3600);

    // Unticked: tokens issued from now on never expire and come alone.
    const page = `/settings/developers/apps/${app.id}`;
    const saved = await browser.submit(page, page, {
      name: 'Chosen on the page',
      description: '',
      pictureUrl: '',
      redirectUri: 'https://app.example.org/cb',
    });
    expect(saved.status).toBe(303);
    expect(await (await browser.get(page)).text()).toMatch(/name="expiringTokens" value="yes" aria-describedby/);
    const lasting = await tokens(
      await tokenRequest(
        server,
        codeGrant(chosen, await approve(server.ctx.db, chosen, user, { now: server.clock.now() })),
      ),
    );
    expect(lasting.expires_in).toBeUndefined();
    expect(lasting.refresh_token).toBeUndefined();
    // The refresh token issued before still works, and now brings a token that does not expire.
    const after = await tokens(await refresh(chosen, withRefresh.refresh_token));
    expect(after.expires_in).toBeUndefined();
    expect(after.refresh_token).toBeUndefined();
    await server.clock.advance(2 * HOUR_MS);
    expect(await channelsStatus(server, after.access_token)).toBe(200);
  });
});

describe('an app whose tokens do not expire', () => {
  it('gets the answer it always got, and its token keeps working; it has no refresh token to use', async () => {
    const lasting = await createOAuthApp(server.ctx.db, developer.id, { name: 'Lasting' });
    const code = await approve(server.ctx.db, lasting, user, { now: server.clock.now() });
    const answer = await tokens(await tokenRequest(server, codeGrant(lasting, code)));
    expect(Object.keys(answer).sort()).toEqual(['access_token', 'cus', 'id', 'token_type']);
    await server.clock.advance(30 * DAY_MS);
    await keepHouse(server.ctx);
    expect(await channelsStatus(server, answer.access_token)).toBe(200);
    await refused(await refresh(lasting, 'por_' + 'x'.repeat(30)), 'invalid_grant');
  });

  it('is advertised in the metadata', async () => {
    const metadata = (await (await server.fetch('/.well-known/oauth-authorization-server')).json()) as {
      grant_types_supported: string[];
    };
    expect(metadata.grant_types_supported).toEqual(['authorization_code', 'refresh_token']);
  });
});
