import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/core/config.js';
import { hashSecret } from '../src/crypto/issued-secrets.js';
import { registerApp } from '../src/oauth/apps.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { testPictures } from './support/oauth.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled } from './support/timeouts.js';

let server: TestServer;
let owner: TestOrganization;
let browser: BrowserSession;

beforeAll(async () => {
  server = await startTestServer();
  owner = await createOrganization(server.ctx.db, 'Page Org');
  browser = new BrowserSession(server);
  await browser.logIn(owner.email, owner.password);
});
afterAll(() => server?.close());

const SETTINGS_PAGES = ['/settings/developers/access', '/settings/developers/apps', '/settings/approved-apps'];

function setCookie(response: Response, name: string): string | undefined {
  return response.headers.getSetCookie().find((line) => line.startsWith(`${name}=`));
}

// Each log-in and sign-up hashes a password with scrypt (32 MiB, tens of milliseconds on an idle machine);
// the tests of the limits make dozens of them, which a busy machine runs a few at a time.
const MANY_HASHES = { timeout: scaled(90_000) };

describe('sign up, log in, log out', MANY_HASHES, () => {
  // The limits count in fixed windows: a stopped clock keeps each test's attempts inside one window.
  beforeEach(() => server.setNow(new Date()));
  afterEach(() => server.setNow(undefined));

  it('signs up a user with an organization and starts a session in an HttpOnly, SameSite=Lax cookie', async () => {
    const visitor = new BrowserSession(server);
    const response = await visitor.submit('/signup', '/signup', {
      name: 'Ada',
      email: 'Ada@Example.com',
      password: 'a long enough password',
      organizationName: 'Ada’s Studio',
      next: '/settings/developers/apps',
    });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/settings/developers/apps');
    const cookie = setCookie(response, 'session')!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Secure/);

    const page = await visitor.get('/settings/developers/apps');
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('Ada’s Studio');
    expect(html).toContain('ada@example.com');

    // The database holds the token's hash only.
    const token = visitor.cookie('session')!;
    const sessions = await server.ctx.db.selectFrom('sessions').selectAll().execute();
    expect(sessions.some((s) => s.token_hash === hashSecret(token))).toBe(true);
    expect(JSON.stringify(sessions)).not.toContain(token);
  });

  it('explains what is wrong with a sign-up and keeps what was typed', async () => {
    const visitor = new BrowserSession(server);
    const short = await visitor.submit('/signup', '/signup', {
      name: 'B',
      email: 'b@example.com',
      password: 'short',
      organizationName: 'B Org',
    });
    expect(short.status).toBe(400);
    const html = await short.text();
    expect(html).toContain('<a href="#password">Password must be at least 8 characters</a>');
    expect(html).toMatch(/<input id="password"[^>]* aria-invalid="true">/);
    expect(html).not.toMatch(/<input id="email"[^>]* aria-invalid/);
    expect(inputValue(html, 'email')).toBe('b@example.com');
    const taken = await visitor.submit('/signup', '/signup', {
      name: 'C',
      email: owner.email,
      password: 'a long enough password',
      organizationName: 'C',
    });
    expect(taken.status).toBe(409);
    expect(await taken.text()).toMatch(/exists already/);
  });

  it('refuses a wrong password, and pauses an email after repeated failures', async () => {
    const victim = await createOrganization(server.ctx.db, 'Victim');
    const visitor = new BrowserSession(server);
    for (let i = 0; i < 10; i++) {
      const response = await visitor.submit('/login', '/login', { email: victim.email, password: `guess ${i}` });
      expect(response.status).toBe(401);
      expect(setCookie(response, 'session')).toBeUndefined();
    }
    const paused = await visitor.submit('/login', '/login', { email: victim.email, password: victim.password });
    expect(paused.status).toBe(429);
    expect(Number(paused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(setCookie(paused, 'session')).toBeUndefined();
    // Unknown emails get the same answer as wrong passwords.
    const unknown = await visitor.submit('/login', '/login', {
      email: 'nobody@example.com',
      password: 'whatever it is',
    });
    expect(unknown.status).toBe(401);
  });

  it('tries no more guesses than the limit when they are sent all at once', async () => {
    const victim = await createOrganization(server.ctx.db, 'Burst Victim');
    const visitor = new BrowserSession(server);
    const csrfToken = inputValue(await (await visitor.get('/login')).text(), 'csrf_token')!;
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        visitor.postForm('/login', { csrf_token: csrfToken, email: victim.email, password: `guess ${i}` }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20);
    // Still paused for the right password: the refused guesses were not tried, and the tried ones counted.
    const right = await visitor.postForm('/login', {
      csrf_token: csrfToken,
      email: victim.email,
      password: victim.password,
    });
    expect(right.status).toBe(429);
  });

  it('lets a right password through without spending the email’s budget', async () => {
    const user = await createOrganization(server.ctx.db, 'Frequent');
    for (let i = 0; i < 12; i++) await new BrowserSession(server).logIn(user.email, user.password);
    const visitor = new BrowserSession(server);
    for (let i = 0; i < 10; i++)
      expect((await visitor.submit('/login', '/login', { email: user.email, password: `guess ${i}` })).status).toBe(
        401,
      );
    expect((await visitor.submit('/login', '/login', { email: user.email, password: user.password })).status).toBe(429);
  });

  it('refuses sign-up and log-in forms without the form’s CSRF token', async () => {
    const visitor = new BrowserSession(server);
    await visitor.get('/login');
    const noToken = await visitor.postForm('/login', { email: owner.email, password: owner.password });
    expect(noToken.status).toBe(403);
    const forged = await visitor.postForm('/login', {
      csrf_token: 'forged',
      email: owner.email,
      password: owner.password,
    });
    expect(forged.status).toBe(403);
    // A token from another browser does not match this browser's cookie.
    const other = new BrowserSession(server);
    const token = inputValue(await (await other.get('/login')).text(), 'csrf_token')!;
    const crossed = await visitor.postForm('/login', {
      csrf_token: token,
      email: owner.email,
      password: owner.password,
    });
    expect(crossed.status).toBe(403);
    const signup = await visitor.postForm('/signup', {
      email: 'z@example.com',
      password: 'a long enough password',
      organizationName: 'Z',
    });
    expect(signup.status).toBe(403);
  });

  it('gives a new session on log-in and sign-up, whatever session cookie the browser arrived with', async () => {
    // An attacker's own valid session, planted in the victim's browser (session fixation).
    const attacker = await createOrganization(server.ctx.db, 'Fixer');
    const attackerBrowser = new BrowserSession(server);
    await attackerBrowser.logIn(attacker.email, attacker.password);
    const planted = attackerBrowser.cookie('session')!;

    const victim = await createOrganization(server.ctx.db, 'Fixed');
    const victimBrowser = new BrowserSession(server);
    const loginPage = await victimBrowser.get('/login');
    const csrfToken = inputValue(await loginPage.text(), 'csrf_token')!;
    const loggedIn = await victimBrowser.request('/login', {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Cookie: `${victimBrowser.cookieHeader()}; session=${planted}`,
      },
      body: new URLSearchParams({ csrf_token: csrfToken, email: victim.email, password: victim.password }).toString(),
    });
    expect(loggedIn.status).toBe(303);
    expect(victimBrowser.cookie('session')).toBeTruthy();
    expect(victimBrowser.cookie('session')).not.toBe(planted);
    // The planted session is still the attacker's, not the victim's.
    const attackerPage = await server.fetch('/settings/developers/access', {
      headers: { Cookie: `session=${planted}` },
    });
    expect(await attackerPage.text()).toContain(attacker.email);

    const signupBrowser = new BrowserSession(server);
    const signupToken = inputValue(await (await signupBrowser.get('/signup')).text(), 'csrf_token')!;
    const signedUp = await signupBrowser.request('/signup', {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Cookie: `${signupBrowser.cookieHeader()}; session=${planted}`,
      },
      body: new URLSearchParams({
        csrf_token: signupToken,
        email: 'fixed-signup@example.com',
        password: 'long enough password',
        organizationName: 'F',
      }).toString(),
    });
    expect(signedUp.status).toBe(303);
    expect(signupBrowser.cookie('session')).not.toBe(planted);
  });

  it('only sends people to paths of this site after logging in', async () => {
    for (const next of ['https://evil.example/', '//evil.example/x', '/\\evil.example']) {
      const visitor = new BrowserSession(server);
      const response = await visitor.logIn(owner.email, owner.password, next);
      expect(response.headers.get('location')).toBe('/calendar');
    }
  });

  it('logs out with the session’s CSRF token only, ending the session in the database', async () => {
    const visitor = new BrowserSession(server);
    await visitor.logIn(owner.email, owner.password);
    const token = visitor.cookie('session')!;
    const forged = await visitor.postForm('/logout', { csrf_token: 'forged' });
    expect(forged.status).toBe(403);
    expect((await visitor.get('/settings/developers/access')).status).toBe(200);

    const out = await visitor.submit('/settings/developers/access', '/logout', {});
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/login');
    expect(setCookie(out, 'session')).toMatch(/Max-Age=0/);
    const stale = await server.fetch('/settings/developers/access', {
      headers: { Cookie: `session=${token}` },
      redirect: 'manual',
    });
    expect(stale.status).toBe(302);
    expect(
      await server.ctx.db.selectFrom('sessions').selectAll().where('token_hash', '=', hashSecret(token)).execute(),
    ).toEqual([]);
  });

  it('ends a session after its lifetime', async () => {
    const visitor = new BrowserSession(server);
    await visitor.logIn(owner.email, owner.password);
    server.setNow(new Date(Date.now() + 15 * 24 * 60 * 60_000));
    try {
      expect((await visitor.get('/settings/developers/access')).status).toBe(302);
    } finally {
      server.setNow(undefined);
    }
  });
});

describe('limits per address on log-in and sign-up', MANY_HASHES, () => {
  let limited: TestServer;
  const from = (address: string) => new BrowserSession(limited, { 'X-Forwarded-For': address });
  const signUp = (visitor: BrowserSession, email: string, password = 'a long enough password') =>
    visitor.submit('/signup', '/signup', { name: 'N', email, password, organizationName: 'Org' });
  const users = () => limited.ctx.db.selectFrom('users').select('email').execute();

  beforeAll(async () => {
    limited = await startTestServer({
      env: { TRUST_PROXY: 'loopback', LOGIN_FAILURES_PER_ADDRESS: '4', SIGNUPS_PER_ADDRESS: '2' },
    });
  });
  afterAll(() => limited?.close());
  beforeEach(() => limited.setNow(new Date()));
  afterEach(() => limited.setNow(undefined));

  it('pause log-in from an address that fails on many emails (password spraying), not from others', async () => {
    const sprayer = from('203.0.113.10');
    for (let i = 0; i < 4; i++) {
      const victim = await createOrganization(limited.ctx.db, `Sprayed ${i}`);
      expect((await sprayer.submit('/login', '/login', { email: victim.email, password: 'Summer2026!' })).status).toBe(
        401,
      );
    }
    // Past the limit even a right password is refused from this address, so guessing on learns nothing.
    const user = await createOrganization(limited.ctx.db, 'Sprayed last');
    const paused = await sprayer.submit('/login', '/login', { email: user.email, password: user.password });
    expect(paused.status).toBe(429);
    expect(Number(paused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(setCookie(paused, 'session')).toBeUndefined();
    const html = await paused.text();
    expect(html).toMatch(
      /role="alert"[\s\S]*Too many failed log-ins from your network address; try again in \d+ minutes/,
    );
    expect(inputValue(html, 'csrf_token')).toBeTruthy();
    // The user, from their own address, is not locked out.
    expect((await from('198.51.100.20').logIn(user.email, user.password)).status).toBe(303);
  });

  it('count failed log-ins only: successes from an address spend none of its budget', async () => {
    const office = from('203.0.113.11');
    const user = await createOrganization(limited.ctx.db, 'Office');
    for (let i = 0; i < 6; i++) await from('203.0.113.11').logIn(user.email, user.password);
    for (let i = 0; i < 4; i++)
      expect((await office.submit('/login', '/login', { email: `nobody${i}@example.com`, password: 'x' })).status).toBe(
        401,
      );
    expect((await office.submit('/login', '/login', { email: user.email, password: user.password })).status).toBe(429);
  });

  it('pause sign-ups from an address after the limit, without counting forms with invalid fields', async () => {
    const flooder = from('203.0.113.12');
    for (let i = 0; i < 3; i++) expect((await signUp(flooder, `typo${i}@example.com`, 'short')).status).toBe(400);
    expect((await signUp(flooder, 'first@example.com')).status).toBe(303);
    expect((await signUp(from('203.0.113.12'), 'second@example.com')).status).toBe(303);
    const before = await users();
    const paused = await signUp(from('203.0.113.12'), 'third@example.com');
    expect(paused.status).toBe(429);
    expect(Number(paused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await paused.text()).toMatch(/Too many sign-ups from your network address; try again in \d+ minutes/);
    expect(setCookie(paused, 'session')).toBeUndefined();
    expect(await users()).toEqual(before);
    // Another address signs up as usual.
    expect((await signUp(from('198.51.100.21'), 'third@example.com')).status).toBe(303);
  });

  it('create no more accounts than the limit when sign-ups are sent all at once', async () => {
    const visitor = from('203.0.113.13');
    const csrfToken = inputValue(await (await visitor.get('/signup')).text(), 'csrf_token')!;
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        visitor.postForm('/signup', {
          csrf_token: csrfToken,
          name: 'B',
          email: `burst${i}@example.com`,
          password: 'a long enough password',
          organizationName: 'B',
        }),
      ),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 303)).toHaveLength(2);
    expect(statuses.filter((status) => status === 429)).toHaveLength(10);
    expect((await users()).filter((user) => user.email.startsWith('burst'))).toHaveLength(2);
  });

  it('have defaults and refuse values that are not positive integers', () => {
    expect(loadConfig({}).accountLimits).toEqual({
      loginFailuresPerAddress: 50,
      signupsPerAddress: 10,
      windowSeconds: 900,
    });
    expect(() => loadConfig({ LOGIN_FAILURES_PER_ADDRESS: '0' })).toThrow(/LOGIN_FAILURES_PER_ADDRESS/);
    expect(() => loadConfig({ SIGNUPS_PER_ADDRESS: 'many' })).toThrow(/SIGNUPS_PER_ADDRESS/);
    expect(() => loadConfig({ ACCOUNT_LIMITS_WINDOW_SECONDS: '-1' })).toThrow(/ACCOUNT_LIMITS_WINDOW_SECONDS/);
  });
});

describe('settings pages', () => {
  it('send a browser without a session to log in and back', async () => {
    const visitor = new BrowserSession(server);
    for (const path of SETTINGS_PAGES) {
      const response = await visitor.get(path);
      expect(response.status).toBe(302);
      expect(response.headers.get('location')).toBe(`/login?next=${encodeURIComponent(path)}`);
    }
  });

  it('carry the session’s CSRF token in every form, load nothing from elsewhere, and refuse forms without it', async () => {
    await registerApp(
      server.ctx.db,
      owner.id,
      { name: 'Listed', description: '', pictureUrl: '', redirectUri: 'https://l.example.org/cb' },
      testPictures,
      new Date(),
    );
    for (const path of SETTINGS_PAGES) {
      const response = await browser.get(path);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      const html = await response.text();
      const forms = html.match(/<form method="post"[\s\S]*?<\/form>/g) ?? [];
      expect(forms.length).toBeGreaterThan(0);
      for (const form of forms) expect(form).toMatch(/name="csrf_token" value="[^"]{20,}"/);
      expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
      expect(html).toMatch(/<html lang="en">/);
      expect(html).toContain('<h1>');
    }
    for (const action of ['/settings/developers/access', '/settings/developers/apps']) {
      const response = await browser.postForm(action, { name: 'no token', redirectUri: 'https://x.example.org/cb' });
      expect(response.status).toBe(403);
    }
  });

  it('serve their own stylesheet and script', async () => {
    const css = await server.fetch('/assets/style.css');
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/text\/css/);
    expect(await css.text()).toMatch(/:focus-visible/);
    const script = await server.fetch('/assets/app.js');
    expect(script.status).toBe(200);
    expect(script.headers.get('x-content-type-options')).toBe('nosniff');
    // The page that answers a missing asset cannot be framed any more than the others.
    const missing = await server.fetch('/assets/nothing.js');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^text\/html/);
    expect(missing.headers.get('x-frame-options')).toBe('DENY');
    expect(missing.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    expect(missing.headers.get('cache-control')).toBe('no-store');
  });
});

describe('Settings → Developers → Access', () => {
  it('shows a new key once with a copy button, then lists it masked with its last use, and revokes it', async () => {
    const created = await browser.submit('/settings/developers/access', '/settings/developers/access', {
      name: 'Publishing server',
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const html = await created.text();
    const key = /id="new-secret"[^>]*value="([^"]+)"/.exec(html)?.[1];
    expect(key).toMatch(/^svc_live_[0-9A-Za-z]{30}$/);
    expect(html).toContain('data-copy="new-secret"');
    expect(html).toMatch(/this once only/);

    const masked = `${key!.slice(0, 17)}…${key!.slice(-4)}`;
    let list = await (await browser.get('/settings/developers/access')).text();
    expect(list).not.toContain(key!);
    expect(list).toContain(masked);
    expect(list).toMatch(/Publishing server[\s\S]*never used/);

    server.setNow('2026-11-21T09:30:00.000Z');
    try {
      expect((await server.fetch('/public/v1/channels', { headers: { Authorization: `Bearer ${key}` } })).status).toBe(
        200,
      );
    } finally {
      server.setNow(undefined);
    }
    list = await (await browser.get('/settings/developers/access')).text();
    expect(list).toContain('2026-11-21 09:30 UTC');

    const row = await server.ctx.db
      .selectFrom('api_keys')
      .select('id')
      .where('name', '=', 'Publishing server')
      .executeTakeFirstOrThrow();
    const asked = await browser.submit(
      '/settings/developers/access',
      `/settings/developers/access/${row.id}/revoke`,
      {},
    );
    expect(await asked.text()).toContain('<h1>Revoke the key Publishing server?</h1>');
    expect((await server.fetch('/public/v1/channels', { headers: { Authorization: `Bearer ${key}` } })).status).toBe(
      200,
    );
    const revoked = await browser.submit(
      '/settings/developers/access',
      `/settings/developers/access/${row.id}/revoke`,
      { confirm: 'yes' },
    );
    expect(revoked.status).toBe(303);
    expect((await server.fetch('/public/v1/channels', { headers: { Authorization: `Bearer ${key}` } })).status).toBe(
      401,
    );
    list = await (await browser.get('/settings/developers/access')).text();
    expect(list).toMatch(/Revoked/);
  });

  it('answers 404 for another organization’s key', async () => {
    const stranger = await createOrganization(server.ctx.db, 'Stranger');
    const key = await server.ctx.db
      .selectFrom('api_keys')
      .select('id')
      .where('organization_id', '=', stranger.id)
      .executeTakeFirstOrThrow();
    const response = await browser.submit(
      '/settings/developers/access',
      `/settings/developers/access/${key.id}/revoke`,
      {},
    );
    expect(response.status).toBe(404);
    expect((await server.fetch('/public/v1/channels', { headers: stranger.auth })).status).toBe(200);
  });
});

describe('Settings → Developers → Apps', () => {
  const register = (fields: Record<string, string>) =>
    browser.submit('/settings/developers/apps', '/settings/developers/apps', {
      name: 'My App',
      description: '',
      pictureUrl: '',
      ...fields,
    });

  it('refuses redirect URLs that are not exact https URLs (or http on loopback)', async () => {
    const before = await server.ctx.db.selectFrom('oauth_apps').select('id').execute();
    for (const redirectUri of [
      'javascript:alert(1)',
      'JavaScript:alert(1)//https://x',
      'data:text/html,<script>alert(1)</script>',
      'https://app.example.org/cb#frag',
      'https://app.example.org/cb#',
      'https://*.example.org/cb',
      'https://app.example.org/*',
      'http://app.example.org/cb',
      'http://192.168.1.10/cb',
      'ftp://app.example.org/cb',
      'https://user:pass@app.example.org/cb',
      '/relative/cb',
      '',
    ]) {
      const response = await register({ redirectUri });
      expect(response.status, redirectUri).toBe(400);
      const html = await response.text();
      expect(html).toContain('role="alert"');
      expect(html).toMatch(/redirect URL/);
    }
    const picture = await register({ redirectUri: 'https://ok.example.org/cb', pictureUrl: 'javascript:alert(1)' });
    expect(picture.status).toBe(400);
    expect(await server.ctx.db.selectFrom('oauth_apps').select('id').execute()).toHaveLength(before.length);

    for (const redirectUri of [
      'http://localhost:8080/callback',
      'http://127.0.0.1/cb',
      'http://[::1]:3000/cb',
      'https://app.example.org/cb?x=1',
    ]) {
      expect((await register({ redirectUri })).status, redirectUri).toBe(201);
    }
  });

  it('shows the client id and the secret once, lets the app be edited, and hides other organizations’ apps', async () => {
    const created = await register({
      name: 'Editable',
      redirectUri: 'https://edit.example.org/cb',
      description: 'First words',
    });
    const html = await created.text();
    const secret = /id="new-secret"[^>]*value="([^"]+)"/.exec(html)?.[1];
    const clientId = /id="client-id"[^>]*value="([^"]+)"/.exec(html)?.[1];
    expect(secret).toMatch(/^pcs_[0-9A-Za-z]{30}$/);
    expect(clientId).toMatch(/^pca_[0-9A-Za-z]{24}$/);
    const app = await server.ctx.db
      .selectFrom('oauth_apps')
      .selectAll()
      .where('client_id', '=', clientId!)
      .executeTakeFirstOrThrow();
    const appPage = `/settings/developers/apps/${app.id}`;
    const shown = await (await browser.get(appPage)).text();
    expect(shown).toContain(clientId!);
    expect(shown).not.toContain(secret!);
    expect(await (await browser.get('/settings/developers/apps')).text()).not.toContain(secret!);

    const edited = await browser.submit(appPage, appPage, {
      name: 'Edited',
      description: 'New words',
      pictureUrl: '',
      redirectUri: 'https://edit.example.org/new-cb',
    });
    expect(edited.status).toBe(303);
    const after = await (await browser.get(edited.headers.get('location')!)).text();
    expect(after).toContain('Edited');
    expect(after).toContain('New words');
    expect(after).toContain('https://edit.example.org/new-cb');
    const invalid = await browser.submit(appPage, appPage, {
      name: '',
      description: '',
      pictureUrl: '',
      redirectUri: 'http://edit.example.org/cb',
    });
    expect(invalid.status).toBe(400);

    const stranger = await createOrganization(server.ctx.db, 'Other Dev');
    const { app: theirs } = await registerApp(
      server.ctx.db,
      stranger.id,
      { name: 'Theirs', description: '', pictureUrl: '', redirectUri: 'https://t.example.org/cb' },
      testPictures,
      new Date(),
    );
    expect((await browser.get(`/settings/developers/apps/${theirs.id}`)).status).toBe(404);
    expect(
      (await browser.submit(appPage, `/settings/developers/apps/${theirs.id}/delete`, { confirm: 'yes' })).status,
    ).toBe(404);
    expect((await browser.submit(appPage, `/settings/developers/apps/${theirs.id}/rotate-secret`, {})).status).toBe(
      404,
    );
    expect(await (await browser.get('/settings/developers/apps')).text()).not.toContain('Theirs');
  });
});

describe('cookies over https', () => {
  let secure: TestServer;
  beforeAll(async () => {
    secure = await startTestServer({ env: { PUBLIC_URL: 'https://scheduler.example.org' } });
  });
  afterAll(() => secure?.close());

  it('are Secure with a __Host- name when the public URL is https', async () => {
    const org = await createOrganization(secure.ctx.db, 'Secure Org');
    const visitor = new BrowserSession(secure);
    const page = await visitor.get('/login');
    expect(setCookie(page, '__Host-form')).toMatch(/Secure/);
    const html = await page.text();
    const response = await visitor.postForm('/login', {
      csrf_token: inputValue(html, 'csrf_token')!,
      email: org.email,
      password: org.password,
    });
    expect(response.status).toBe(303);
    const cookie = setCookie(response, '__Host-session')!;
    expect(cookie).toMatch(/Secure/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
  });
});
