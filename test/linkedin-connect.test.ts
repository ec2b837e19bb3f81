import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endingAccessOf } from '../src/channels/access-warnings.js';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import { keepHouse } from '../src/housekeeping.js';
import { channelCredentials } from '../src/providers/account-credentials.js';
import { LinkedInApi } from '../src/providers/linkedin/api.js';
import {
  LINKEDIN_MEMBER_SCOPES,
  LINKEDIN_ORGANIZATION_SCOPES,
  LinkedInConnection,
} from '../src/providers/linkedin/connection.js';
import { publicApi } from './support/api.js';
import { BrowserSession, decodeEntities, inputValue } from './support/browser-session.js';
import { startFakeLinkedIn, type FakeLinkedIn } from './support/fake-linkedin.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf } from './support/typed-answers.js';

// LinkedIn members and the company pages they administer, connected against the fake LinkedIn: one
// consent asking for the Community Management API's scopes too, then this server's page where the user
// chooses the member and a page (one channel each, with the member's token, encrypted); the end of access
// kept (the access token's 60 days without a refresh token, the refresh token's year with one), and the
// week-ahead warning from it.
const RETURN_URL = 'https://app.example.org/linkedin/done';
const BAKERY = 'urn:li:organization:2414183';
const DAY_MS = 86_400_000;
let linkedin: FakeLinkedIn;
let server: TestServer;
let org: TestOrganization;

beforeAll(async () => {
  linkedin = await startFakeLinkedIn({
    organizations: [
      { id: 2414183, localizedName: 'Acme Bakery', vanityName: 'acme-bakery', role: 'ADMINISTRATOR' },
      { id: 2414184, localizedName: 'Acme Shop', vanityName: 'acme-shop', role: 'ANALYST' },
    ],
  });
  server = await startTestServer({
    env: {
      LINKEDIN_CLIENT_ID: linkedin.clientId,
      LINKEDIN_CLIENT_SECRET: linkedin.clientSecret,
      LINKEDIN_COMMUNITY_MANAGEMENT: 'true',
      LINKEDIN_API_URL: linkedin.url,
      LINKEDIN_AUTH_URL: linkedin.url,
    },
  });
  org = await createOrganization(server.ctx.db, 'Acme');
  await addReturnOrigin(server.ctx.db, org.id, new URL(RETURN_URL).origin);
});
afterAll(async () => {
  await server?.close();
  await linkedin?.close();
});

const member = () => `urn:li:person:${linkedin.member.sub}`;

function channelsOf(organizationId: string) {
  return server.ctx.db
    .selectFrom('channels')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('name')
    .execute();
}

/** Starts a connection through the Public API, consents at LinkedIn, and chooses `accounts` on this server's page. */
async function connect(state: string, accounts: string[]): Promise<{ landed: URL; html: string }> {
  const body = dataOf(
    await publicApi(server, org.auth).POST('/public/v1/channels/connect', {
      body: { provider: 'linkedin', returnUrl: RETURN_URL, state },
    }),
    200,
  );
  const consent = await fetch(body.authorizationUrl, { redirect: 'manual' });
  expect(consent.status).toBe(302);
  const back = new URL(consent.headers.get('location')!);
  const browser = new BrowserSession(server);
  const callback = await browser.get(back.pathname + back.search);
  expect(callback.status).toBe(303);
  const choice = new URL(callback.headers.get('location')!);
  expect(choice.pathname).toBe('/channels/choose/linkedin');
  const page = await browser.get(choice.pathname + choice.search);
  expect(page.status).toBe(200);
  const html = await page.text();
  const own = html.slice(html.indexOf('action="/channels/choose/'));
  const form = new URLSearchParams({ csrf_token: inputValue(own, 'csrf_token')!, state: inputValue(own, 'state')! });
  for (const account of accounts) form.append('account', account);
  const chosen = await browser.request('/channels/choose/linkedin', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  });
  expect(chosen.status).toBe(303);
  return { landed: new URL(chosen.headers.get('location')!), html: decodeEntities(html) };
}

async function accessEnds(): Promise<Map<string, Date>> {
  const rows = await server.ctx.db.selectFrom('channel_access_ends').selectAll().execute();
  return new Map(rows.map((row) => [row.channel_id, row.ends_at]));
}

describe('connecting LinkedIn', () => {
  it('asks for the member’s and the pages’ scopes, then makes a channel of the member and of a page they administer', async () => {
    const body = dataOf(
      await publicApi(server, org.auth).POST('/public/v1/channels/connect', {
        body: { provider: 'linkedin', returnUrl: RETURN_URL },
      }),
      200,
    );
    const consent = new URL(body.authorizationUrl);
    expect(consent.origin + consent.pathname).toBe(`${linkedin.url}/oauth/v2/authorization`);
    expect(consent.searchParams.get('scope')!.split(' ')).toEqual([
      'openid',
      'profile',
      'w_member_social',
      'r_organization_admin',
      'w_organization_social',
      'r_organization_social',
    ]);

    const connectedAt = server.clock.now().getTime();
    const { landed, html } = await connect('user-5', [`linkedin:${member()}`, `linkedin:${BAKERY}`]);
    expect(html).toContain('Ada Lovelace');
    expect(html).toContain('Acme Bakery');
    // A page the member only reads is not among those offered.
    expect(html).not.toContain('Acme Shop');
    for (const token of linkedin.tokens) expect(html).not.toContain(token.value);

    expect(landed.origin + landed.pathname).toBe(RETURN_URL);
    expect(landed.searchParams.get('state')).toBe('user-5');
    const channels = await channelsOf(org.id);
    expect(channels.map((c) => [c.provider, c.name, c.username, c.external_id, c.status])).toEqual([
      ['linkedin', 'Acme Bakery', 'acme-bakery', BAKERY, 'active'],
      ['linkedin', 'Ada Lovelace', null, member(), 'active'],
    ]);
    expect(landed.searchParams.get('channelIds')!.split(',').toSorted()).toEqual(channels.map((c) => c.id).toSorted());
    // The member's token, encrypted at rest, for both; no refresh token from this app.
    const issued = linkedin.tokens.filter((t) => t.kind === 'access').at(-1)!;
    for (const channel of channels) {
      expect(channel.credentials).not.toContain(issued.value);
      const credentials = channelCredentials(server.ctx.keyring, channel)!;
      expect(credentials.accessToken).toBe(issued.value);
      expect(credentials.refreshToken).toBeNull();
    }
    // Access ends with the access token, 60 days on: nothing renews it.
    const ends = await accessEnds();
    for (const channel of channels)
      expect(Math.abs(ends.get(channel.id)!.getTime() - (connectedAt + 60 * DAY_MS))).toBeLessThan(60_000);
  });

  it('keeps the refresh token’s end as the end of access where LinkedIn gives refresh tokens', async () => {
    linkedin.refreshTokens(true);
    try {
      const connectedAt = server.clock.now().getTime();
      const { landed } = await connect('again', [`linkedin:${member()}`]);
      expect(landed.searchParams.get('reconnected')).toBe('true');
      const channel = (await channelsOf(org.id)).find((c) => c.external_id === member())!;
      const credentials = channelCredentials(server.ctx.keyring, channel)!;
      expect(credentials.refreshToken).toBe(linkedin.tokens.filter((t) => t.kind === 'refresh').at(-1)!.value);
      const end = (await accessEnds()).get(channel.id)!.getTime();
      expect(Math.abs(end - (connectedAt + 365 * DAY_MS))).toBeLessThan(60_000);
    } finally {
      linkedin.refreshTokens(false);
    }
  });

  it('tells the integrator the member said no when they cancel at LinkedIn, as any network’s access_denied', async () => {
    linkedin.cancelNext('user_cancelled_authorize');
    const body = dataOf(
      await publicApi(server, org.auth).POST('/public/v1/channels/connect', {
        body: { provider: 'linkedin', returnUrl: RETURN_URL, state: 'no' },
      }),
      200,
    );
    const consent = await fetch(body.authorizationUrl, { redirect: 'manual' });
    const back = new URL(consent.headers.get('location')!);
    expect(back.searchParams.get('error')).toBe('user_cancelled_authorize');
    const callback = await server.fetch(back.pathname + back.search, { redirect: 'manual' });
    const landed = new URL(callback.headers.get('location')!);
    expect(landed.origin + landed.pathname).toBe(RETURN_URL);
    expect(landed.searchParams.get('error')).toBe('access_denied');
    expect(landed.searchParams.get('state')).toBe('no');
  });

  it('asks for the member’s scopes alone when the operator’s app has no Community Management API', () => {
    const config = { ...server.ctx.config.linkedin!, communityManagement: false };
    const connection = new LinkedInConnection(config, new LinkedInApi(config, server.ctx.outbound), server.ctx.clock);
    const url = new URL(connection.authorizeUrl({ state: 's', redirectUri: 'https://x.example/cb' }));
    expect(url.searchParams.get('scope')).toBe(LINKEDIN_MEMBER_SCOPES.join(' '));
    expect(LINKEDIN_ORGANIZATION_SCOPES.every((scope) => !url.searchParams.get('scope')!.includes(scope))).toBe(true);
  });

  // Last: the server's clock goes 61 days on.
  it('warns a week before the access token’s end of the page whose access nothing renews, then asks for it again', async () => {
    // The channels warned of, with when their access ends.
    const warnings = async () => [...(await endingAccessOf(server.ctx.db, org.id)).keys()];
    await keepHouse(server.ctx);
    expect(await warnings()).toEqual([]);
    await server.clock.advance(54 * DAY_MS);
    linkedin.advanceClock(54 * 86_400);
    await keepHouse(server.ctx);
    const bakery = (await channelsOf(org.id)).find((c) => c.external_id === BAKERY)!;
    // The member, connected again with a refresh token, has a year.
    expect(await warnings()).toEqual([bakery.id]);

    // The access token's end: the page, without a refresh token, needs connecting again; the member's
    // token is refreshed, unused as it is.
    const refreshes = linkedin.tokens.filter((t) => t.kind === 'access').length;
    await server.clock.advance(7 * DAY_MS);
    linkedin.advanceClock(7 * 86_400);
    await keepHouse(server.ctx);
    const after = await channelsOf(org.id);
    expect(after.map((c) => [c.external_id, c.status])).toEqual([
      [BAKERY, 'needs_reconnect'],
      [member(), 'active'],
    ]);
    expect(linkedin.tokens.filter((t) => t.kind === 'access')).toHaveLength(refreshes + 1);
    const memberChannel = after.find((c) => c.external_id === member())!;
    expect(channelCredentials(server.ctx.keyring, memberChannel)!.accessToken).toBe(
      linkedin.tokens.filter((t) => t.kind === 'access').at(-1)!.value,
    );
  });
});
