// Resource indicators (RFC 8707): the resource named at authorize and token, kept on the code and the
// token, and the audience each resource checks; tokens issued without one work everywhere, as before.
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../src/crypto/issued-secrets.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { newId } from '../src/core/ids.js';
import { audienceAccepts, knownResource } from '../src/http/resource-challenge.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { approve, channelsStatus, createOAuthApp, exchange, tokenRequest, type TestApp } from './support/oauth.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let user: TestOrganization;
let app: TestApp;
let browser: BrowserSession;
let base: string;
const REDIRECT = 'https://client.example.org/oauth/callback';
const insecure = { [oauth.allowInsecureRequests]: true };

beforeAll(async () => {
  server = await startTestServer();
  base = server.ctx.config.publicUrl;
  user = await createOrganization(server.ctx.db, 'Resource User Org');
  const developer = await createOrganization(server.ctx.db, 'Resource Dev');
  app = await createOAuthApp(server.ctx.db, developer.id, { redirectUri: REDIRECT });
  browser = new BrowserSession(server);
  await browser.logIn(user.email, user.password);
});
afterAll(() => server?.close());

const resourceOf = async (token: string) =>
  (
    await server.ctx.db
      .selectFrom('oauth_tokens')
      .select('resource')
      .where('token_hash', '=', hashSecret(token))
      .executeTakeFirstOrThrow()
  ).resource;

/** The Public API's answer to a token, with its challenge. */
async function publicApiAnswer(token: string) {
  const response = await server.fetch('/public/v1/channels', { headers: { Authorization: `Bearer ${token}` } });
  return { status: response.status, challenge: response.headers.get('www-authenticate') };
}

describe('resource at the authorization endpoint', () => {
  it('carries the resource through the consent page to the code and the token, with a standard client library', async () => {
    const as = await oauth.processDiscoveryResponse(
      new URL(base),
      await oauth.discoveryRequest(new URL(base), { algorithm: 'oauth2', ...insecure }),
    );
    const client: oauth.Client = { client_id: app.clientId };
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: app.clientId,
      response_type: 'code',
      redirect_uri: REDIRECT,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      resource: `${base}/mcp`,
    }).toString();

    const page = await browser.get(`${url.pathname}${url.search}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const fields = Object.fromEntries(
      ['csrf_token', 'request_id', 'client_id', 'organization_id', 'state'].map((name) => [
        name,
        inputValue(html, name)!,
      ]),
    );
    const answer = await browser.postForm('/oauth/consent', { ...fields, decision: 'approve' });
    expect(answer.status).toBe(303);
    const params = oauth.validateAuthResponse(as, client, new URL(answer.headers.get('location')!), state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.ClientSecretPost(app.secret),
      params,
      REDIRECT,
      verifier,
      insecure,
    );
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
    expect(await resourceOf(tokens.access_token)).toBe(`${base}/mcp`);

    // A token for the MCP server is not one for the Public API (RFC 8707 §2).
    const refused = await publicApiAnswer(tokens.access_token);
    expect(refused.status).toBe(401);
    expect(refused.challenge).toContain('error="invalid_token"');
    expect(refused.challenge).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/public/v1"`);
  });

  it('redirects an unknown resource back with invalid_target and the state, before any sign-in', async () => {
    for (const resource of [
      'https://elsewhere.example/mcp',
      `${base}/mcp#x`,
      `${base}/mcp?x=1`,
      `${base}/admin`,
      'mcp',
    ]) {
      const query = new URLSearchParams({ client_id: app.clientId, response_type: 'code', state: 's1', resource });
      const response = await server.fetch(`/oauth/authorize?${query.toString()}`, { redirect: 'manual' });
      expect(response.status, resource).toBe(302);
      const location = new URL(response.headers.get('location')!);
      expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
      expect(location.searchParams.get('error')).toBe('invalid_target');
      expect(location.searchParams.get('state')).toBe('s1');
    }
    const twice = await server.fetch(
      `/oauth/authorize?client_id=${app.clientId}&response_type=code&resource=${encodeURIComponent(`${base}/mcp`)}&resource=${encodeURIComponent(base)}`,
      { redirect: 'manual' },
    );
    expect(new URL(twice.headers.get('location')!).searchParams.get('error')).toBe('invalid_request');
  });
});

describe('resource at the token endpoint', () => {
  const grant = (code: string, resource?: string) => ({
    grant_type: 'authorization_code',
    code,
    client_id: app.clientId,
    client_secret: app.secret,
    ...(resource === undefined ? {} : { resource }),
  });

  it('keeps tokens issued without any resource good for the Public API', async () => {
    const token = await exchange(server, app, await approve(server.ctx.db, app, user));
    expect(await resourceOf(token)).toBeNull();
    expect((await publicApiAnswer(token)).status).toBe(200);
  });

  it('binds the token to the resource of the token request when the authorization named none', async () => {
    const forMcp = await exchange(server, app, await approve(server.ctx.db, app, user), { resource: `${base}/mcp` });
    expect(await resourceOf(forMcp)).toBe(`${base}/mcp`);
    expect((await publicApiAnswer(forMcp)).status).toBe(401);

    const forApi = await exchange(server, app, await approve(server.ctx.db, app, user), {
      resource: `${base}/public/v1`,
    });
    expect((await publicApiAnswer(forApi)).status).toBe(200);

    // The origin (written with the trailing slash URL libraries add) is both resources.
    const forBoth = await exchange(server, app, await approve(server.ctx.db, app, user), { resource: `${base}/` });
    expect(await resourceOf(forBoth)).toBe(base);
    expect((await publicApiAnswer(forBoth)).status).toBe(200);
  });

  it('refuses another resource than the one authorized with invalid_target, and lets the origin be narrowed', async () => {
    const mcpCode = await approve(server.ctx.db, app, user, { resource: `${base}/mcp` });
    const other = await tokenRequest(server, grant(mcpCode, `${base}/public/v1`));
    expect(other.status).toBe(400);
    expect(await other.json()).toMatchObject({ error: 'invalid_target' });
    // The code was not used up by the refusal: the resource authorized is still granted.
    const same = await tokenRequest(server, grant(mcpCode, `${base}/mcp`));
    expect(same.status).toBe(200);

    const originCode = await approve(server.ctx.db, app, user, { resource: base });
    const narrowed = await exchange(server, app, originCode, { resource: `${base}/public/v1` });
    expect(await resourceOf(narrowed)).toBe(`${base}/public/v1`);
    expect(await channelsStatus(server, narrowed)).toBe(200);

    for (const unknown of ['https://elsewhere.example/mcp', `${base}/mcp/`, 'not a uri']) {
      const response = await tokenRequest(server, grant(await approve(server.ctx.db, app, user), unknown));
      expect(response.status, unknown).toBe(400);
      expect(await response.json()).toMatchObject({ error: 'invalid_target' });
    }
  });
});

describe('audiences', () => {
  it('are checked by the resource: the origin covers both, a path only itself', () => {
    const origin = 'https://h.example';
    expect(audienceAccepts(undefined, `${origin}/mcp`)).toBe(true);
    expect(audienceAccepts(null, `${origin}/public/v1`)).toBe(true);
    expect(audienceAccepts(origin, `${origin}/mcp`)).toBe(true);
    expect(audienceAccepts(`${origin}/mcp`, `${origin}/mcp`)).toBe(true);
    expect(audienceAccepts(`${origin}/mcp`, `${origin}/public/v1`)).toBe(false);
    expect(audienceAccepts(`${origin}/public/v1`, `${origin}/mcp`)).toBe(false);
    expect(audienceAccepts('https://other.example', `${origin}/mcp`)).toBe(false);
    expect(knownResource(origin, 'https://h.example/')).toBe(origin);
    expect(knownResource(origin, 'https://H.EXAMPLE/mcp')).toBe(`${origin}/mcp`);
    expect(knownResource(origin, 'https://user@h.example/mcp')).toBeUndefined();
  });
});

describe('the MCP server as a protected resource', () => {
  /** `/mcp`'s answer to a JSON-RPC call made with `token`. */
  async function mcpAnswer(token: string, method: string, params: Record<string, unknown> = {}) {
    const response = await server.fetch('/mcp', {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': LATEST_PROTOCOL_VERSION,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const text = await response.text();
    return {
      status: response.status,
      challenge: response.headers.get('www-authenticate'),
      body: JSON.parse(text) as { result?: { tools?: unknown[]; isError?: boolean; content?: { text: string }[] } },
    };
  }

  it('takes the tokens issued for it or for the whole server, and refuses the Public API’s with its own challenge', async () => {
    const forMcp = await exchange(server, app, await approve(server.ctx.db, app, user), { resource: `${base}/mcp` });
    const listed = await mcpAnswer(forMcp, 'tools/list');
    expect(listed.status).toBe(200);
    expect(listed.body.result?.tools?.length).toBeGreaterThan(0);

    const forBoth = await exchange(server, app, await approve(server.ctx.db, app, user));
    expect((await mcpAnswer(forBoth, 'tools/list')).status).toBe(200);

    const forApi = await exchange(server, app, await approve(server.ctx.db, app, user), {
      resource: `${base}/public/v1`,
    });
    const refused = await mcpAnswer(forApi, 'tools/list');
    expect(refused.status).toBe(401);
    expect(refused.challenge).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);
    expect(refused.challenge).toContain('error="invalid_token"');
  });

  it('lets a token call only the tools of its scopes', async () => {
    const reader = await exchange(
      server,
      app,
      await approve(server.ctx.db, app, user, { resource: `${base}/mcp`, scope: 'posts:read' }),
    );
    expect((await mcpAnswer(reader, 'tools/call', { name: 'listPosts', arguments: {} })).body.result?.isError).toBe(
      undefined,
    );
    // A write tool, with input the contract takes: refused for the scope, before the post is looked up.
    const write = await mcpAnswer(reader, 'tools/call', {
      name: 'deletePost',
      arguments: { id: newId('post') },
    });
    expect(write.body.result?.isError).toBe(true);
    expect(JSON.parse(write.body.result?.content?.[0]?.text ?? '{}')).toMatchObject({ error: { code: 'forbidden' } });
  });
});
