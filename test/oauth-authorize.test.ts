// The authorization endpoint and consent page: cases 1–14 of the OAuth and authentication cases
// (reference/oauth-and-auth-cases.md), over HTTP with a cookie-keeping client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganizationWithOwner } from '../src/accounts/organizations.js';
import { deleteApp, registerApp, updateApp } from '../src/oauth/apps.js';
import { grantedAccess } from '../src/oauth/granted-access.js';
import { s256 } from '../src/oauth/pkce.js';
import { publicApi } from './support/api.js';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { createOAuthApp, exchange, testPictures, type TestApp } from './support/oauth.js';
import { startPictureHost } from './support/picture-host.js';
import type { RemoteServer } from './support/remote-server.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf } from './support/typed-answers.js';

let server: TestServer;
let user: TestOrganization;
let secondOrganizationId: string;
let stranger: TestOrganization;
let app: TestApp;
let otherApp: TestApp;
let browser: BrowserSession;
let pictureHost: RemoteServer;
const REDIRECT = 'https://app.example.org/oauth/callback';

/** The organization an access token acts for (`GET /public/v1/is-connected`). */
async function actingFor(token: string) {
  return dataOf(await publicApi(server, { Authorization: `Bearer ${token}` }).GET('/public/v1/is-connected'))
    .organization;
}

beforeAll(async () => {
  server = await startTestServer();
  pictureHost = await startPictureHost();
  user = await createOrganization(server.ctx.db, 'First Org');
  // The same person owns a second organization.
  const second = await createOrganizationWithOwner(server.ctx.db, {
    organizationName: 'Second Org',
    email: user.email,
    password: user.password,
  });
  secondOrganizationId = second.organization.id;
  stranger = await createOrganization(server.ctx.db, 'Stranger Org');
  const developer = await createOrganization(server.ctx.db, 'Developer Org');
  app = await createOAuthApp(server.ctx.db, developer.id, {
    redirectUri: REDIRECT,
    pictureUrl: `${pictureHost.origin}/logo.png`,
  });
  otherApp = await createOAuthApp(server.ctx.db, developer.id, {
    name: 'Other App',
    redirectUri: 'https://other.example.org/cb',
  });
  browser = new BrowserSession(server);
  await browser.logIn(user.email, user.password);
});
afterAll(async () => {
  await server?.close();
  await pictureHost?.close();
});

function authorizePath(parameters: Record<string, string> | string): string {
  const query = typeof parameters === 'string' ? parameters : new URLSearchParams(parameters).toString();
  return `/oauth/authorize?${query}`;
}

const valid = (extra: Record<string, string> = {}) => ({
  client_id: app.clientId,
  response_type: 'code',
  state: 'xyz',
  ...extra,
});

async function codeCount(): Promise<number> {
  const row = await server.ctx.db
    .selectFrom('oauth_codes')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function expectErrorPage(response: Response) {
  expect(response.status).toBe(400);
  expect(response.headers.get('location')).toBeNull();
  expect(response.headers.get('content-type')).toMatch(/^text\/html/);
  const html = await response.text();
  expect(html).toContain('This authorization link is not valid');
  return html;
}

/** Where an error redirect of the authorize endpoint goes, with its query. */
function redirectedTo(response: Response): URL {
  expect(response.status).toBe(302);
  const location = response.headers.get('location');
  expect(location).toBeTruthy();
  return new URL(location!);
}

/** Opens the consent page in the browser session and returns the form it shows. */
async function consent(session: BrowserSession, parameters: Record<string, string> | string) {
  const response = await session.get(authorizePath(parameters));
  expect(response.status).toBe(200);
  const html = await response.text();
  const form = {
    csrf_token: inputValue(html, 'csrf_token')!,
    request_id: inputValue(html, 'request_id')!,
    client_id: inputValue(html, 'client_id')!,
    organization_id: inputValue(html, 'organization_id')!,
    state: inputValue(html, 'state')!,
  };
  return { response, html, form };
}

async function answer(session: BrowserSession, form: Record<string, string>, decision: 'approve' | 'deny' = 'approve') {
  return session.postForm('/oauth/consent', { ...form, decision });
}

describe('authorize: requests that cannot be trusted show an error page and never redirect', () => {
  it('refuses a missing, repeated, unknown or deleted client_id with a 400 page', async () => {
    await expectErrorPage(await browser.get(authorizePath({ response_type: 'code', state: 's' })));
    await expectErrorPage(await browser.get(authorizePath({ client_id: '', response_type: 'code' })));
    await expectErrorPage(
      await browser.get(authorizePath(`client_id=${app.clientId}&client_id=${app.clientId}&response_type=code`)),
    );
    await expectErrorPage(await browser.get(authorizePath(valid({ client_id: 'pca_NoSuchApp000000000000000' }))));
    await expectErrorPage(await browser.get(authorizePath(valid({ client_id: 'something-else' }))));
    // Without a session too: the error comes before any log-in.
    await expectErrorPage(await new BrowserSession(server).get(authorizePath(valid({ client_id: 'pca_unknown' }))));

    const developer = await createOrganization(server.ctx.db, 'Short-lived');
    const doomed = await createOAuthApp(server.ctx.db, developer.id);
    expect((await browser.get(authorizePath(valid({ client_id: doomed.clientId })))).status).toBe(200);
    await deleteApp(server.ctx.db, developer.id, doomed.app.id);
    await expectErrorPage(await browser.get(authorizePath(valid({ client_id: doomed.clientId }))));
  });

  it('refuses a redirect_uri that is not exactly the registered one', async () => {
    for (const redirect of [
      `${REDIRECT}/`,
      'https://app.example.org:443/oauth/callback',
      'https://APP.example.org/oauth/callback',
      'http://app.example.org/oauth/callback',
      `${REDIRECT}?extra=1`,
      'https://app.example.org/oauth',
      `${REDIRECT}/deeper`,
      'https://app.example.org.evil.example/oauth/callback',
      `${REDIRECT}#fragment`,
      '',
    ]) {
      await expectErrorPage(await browser.get(authorizePath(valid({ redirect_uri: redirect }))));
    }
    await expectErrorPage(
      await browser.get(
        authorizePath(
          `${new URLSearchParams(valid()).toString()}&redirect_uri=${encodeURIComponent(REDIRECT)}&redirect_uri=${encodeURIComponent(REDIRECT)}`,
        ),
      ),
    );
    expect((await browser.get(authorizePath(valid({ redirect_uri: REDIRECT })))).status).toBe(200);
  });

  it('still refuses to redirect when an invalid redirect_uri comes with another error', async () => {
    await expectErrorPage(
      await browser.get(
        authorizePath({
          client_id: app.clientId,
          response_type: 'token',
          redirect_uri: 'https://evil.example/cb',
          state: 's',
        }),
      ),
    );
    await expectErrorPage(
      await browser.get(authorizePath({ client_id: app.clientId, redirect_uri: 'https://evil.example/cb' })),
    );
    await expectErrorPage(
      await browser.get(
        authorizePath(
          `client_id=${app.clientId}&response_type=code&response_type=code&redirect_uri=${encodeURIComponent('https://evil.example/cb')}`,
        ),
      ),
    );
    await expectErrorPage(
      await browser.get(
        authorizePath(
          valid({ redirect_uri: 'https://evil.example/cb', code_challenge_method: 'plain', code_challenge: 'x' }),
        ),
      ),
    );
  });
});

describe('authorize: errors of a known app go back to it', () => {
  it('redirects a missing or unsupported response_type with the error and the state', async () => {
    const missing = redirectedTo(await browser.get(authorizePath({ client_id: app.clientId, state: 'st-1' })));
    expect(`${missing.origin}${missing.pathname}`).toBe(REDIRECT);
    expect(missing.searchParams.get('error')).toBe('invalid_request');
    expect(missing.searchParams.get('state')).toBe('st-1');
    expect(missing.searchParams.get('iss')).toBe(server.ctx.config.publicUrl);

    for (const responseType of ['token', 'id_token', 'code token', 'CODE']) {
      const unsupported = redirectedTo(
        await browser.get(authorizePath(valid({ response_type: responseType, state: 'st-2' }))),
      );
      expect(unsupported.searchParams.get('error')).toBe('unsupported_response_type');
      expect(unsupported.searchParams.get('state')).toBe('st-2');
      expect(unsupported.searchParams.get('code')).toBeNull();
    }
  });

  it('answers invalid_request to a parameter given twice', async () => {
    for (const name of ['response_type', 'state', 'code_challenge', 'scope']) {
      const query = `${new URLSearchParams(valid({ code_challenge: s256('v'.repeat(43)), code_challenge_method: 'S256' })).toString()}&${name}=again&${name}=and-again`;
      const url = redirectedTo(await browser.get(authorizePath(query)));
      expect(url.searchParams.get('error')).toBe('invalid_request');
      expect(url.searchParams.get('error_description')).toContain(name);
    }
    // A name the link made up is not repeated back to the app, which may show the description.
    const injected = `${new URLSearchParams(valid()).toString()}&<b>Call+0800-SCAM</b>=1&<b>Call+0800-SCAM</b>=2`;
    const url = redirectedTo(await browser.get(authorizePath(injected)));
    expect(url.searchParams.get('error')).toBe('invalid_request');
    expect(url.searchParams.get('error_description')).toBe('A parameter is given more than once.');
  });

  it('refuses PKCE plain and malformed challenges with invalid_request', async () => {
    const good = s256('a-verifier-that-is-long-enough-to-be-valid-1234');
    const cases: Record<string, string>[] = [
      { code_challenge: good, code_challenge_method: 'plain' },
      { code_challenge: good, code_challenge_method: 's256' },
      { code_challenge_method: 'S256' },
      { code_challenge: 'a'.repeat(42) },
      { code_challenge: 'a'.repeat(129) },
      { code_challenge: `${'a'.repeat(42)}+` },
      { code_challenge: `${'a'.repeat(42)}=` },
      { code_challenge: `${'a'.repeat(42)}/` },
      { code_challenge: '' },
    ];
    for (const extra of cases) {
      const url = redirectedTo(await browser.get(authorizePath(valid({ state: 'pkce', ...extra }))));
      expect(url.searchParams.get('error')).toBe('invalid_request');
      expect(url.searchParams.get('state')).toBe('pkce');
    }
    expect(
      (await browser.get(authorizePath(valid({ code_challenge: good, code_challenge_method: 'S256' })))).status,
    ).toBe(200);
    // RFC 7636 reads a missing method as plain: refused, and the description names the method to send.
    const missing = redirectedTo(await browser.get(authorizePath(valid({ state: 'pkce', code_challenge: good }))));
    expect(missing.searchParams.get('error')).toBe('invalid_request');
    expect(missing.searchParams.get('error_description')).toBe(
      'The code_challenge_method parameter is missing; it must be S256.',
    );
  });
});

describe('authorize: the consent page', () => {
  it('sends a visitor without a session to log in, then back to the consent page', async () => {
    const visitor = new BrowserSession(server);
    const path = authorizePath(valid({ state: 'after-login' }));
    const first = await visitor.get(path);
    expect(first.status).toBe(302);
    const login = first.headers.get('location')!;
    expect(login).toBe(`/login?next=${encodeURIComponent(path)}`);

    const page = await visitor.get(login);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('An app is asking for access');
    // A visitor without an account follows the sign-up link and is told the same.
    const signup = await visitor.get(`/signup?next=${encodeURIComponent(path)}`);
    expect(await signup.text()).toContain('An app is asking for access');
    const loggedIn = await visitor.postForm('/login', {
      csrf_token: inputValue(html, 'csrf_token')!,
      next: inputValue(html, 'next')!,
      email: user.email,
      password: user.password,
    });
    expect(loggedIn.status).toBe(303);
    expect(loggedIn.headers.get('location')).toBe(path);

    const before = await codeCount();
    const back = await visitor.get(path);
    expect(back.status).toBe(200);
    expect(await back.text()).toContain('wants to access');
    expect(await codeCount()).toBe(before);
  });

  it('is sent with headers that forbid framing, referrers and caching', async () => {
    const { response } = await consent(browser, valid());
    const csp = response.headers.get('content-security-policy')!;
    expect(csp).toMatch(/frame-ancestors 'none'/);
    expect(csp).toMatch(/default-src 'none'/);
    // The app's picture is served from this site: the page loads nothing from the developer's server.
    expect(csp).toContain("img-src 'self';");
    expect(csp).not.toContain(pictureHost.origin);
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    expect(response.headers.get('cache-control')).toBe('no-store');
  });

  it('shows the app, the organization and what the app may do, escaped', async () => {
    const developer = await createOrganization(server.ctx.db, 'Markup Dev');
    const { app: hostile } = await registerApp(
      server.ctx.db,
      developer.id,
      {
        name: '<script>alert(1)</script>',
        description: '<img src=x onerror=alert(2)> & "quoted"',
        pictureUrl: `${pictureHost.origin}/logo.png?a="><script>alert(3)</script>`,
        redirectUri: 'https://hostile.example.org/cb',
      },
      testPictures,
      new Date(),
    );
    const { html } = await consent(browser, { client_id: hostile.client_id, response_type: 'code' });
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('&lt;img src=x onerror=alert(2)&gt; &amp; &quot;quoted&quot;');
    expect(html).toContain(
      `<img class="app-picture large" src="/oauth/apps/${hostile.client_id}/picture" alt="Picture of &lt;script&gt;alert(1)&lt;/script&gt;">`,
    );
    expect(html).not.toContain('alert(3)');
    expect(html).toContain('First Org');
    // What the token opens on this server, and only that: no network the operator did not configure.
    const granted = [
      .../<ul class="granted-access">([\s\S]*?)<\/ul>/.exec(html)![1]!.matchAll(/<li>([^<]*)<\/li>/g),
    ].map((m) => m[1]);
    expect(granted).toEqual(
      grantedAccess({ youtube: undefined, tiktok: undefined }, 'First Org').map(
        (line, i, all) => `${line}${i === all.length - 1 ? '.' : ';'}`,
      ),
    );
    expect(granted.join(' ')).toMatch(/see every post of First Org, also those written here or through other apps/);
    expect(granted.join(' ')).not.toMatch(/YouTube|TikTok/);
    expect(html).toContain('name="decision" value="approve"');
    expect(html).toContain('name="decision" value="deny"');
  });
});

describe('authorize: approve and deny', () => {
  it('redirects with 303, a code and the state; the code gives a token for the organization', async () => {
    const { form } = await consent(browser, valid({ state: 'approve-me' }));
    const response = await answer(browser, form);
    expect([302, 303]).toContain(response.status);
    const url = new URL(response.headers.get('location')!);
    expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
    expect(url.searchParams.get('state')).toBe('approve-me');
    const code = url.searchParams.get('code')!;
    expect(code).toMatch(/^pac_/);
    expect(url.searchParams.get('iss')).toBe(server.ctx.config.publicUrl);
    const token = await exchange(server, app, code);
    expect((await actingFor(token)).id).toBe(user.id);
  });

  it('returns the state byte for byte, and none when none was sent', async () => {
    for (const state of ['a&b=c', 'x#y', 'snow☃ é 𝄞 日本', '%41+plus space', 'q'.repeat(2048)]) {
      const { form } = await consent(browser, valid({ state }));
      const location = (await answer(browser, form)).headers.get('location')!;
      expect(new URL(location).searchParams.get('state')).toBe(state);
      expect(location).toContain(`state=${encodeURIComponent(state)}`);
    }
    const { client_id, response_type } = valid();
    const { form } = await consent(browser, { client_id, response_type });
    const location = (await answer(browser, form)).headers.get('location')!;
    expect(new URL(location).searchParams.has('state')).toBe(false);
    expect(new URL(location).searchParams.get('code')).toMatch(/^pac_/);
  });

  it('redirects a denial with error=access_denied and the state, issuing no code', async () => {
    const before = await codeCount();
    const { form } = await consent(browser, valid({ state: 'no thanks' }));
    const response = await answer(browser, form, 'deny');
    expect(response.status).toBe(303);
    // RFC 9207: the answer names the server that gave it, so an app can refuse a mixed-up one.
    expect(response.headers.get('location')).toBe(
      `${REDIRECT}?error=access_denied&state=no%20thanks&iss=${encodeURIComponent(server.ctx.config.publicUrl)}`,
    );
    expect(await codeCount()).toBe(before);
  });

  it('keeps a query of the registered redirect URL', async () => {
    const developer = await createOrganization(server.ctx.db, 'Query Dev');
    const withQuery = await createOAuthApp(server.ctx.db, developer.id, {
      redirectUri: 'https://q.example.org/cb?tenant=7',
    });
    const { form } = await consent(browser, { client_id: withQuery.clientId, response_type: 'code', state: 's' });
    const url = new URL((await answer(browser, form)).headers.get('location')!);
    expect(url.searchParams.get('tenant')).toBe('7');
    expect(url.searchParams.get('code')).toMatch(/^pac_/);
  });

  it('binds PKCE from the authorization request to the code', async () => {
    const verifier = 'v'.repeat(20) + 'erifier-of-forty-three-chars-plus';
    const { form } = await consent(browser, valid({ code_challenge: s256(verifier), code_challenge_method: 'S256' }));
    const code = new URL((await answer(browser, form)).headers.get('location')!).searchParams.get('code')!;
    expect(await exchange(server, app, code, { code_verifier: verifier })).toMatch(/^pos_/);
  });

  it('refuses an approval with a missing, wrong or other session’s CSRF token, issuing no code', async () => {
    const other = new BrowserSession(server);
    await other.logIn(stranger.email, stranger.password);
    const { form: otherForm } = await consent(other, valid());
    const { form } = await consent(browser, valid());
    const before = await codeCount();
    for (const csrf of [undefined, '', 'forged-token', otherForm.csrf_token]) {
      const fields: Record<string, string> = { ...form };
      if (csrf === undefined) delete fields.csrf_token;
      else fields.csrf_token = csrf;
      const response = await answer(browser, fields);
      expect(response.status).toBe(403);
      expect(response.headers.get('location')).toBeNull();
    }
    expect(await codeCount()).toBe(before);
    // The page is still answerable with its own token.
    expect((await answer(browser, form)).status).toBe(303);
  });

  it('answers 405 to an approval by GET', async () => {
    const { form } = await consent(browser, valid());
    const before = await codeCount();
    const query = new URLSearchParams({ ...form, decision: 'approve' }).toString();
    const response = await browser.get(`/oauth/consent?${query}`);
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(response.headers.get('location')).toBeNull();
    expect(await codeCount()).toBe(before);
  });

  it('refuses tampered hidden fields: what was shown is what is approved', async () => {
    const before = await codeCount();
    for (const tamper of [
      { client_id: otherApp.clientId },
      { state: 'swapped' },
      { organization_id: secondOrganizationId },
      { organization_id: stranger.id },
    ]) {
      const { form } = await consent(browser, valid({ state: 'original' }));
      const response = await answer(browser, { ...form, ...tamper });
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
    }
    // Another session's pending request cannot be answered from this one.
    const other = new BrowserSession(server);
    await other.logIn(stranger.email, stranger.password);
    const { form: theirs } = await consent(other, valid());
    const { form: mine } = await consent(browser, valid());
    const crossed = await answer(browser, { ...mine, request_id: theirs.request_id });
    expect(crossed.status).toBe(400);
    expect(await codeCount()).toBe(before);
    // A consent page is answered once.
    const { form } = await consent(browser, valid());
    expect((await answer(browser, form)).status).toBe(303);
    expect((await answer(browser, form)).status).toBe(400);
  });

  it('refuses an answer when the app’s redirect URL changed after the page named it', async () => {
    const developer = await createOrganization(server.ctx.db, 'Moving Dev');
    const moving = await createOAuthApp(server.ctx.db, developer.id, { redirectUri: 'https://before.example.org/cb' });
    const { form, html } = await consent(browser, { client_id: moving.clientId, response_type: 'code', state: 's' });
    expect(html).toContain('https://before.example.org');
    await updateApp(
      server.ctx.db,
      developer.id,
      moving.app.id,
      { name: 'Moving', description: '', pictureUrl: '', redirectUri: 'https://after.example.org/cb' },
      new Date(),
      testPictures,
    );
    const before = await codeCount();
    const response = await answer(browser, form);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await codeCount()).toBe(before);
  });

  it('authorizes the organization chosen with the switcher', async () => {
    const path = authorizePath(valid({ state: 'which-org' }));
    const first = await consent(browser, path.split('?')[1]!);
    expect(first.form.organization_id).toBe(user.id);
    expect(first.html).toContain('id="organization-switch"');

    const switched = await browser.postForm('/session/organization', {
      csrf_token: first.form.csrf_token,
      organization_id: secondOrganizationId,
      next: path,
    });
    expect(switched.status).toBe(303);
    expect(switched.headers.get('location')).toBe(path);

    const second = await consent(browser, path.split('?')[1]!);
    expect(second.form.organization_id).toBe(secondOrganizationId);
    expect(second.html).toContain('wants to access Second Org');
    // The page shown before the switch still approves what it showed.
    const code = new URL((await answer(browser, first.form)).headers.get('location')!).searchParams.get('code')!;
    const token = await exchange(server, app, code);
    expect((await actingFor(token)).id).toBe(user.id);
    const secondCode = new URL((await answer(browser, second.form)).headers.get('location')!).searchParams.get('code')!;
    const secondToken = await exchange(server, app, secondCode);
    expect((await actingFor(secondToken)).id).toBe(secondOrganizationId);
    await browser.postForm('/session/organization', {
      csrf_token: first.form.csrf_token,
      organization_id: user.id,
      next: '/',
    });
  });

  it('refuses switching organizations without the session’s CSRF token', async () => {
    const other = new BrowserSession(server);
    await other.logIn(stranger.email, stranger.password);
    const { form: theirs } = await consent(other, valid());
    for (const csrf of [undefined, 'forged', theirs.csrf_token]) {
      const fields: Record<string, string> = { organization_id: secondOrganizationId, next: '/' };
      if (csrf !== undefined) fields.csrf_token = csrf;
      const response = await browser.postForm('/session/organization', fields);
      expect(response.status).toBe(403);
    }
    const { form } = await consent(browser, valid());
    expect(form.organization_id).toBe(user.id);
  });

  it('refuses an answer from another session of the same user', async () => {
    const { form: shown } = await consent(browser, valid({ state: 'one-tab' }));
    const elsewhere = new BrowserSession(server);
    await elsewhere.logIn(user.email, user.password);
    const { form: own } = await consent(elsewhere, valid({ state: 'one-tab' }));
    const before = await codeCount();
    const response = await answer(elsewhere, { ...shown, csrf_token: own.csrf_token });
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await codeCount()).toBe(before);
  });

  it('refuses an answer once the user no longer belongs to the organization shown', async () => {
    const leaving = await createOrganization(server.ctx.db, 'Leaving Org');
    const session = new BrowserSession(server);
    await session.logIn(leaving.email, leaving.password);
    await createOrganizationWithOwner(server.ctx.db, {
      organizationName: 'Staying Org',
      email: leaving.email,
      password: leaving.password,
    });
    const { form } = await consent(session, valid());
    expect(form.organization_id).toBe(leaving.id);
    await server.ctx.db
      .deleteFrom('memberships')
      .where('organization_id', '=', leaving.id)
      .where('user_id', '=', leaving.userId)
      .execute();
    const before = await codeCount();
    const response = await answer(session, form);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(await codeCount()).toBe(before);
  });

  it('refuses switching to an organization the user does not belong to', async () => {
    const { form } = await consent(browser, valid());
    const response = await browser.postForm('/session/organization', {
      csrf_token: form.csrf_token,
      organization_id: stranger.id,
      next: '/',
    });
    expect(response.status).toBe(404);
  });
});

describe('the consent page’s list of what an app can do', () => {
  it('names the networks the operator configured, and their reads, only', () => {
    const youtube = {
      clientId: 'x',
      clientSecret: 'y',
      accountsUrl: '',
      oauthUrl: '',
      apiUrl: '',
      uploadChunkBytes: 1,
    };
    const withYouTube = grantedAccess({ youtube, tiktok: undefined }, 'Acme').join('\n');
    expect(withYouTube).toContain(
      'connect YouTube accounts to Acme (you sign in to the network yourself), and remove channels',
    );
    expect(withYouTube).not.toContain('TikTok');
    const both = grantedAccess({ youtube, tiktok: {} as never }, 'Acme').join('\n');
    expect(both).toContain('connect YouTube and TikTok accounts to Acme');
    expect(both).toContain(
      'read the creator information and the analytics (views, likes, comments and shares of recent videos) of its TikTok accounts',
    );
  });
});
