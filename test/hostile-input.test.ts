// Input nobody should send, on every surface: the answer is a clear refusal in that surface's own
// format (the Public API's envelope, an RFC 6749 error, an HTML page), never a 500.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, oauthErrorOf } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { stringMatching } from './support/typed-matchers.js';

let server: TestServer;
let org: TestOrganization;
let browser: BrowserSession;

beforeAll(async () => {
  server = await startTestServer();
  org = await createOrganization(server.ctx.db, 'Hostile Input Org');
  browser = new BrowserSession(server);
  await browser.logIn(org.email, org.password);
});
afterAll(() => server?.close());

/** `length` letters that do not compress, as a long value typed or pasted by somebody would not. */
function letters(length: number): string {
  let out = '';
  while (out.length < length) out += Math.random().toString(36).slice(2).replace(/\d/g, '');
  return out.slice(0, length);
}

describe('over-long values in the account forms', () => {
  // The log-in limit counts in fixed windows: a stopped clock keeps the attempts inside one window.
  beforeEach(() => server.setNow(new Date()));
  afterEach(() => server.setNow(undefined));

  it('refuses a sign-up with an email address longer than any deliverable one, or over-long names', async () => {
    const visitor = new BrowserSession(server);
    const email = await visitor.submit('/signup', '/signup', {
      name: 'A',
      email: `${letters(6000)}@example.com`,
      password: 'long enough password',
      organizationName: 'A',
    });
    expect(email.status).toBe(400);
    expect(await email.text()).toMatch(/must be an email address/);
    const organization = await visitor.submit('/signup', '/signup', {
      name: 'B',
      email: 'b@example.com',
      password: 'long enough password',
      organizationName: letters(101),
    });
    expect(organization.status).toBe(400);
    expect(await organization.text()).toMatch(/at most 100 characters/);
    const name = await visitor.submit('/signup', '/signup', {
      name: letters(101),
      email: 'c@example.com',
      password: 'long enough password',
      organizationName: 'C',
    });
    expect(name.status).toBe(400);
  });

  it('answers a log-in with a very long email like any unknown email, and counts it against the throttle', async () => {
    const visitor = new BrowserSession(server);
    const email = `${letters(6000)}@example.com`;
    for (let i = 0; i < 10; i++)
      expect((await visitor.submit('/login', '/login', { email, password: 'whatever it is' })).status).toBe(401);
    expect((await visitor.submit('/login', '/login', { email, password: 'whatever it is' })).status).toBe(429);
  });
});

describe('the NUL character, which the database cannot store', () => {
  const apiJson = (path: string, body: unknown) =>
    server.fetch(path, {
      method: 'POST',
      headers: { ...org.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });

  async function expectEnvelope(response: Response, path: string) {
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe('validation_failed');
    expect(error.details).toEqual([{ path, message: stringMatching(/NUL/) }]);
  }

  it('is refused by the Public API in its envelope, in a body, a query or a path', async () => {
    await expectEnvelope(
      await apiJson('/public/v1/media/uploads', { fileName: 'a\u0000.png', contentType: 'image/png', size: 10 }),
      'fileName',
    );
    await expectEnvelope(
      await apiJson('/public/v1/posts', { type: 'draft', posts: [{ channelId: 'ch_x', content: 'hello\u0000' }] }),
      'posts[0].content',
    );
    await expectEnvelope(await server.fetch('/public/v1/posts?group=%00', { headers: org.auth }), 'query.group');
    await expectEnvelope(await server.fetch('/public/v1/posts/post_%00', { headers: org.auth }), 'params.id');
    // Without credentials the answer is still 401 first.
    expect((await server.fetch('/public/v1/posts/post_%00')).status).toBe(401);
  });

  it('is refused by the OAuth endpoints with invalid_request, in the body or a Basic header', async () => {
    for (const body of [
      JSON.stringify({ grant_type: 'authorization_code', code: 'pac_x', client_id: 'pca_\u0000', client_secret: 'x' }),
      JSON.stringify({ token: 'pos_\u0000', client_id: 'pca_x', client_secret: 'x' }),
    ]) {
      for (const path of ['/api/oauth/token', '/api/oauth/revoke']) {
        const response = await server.fetch(path, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body,
        });
        expect(response.status).toBe(400);
        expect((await oauthErrorOf(response)).error).toBe('invalid_request');
      }
    }
    const form = await server.fetch('/api/oauth/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=authorization_code&code=x&client_id=pca_%00&client_secret=x',
    });
    expect(form.status).toBe(400);
    // A client id that is no client's shape is an unknown client, asked of nobody.
    const basic = await server.fetch('/api/oauth/token', {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Basic ${Buffer.from('pca_\u0000:x').toString('base64')}`,
      },
      body: JSON.stringify({ grant_type: 'authorization_code', code: 'pac_x' }),
    });
    expect(basic.status).toBe(401);
    expect((await oauthErrorOf(basic)).error).toBe('invalid_client');
  });

  it('is refused by the web pages with an error page, in a form, a query or a path', async () => {
    const csrfToken = /name="csrf_token" value="([^"]+)"/.exec(
      await (await browser.get('/settings/developers/apps')).text(),
    )![1]!;
    const responses = [
      await browser.postForm('/settings/developers/apps', {
        csrf_token: csrfToken,
        name: 'a\u0000',
        description: '',
        pictureUrl: '',
        redirectUri: 'https://x.example.org/cb',
      }),
      await browser.postForm('/settings/developers/access', { csrf_token: csrfToken, name: 'k\u0000' }),
      await browser.postForm('/oauth/consent', {
        csrf_token: csrfToken,
        request_id: 'authz_\u0000',
        decision: 'approve',
      }),
      await browser.get('/oauth/authorize?client_id=pca_%00&response_type=code'),
      await browser.get('/settings/developers/apps/app_%00'),
      await new BrowserSession(server).submit('/login', '/login', {
        email: 'a\u0000@example.com',
        password: 'whatever it is',
      }),
      await new BrowserSession(server).submit('/signup', '/signup', {
        name: 'N',
        email: 'n@example.com',
        password: 'long enough password',
        organizationName: 'Org\u0000',
      }),
    ];
    for (const response of responses) {
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      expect(response.headers.get('location')).toBeNull();
      expect(await response.text()).toMatch(/NUL character/);
    }
    expect(
      await server.ctx.db.selectFrom('api_keys').select('id').where('organization_id', '=', org.id).execute(),
    ).toHaveLength(1);
  });
});

describe('bodies that cannot be read', () => {
  const garbled = { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' };

  it('are refused by the Public API with 400 in its envelope', async () => {
    const response = await server.fetch('/public/v1/posts', {
      method: 'POST',
      headers: { ...org.auth, ...garbled },
      body: 'not gzip at all',
    });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('validation_failed');
  });

  it('are refused by the OAuth endpoints with invalid_request', async () => {
    for (const path of ['/api/oauth/token', '/api/oauth/revoke']) {
      const response = await server.fetch(path, { method: 'POST', headers: garbled, body: 'not gzip at all' });
      expect(response.status).toBe(400);
      expect(await oauthErrorOf(response)).toEqual({
        error: 'invalid_request',
        error_description: stringMatching(/could not be read/),
      });
    }
  });

  it('are refused by the web pages with an error page', async () => {
    const response = await browser.request('/settings/developers/access', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Encoding': 'gzip' },
      body: 'not gzip at all',
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
  });
});

describe('local media file URLs', () => {
  it('refuse a path with a malformed percent-escape as not validly signed', async () => {
    for (const method of ['GET', 'PUT']) {
      const response = await server.fetch(
        `/media-files/media/${org.id}/%ZZ?expires=9999999999&type=image%2Fpng&signature=x`,
        { method, body: method === 'PUT' ? 'x' : undefined },
      );
      expect(response.status).toBe(403);
      expect((await errorOf(response)).code).toBe('forbidden');
    }
  });
});
