// An app's picture is downloaded when it is registered and served from this installation, so the
// consent page loads nothing from the developer's server (which would learn who views it, and when).
import { createHash } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserSession, decodeEntities, inputValue } from './support/browser-session.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { gif, jpeg, png, webp } from './support/media-samples.js';
import { approve, createOAuthApp } from './support/oauth.js';
import { startPictureHost } from './support/picture-host.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { startTestServer, type TestServer } from './support/server.js';

/** A closed network's installation: pictures may come from private addresses, such as the test's loopback host. */
let server: TestServer;
/** The default policy: public addresses only. */
let strict: TestServer;
let host: RemoteServer;
let developer: TestOrganization;
let browser: BrowserSession;

// One server per hook: a hook's time is a server's start, however busy the machine.
beforeAll(async () => {
  strict = await startTestServer();
});
beforeAll(async () => {
  server = await startTestServer({ env: { MEDIA_FETCH_ALLOW_PRIVATE: 'true', MEDIA_FETCH_TIMEOUT_SECONDS: '2' } });
  host = await startPictureHost();
  developer = await createOrganization(server.ctx.db, 'Picture Dev');
  browser = new BrowserSession(server);
  await browser.logIn(developer.email, developer.password);
});
afterAll(async () => {
  await Promise.all([server?.close(), strict?.close(), host?.close()]);
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const hostRequests = (path: string) => host.requests.filter((request) => request.path === path).length;

function register(session: BrowserSession, pictureUrl: string, name = 'Pictured') {
  return session.submit('/settings/developers/apps', '/settings/developers/apps', {
    name,
    description: '',
    pictureUrl,
    redirectUri: 'https://pictured.example.org/cb',
  });
}

async function registered(response: Response) {
  expect(response.status).toBe(201);
  const html = await response.text();
  const clientId = /id="client-id"[^>]*value="([^"]+)"/.exec(html)![1]!;
  const app = await server.ctx.db
    .selectFrom('oauth_apps')
    .selectAll()
    .where('client_id', '=', clientId)
    .executeTakeFirstOrThrow();
  return { html, clientId, app };
}

/** The field error a refused form shows for the picture URL. */
async function pictureError(response: Response): Promise<string> {
  expect(response.status).toBe(400);
  const html = await response.text();
  expect(html).toMatch(/<input id="pictureUrl"[^>]* aria-invalid="true">/);
  return decodeEntities(/<a href="#pictureUrl">([^<]*)<\/a>/.exec(html)?.[1] ?? '');
}

describe('registering an app with a picture', () => {
  it('downloads the picture once and serves it from this site with headers that keep it inert', async () => {
    const before = hostRequests('/logo.png');
    const { html, clientId, app } = await registered(await register(browser, `${host.origin}/logo.png`));
    expect(hostRequests('/logo.png')).toBe(before + 1);
    expect(app.picture_url).toBe(`${host.origin}/logo.png`);
    expect(app.picture_sha256).toBe(sha256(png()));
    // The app's page shows it from here.
    expect(html).toContain(`<img class="app-picture large" src="/oauth/apps/${clientId}/picture"`);
    expect(html).not.toMatch(new RegExp(`src="${host.origin}`));

    const picture = await server.fetch(`/oauth/apps/${clientId}/picture`);
    expect(picture.status).toBe(200);
    expect(Buffer.from(await picture.arrayBuffer()).equals(png())).toBe(true);
    expect(picture.headers.get('content-type')).toBe('image/png');
    expect(picture.headers.get('x-content-type-options')).toBe('nosniff');
    expect(picture.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(picture.headers.get('cross-origin-resource-policy')).toBe('same-origin');
    expect(picture.headers.get('cache-control')).toBe('public, no-cache');
    const etag = picture.headers.get('etag');
    expect(etag).toBe(`"${sha256(png())}"`);

    // Shown again and again without being downloaded again: a browser that has it gets a 304.
    // (Node's http, as fetch marks a conditional request `Cache-Control: no-cache`, which asks for the whole picture.)
    const again = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http
        .get(`${server.baseUrl}/oauth/apps/${clientId}/picture`, { headers: { 'If-None-Match': etag! } }, resolve)
        .on('error', reject),
    );
    expect(again.statusCode).toBe(304);
    const body: Buffer[] = [];
    for await (const chunk of again) body.push(chunk as Buffer);
    expect(Buffer.concat(body).length).toBe(0);
    const head = await server.fetch(`/oauth/apps/${clientId}/picture`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('image/png');
    expect(hostRequests('/logo.png')).toBe(before + 1);
  });

  it('takes PNG, JPEG, GIF and WebP as the bytes say, whatever the server declares, and follows redirects', async () => {
    const samples: [string, Buffer, string][] = [
      ['/logo.png', png(), 'image/png'],
      ['/logo.jpg', jpeg(), 'image/jpeg'],
      ['/logo.gif', gif(), 'image/gif'],
      ['/logo.webp', webp(), 'image/webp'],
    ];
    for (const [path, bytes, type] of samples) {
      const { clientId, app } = await registered(await register(browser, `${host.origin}${path}`));
      expect(app.picture_sha256, path).toBe(sha256(bytes));
      expect((await server.fetch(`/oauth/apps/${clientId}/picture`)).headers.get('content-type'), path).toBe(type);
    }
    const moved = await registered(await register(browser, `${host.origin}/moved.png`));
    expect(moved.app.picture_sha256).toBe(sha256(png()));
  });

  it('refuses the form with a field error when the picture cannot be used, and registers nothing', async () => {
    const count = async () => (await server.ctx.db.selectFrom('oauth_apps').select('id').execute()).length;
    const before = await count();
    const closed = await startRemoteServer(() => {});
    await closed.close();
    const cases: [string, RegExp][] = [
      // Script can live in an SVG: only raster images are taken.
      [`${host.origin}/logo.svg`, /^The picture must be a PNG, JPEG, GIF or WebP image; the file at this URL is /],
      [
        `${host.origin}/not-an-image.png`,
        /^The picture must be a PNG, JPEG, GIF or WebP image; the file at this URL is of an unknown type\.$/,
      ],
      [`${host.origin}/huge.png`, /^The picture must be at most 1 MB\.$/],
      [`${host.origin}/missing.png`, /^The picture could not be downloaded: the server answered 404\.$/],
      [`${closed.origin}/logo.png`, /^The picture could not be downloaded: connection failed \(ECONNREFUSED\)\.$/],
      ['http://localhost:1/logo.png', /^The picture could not be downloaded: /],
    ];
    for (const [pictureUrl, message] of cases) {
      const response = await register(browser, pictureUrl);
      const error = await pictureError(response.clone());
      expect(error, pictureUrl).toMatch(message);
      // What was typed is kept, for the developer to fix.
      expect(inputValue(await response.text(), 'pictureUrl')).toBe(pictureUrl);
    }
    expect(await count()).toBe(before);
  });

  it('is refused from addresses the media download policy refuses (MEDIA_FETCH_ALLOW_PRIVATE is off by default)', async () => {
    const owner = await createOrganization(strict.ctx.db, 'Strict Dev');
    const visitor = new BrowserSession(strict);
    await visitor.logIn(owner.email, owner.password);
    const before = host.requests.length;
    const response = await register(visitor, `${host.origin}/logo.png`);
    expect(await pictureError(response)).toBe('The picture could not be downloaded: 127.0.0.1 is a loopback address.');
    expect(host.requests.length).toBe(before);
    // The metadata service of cloud hosts is never fetched, even where private addresses are allowed.
    const metadata = await register(browser, 'https://169.254.169.254/latest/meta-data/');
    expect(await pictureError(metadata)).toBe(
      'The picture could not be downloaded: 169.254.169.254 is a cloud metadata address.',
    );
  });
});

describe('editing an app’s picture', () => {
  it('downloads a changed URL, keeps the stored picture while the URL stays, and removes it with the URL', async () => {
    const { app, clientId } = await registered(await register(browser, `${host.origin}/logo.png`, 'Editable'));
    const page = `/settings/developers/apps/${app.id}`;
    const edit = (pictureUrl: string, description = '') =>
      browser.submit(page, page, {
        name: 'Editable',
        description,
        pictureUrl,
        redirectUri: 'https://pictured.example.org/cb',
      });
    const stored = () =>
      server.ctx.db
        .selectFrom('oauth_apps')
        .select(['picture_url', 'picture_sha256'])
        .where('id', '=', app.id)
        .executeTakeFirstOrThrow();

    // Another description, the same URL: the developer's host is not asked again.
    const before = hostRequests('/logo.png');
    expect((await edit(`${host.origin}/logo.png`, 'New words')).status).toBe(303);
    expect(hostRequests('/logo.png')).toBe(before);

    expect((await edit(`${host.origin}/logo.gif`)).status).toBe(303);
    expect(await stored()).toEqual({ picture_url: `${host.origin}/logo.gif`, picture_sha256: sha256(gif()) });
    const picture = await server.fetch(`/oauth/apps/${clientId}/picture`);
    expect(picture.headers.get('content-type')).toBe('image/gif');
    expect(picture.headers.get('etag')).toBe(`"${sha256(gif())}"`);

    // A picture that cannot be used is refused, and the stored one stays.
    expect(await pictureError(await edit(`${host.origin}/logo.svg`))).toMatch(/must be a PNG, JPEG, GIF or WebP image/);
    expect(await stored()).toEqual({ picture_url: `${host.origin}/logo.gif`, picture_sha256: sha256(gif()) });

    expect((await edit('')).status).toBe(303);
    expect(await stored()).toEqual({ picture_url: null, picture_sha256: null });
    expect((await server.fetch(`/oauth/apps/${clientId}/picture`)).status).toBe(404);
    const html = await (await browser.get(page)).text();
    expect(html).toContain('<span class="app-picture app-initial large" aria-hidden="true">E</span>');
    expect(
      await server.ctx.db.selectFrom('oauth_app_pictures').select('app_id').where('app_id', '=', app.id).execute(),
    ).toEqual([]);
  });
});

describe('the consent page', () => {
  it('shows the picture from this site, and the app’s initial for an app registered before pictures were stored', async () => {
    const user = await createOrganization(server.ctx.db, 'Consenting Org');
    const visitor = new BrowserSession(server);
    await visitor.logIn(user.email, user.password);
    const pictured = await createOAuthApp(server.ctx.db, developer.id, {
      name: 'Pictured',
      pictureUrl: `${host.origin}/logo.png`,
    });
    const before = host.requests.length;
    const response = await visitor.get(`/oauth/authorize?client_id=${pictured.clientId}&response_type=code`);
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain(
      `<img class="app-picture large" src="/oauth/apps/${pictured.clientId}/picture" alt="Picture of Pictured">`,
    );
    expect(html).not.toContain(host.origin);
    expect(response.headers.get('content-security-policy')).toContain("img-src 'self';");
    expect(host.requests.length).toBe(before);

    // As the migration leaves an app registered with a picture URL before: no stored picture.
    const older = await createOAuthApp(server.ctx.db, developer.id, { name: 'older app' });
    await server.ctx.db
      .updateTable('oauth_apps')
      .set({ picture_url: `${host.origin}/logo.png` })
      .where('id', '=', older.app.id)
      .execute();
    const olderPage = await (
      await visitor.get(`/oauth/authorize?client_id=${older.clientId}&response_type=code`)
    ).text();
    expect(olderPage).toContain('<span class="app-picture app-initial large" aria-hidden="true">O</span>');
    expect(olderPage).not.toContain('<img');
    expect(olderPage).not.toContain(host.origin);
    expect((await server.fetch(`/oauth/apps/${older.clientId}/picture`)).status).toBe(404);
    // Its developer saves the form once and the picture is downloaded.
    const page = `/settings/developers/apps/${older.app.id}`;
    const saved = await browser.submit(page, page, {
      name: 'older app',
      description: '',
      pictureUrl: `${host.origin}/logo.png`,
      redirectUri: older.app.redirect_uri,
    });
    expect(saved.status).toBe(303);
    expect((await server.fetch(`/oauth/apps/${older.clientId}/picture`)).status).toBe(200);
    await approve(server.ctx.db, older, user);
  });
});

describe('the picture address', () => {
  it('answers 404 for an unknown client id, an app without a picture and anything that is not a client id', async () => {
    const plain = await createOAuthApp(server.ctx.db, developer.id, { name: 'No Picture' });
    for (const clientId of [
      plain.clientId,
      'pca_AAAAAAAAAAAAAAAAAAAAAAAA',
      'nothing',
      '%00',
      'pca_x%27%20or%201%3D1',
    ]) {
      const response = await server.fetch(`/oauth/apps/${clientId}/picture`);
      expect(response.status, clientId).toBe(404);
      expect(response.headers.get('content-type'), clientId).toMatch(/^text\/html/);
    }
  });
});
