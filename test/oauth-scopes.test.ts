// OAuth scopes: asked for at authorize, shown on the consent page, carried by the code and the token,
// and checked by each Public API operation against the scope its contract `security` names.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopesByOperation } from '../src/http/scopes.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { approve, createOAuthApp, exchange, tokenRequest, type TestApp } from './support/oauth.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let user: TestOrganization;
let app: TestApp;
let browser: BrowserSession;
const REDIRECT = 'https://client.example.org/oauth/callback';

beforeAll(async () => {
  server = await startTestServer();
  user = await createOrganization(server.ctx.db, 'Scoped User Org');
  const developer = await createOrganization(server.ctx.db, 'Scoped Dev');
  app = await createOAuthApp(server.ctx.db, developer.id, { redirectUri: REDIRECT });
  browser = new BrowserSession(server);
  await browser.logIn(user.email, user.password);
});
afterAll(() => server?.close());

const call = (token: string, path: string, init: RequestInit = {}) =>
  server.fetch(path, { ...init, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' } });

describe('the contract', () => {
  it('names a scope for every operation but the connection check', () => {
    const needs = scopesByOperation();
    const served = [...needs.entries()].filter(([id]) => !id.startsWith('event'));
    expect(served.length).toBeGreaterThan(25);
    for (const [operationId, scope] of served) {
      if (operationId === 'isConnected') expect(scope).toBeUndefined();
      else expect(scope, operationId).toMatch(/^(posts|media|channels|analytics|webhooks):(read|write)$/);
    }
    expect(needs.get('createPost')).toBe('posts:write');
    expect(needs.get('listPosts')).toBe('posts:read');
    expect(needs.get('createUpload')).toBe('media:write');
  });
});

describe('a token with scopes', () => {
  it('is asked for on the consent page, which lists what the scopes allow, and comes back with its scope', async () => {
    const query = new URLSearchParams({
      client_id: app.clientId,
      response_type: 'code',
      state: 'st',
      scope: 'posts:read channels:read',
    });
    const page = await browser.get(`/oauth/authorize?${query.toString()}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('(posts:read)');
    expect(html).toContain('(channels:read)');
    expect(html).not.toContain('webhooks');
    const fields = Object.fromEntries(
      ['csrf_token', 'request_id', 'client_id', 'organization_id', 'state'].map((name) => [
        name,
        inputValue(html, name)!,
      ]),
    );
    const answer = await browser.postForm('/oauth/consent', { ...fields, decision: 'approve' });
    expect(answer.status).toBe(303);
    const code = new URL(answer.headers.get('location')!).searchParams.get('code')!;
    const response = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code,
      client_id: app.clientId,
      client_secret: app.secret,
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { access_token: string; scope?: string };
    expect(body.scope).toBe('posts:read channels:read');

    expect((await call(body.access_token, '/public/v1/posts')).status).toBe(200);
    expect((await call(body.access_token, '/public/v1/channels')).status).toBe(200);
    expect((await call(body.access_token, '/public/v1/is-connected')).status).toBe(200);

    const refused = await call(body.access_token, '/public/v1/webhooks');
    expect(refused.status).toBe(403);
    const challenge = refused.headers.get('www-authenticate')!;
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="webhooks:read"');
    expect(challenge).toContain('resource_metadata="');
    expect(await refused.json()).toMatchObject({ error: { code: 'forbidden' } });
  });

  it('calls only its scopes’ operations, a write scope including its read one; refused before the operation runs', async () => {
    const token = await exchange(server, app, await approve(server.ctx.db, app, user, { scope: 'posts:read' }));
    // Refused before the operation runs: an unknown post is not even looked up.
    const remove = await call(token, '/public/v1/posts/post_doesNotExist000000', { method: 'DELETE' });
    expect(remove.status).toBe(403);
    expect(remove.headers.get('www-authenticate')).toContain('scope="posts:write"');
    expect((await call(token, '/public/v1/posts/post_doesNotExist000000')).status).toBe(404);

    const writer = await exchange(server, app, await approve(server.ctx.db, app, user, { scope: 'media:write' }));
    expect((await call(writer, '/public/v1/media')).status).toBe(200);
    expect((await call(writer, '/public/v1/posts')).status).toBe(403);
  });

  it('leaves tokens asked for without scope, and API keys, every operation', async () => {
    const token = await exchange(server, app, await approve(server.ctx.db, app, user));
    for (const path of ['/public/v1/webhooks', '/public/v1/posts', '/public/v1/media', '/public/v1/channels']) {
      expect((await call(token, path)).status, path).toBe(200);
      expect((await call(user.apiKey, path)).status, path).toBe(200);
    }
  });

  it('refuses unknown or empty scopes at authorize with invalid_scope', async () => {
    for (const scope of ['posts:read admin', '', 'posts:delete']) {
      const query = new URLSearchParams({ client_id: app.clientId, response_type: 'code', state: 's', scope });
      const response = await server.fetch(`/oauth/authorize?${query.toString()}`, { redirect: 'manual' });
      expect(response.status, scope).toBe(302);
      const location = new URL(response.headers.get('location')!);
      expect(location.searchParams.get('error')).toBe('invalid_scope');
      expect(location.searchParams.get('state')).toBe('s');
    }
  });
});
