// OAuth clients that register themselves (RFC 7591) or are known by their Client ID Metadata Document:
// registration and its refusals, public clients and PKCE, loopback redirect ports, metadata documents
// served over https by a loopback server, the consent page's mark, and housekeeping.
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  exchangeAuthorization,
  registerClient as sdkRegisterClient,
  startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keepHouse } from '../src/housekeeping.js';
import { s256 } from '../src/oauth/pkce.js';
import { registerClient } from '../src/oauth/registration.js';
import { makeCertificate } from './support/certificate.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { channelsStatus, tokenRequest } from './support/oauth.js';
import { scratchDirs } from './support/scratch.js';
import { startTestServer, type TestServer } from './support/server.js';

const DOCUMENT_HOST = 'client.example';
const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';

let server: TestServer;
let user: TestOrganization;
let browser: BrowserSession;
let documentHost: https.Server;
let documentOrigin: string;
let defaultCAs: string[];
const documentRequests: string[] = [];

/** The metadata documents the client's web server hosts, by path. */
function documents(path: string): { status?: number; body?: string; cacheControl?: string; hang?: boolean } {
  const url = `${documentOrigin}${path}`;
  const good = { client_id: url, client_name: 'Docs Client', redirect_uris: ['https://docs.example.org/callback'] };
  switch (path) {
    case '/good.json':
      return { body: JSON.stringify(good), cacheControl: 'max-age=600' };
    case '/other-id.json':
      return { body: JSON.stringify({ ...good, client_id: `${documentOrigin}/good.json` }) };
    case '/big.json':
      return { body: JSON.stringify({ ...good, padding: 'x'.repeat(6000) }) };
    case '/secret.json':
      return { body: JSON.stringify({ ...good, token_endpoint_auth_method: 'client_secret_basic' }) };
    case '/nul-name.json':
      return { body: JSON.stringify({ ...good, client_name: 'Docs\u0000Client' }) };
    case '/slow.json':
      return { hang: true };
    default:
      return { status: 404, body: '{}' };
  }
}

async function register(metadata: unknown) {
  const response = await server.fetch('/api/oauth/register', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(metadata),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

async function authorize(parameters: Record<string, string>) {
  return browser.get(
    `/oauth/authorize?${new URLSearchParams({ response_type: 'code', state: 'st', ...parameters }).toString()}`,
  );
}

/** Opens the consent page, approves, and returns where the browser is sent. */
async function approveVia(parameters: Record<string, string>): Promise<{ location: URL; html: string }> {
  const page = await authorize(parameters);
  const html = await page.text();
  expect(page.status, html).toBe(200);
  const fields = ['csrf_token', 'request_id', 'client_id', 'organization_id', 'state'];
  const form = Object.fromEntries(fields.map((name) => [name, inputValue(html, name) ?? '']));
  const answer = await browser.postForm('/oauth/consent', { ...form, decision: 'approve' });
  expect(answer.status).toBe(303);
  return { location: new URL(answer.headers.get('location')!), html };
}

async function expectErrorPage(response: Response, text: string) {
  expect(response.status).toBe(400);
  expect(response.headers.get('location')).toBeNull();
  expect(await response.text()).toContain(text);
}

beforeAll(async () => {
  const certificate = makeCertificate(scratchDirs()('oauth-clients'), DOCUMENT_HOST);
  // The process trusts the test's certificate as it trusts a public CA.
  defaultCAs = tls.getCACertificates('default');
  tls.setDefaultCACertificates([...defaultCAs, certificate.cert]);
  documentHost = https.createServer(
    { cert: certificate.cert, key: fs.readFileSync(certificate.keyPath) },
    (req, res) => {
      documentRequests.push(req.url ?? '');
      const answer = documents(req.url ?? '/');
      if (answer.hang) return;
      res.writeHead(answer.status ?? 200, {
        'Content-Type': 'application/json',
        ...(answer.cacheControl ? { 'Cache-Control': answer.cacheControl } : {}),
      });
      res.end(answer.body);
    },
  );
  await new Promise<void>((resolve) => documentHost.listen(0, '127.0.0.1', resolve));
  documentOrigin = `https://${DOCUMENT_HOST}:${(documentHost.address() as AddressInfo).port}`;
  server = await startTestServer({
    env: {
      // The document host is on loopback: the operator allows it, as for media downloads.
      MEDIA_FETCH_ALLOW_PRIVATE: 'true',
      OAUTH_CLIENT_METADATA_TIMEOUT_SECONDS: '1',
      OAUTH_REGISTRATIONS_PER_ADDRESS: '30',
    },
    resolve: (hostname) => Promise.resolve(hostname === DOCUMENT_HOST ? ['127.0.0.1'] : []),
  });
  user = await createOrganization(server.ctx.db, 'Client Org');
  browser = new BrowserSession(server);
  await browser.logIn(user.email, user.password);
});

afterAll(async () => {
  tls.setDefaultCACertificates(defaultCAs);
  await server?.close();
  documentHost?.closeAllConnections();
  await new Promise<void>((resolve) => (documentHost ? documentHost.close(() => resolve()) : resolve()));
});

describe('dynamic client registration (RFC 7591)', () => {
  it('registers a public client, which must use PKCE and exchanges its code without a secret', async () => {
    const registered = await register({
      client_name: 'Desk Tool',
      redirect_uris: ['http://127.0.0.1:4100/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
    });
    expect(registered.status).toBe(201);
    expect(registered.headers.get('cache-control')).toBe('no-store');
    expect(registered.body).toMatchObject({
      client_name: 'Desk Tool',
      redirect_uris: ['http://127.0.0.1:4100/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    });
    expect(registered.body.client_secret).toBeUndefined();
    const clientId = registered.body.client_id as string;
    expect(clientId).toMatch(/^pca_/);

    // Without PKCE the request is refused on an error page: a client that registered itself is never
    // sent an error, which would let anyone make this server redirect to an address of theirs.
    await expectErrorPage(
      await authorize({ client_id: clientId, redirect_uri: 'http://127.0.0.1:4100/callback' }),
      'PKCE',
    );

    // A loopback redirect URI matches on any port (RFC 8252 §7.3), never on another path.
    await expectErrorPage(
      await authorize({
        client_id: clientId,
        redirect_uri: 'http://127.0.0.1:4555/other',
        code_challenge: s256(VERIFIER),
        code_challenge_method: 'S256',
      }),
      'not the redirect URL registered',
    );
    const redirectUri = 'http://127.0.0.1:4555/callback';
    const { location, html } = await approveVia({
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: s256(VERIFIER),
      code_challenge_method: 'S256',
    });
    expect(html).toContain('Unverified app');
    expect(html).toContain('127.0.0.1:4555');
    expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
    const code = location.searchParams.get('code')!;

    // A secret from a public client is refused; its client_id alone (with the verifier) is enough.
    const withSecret = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code,
      client_id: clientId,
      client_secret: 'pcs_guess',
      redirect_uri: redirectUri,
      code_verifier: VERIFIER,
    });
    expect(withSecret.status).toBe(401);
    const token = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code,
      client_id: clientId,
      redirect_uri: redirectUri,
      code_verifier: VERIFIER,
    });
    const body = (await token.json()) as { access_token: string; id: string };
    expect(token.status).toBe(200);
    expect(body.id).toBe(user.id);
    expect(await channelsStatus(server, body.access_token)).toBe(200);

    // Settings → Approved apps lists it, marked, with the usual Revoke.
    const approved = await (await browser.get('/settings/approved-apps')).text();
    expect(approved).toContain('Desk Tool');
    expect(approved).toContain('Unverified');
  });

  it.each(['client_secret_basic', 'client_secret_post'])(
    'registers a confidential client (%s) whose secret is shown once and required',
    async (method) => {
      const registered = await register({
        client_name: 'Web Tool',
        redirect_uris: ['https://tool.example.org/a', 'https://tool.example.org/b'],
        token_endpoint_auth_method: method,
      });
      expect(registered.status).toBe(201);
      const clientId = registered.body.client_id as string;
      const secret = registered.body.client_secret as string;
      expect(secret).toMatch(/^pcs_/);
      expect(registered.body.client_secret_expires_at).toBe(0);
      const stored = await server.ctx.db
        .selectFrom('oauth_apps')
        .select(['secret_hash', 'organization_id', 'registration'])
        .where('client_id', '=', clientId)
        .executeTakeFirstOrThrow();
      expect(stored).toMatchObject({ organization_id: null, registration: 'dynamic' });
      expect(stored.secret_hash).not.toContain(secret);

      // With two redirect URIs registered, the request must say which.
      await expectErrorPage(await authorize({ client_id: clientId }), 'registered several');
      const { location } = await approveVia({ client_id: clientId, redirect_uri: 'https://tool.example.org/b' });
      expect(location.pathname).toBe('/b');
      const code = location.searchParams.get('code')!;
      const parameters = { grant_type: 'authorization_code', code, redirect_uri: 'https://tool.example.org/b' };
      const missing = await tokenRequest(server, { ...parameters, client_id: clientId });
      expect(((await missing.json()) as { error: string }).error).toBe('invalid_request');
      const token =
        method === 'client_secret_basic'
          ? await tokenRequest(server, parameters, { form: true, basic: { clientId, secret } })
          : await tokenRequest(server, { ...parameters, client_id: clientId, client_secret: secret });
      expect(token.status).toBe(200);
      const used = await server.ctx.db
        .selectFrom('oauth_apps')
        .select('last_used_at')
        .where('client_id', '=', clientId)
        .executeTakeFirstOrThrow();
      expect(used.last_used_at).not.toBeNull();
    },
  );

  it('refuses bad redirect URIs with invalid_redirect_uri and other bad metadata with invalid_client_metadata', async () => {
    const refusals: [unknown, string][] = [
      [{ client_name: 'x' }, 'invalid_redirect_uri'],
      [{ redirect_uris: [] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['http://tool.example.org/cb'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['https://tool.example.org/cb#frag'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['https://*.example.org/cb'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['myapp:/callback'] }, 'invalid_redirect_uri'],
      [
        { redirect_uris: ['https://tool.example.org/cb'], token_endpoint_auth_method: 'private_key_jwt' },
        'invalid_client_metadata',
      ],
      [
        { redirect_uris: ['https://tool.example.org/cb'], grant_types: ['client_credentials'] },
        'invalid_client_metadata',
      ],
      [{ redirect_uris: ['https://tool.example.org/cb'], response_types: ['token'] }, 'invalid_client_metadata'],
      [{ redirect_uris: ['https://tool.example.org/cb'], client_name: 'n'.repeat(101) }, 'invalid_client_metadata'],
      [{ redirect_uris: 'https://tool.example.org/cb' }, 'invalid_client_metadata'],
      [['not', 'an', 'object'], 'invalid_client_metadata'],
    ];
    for (const [metadata, error] of refusals) {
      const answer = await register(metadata);
      expect([answer.status, answer.body.error], JSON.stringify(metadata)).toEqual([400, error]);
    }
    const count = await server.ctx.db
      .selectFrom('oauth_apps')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('name', '=', 'x')
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(0);
  });

  it('signs in an MCP client with the MCP SDK: discovery, registration, PKCE, token for /mcp', async () => {
    const base = server.baseUrl;
    const resource = await discoverOAuthProtectedResourceMetadata(`${base}/mcp`);
    const issuer = resource.authorization_servers![0]!;
    const metadata = await discoverAuthorizationServerMetadata(issuer);
    expect(metadata?.registration_endpoint).toBe(`${base}/api/oauth/register`);
    const redirectUrl = 'http://127.0.0.1:4700/callback';
    const clientInformation = await sdkRegisterClient(issuer, {
      metadata,
      clientMetadata: {
        client_name: 'SDK Agent',
        redirect_uris: [redirectUrl],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    });
    const { authorizationUrl, codeVerifier } = await startAuthorization(issuer, {
      metadata,
      clientInformation,
      redirectUrl,
      resource: new URL(`${base}/mcp`),
      state: 'sdk-state',
    });
    const { location } = await approveVia(Object.fromEntries(authorizationUrl.searchParams));
    expect(location.searchParams.get('state')).toBe('sdk-state');
    const tokens = await exchangeAuthorization(issuer, {
      metadata,
      clientInformation,
      authorizationCode: location.searchParams.get('code')!,
      codeVerifier,
      redirectUri: redirectUrl,
      resource: new URL(`${base}/mcp`),
    });
    expect(tokens.access_token).toMatch(/^pos_/);
    const list = await server.fetch('/mcp', {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${tokens.access_token}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(list.status).toBe(200);
    await list.arrayBuffer();
  });

  it('throttles registrations per client address with 429 and Retry-After', async () => {
    // Refused registrations count too: the budget of 30 is spent by this test and the ones above.
    const metadata = { redirect_uris: ['https://flood.example.org/cb'], token_endpoint_auth_method: 'none' };
    let last = await register(metadata);
    for (let i = 0; i < 35 && last.status === 201; i++) last = await register(metadata);
    expect(last.status).toBe(429);
    expect(last.body.error).toBe('rate_limited');
    expect(Number(last.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('client ID metadata documents', () => {
  // Fetches count against the registrations of the address, which the tests above spent: a new window.
  beforeAll(() => server.clock.advance(3_601_000));

  it('fetches the document, shows the client as unverified, and caches it for its max-age', async () => {
    const clientId = `${documentOrigin}/good.json`;
    const challenge = { code_challenge: s256(VERIFIER), code_challenge_method: 'S256' };
    const before = documentRequests.length;
    const { location, html } = await approveVia({ client_id: clientId, ...challenge });
    expect(html).toContain('Docs Client');
    expect(html).toContain('Unverified app');
    expect(location.origin).toBe('https://docs.example.org');
    const token = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code')!,
      client_id: clientId,
      code_verifier: VERIFIER,
    });
    expect(token.status).toBe(200);

    // Redirect URIs of a document are matched exactly; PKCE is required of it.
    await expectErrorPage(
      await authorize({ client_id: clientId, redirect_uri: 'https://docs.example.org/other', ...challenge }),
      'not the redirect URL registered',
    );
    await expectErrorPage(await authorize({ client_id: clientId }), 'PKCE');
    expect(documentRequests.length - before).toBe(1);
    await server.clock.advance(601_000);
    expect((await authorize({ client_id: clientId, ...challenge })).status).toBe(200);
    expect(documentRequests.length - before).toBe(2);
  });

  it.each([
    ['/other-id.json', 'client_id is not the URL'],
    ['/big.json', 'larger than 5120 bytes'],
    ['/secret.json', 'public client'],
    ['/missing.json', 'HTTP 404'],
    ['/nul-name.json', 'without control characters'],
    ['/slow.json', 'could not be fetched within 1 seconds'],
  ])('refuses the document at %s with an error page', async (path, message) => {
    const response = await authorize({ client_id: `${documentOrigin}${path}` });
    await expectErrorPage(response, message);
  });

  it('counts document fetches against the registrations of the address', async () => {
    let html = '';
    for (let i = 0; i < 30 && !html.includes('Too many new apps'); i++) {
      html = await (await authorize({ client_id: `${documentOrigin}/missing-${i}.json` })).text();
    }
    expect(html).toContain('Too many new apps');
    // A document still fresh in the cache is no fetch, and still works.
    const fresh = await authorize({
      client_id: `${documentOrigin}/good.json`,
      code_challenge: s256(VERIFIER),
      code_challenge_method: 'S256',
    });
    expect(fresh.status).toBe(200);
  });

  it('does not take a non-https URL as a client id', async () => {
    const response = await authorize({ client_id: `http://${DOCUMENT_HOST}/good.json` });
    await expectErrorPage(response, 'No app with this client_id');
  });
});

describe('housekeeping', () => {
  it('deletes registered clients nobody approved once the configured time has passed', async () => {
    // Registered directly: this address has spent its registrations in the tests above.
    await registerClient(server.ctx.db, { redirect_uris: ['https://unused.example.org/cb'] }, server.clock.now());
    await server.clock.advance(6 * 86_400_000);
    await keepHouse(server.ctx);
    expect((await server.ctx.db.selectFrom('oauth_apps').select('name').execute()).map((r) => r.name)).toContain(
      'unused.example.org',
    );
    await server.clock.advance(2 * 86_400_000);
    await keepHouse(server.ctx);
    const left = await server.ctx.db.selectFrom('oauth_apps').select('name').execute();
    const names = left.map((row) => row.name);
    expect(names).not.toContain('unused.example.org');
    // Approved ones stay: the public client and the metadata document's client of the tests above.
    expect(names).toEqual(expect.arrayContaining(['Desk Tool', 'Docs Client']));
  });
});
