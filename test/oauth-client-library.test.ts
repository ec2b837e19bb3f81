import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Service, { ServiceError } from '../src/sdk/src/index.js';
import { publicApi } from './support/api.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { approve, channelsStatus, createOAuthApp, exchange, tokenRequest, type TestApp } from './support/oauth.js';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
let user: TestOrganization;
let app: TestApp;
let browser: BrowserSession;
const REDIRECT = 'https://client.example.org/oauth/callback';
// The test server speaks plain http on loopback; a real deployment is https.
const insecure = { [oauth.allowInsecureRequests]: true };

beforeAll(async () => {
  server = await startTestServer();
  user = await createOrganization(server.ctx.db, 'Library User Org');
  const developer = await createOrganization(server.ctx.db, 'Library Dev');
  app = await createOAuthApp(server.ctx.db, developer.id, { redirectUri: REDIRECT });
  browser = new BrowserSession(server);
  await browser.logIn(user.email, user.password);
});
afterAll(() => server?.close());

/** The user's part: open the authorization URL, approve, and hand back the callback URL the browser was sent to. */
async function userApproves(authorizationUrl: URL): Promise<URL> {
  const page = await browser.get(`${authorizationUrl.pathname}${authorizationUrl.search}`);
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
  return new URL(answer.headers.get('location')!);
}

describe('a standard OAuth client library (oauth4webapi)', () => {
  for (const [method, clientAuth] of [
    ['client_secret_basic', () => oauth.ClientSecretBasic(app.secret)],
    ['client_secret_post', () => oauth.ClientSecretPost(app.secret)],
  ] as const) {
    it(`completes the flow from the metadata document, with PKCE and ${method}`, async () => {
      const issuer = new URL(server.baseUrl);
      const as = await oauth.processDiscoveryResponse(
        issuer,
        await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
      );
      expect(as.token_endpoint_auth_methods_supported).toContain(method);
      const client: oauth.Client = { client_id: app.clientId };

      const codeVerifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const authorizationUrl = new URL(as.authorization_endpoint!);
      authorizationUrl.searchParams.set('client_id', client.client_id);
      authorizationUrl.searchParams.set('redirect_uri', REDIRECT);
      authorizationUrl.searchParams.set('response_type', 'code');
      authorizationUrl.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier));
      authorizationUrl.searchParams.set('code_challenge_method', 'S256');
      authorizationUrl.searchParams.set('state', state);

      const callback = await userApproves(authorizationUrl);
      const params = oauth.validateAuthResponse(as, client, callback, state);
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        clientAuth(),
        params,
        REDIRECT,
        codeVerifier,
        insecure,
      );
      const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
      expect(tokens.token_type).toBe('bearer');
      expect(tokens.access_token).toMatch(/^pos_/);
      expect(tokens.id).toBe(user.id);

      const connected = await publicApi(server, { Authorization: `Bearer ${tokens.access_token}` }).GET(
        '/public/v1/is-connected',
      );
      expect(connected.data?.credential).toEqual({ type: 'oauth_token', role: 'owner' });

      const revocation = await oauth.revocationRequest(as, client, clientAuth(), tokens.access_token, insecure);
      await oauth.processRevocationResponse(revocation);
      expect(await channelsStatus(server, tokens.access_token)).toBe(401);
    });
  }

  it('surfaces the server’s RFC 6749 errors, e.g. a code used twice', async () => {
    const issuer = new URL(server.baseUrl);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
    );
    const client: oauth.Client = { client_id: app.clientId };
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({ client_id: app.clientId, response_type: 'code', state }).toString();
    const params = oauth.validateAuthResponse(as, client, await userApproves(url), state);
    const redeem = () =>
      oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.ClientSecretPost(app.secret),
        params,
        REDIRECT,
        oauth.nopkce,
        insecure,
      );
    await oauth.processAuthorizationCodeResponse(as, client, await redeem());
    const error = await oauth.processAuthorizationCodeResponse(as, client, await redeem()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(oauth.ResponseBodyError);
    expect((error as oauth.ResponseBodyError).error).toBe('invalid_grant');
  });
});

describe('a standard OAuth client library refreshing tokens (oauth4webapi)', () => {
  it('rotates the refresh token of an app whose tokens expire, and reads the reuse refusal', async () => {
    const developer = await createOrganization(server.ctx.db, 'Library Dev (expiring)');
    const expiring = await createOAuthApp(server.ctx.db, developer.id, { redirectUri: REDIRECT, expiringTokens: true });
    const issuer = new URL(server.baseUrl);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
    );
    expect(as.grant_types_supported).toContain('refresh_token');
    const client: oauth.Client = { client_id: expiring.clientId };
    const code = await approve(server.ctx.db, expiring, user, { now: server.clock.now() });
    const first = (await (
      await tokenRequest(server, {
        grant_type: 'authorization_code',
        code,
        client_id: expiring.clientId,
        client_secret: expiring.secret,
      })
    ).json()) as { refresh_token: string };

    const refresh = (refreshToken: string) =>
      oauth.refreshTokenGrantRequest(as, client, oauth.ClientSecretBasic(expiring.secret), refreshToken, insecure);
    const second = await oauth.processRefreshTokenResponse(as, client, await refresh(first.refresh_token));
    expect(second.expires_in).toBe(3600);
    expect(second.refresh_token).toMatch(/^por_/);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(await channelsStatus(server, second.access_token)).toBe(200);

    const reused = await oauth
      .processRefreshTokenResponse(as, client, await refresh(first.refresh_token))
      .catch((e: unknown) => e);
    expect(reused).toBeInstanceOf(oauth.ResponseBodyError);
    expect((reused as oauth.ResponseBodyError).error).toBe('invalid_grant');
    expect(await channelsStatus(server, second.access_token)).toBe(401);
  });
});

describe('the typed client (@service/sdk) with an OAuth access token', () => {
  it('acts for the organization that approved, exactly like an API key, until the token is revoked', async () => {
    const channel = await createChannel(server.ctx.db, user.id, 'sandbox', 'Approved channel');
    const token = await exchange(server, app, await approve(server.ctx.db, app, user));
    const service = new Service(token, server.baseUrl, { maxRetries: 0 });

    const connected = await service.isConnected();
    expect(connected.organization.id).toBe(user.id);
    expect(connected.credential.type).toBe('oauth_token');
    expect((await service.channels()).data.map((c) => c.id)).toEqual([channel.id]);
    const created = await service.createPost({ type: 'draft', content: 'Written by an app', channelIds: [channel.id] });
    expect(created.data).toEqual([
      expect.objectContaining({ channelId: channel.id, content: 'Written by an app', status: 'draft' }),
    ]);

    await tokenRequest(
      server,
      { token, client_id: app.clientId, client_secret: app.secret },
      { path: '/api/oauth/revoke' },
    );
    const error = await service.channels().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).status).toBe(401);
  });
});
