import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserSession, inputValue } from './support/browser-session.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';

// Where log-in and sign-up send a browser afterwards (`next`): only a path of this site in the form a
// browser would resolve it to, whatever the spelling.
const FALLBACK = '/calendar';

// Each becomes another site once a browser resolves it as a Location, or could after decoding.
const ELSEWHERE = [
  '/settings/../..//evil.example',
  '/settings/%2e%2e/%2E%2E//evil.example',
  '/settings/.%2e/..//evil.example',
  '/.//evil.example',
  '/%2F%2Fevil.example',
  '/%2fevil.example/%5cx',
  '/%5C%5Cevil.example',
  '//evil.example/x',
  '/\\evil.example',
  '/\t/evil.example',
  '/ \n/evil.example',
  'https://evil.example/',
  'javascript:alert(1)',
  'evil.example',
];

// Not other sites, but not in the form a browser would go to either: refused rather than rewritten.
const UNNORMALISED = ['/settings/developers/..', '/settings/./channels', '/settings//channels/..'];

// Paths of this site as browsers send them: kept as given.
const KEPT = [
  '/settings/channels',
  '/posts?status=draft&status=scheduled#list',
  `/oauth/authorize?client_id=pca_abc&response_type=code&redirect_uri=${encodeURIComponent('https://app.example/cb?x=1')}&state=a%20b%2Fc`,
];

let server: TestServer;
let owner: TestOrganization;

beforeAll(async () => {
  server = await startTestServer({ env: { SIGNUPS_PER_ADDRESS: '1000', LOGIN_FAILURES_PER_ADDRESS: '1000' } });
  owner = await createOrganization(server.ctx.db, 'Next Org');
});
afterAll(() => server?.close());

async function logInWith(next: string): Promise<string | null> {
  const visitor = new BrowserSession(server);
  const page = await visitor.get(`/login?next=${encodeURIComponent(next)}`);
  const token = inputValue(await page.text(), 'csrf_token')!;
  const response = await visitor.postForm('/login', {
    csrf_token: token,
    email: owner.email,
    password: owner.password,
    next,
  });
  expect(response.status).toBe(303);
  return response.headers.get('location');
}

let signups = 0;
async function signUpWith(next: string): Promise<string | null> {
  const visitor = new BrowserSession(server);
  const response = await visitor.submit('/signup', '/signup', {
    email: `next-${(signups += 1)}@example.com`,
    password: 'a long enough password',
    organizationName: 'Next Studio',
    next,
  });
  expect(response.status).toBe(303);
  return response.headers.get('location');
}

describe('the next page after log-in and sign-up', () => {
  // One log-in each (a scrypt hash, slow on a busy machine), so each spelling is a test of its own.
  it.each(ELSEWHERE)('is the default page for another site, spelled %j', async (next) => {
    expect(await logInWith(next)).toBe(FALLBACK);
  });

  it.each(UNNORMALISED)(
    'is the default page for a path not written the way a browser resolves it: %j',
    async (next) => {
      expect(await logInWith(next)).toBe(FALLBACK);
    },
  );

  it.each(KEPT)(
    'is the path given when it is a plain path of this site, query and fragment included: %j',
    async (next) => {
      expect(await logInWith(next)).toBe(next);
    },
  );

  it('is checked the same way after sign-up', async () => {
    for (const next of ['/settings/../..//evil.example', '/%2F%2Fevil.example', '//evil.example']) {
      expect(await signUpWith(next), next).toBe(FALLBACK);
    }
    expect(await signUpWith(KEPT[2]!)).toBe(KEPT[2]);
  });

  it('is checked before the log-in and sign-up pages carry it on, and before a signed-in visitor is sent on', async () => {
    const visitor = new BrowserSession(server);
    await visitor.logIn(owner.email, owner.password);
    for (const next of ['/settings/../..//evil.example', '/%5C%5Cevil.example']) {
      for (const page of ['/login', '/signup']) {
        const html = await (await server.fetch(`${page}?next=${encodeURIComponent(next)}`)).text();
        expect(inputValue(html, 'next'), `${page} ${next}`).toBe(FALLBACK);
        expect(html).not.toContain('evil.example');
        const signedIn = await visitor.get(`${page}?next=${encodeURIComponent(next)}`);
        expect(signedIn.status).toBe(303);
        expect(signedIn.headers.get('location')).toBe(FALLBACK);
      }
    }
    const kept = await visitor.get(`/login?next=${encodeURIComponent(KEPT[1]!)}`);
    expect(kept.headers.get('location')).toBe(KEPT[1]);
  });
});
