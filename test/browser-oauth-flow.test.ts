import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addChannel } from '../src/channels/channels.js';
import { dataOf, oauthApi, publicApi } from './support/api.js';
import {
  artifactPath,
  describeInChromium,
  launchChromium,
  PAGE_WAIT,
  pathOf,
  signUp,
  skipBrowserTests,
  untilAt,
  type ChromiumProfile,
} from './support/chromium.js';
import { png } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';

/**
 * The app's side of the flow: a real HTTP server on loopback that receives the OAuth callback and
 * serves the app's picture (a 72×72 PNG), recording which pictures were asked for.
 */
async function startAppServer() {
  const callbacks: URL[] = [];
  const pictureRequests: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/logo.png') {
      pictureRequests.push(String(req.headers['user-agent']));
      res.writeHead(200, { 'Content-Type': 'image/png' });
      res.end(png(72, 72, [11, 92, 173, 255]));
      return;
    }
    if (url.pathname === '/callback') {
      callbacks.push(url);
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<!doctype html><title>Schedulr callback</title><h1>Back at Schedulr</h1>');
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    callbacks,
    pictureRequests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describeInChromium('OAuth in a real browser (Chromium)', () => {
  let server: TestServer;
  let appServer: Awaited<ReturnType<typeof startAppServer>>;
  let developerProfile: ChromiumProfile;
  let customerProfile: ChromiumProfile;
  let developer: BrowserContext;
  let customer: BrowserContext;
  let clientId: string;
  let clientSecret: string;

  beforeAll(async () => {
    // The app's server is on loopback, which pictures are downloaded from only in closed networks.
    server = await startTestServer({ env: { MEDIA_FETCH_ALLOW_PRIVATE: 'true' } });
    appServer = await startAppServer();
    // Two people, two browsers, each with a profile of its own.
    developerProfile = await launchChromium();
    customerProfile = await launchChromium();
    developer = developerProfile.context;
    customer = customerProfile.context;
  }, 2 * TIMEOUTS.hook);

  afterAll(async () => {
    await developerProfile?.close();
    await customerProfile?.close();
    await appServer?.close();
    await server?.close();
    // Nothing a page's script threw went unnoticed.
    expect([...(developerProfile?.pageErrors ?? []), ...(customerProfile?.pageErrors ?? [])]).toEqual([]);
  });

  /** The picture of the app as the page shows it, once loaded: its width in pixels. */
  const pictureWidth = (page: Page) =>
    page
      .locator('img[alt="Picture of Schedulr Pro"]')
      .evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth);

  it('signs up a developer, registers an app and shows its secret once', async () => {
    await developer.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.baseUrl });
    const page = await developer.newPage();
    await page.goto(`${server.baseUrl}/signup`);
    await signUp(page, { name: 'Dev', email: 'dev@schedulr.example', organization: 'Schedulr Inc' });
    // A new user lands on the calendar; apps are under Settings → Developers.
    expect(pathOf(page)).toBe('/calendar');
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Apps', exact: true }).click();
    await untilAt(page, '/settings/developers/apps');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Apps');

    await page.getByLabel(/^Name/).fill('Schedulr Pro');
    await page.getByLabel('Description').fill('Plans and publishes your posts <b>everywhere</b>.');
    await page.getByLabel(/^Picture URL/).fill(`${appServer.origin}/logo.png`);
    await page.getByLabel(/^Redirect URL/).fill(`${appServer.origin}/callback`);
    await page.getByRole('button', { name: 'Register app' }).click();

    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent(), PAGE_WAIT).toBe('Schedulr Pro');
    clientId = await page.locator('#client-id').inputValue();
    clientSecret = await page.locator('#new-secret').inputValue();
    expect(clientId).toMatch(/^pca_/);
    expect(clientSecret).toMatch(/^pcs_/);
    expect(await page.getByText('this once only').count()).toBe(1);
    // The server downloaded the picture once, itself; the page shows it from the server.
    expect(appServer.pictureRequests).toEqual(['post-scheduler-media-fetcher']);
    await expect.poll(() => pictureWidth(page), PAGE_WAIT).toBe(72);

    // The copy button puts the secret on the clipboard.
    await page.locator('button[data-copy="new-secret"]').click();
    await expect.poll(() => page.locator('button[data-copy="new-secret"]').textContent(), PAGE_WAIT).toBe('Copied');
    // Runs in the page (the test is compiled without DOM types).
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(clientSecret);
    await page.screenshot({ path: artifactPath('developers-app-created.png'), fullPage: true });

    // Shown once: coming back to the app, the secret is gone.
    await page.goto(`${server.baseUrl}/settings/developers/apps`);
    await page.getByRole('link', { name: 'Schedulr Pro' }).click();
    await expect.poll(() => page.locator('#client-id').inputValue(), PAGE_WAIT).toBe(clientId);
    expect(await page.locator('#new-secret').count()).toBe(0);
    expect(await page.content()).not.toContain(clientSecret);

    await page.goto(`${server.baseUrl}/settings/developers/apps`);
    await page.screenshot({ path: artifactPath('developers-apps.png'), fullPage: true });
    await page.close();
  });

  it('lets a second user approve, after signing up from the authorize link, and the app uses the token until revoked', async () => {
    const state = 'st@te & ünïcode #1';
    const authorizeUrl = `${server.baseUrl}/oauth/authorize?${new URLSearchParams({ client_id: clientId, response_type: 'code', state }).toString()}`;
    const page = await customer.newPage();
    // Everything the browser asks for until the user answers: the consent page loads nothing from
    // another origin (the app's server would learn who looks at it, and when).
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    await page.goto(authorizeUrl);

    // Not signed in: the log-in page, and from there sign-up, keeping the way back.
    expect(pathOf(page)).toBe('/login');
    await page.getByRole('link', { name: 'Sign up' }).click();
    await untilAt(page, '/signup');
    await signUp(page, { name: 'Customer', email: 'customer@shop.example', organization: 'Corner Shop' });

    // Back on the consent page, not sent on without it.
    expect(pathOf(page)).toBe('/oauth/authorize');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(
      'Schedulr Pro wants to access Corner Shop',
    );
    expect(appServer.callbacks).toHaveLength(0);
    expect(await page.getByText('Plans and publishes your posts <b>everywhere</b>.').count()).toBe(1);
    await expect.poll(() => pictureWidth(page), PAGE_WAIT).toBe(72);
    expect(await page.locator('strong.organization').textContent()).toBe('Corner Shop');
    await page.screenshot({ path: artifactPath('consent.png'), fullPage: true });
    expect(requested).toContain(`${server.baseUrl}/oauth/apps/${clientId}/picture`);
    expect(requested.filter((url) => new URL(url).origin !== server.baseUrl)).toEqual([]);
    expect(appServer.pictureRequests).toHaveLength(1);

    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(`${appServer.origin}/callback?**`, { waitUntil: 'load' });
    expect(appServer.callbacks).toHaveLength(1);
    const callback = appServer.callbacks[0]!;
    expect(callback.searchParams.get('state')).toBe(state);
    const code = callback.searchParams.get('code')!;
    expect(code).toMatch(/^pac_/);

    const token = await dataOf(
      oauthApi(server).POST('/api/oauth/token', {
        body: { grant_type: 'authorization_code', code, client_id: clientId, client_secret: clientSecret },
      }),
      200,
    );
    expect(token).toMatchObject({ cus: null, token_type: 'bearer' });
    await addChannel(server.ctx.db, {
      organization_id: token.id,
      provider: 'sandbox',
      name: 'Shop window',
      username: null,
      picture: null,
    });

    const app = publicApi(server, { Authorization: `Bearer ${token.access_token}` });
    const channels = await dataOf(app.GET('/public/v1/channels'), 200);
    // The organization the customer signed up with starts with its sandbox channel; the token sees its channels only.
    expect(channels.data).toEqual([
      expect.objectContaining({ name: 'Sandbox', provider: 'sandbox' }),
      expect.objectContaining({ name: 'Shop window', provider: 'sandbox' }),
    ]);

    // The customer revokes the app in Settings → Approved apps.
    await page.goto(`${server.baseUrl}/settings/approved-apps`);
    expect(await page.getByRole('heading', { name: 'Corner Shop' }).count()).toBe(1);
    await page.screenshot({ path: artifactPath('approved-apps.png'), fullPage: true });
    await page.getByRole('button', { name: 'Revoke Schedulr Pro for Corner Shop' }).click();
    await expect.poll(() => page.getByText('You have not approved any apps.').count(), PAGE_WAIT).toBe(1);

    const rejected = await app.GET('/public/v1/channels');
    expect(rejected.response.status).toBe(401);
    await page.close();
  });

  it('sends the user back with access_denied and the state on Deny', async () => {
    const state = 'deny-9f2c';
    const page = await customer.newPage();
    await page.goto(
      `${server.baseUrl}/oauth/authorize?${new URLSearchParams({ client_id: clientId, response_type: 'code', state }).toString()}`,
    );
    const before = appServer.callbacks.length;
    await page.getByRole('button', { name: 'Deny' }).click();
    // Closing a page while a cross-origin navigation commits can hang in Chromium (Playwright issue
    // #41900): let the app's callback page finish loading first.
    await page.waitForURL(`${appServer.origin}/callback?**`, { waitUntil: 'load' });
    expect(appServer.callbacks).toHaveLength(before + 1);
    const callback = appServer.callbacks.at(-1)!;
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.has('code')).toBe(false);
    await page.close();
  });

  it('keeps the consent page out of frames', async () => {
    const page = await customer.newPage();
    const authorizeUrl = `${server.baseUrl}/oauth/authorize?${new URLSearchParams({ client_id: clientId, response_type: 'code', state: 'framed' }).toString()}`;
    // Another site (the app's origin here) tries to frame the consent page; setContent waits for the
    // frame's load event, which fires for a blocked frame too.
    await page.goto(`${appServer.origin}/callback`);
    await page.setContent(`<iframe id="frame" src="${authorizeUrl}" width="600" height="400"></iframe>`, {
      waitUntil: 'load',
    });
    expect(page.frames()).toHaveLength(2);
    for (const frame of page.frames()) {
      expect(await frame.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    }
    await page.close();
  });
});

if (skipBrowserTests) {
  describe('OAuth in a real browser', () => {
    it.skip('is skipped: Chromium is not installed at /usr/bin/chromium', () => {});
  });
}
