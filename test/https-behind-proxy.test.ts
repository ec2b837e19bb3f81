import { createHash, X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OAuthSchemas, Schemas } from './support/api.js';
import { inputValue } from './support/browser-session.js';
import { openBrowser, skipBrowserTests } from './support/chromium.js';
import { gif } from './support/media-samples.js';
import { cookiesOf, formPost, send, type Answer, type SendOptions } from './support/loopback-client.js';
import { makeCertificate, type Certificate } from './support/certificate.js';
import { skipNginxTests, startTlsProxy, type TlsProxy } from './support/nginx.js';
import { freePort, type BuiltServer } from './support/processes.js';
import { clearOfWindowEdge } from './support/rate-windows.js';
import { scratchDirs, scratchInstallation } from './support/scratch.js';
import { TIMEOUTS } from './support/timeouts.js';

// The built server as an operator deploys it: behind nginx terminating TLS with a certificate for
// the public host name, PUBLIC_URL the https origin, TRUST_PROXY naming the proxy's address. nginx
// connects from 127.0.0.2; clients come from other loopback addresses, through the proxy or straight
// to the server's port. On the embedded database, and on PostgreSQL when TEST_DATABASE_URL is set.
const HOST_NAME = 'scheduler.test';
const PROXY_ADDRESS = '127.0.0.2';
const REDIRECT_URI = 'https://app.example.org/oauth/callback';
const FAILURES_PER_ADDRESS = 2;
const WINDOW_S = 86_400;

let certificate: Certificate;
let publicUrl: string;
let directOrigin: string;
let server: BuiltServer | undefined;
let proxy: TlsProxy | undefined;

/** Through the proxy, over https, trusting the test's certificate. */
const viaProxy = (pathAndQuery: string, options: SendOptions = {}) =>
  send(`${publicUrl}${pathAndQuery}`, { connectTo: '127.0.0.1', ca: certificate.cert, ...options });
/** Straight to the server's port, as a client on its network could. */
const direct = (pathAndQuery: string, options: SendOptions = {}) => send(`${directOrigin}${pathAndQuery}`, options);

describe.skipIf(skipNginxTests)('https behind a reverse proxy (nginx)', () => {
  const installation = scratchInstallation('https-proxy');
  const scratchDir = scratchDirs();

  beforeAll(async () => {
    const dir = scratchDir('https-proxy-nginx');
    certificate = makeCertificate(dir, HOST_NAME);
    const proxyPort = await freePort();
    publicUrl = `https://${HOST_NAME}:${proxyPort}`;
    server = await installation.start({
      PUBLIC_URL: publicUrl,
      TRUST_PROXY: PROXY_ADDRESS,
      OAUTH_AUTH_FAILURES_PER_ADDRESS: String(FAILURES_PER_ADDRESS),
      OAUTH_AUTH_FAILURES_PER_CLIENT: '1000',
      OAUTH_AUTH_FAILURES_WINDOW_SECONDS: String(WINDOW_S),
      // Configured so that connecting a channel answers Google's consent URL (Google is never called).
      YOUTUBE_CLIENT_ID: 'scheduler-test.apps.googleusercontent.com',
      YOUTUBE_CLIENT_SECRET: 'not-a-real-secret',
    });
    directOrigin = server.baseUrl;
    proxy = await startTlsProxy({
      dir,
      hostName: HOST_NAME,
      port: proxyPort,
      certificate,
      upstream: directOrigin,
      bindAddress: PROXY_ADDRESS,
    });
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await proxy?.close();
    await server?.stop();
  });

  /** A browser's visit through the proxy: its cookies kept, every answer checked for HSTS. */
  class Visitor {
    cookies = new Map<string, string>();

    async request(pathAndQuery: string, options: SendOptions = {}): Promise<Answer> {
      const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
      const answer = await viaProxy(pathAndQuery, {
        ...options,
        headers: { ...options.headers, ...(cookie ? { Cookie: cookie } : {}) },
      });
      expect(answer.headers['strict-transport-security'], pathAndQuery).toBe('max-age=31536000');
      for (const line of answer.headers['set-cookie'] ?? []) {
        const [pair] = line.split(';');
        const [name, value] = [pair!.slice(0, pair!.indexOf('=')), pair!.slice(pair!.indexOf('=') + 1)];
        if (value) this.cookies.set(name, value);
        else this.cookies.delete(name);
      }
      return answer;
    }

    async submit(pagePath: string, action: string, fields: Record<string, string>): Promise<Answer> {
      const page = await this.request(pagePath);
      const csrf = inputValue(page.body, 'csrf_token');
      if (!csrf) throw new Error(`no form on ${pagePath} (${page.status})`);
      return this.request(action, formPost({ csrf_token: csrf, ...fields }));
    }
  }

  const owner = new Visitor();
  let apiKey: string;
  let app: { clientId: string; secret: string };

  it('signs up over https with Secure, __Host- cookies a browser keeps for this host only', async () => {
    const page = await owner.request('/signup');
    expect(page.status).toBe(200);
    expectHostCookie(page, '__Host-form');

    const signedUp = await owner.submit('/signup', '/signup', {
      name: 'Operator',
      email: 'operator@example.org',
      password: 'a long enough password',
      organizationName: 'Behind TLS',
    });
    expect(signedUp.status).toBe(303);
    expect(signedUp.headers.location).toBe('/calendar');
    expectHostCookie(signedUp, '__Host-session');
    // The session works under its __Host- name, and only under it.
    expect((await owner.request('/settings/developers/apps')).status).toBe(200);
    const session = owner.cookies.get('__Host-session')!;
    expect((await viaProxy('/settings/developers/apps', { headers: { Cookie: `session=${session}` } })).status).toBe(
      302,
    );

    const keys = await owner.submit('/settings/developers/access', '/settings/developers/access', {
      name: 'proxy test',
    });
    expect(keys.status).toBe(201);
    apiKey = /svc_live_[A-Za-z0-9]+/.exec(keys.body)![0];
    const registered = await owner.submit('/settings/developers/apps', '/settings/developers/apps', {
      name: 'Proxy App',
      description: '',
      pictureUrl: '',
      redirectUri: REDIRECT_URI,
    });
    expect(registered.status).toBe(201);
    app = {
      clientId: /pca_[A-Za-z0-9]+/.exec(registered.body)![0],
      secret: /pcs_[A-Za-z0-9]+/.exec(registered.body)![0],
    };
  });

  it('names the public https origin as the OAuth issuer and in every metadata URL, whichever Host was used', async () => {
    const expected = {
      issuer: publicUrl,
      authorization_endpoint: `${publicUrl}/oauth/authorize`,
      token_endpoint: `${publicUrl}/api/oauth/token`,
      revocation_endpoint: `${publicUrl}/api/oauth/revoke`,
      service_documentation: `${publicUrl}/docs/oauth`,
    };
    for (const answer of [
      await viaProxy('/.well-known/oauth-authorization-server'),
      await direct('/.well-known/oauth-authorization-server'),
    ]) {
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject(expected);
    }
    const contract = await viaProxy('/openapi/public-v1.yaml');
    expect(contract.body).toContain(`url: ${publicUrl}`);
  });

  it('runs the authorization flow over https: the consent page keeps its policy, the app gets the public issuer', async () => {
    const authorize = `/oauth/authorize?${new URLSearchParams({ client_id: app.clientId, response_type: 'code', state: 'over-tls' }).toString()}`;
    const stranger = new Visitor();
    const toLogin = await stranger.request(authorize);
    expect(toLogin.status).toBe(302);
    expect(toLogin.headers.location).toBe(`/login?next=${encodeURIComponent(authorize)}`);

    const consent = await owner.request(authorize);
    expect(consent.status).toBe(200);
    const policy = String(consent.headers['content-security-policy']);
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toContain("form-action 'self' https://app.example.org;");
    expect(consent.headers['x-frame-options']).toBe('DENY');
    expect(consent.headers['referrer-policy']).toBe('no-referrer');
    expect(consent.headers['cache-control']).toBe('no-store');
    // Nothing is loaded from elsewhere, nor over plain http.
    expect(consent.body).not.toMatch(/(src|href)="(https?:)?\/\//);

    const fields = Object.fromEntries(
      ['request_id', 'client_id', 'organization_id', 'state'].map((name) => [name, inputValue(consent.body, name)!]),
    );
    const approved = await owner.request(
      '/oauth/consent',
      formPost({ csrf_token: inputValue(consent.body, 'csrf_token')!, ...fields, decision: 'approve' }),
    );
    expect(approved.status).toBe(303);
    const back = new URL(approved.headers.location!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT_URI);
    expect(back.searchParams.get('state')).toBe('over-tls');
    expect(back.searchParams.get('iss')).toBe(publicUrl);

    const token = await viaProxy('/api/oauth/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        grant_type: 'authorization_code',
        code: back.searchParams.get('code'),
        client_id: app.clientId,
        client_secret: app.secret,
      }),
    });
    expect(token.status).toBe(200);
    const accessToken = (JSON.parse(token.body) as OAuthSchemas['TokenResponse']).access_token;

    // The address Google would send the user back to is this installation's public one.
    const connect = await viaProxy('/public/v1/channels/connect', {
      method: 'POST',
      headers: { Authorization: `Bearer ${accessToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ provider: 'youtube', returnUrl: 'https://app.example.org/channels/done' }),
    });
    expect(connect.status).toBe(200);
    expect(
      new URL((JSON.parse(connect.body) as Schemas['ChannelConnection']).authorizationUrl).searchParams.get(
        'redirect_uri',
      ),
    ).toBe(`${publicUrl}/channels/callback/youtube`);
  });

  it('signs media URLs for the public https origin, and they work through the proxy', async () => {
    const bytes = gif();
    const created = await viaProxy('/public/v1/media/uploads', {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ fileName: 'pixel.gif', contentType: 'image/gif', size: bytes.length }),
    });
    expect(created.status).toBe(201);
    const upload = JSON.parse(created.body) as Schemas['Upload'];
    expect(upload.uploadUrl.startsWith(`${publicUrl}/media-files/`)).toBe(true);
    const put = await send(upload.uploadUrl, {
      method: 'PUT',
      headers: upload.headers,
      body: bytes,
      connectTo: '127.0.0.1',
      ca: certificate.cert,
    });
    expect(put.status).toBe(200);
    const completed = await viaProxy(`/public/v1/media/uploads/${upload.uploadId}/complete`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKey}` },
    });
    expect(completed.status).toBe(200);
    const media = JSON.parse(completed.body) as Schemas['Media'];
    expect(media.url.startsWith(`${publicUrl}/media-files/`)).toBe(true);
    expect((await send(media.url, { connectTo: '127.0.0.1', ca: certificate.cert })).status).toBe(200);
  });

  it.skipIf(skipBrowserTests)(
    'lets a real browser log in and approve over https, with its policy enforced',
    { timeout: TIMEOUTS.browserTest },
    async () => {
      // Chromium finds the test host on loopback and trusts the test's certificate, and no other.
      const spki = createHash('sha256')
        .update(new X509Certificate(certificate.cert).publicKey.export({ type: 'spki', format: 'der' }))
        .digest('base64');
      const browser = await openBrowser({
        args: [`--host-resolver-rules=MAP ${HOST_NAME} 127.0.0.1`, `--ignore-certificate-errors-spki-list=${spki}`],
      });
      try {
        const { context, page } = browser;
        const callbacks: URL[] = [];
        await context.route('https://app.example.org/**', (route) => {
          callbacks.push(new URL(route.request().url()));
          return route.fulfill({
            status: 200,
            contentType: 'text/html',
            body: '<!doctype html><title>Back at the app</title>',
          });
        });
        const violations: string[] = [];
        page.on('console', (message) => {
          if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
        });
        const authorize = `${publicUrl}/oauth/authorize?${new URLSearchParams({ client_id: app.clientId, response_type: 'code', state: 'in-a-browser' }).toString()}`;
        await page.goto(authorize);
        expect(new URL(page.url()).pathname).toBe('/login');
        await page.getByLabel('Email').fill('operator@example.org');
        await page.getByLabel('Password').fill('a long enough password');
        await page.getByRole('button', { name: 'Log in' }).click();
        await page.getByRole('button', { name: 'Approve' }).waitFor();
        expect(page.url()).toBe(authorize);

        const cookies = await context.cookies(publicUrl);
        expect(cookies.find((cookie) => cookie.name === '__Host-session')).toMatchObject({
          secure: true,
          httpOnly: true,
          sameSite: 'Lax',
          path: '/',
          domain: HOST_NAME,
        });
        expect(cookies.map((cookie) => cookie.name)).not.toContain('session');

        await page.getByRole('button', { name: 'Approve' }).click();
        await page.waitForURL('https://app.example.org/**');
        expect(callbacks).toHaveLength(1);
        expect(callbacks[0]!.searchParams.get('state')).toBe('in-a-browser');
        expect(callbacks[0]!.searchParams.get('iss')).toBe(publicUrl);
        expect(callbacks[0]!.searchParams.get('code')).toMatch(/^pac_/);
        expect(violations).toEqual([]);
      } finally {
        await browser.close();
      }
    },
  );

  it('counts each client by the address the proxy names, and ignores the header from anyone else', async () => {
    await clearOfWindowEdge(WINDOW_S);
    const wrongSecret = (headers: Record<string, string> = {}): SendOptions => ({
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify({
        grant_type: 'authorization_code',
        code: 'pac_none',
        client_id: app.clientId,
        client_secret: 'pcs_wrong',
      }),
    });
    const statuses = async (requests: Promise<Answer>[]) =>
      (await Promise.all(requests)).map((answer) => answer.status);

    // Two clients behind the proxy: each has its own budget, so the proxy's header is what counts.
    expect(await statuses([viaProxy('/api/oauth/token', { ...wrongSecret(), localAddress: '127.0.0.3' })])).toEqual([
      401,
    ]);
    expect(await statuses([viaProxy('/api/oauth/token', { ...wrongSecret(), localAddress: '127.0.0.3' })])).toEqual([
      401,
    ]);
    expect(await statuses([viaProxy('/api/oauth/token', { ...wrongSecret(), localAddress: '127.0.0.3' })])).toEqual([
      429,
    ]);
    expect(await statuses([viaProxy('/api/oauth/token', { ...wrongSecret(), localAddress: '127.0.0.4' })])).toEqual([
      401,
    ]);

    // A client that names another address to the proxy: nginx appends the real one, which is believed.
    const forgedThroughProxy = await viaProxy('/api/oauth/token', {
      ...wrongSecret({ 'X-Forwarded-For': '203.0.113.7' }),
      localAddress: '127.0.0.3',
    });
    expect(forgedThroughProxy.status).toBe(429);

    // A client straight to the server's port, naming 127.0.0.4: counted as itself, 127.0.0.4 untouched.
    for (const expected of [401, 401, 429]) {
      const forged = await direct('/api/oauth/token', {
        ...wrongSecret({ 'X-Forwarded-For': '127.0.0.4' }),
        localAddress: '127.0.0.5',
      });
      expect(forged.status).toBe(expected);
    }
    expect((await viaProxy('/api/oauth/token', { ...wrongSecret(), localAddress: '127.0.0.4' })).status).toBe(401);
    expect((await viaProxy('/api/oauth/token', { ...wrongSecret(), localAddress: '127.0.0.4' })).status).toBe(429);
  });
});

/** A cookie that only this host over https may set and read back (RFC 6265bis `__Host-`). */
function expectHostCookie(answer: Answer, name: string): void {
  const line = (answer.headers['set-cookie'] ?? []).find((cookie) => cookie.startsWith(`${name}=`));
  expect(line, `${name} in ${JSON.stringify(answer.headers['set-cookie'])}`).toBeDefined();
  const attributes = line!
    .split(';')
    .slice(1)
    .map((part) => part.trim().toLowerCase());
  expect(attributes).toContain('secure');
  expect(attributes).toContain('path=/');
  expect(attributes).toContain('httponly');
  expect(attributes).toContain('samesite=lax');
  expect(attributes.some((attribute) => attribute.startsWith('domain='))).toBe(false);
  expect(cookiesOf(answer)).toContain(`${name}=`);
}
