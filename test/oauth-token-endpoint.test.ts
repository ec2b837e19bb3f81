// The token endpoint: cases 15–29 of the OAuth and authentication cases (reference/oauth-and-auth-cases.md),
// plus revocation (RFC 7009) and the metadata document (RFC 8414). Case 30 is in oauth-throttle.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCredential, hashSecret } from '../src/crypto/issued-secrets.js';
import { safeDescription } from '../src/oauth/errors.js';
import type { components as OAuthComponents } from '../generated/oauth.js';
import { bodyOf, oauthApi, oauthErrorOf, publicApi, type OAuthError } from './support/api.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { approve, channelsStatus, createOAuthApp, exchange, tokenRequest, type TestApp } from './support/oauth.js';
import { startTestServer, type TestServer } from './support/server.js';
import { anyString, stringMatching } from './support/typed-matchers.js';

type TokenResponse = OAuthComponents['schemas']['TokenResponse'];

const ALL_SCOPES = [
  'posts:read',
  'posts:write',
  'media:read',
  'media:write',
  'channels:read',
  'channels:write',
  'analytics:read',
  'webhooks:read',
  'webhooks:write',
];

let server: TestServer;
let org: TestOrganization;
let appA: TestApp;
let appB: TestApp;

// Every error body of this file is checked against RFC 6749 §5.2's character set at the end.
const errorBodies: OAuthError[] = [];

beforeAll(async () => {
  // The throttle has its own test; here the many deliberate failures must not trip it.
  server = await startTestServer({
    env: { OAUTH_AUTH_FAILURES_PER_CLIENT: '100000', OAUTH_AUTH_FAILURES_PER_ADDRESS: '100000' },
  });
  org = await createOrganization(server.ctx.db, 'Authorizing Org');
  const developer = await createOrganization(server.ctx.db, 'Developer Org');
  appA = await createOAuthApp(server.ctx.db, developer.id, { name: 'App A' });
  appB = await createOAuthApp(server.ctx.db, developer.id, {
    name: 'App B',
    redirectUri: 'https://b.example.org/callback',
  });
});
afterAll(() => server?.close());

async function expectOAuthError(response: Response, status: number, error: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(response.headers.get('cache-control')).toBe('no-store');
  expect(response.headers.get('pragma')).toBe('no-cache');
  const body = await oauthErrorOf(response);
  expect(body).toEqual({ error, error_description: anyString() });
  errorBodies.push(body);
  return body;
}

const grant = (app: TestApp, code: string, extra: Record<string, unknown> = {}) => ({
  grant_type: 'authorization_code',
  code,
  client_id: app.clientId,
  client_secret: app.secret,
  ...extra,
});

describe('paths in another case', () => {
  it('are not the token or revocation endpoints: no handler runs around the contract check', async () => {
    for (const path of ['/API/OAUTH/TOKEN', '/api/OAuth/revoke']) {
      const response = await server.fetch(path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ grant_type: 'authorization_code', code: 'x', client_id: appA.clientId }),
      });
      expect(response.status, path).toBe(404);
      expect(await response.text()).not.toMatch(/\bat .*\.(ts|js):\d+/);
    }
  });
});

describe('token endpoint: success', () => {
  it('answers a JSON body with the token response, no-store, and the token acts for the organization', async () => {
    const code = await approve(server.ctx.db, appA, org);
    const response = await tokenRequest(server, grant(appA, code));
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('pragma')).toBe('no-cache');
    const body = await bodyOf<TokenResponse>(response);
    expect(body).toEqual({
      id: org.id,
      cus: null,
      access_token: stringMatching(/^pos_[0-9A-Za-z]{30}$/),
      token_type: 'bearer',
    });

    const connected = await publicApi(server, { Authorization: `Bearer ${body.access_token}` }).GET(
      '/public/v1/is-connected',
    );
    expect(connected.response.status).toBe(200);
    expect(connected.data).toEqual({
      connected: true,
      organization: { id: org.id, name: org.name },
      credential: { type: 'oauth_token', role: 'owner' },
    });
  });

  it('accepts a form body, and HTTP Basic client credentials', async () => {
    const form = await tokenRequest(server, grant(appA, await approve(server.ctx.db, appA, org)), { form: true });
    expect(form.status).toBe(200);
    expect((await bodyOf<TokenResponse>(form)).access_token).toMatch(/^pos_/);

    const basic = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code: await approve(server.ctx.db, appA, org) },
      { form: true, basic: { clientId: appA.clientId, secret: appA.secret } },
    );
    expect(basic.status).toBe(200);

    // A body client_id that repeats the Basic one is tolerated.
    const repeated = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code: await approve(server.ctx.db, appA, org), client_id: appA.clientId },
      { basic: { clientId: appA.clientId, secret: appA.secret } },
    );
    expect(repeated.status).toBe(200);
  });

  it('refuses any other content type with invalid_request', async () => {
    const code = await approve(server.ctx.db, appA, org);
    const body = new URLSearchParams(grant(appA, code) as Record<string, string>).toString();
    for (const contentType of ['text/plain', 'multipart/form-data; boundary=x', 'application/xml', undefined]) {
      const headers: Record<string, string> = contentType ? { 'Content-Type': contentType } : {};
      const response = await server.fetch('/api/oauth/token', { method: 'POST', headers, body });
      await expectOAuthError(response, 400, 'invalid_request');
    }
    // The code was not touched by those attempts.
    expect(await exchange(server, appA, code)).toMatch(/^pos_/);
  });

  it('refuses a body that is not JSON', async () => {
    const response = await server.fetch('/api/oauth/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"grant_type":',
    });
    await expectOAuthError(response, 400, 'invalid_request');
  });
});

describe('token endpoint: malformed requests', () => {
  it('refuses values that are not strings (operator objects, arrays, numbers) with invalid_request', async () => {
    const code = await approve(server.ctx.db, appA, org);
    for (const [name, value] of [
      ['code', { $ne: null }],
      ['code', [code]],
      ['code', 12345],
      ['client_id', { $gt: '' }],
      ['client_secret', [appA.secret]],
      ['client_secret', true],
      ['grant_type', ['authorization_code']],
      ['redirect_uri', null],
    ] as const) {
      const response = await tokenRequest(server, grant(appA, code, { [name]: value }));
      await expectOAuthError(response, 400, 'invalid_request');
    }
    for (const body of ['[]', '"authorization_code"', '42']) {
      const response = await server.fetch('/api/oauth/token', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
      });
      await expectOAuthError(response, 400, 'invalid_request');
    }
    expect(await exchange(server, appA, code)).toMatch(/^pos_/);
  });

  it('refuses a repeated form parameter with invalid_request', async () => {
    const code = await approve(server.ctx.db, appA, org);
    const body = `grant_type=authorization_code&code=${code}&code=${code}&client_id=${appA.clientId}&client_secret=${appA.secret}`;
    const response = await server.fetch('/api/oauth/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body,
    });
    await expectOAuthError(response, 400, 'invalid_request');
  });

  it('answers 405 with Allow: POST to any other method', async () => {
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
      const response = await server.fetch('/api/oauth/token', { method });
      expect(response.headers.get('allow')).toBe('POST');
      await expectOAuthError(response, 405, 'invalid_request');
    }
    const head = await server.fetch('/api/oauth/token', { method: 'HEAD' });
    expect(head.status).toBe(405);
  });

  it('answers invalid_request when grant_type is missing and unsupported_grant_type for any other grant', async () => {
    const code = await approve(server.ctx.db, appA, org);
    const { grant_type: _omitted, ...withoutGrantType } = grant(appA, code);
    await expectOAuthError(await tokenRequest(server, withoutGrantType), 400, 'invalid_request');
    await expectOAuthError(await tokenRequest(server, withoutGrantType, { form: true }), 400, 'invalid_request');
    for (const grantType of ['password', 'client_credentials', 'REFRESH_TOKEN', 'AUTHORIZATION_CODE', 'implicit', '']) {
      await expectOAuthError(
        await tokenRequest(server, grant(appA, code, { grant_type: grantType })),
        400,
        'unsupported_grant_type',
      );
    }
    expect(await exchange(server, appA, code)).toMatch(/^pos_/);
  });

  it('answers invalid_request when code, client_id or client_secret is missing', async () => {
    const code = await approve(server.ctx.db, appA, org);
    for (const missing of ['code', 'client_id', 'client_secret']) {
      const parameters: Record<string, unknown> = grant(appA, code);
      delete parameters[missing];
      const body = await expectOAuthError(await tokenRequest(server, parameters), 400, 'invalid_request');
      expect(body.error_description).toContain(missing);
      await expectOAuthError(await tokenRequest(server, parameters, { form: true }), 400, 'invalid_request');
    }
    expect(await exchange(server, appA, code)).toMatch(/^pos_/);
  });

  it('answers invalid_grant for a code that was never issued', async () => {
    for (const code of [generateCredential('pac_'), 'pac_garbage', 'not-a-code', 'x'.repeat(200)]) {
      await expectOAuthError(await tokenRequest(server, grant(appA, code)), 400, 'invalid_grant');
    }
  });
});

describe('token endpoint: codes', () => {
  it('refuses a code redeemed twice and revokes the token of the first redemption', async () => {
    const code = await approve(server.ctx.db, appA, org);
    const token = await exchange(server, appA, code);
    expect(await channelsStatus(server, token)).toBe(200);

    await expectOAuthError(await tokenRequest(server, grant(appA, code)), 400, 'invalid_grant');
    expect(await channelsStatus(server, token)).toBe(401);
  });

  it('answers invalid_client to a replay with a wrong secret, and the first token keeps working', async () => {
    const code = await approve(server.ctx.db, appA, org);
    const token = await exchange(server, appA, code);
    await expectOAuthError(
      await tokenRequest(server, grant(appA, code, { client_secret: generateCredential('pcs_') })),
      401,
      'invalid_client',
    );
    await expectOAuthError(
      await tokenRequest(server, grant(appA, code, { client_secret: 'wrong' })),
      401,
      'invalid_client',
    );
    await expectOAuthError(
      await tokenRequest(server, grant(appA, code, { client_id: 'pca_unknown' })),
      401,
      'invalid_client',
    );
    expect(await channelsStatus(server, token)).toBe(200);
  });

  it('lets exactly one of 20 parallel redemptions of a code succeed', async () => {
    const code = await approve(server.ctx.db, appA, org);
    const responses = await Promise.all(Array.from({ length: 20 }, () => tokenRequest(server, grant(appA, code))));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(19);
    for (const response of responses.filter((r) => r.status === 400))
      await expectOAuthError(response, 400, 'invalid_grant');
    const winner = await bodyOf<TokenResponse>(responses.find((r) => r.status === 200)!);
    // The other attempts were uses of a code already used: its token is revoked, as for any replay.
    expect(await channelsStatus(server, winner.access_token)).toBe(401);
    const issued = await server.ctx.db
      .selectFrom('oauth_tokens')
      .innerJoin('oauth_codes', 'oauth_codes.id', 'oauth_tokens.code_id')
      .select('oauth_tokens.revoked_at')
      .where('oauth_codes.code_hash', '=', hashSecret(code))
      .execute();
    expect(issued).toHaveLength(1);
    expect(issued[0]!.revoked_at).not.toBeNull();
  });

  it('refuses a code older than 10 minutes', async () => {
    const issuedAt = new Date('2026-11-21T10:00:00.000Z');
    const fresh = await approve(server.ctx.db, appA, org, { now: issuedAt });
    const stale = await approve(server.ctx.db, appA, org, { now: issuedAt });
    try {
      server.setNow('2026-11-21T10:09:59.000Z');
      expect(await exchange(server, appA, fresh)).toMatch(/^pos_/);
      server.setNow('2026-11-21T10:10:00.001Z');
      const body = await expectOAuthError(await tokenRequest(server, grant(appA, stale)), 400, 'invalid_grant');
      expect(body.error_description).toMatch(/expired/);
    } finally {
      server.setNow(undefined);
    }
  });

  it('refuses app A’s code with app B’s valid credentials, and A can still redeem it', async () => {
    const code = await approve(server.ctx.db, appA, org);
    await expectOAuthError(await tokenRequest(server, grant(appB, code)), 400, 'invalid_grant');
    await expectOAuthError(
      await tokenRequest(
        server,
        { grant_type: 'authorization_code', code },
        { basic: { clientId: appB.clientId, secret: appB.secret } },
      ),
      400,
      'invalid_grant',
    );
    expect(await exchange(server, appA, code)).toMatch(/^pos_/);
  });

  it('binds the code to the redirect_uri of the authorization request', async () => {
    const registered = appA.app.redirect_uri;
    const withRedirect = await approve(server.ctx.db, appA, org, { redirectUri: registered });
    for (const other of [
      `${registered}/`,
      registered.replace('https:', 'http:'),
      `${registered}?x=1`,
      'https://evil.example/cb',
    ]) {
      await expectOAuthError(
        await tokenRequest(server, grant(appA, withRedirect, { redirect_uri: other })),
        400,
        'invalid_grant',
      );
    }
    // Sent at authorize, so it must be sent again.
    await expectOAuthError(await tokenRequest(server, grant(appA, withRedirect)), 400, 'invalid_grant');
    expect(await exchange(server, appA, withRedirect, { redirect_uri: registered })).toMatch(/^pos_/);

    // Not sent at authorize: omitting it is fine, and a value that is not the registered URL is refused.
    const without = await approve(server.ctx.db, appA, org);
    await expectOAuthError(
      await tokenRequest(server, grant(appA, without, { redirect_uri: 'https://evil.example/cb' })),
      400,
      'invalid_grant',
    );
    expect(await exchange(server, appA, without, { redirect_uri: registered })).toMatch(/^pos_/);
  });

  it('checks the PKCE verifier against the challenge', async () => {
    // RFC 7636 appendix B.
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
    const code = await approve(server.ctx.db, appA, org, { codeChallenge: challenge });
    await expectOAuthError(await tokenRequest(server, grant(appA, code)), 400, 'invalid_grant');
    for (const wrong of [verifier.replace('d', 'e'), challenge, 'short', `${verifier}${'a'.repeat(90)}`]) {
      await expectOAuthError(
        await tokenRequest(server, grant(appA, code, { code_verifier: wrong })),
        400,
        'invalid_grant',
      );
    }
    expect(await exchange(server, appA, code, { code_verifier: verifier })).toMatch(/^pos_/);

    const withoutChallenge = await approve(server.ctx.db, appA, org);
    await expectOAuthError(
      await tokenRequest(server, grant(appA, withoutChallenge, { code_verifier: verifier })),
      400,
      'invalid_grant',
    );
  });
});

describe('token endpoint: client authentication', () => {
  it('answers the same 401 invalid_client to a wrong secret and an unknown client, with WWW-Authenticate for Basic', async () => {
    const code = await approve(server.ctx.db, appA, org);
    const wrongSecret = await expectOAuthError(
      await tokenRequest(server, grant(appA, code, { client_secret: generateCredential('pcs_') })),
      401,
      'invalid_client',
    );
    const unknownClient = await expectOAuthError(
      await tokenRequest(server, grant(appA, code, { client_id: 'pca_NoSuchClient0000000000000' })),
      401,
      'invalid_client',
    );
    expect(unknownClient).toEqual(wrongSecret);
    // An unknown client with another app's secret learns nothing more either.
    const mixed = await expectOAuthError(
      await tokenRequest(server, grant(appA, code, { client_secret: appB.secret })),
      401,
      'invalid_client',
    );
    expect(mixed).toEqual(wrongSecret);

    const basicWrong = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code },
      { basic: { clientId: appA.clientId, secret: 'nope' } },
    );
    expect(basicWrong.headers.get('www-authenticate')).toMatch(/^Basic/);
    await expectOAuthError(basicWrong, 401, 'invalid_client');
    const basicUnknown = await tokenRequest(
      server,
      { grant_type: 'authorization_code', code },
      { basic: { clientId: 'pca_nobody', secret: appA.secret } },
    );
    expect(basicUnknown.headers.get('www-authenticate')).toMatch(/^Basic/);
    await expectOAuthError(basicUnknown, 401, 'invalid_client');
    expect(await exchange(server, appA, code)).toMatch(/^pos_/);
  });

  it('refuses credentials sent both ways, a body client_id differing from Basic, and credentials in the query string', async () => {
    const code = await approve(server.ctx.db, appA, org);
    const basic = { clientId: appA.clientId, secret: appA.secret };
    await expectOAuthError(await tokenRequest(server, grant(appA, code), { basic }), 400, 'invalid_request');
    await expectOAuthError(
      await tokenRequest(
        server,
        { grant_type: 'authorization_code', code, client_secret: appA.secret },
        { basic, form: true },
      ),
      400,
      'invalid_request',
    );
    await expectOAuthError(
      await tokenRequest(server, { grant_type: 'authorization_code', code, client_id: appB.clientId }, { basic }),
      400,
      'invalid_request',
    );
    const query = `client_id=${appA.clientId}&client_secret=${appA.secret}`;
    await expectOAuthError(
      await tokenRequest(server, { grant_type: 'authorization_code', code }, { path: `/api/oauth/token?${query}` }),
      400,
      'invalid_request',
    );
    await expectOAuthError(
      await tokenRequest(server, grant(appA, code), { path: `/api/oauth/token?${query}`, form: true }),
      400,
      'invalid_request',
    );
    // Another kind of Authorization header is not client authentication.
    const bearer = await server.fetch('/api/oauth/token', {
      method: 'POST',
      headers: { Authorization: `Bearer ${appA.secret}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(grant(appA, code)),
    });
    await expectOAuthError(bearer, 400, 'invalid_request');
    expect(await exchange(server, appA, code)).toMatch(/^pos_/);
  });
});

describe('revocation endpoint (RFC 7009)', () => {
  const revoke = (app: TestApp, token: unknown, options: { form?: boolean } = {}) =>
    tokenRequest(
      server,
      { token, client_id: app.clientId, client_secret: app.secret },
      { ...options, path: '/api/oauth/revoke' },
    );

  it('revokes the app’s own token with an empty 200', async () => {
    const token = await exchange(server, appA, await approve(server.ctx.db, appA, org));
    const response = await revoke(appA, token, { form: true });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.text()).toBe('');
    expect(await channelsStatus(server, token)).toBe(401);
    // Revoking again, or an unknown token, is the same empty 200.
    expect((await revoke(appA, token)).status).toBe(200);
    expect((await revoke(appA, generateCredential('pos_'))).status).toBe(200);
    expect((await revoke(appA, 'garbage')).status).toBe(200);
  });

  it('leaves another app’s token alone and answers the same', async () => {
    const token = await exchange(server, appA, await approve(server.ctx.db, appA, org));
    const response = await revoke(appB, token);
    expect(response.status).toBe(200);
    expect(await channelsStatus(server, token)).toBe(200);
  });

  it('needs client authentication and a token', async () => {
    const token = await exchange(server, appA, await approve(server.ctx.db, appA, org));
    await expectOAuthError(
      await tokenRequest(
        server,
        { token, client_id: appA.clientId, client_secret: 'wrong' },
        { path: '/api/oauth/revoke' },
      ),
      401,
      'invalid_client',
    );
    await expectOAuthError(
      await tokenRequest(
        server,
        { client_id: appA.clientId, client_secret: appA.secret },
        { path: '/api/oauth/revoke' },
      ),
      400,
      'invalid_request',
    );
    await expectOAuthError(await revoke(appA, { $ne: null }), 400, 'invalid_request');
    const get = await server.fetch('/api/oauth/revoke');
    expect(get.headers.get('allow')).toBe('POST');
    await expectOAuthError(get, 405, 'invalid_request');
    expect(await channelsStatus(server, token)).toBe(200);
  });
});

describe('authorization server metadata (RFC 8414)', () => {
  it('describes the endpoints with absolute URLs under the configured origin', async () => {
    const { data, response } = await oauthApi(server).GET('/.well-known/oauth-authorization-server');
    expect(response.status).toBe(200);
    const base = server.ctx.config.publicUrl;
    expect(data).toEqual({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/api/oauth/token`,
      revocation_endpoint: `${base}/api/oauth/revoke`,
      registration_endpoint: `${base}/api/oauth/register`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
      service_documentation: `${base}/docs/oauth`,
      scopes_supported: ALL_SCOPES,
    });
    const head = await server.fetch('/.well-known/oauth-authorization-server', { method: 'HEAD' });
    expect(head.status).toBe(200);
    const post = await server.fetch('/.well-known/oauth-authorization-server', { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });
});

describe('error descriptions', () => {
  it('hold no CR, LF, tab, double quote or backslash in any answer of this suite', () => {
    expect(errorBodies.length).toBeGreaterThan(50);
    for (const body of errorBodies) expect(body.error_description).toMatch(/^[\x20\x21\x23-\x5B\x5D-\x7E]+$/);
  });

  it('are cleaned of those characters whatever a message holds', () => {
    expect(safeDescription('bad "value"\r\n\twith \\ and é')).toBe('bad value with and');
  });
});
