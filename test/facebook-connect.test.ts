import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import { keepHouse } from '../src/housekeeping.js';
import { channelCredentials } from '../src/providers/account-credentials.js';
import { FACEBOOK_SCOPES, FacebookConnection, type MetaPageCredentials } from '../src/providers/facebook/connection.js';
import { GraphApi } from '../src/providers/meta/graph.js';
import { publicApi } from './support/api.js';
import { BrowserSession, decodeEntities, inputValue } from './support/browser-session.js';
import { startFakeMeta, type FakeMeta } from './support/fake-meta.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf } from './support/typed-answers.js';

// Facebook Pages and the Instagram accounts linked to them, connected through Facebook Login for Business
// against the fake Meta: one consent, then this server's page where the user chooses which accounts become
// channels (two Pages and an Instagram account here), through the Public API and in Settings → Channels; the
// checks a connection's state and browser session get on that page; nothing chosen; a Page the user may not
// publish to, shown but not offered; the user cancelling in Meta's dialog; and an Instagram channel whose
// access ended, connected again through the same flow.
const RETURN_URL = 'https://app.example.org/meta/done';
const BAKERY = '110000000000001';
const CATERING = '110000000000002';
const SHOP = '110000000000003';
const BAKERY_INSTAGRAM = '17841400000000001';
let meta: FakeMeta;
let server: TestServer;
let org: TestOrganization;

beforeAll(async () => {
  meta = await startFakeMeta({
    pages: [
      {
        id: BAKERY,
        name: 'Acme Bakery',
        username: 'acmebakery',
        category: 'Bakery',
        tasks: ['ADVERTISE', 'ANALYZE', 'CREATE_CONTENT', 'MESSAGING', 'MODERATE', 'MANAGE'],
        pictureUrl: 'https://scontent.xx.fbcdn.net/v/t39.30808-1/acme-bakery.jpg',
        instagram: {
          id: BAKERY_INSTAGRAM,
          username: 'acme.bakery',
          name: 'Acme Bakery',
          profilePictureUrl: 'https://scontent.cdninstagram.com/v/t51.2885-19/acme-bakery.jpg',
          followersCount: 1_250,
        },
      },
      {
        id: CATERING,
        name: 'Acme Catering',
        username: 'acmecatering',
        category: 'Caterer',
        tasks: ['ANALYZE', 'CREATE_CONTENT', 'MODERATE'],
        pictureUrl: 'https://scontent.xx.fbcdn.net/v/t39.30808-1/acme-catering.jpg',
        instagram: null,
      },
      {
        // The user only reads this Page's numbers: its token cannot publish.
        id: SHOP,
        name: 'Acme Shop',
        username: 'acmeshop',
        category: 'Shopping',
        tasks: ['ANALYZE'],
        pictureUrl: 'https://scontent.xx.fbcdn.net/v/t39.30808-1/acme-shop.jpg',
        instagram: null,
      },
    ],
  });
  server = await startTestServer({
    env: {
      META_APP_ID: meta.appId,
      META_APP_SECRET: meta.appSecret,
      META_GRAPH_URL: meta.url,
      META_DIALOG_URL: meta.wwwUrl,
    },
  });
  org = await createOrganization(server.ctx.db, 'Acme');
  await addReturnOrigin(server.ctx.db, org.id, new URL(RETURN_URL).origin);
});
afterAll(async () => {
  await server?.close();
  await meta?.close();
});

/** The user at Meta's dialog, allowing access (or not): where Meta sends them back, on this server. */
async function atDialog(authorizationUrl: string): Promise<string> {
  const dialog = await fetch(authorizationUrl, { redirect: 'manual' });
  expect(dialog.status).toBe(302);
  const back = new URL(dialog.headers.get('location')!);
  expect(back.origin).toBe(new URL(server.ctx.config.publicUrl).origin);
  return back.pathname + back.search;
}

/** Loads the choice page and sends its form with the accounts chosen (`facebook:{page-id}`, `instagram:{ig-id}`). */
async function choose(browser: BrowserSession, choicePath: string, accounts: string[]): Promise<Response> {
  const page = await browser.get(choicePath);
  expect(page.status).toBe(200);
  return sendChoice(browser, await page.text(), accounts);
}

/** Sends the form of a choice page the browser loaded (its own, not the layout's log-out form). */
function sendChoice(browser: BrowserSession, html: string, accounts: string[]): Promise<Response> {
  const own = html.slice(html.indexOf('action="/channels/choose/'));
  const form = new URLSearchParams({ csrf_token: inputValue(own, 'csrf_token')!, state: inputValue(own, 'state')! });
  for (const account of accounts) form.append('account', account);
  return browser.request('/channels/choose/facebook', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
  });
}

/** Where a redirect sends the browser on this server: its path and query. */
const pathOf = (response: Response) => {
  const url = new URL(response.headers.get('location')!, server.ctx.config.publicUrl);
  return url.pathname + url.search;
};

function channelsOf(organizationId: string) {
  return server.ctx.db
    .selectFrom('channels')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('provider')
    .orderBy('name')
    .execute();
}

/** Starts a connection through the Public API and follows the user to this server's choice page. */
async function connectThroughApi(state: string): Promise<{ choicePath: string; browser: BrowserSession }> {
  const body = dataOf(
    await publicApi(server, org.auth).POST('/public/v1/channels/connect', {
      body: { provider: 'facebook', returnUrl: RETURN_URL, state },
    }),
    200,
  );
  const browser = new BrowserSession(server);
  const callback = await browser.get(await atDialog(body.authorizationUrl));
  expect(callback.status).toBe(303);
  const choice = new URL(callback.headers.get('location')!);
  expect(choice.pathname).toBe('/channels/choose/facebook');
  return { choicePath: choice.pathname + choice.search, browser };
}

describe('connecting Facebook through the Public API', () => {
  it('asks Meta’s dialog for the Pages and Instagram permissions, then lets the user choose two Pages and an Instagram account', async () => {
    const body = dataOf(
      await publicApi(server, org.auth).POST('/public/v1/channels/connect', {
        body: { provider: 'facebook', returnUrl: RETURN_URL, state: 'user-77' },
      }),
      200,
    );
    const dialog = new URL(body.authorizationUrl);
    expect(dialog.origin + dialog.pathname).toBe(`${meta.wwwUrl}/v23.0/dialog/oauth`);
    expect(dialog.searchParams.get('redirect_uri')).toBe(`${server.ctx.config.publicUrl}/channels/callback/facebook`);
    expect(dialog.searchParams.get('client_id')).toBe(meta.appId);
    expect(dialog.searchParams.get('scope')!.split(',')).toEqual(FACEBOOK_SCOPES);

    const browser = new BrowserSession(server);
    const callback = await browser.get(await atDialog(body.authorizationUrl));
    const choicePath = pathOf(callback);
    // Nothing is connected before the user chooses.
    expect(await channelsOf(org.id)).toEqual([]);

    const page = await browser.get(choicePath);
    expect(page.status).toBe(200);
    const form = await page.text();
    const html = decodeEntities(form);
    expect(html).toContain('Acme Bakery');
    expect(html).toContain('acme.bakery');
    expect(html).toContain('value="facebook:110000000000001"');
    expect(html).toContain('value="facebook:110000000000002"');
    expect(html).toContain(`value="instagram:${BAKERY_INSTAGRAM}"`);
    // Shown, not offered, and why.
    expect(html).toContain('Acme Shop');
    expect(html).not.toContain(`value="facebook:${SHOP}"`);
    expect(html).toContain('your role on this Page does not let you create content on it');
    // No token of Meta's reaches the page.
    for (const token of meta.tokens) expect(html).not.toContain(token.value);
    expect(page.headers.get('content-security-policy')).toContain('https://scontent.xx.fbcdn.net');

    const chosen = await sendChoice(browser, form, [
      `facebook:${BAKERY}`,
      `facebook:${CATERING}`,
      `instagram:${BAKERY_INSTAGRAM}`,
    ]);
    expect(chosen.status).toBe(303);
    const landed = new URL(chosen.headers.get('location')!);
    expect(landed.origin + landed.pathname).toBe(RETURN_URL);
    expect(landed.searchParams.get('state')).toBe('user-77');
    expect(landed.searchParams.get('reconnected')).toBe('false');
    const channels = await channelsOf(org.id);
    expect(channels.map((c) => [c.provider, c.name, c.external_id, c.status])).toEqual([
      ['facebook', 'Acme Bakery', BAKERY, 'active'],
      ['facebook', 'Acme Catering', CATERING, 'active'],
      ['instagram', 'Acme Bakery', BAKERY_INSTAGRAM, 'active'],
    ]);
    const ids = landed.searchParams.get('channelIds')!.split(',');
    expect(ids.toSorted()).toEqual(channels.map((c) => c.id).toSorted());
    expect(landed.searchParams.get('channelId')).toBe(ids[0]);
    const listed = dataOf(await publicApi(server, org.auth).GET('/public/v1/channels')).data;
    expect(listed.find((c) => c.provider === 'instagram')).toMatchObject({
      username: 'acme.bakery',
      picture: 'https://scontent.cdninstagram.com/v/t51.2885-19/acme-bakery.jpg',
    });

    // Each channel holds its Page's token, derived from the long-lived user token; the Instagram
    // account its Page's, with the Page named.
    const longLived = meta.tokens.find((t) => t.kind === 'user' && t.longLived)!;
    const pageToken = (pageId: string) =>
      meta.tokens.find((t) => t.kind === 'page' && t.pageId === pageId && t.derivedFrom === longLived.value)!;
    const credentials = (id: string) =>
      channelCredentials(
        server.ctx.keyring,
        channels.find((c) => c.external_id === id)!,
      ) as MetaPageCredentials;
    expect(credentials(BAKERY)).toMatchObject({
      accessToken: pageToken(BAKERY).value,
      refreshToken: null,
      // A Page token does not expire: nothing is to refresh it.
      expiresAt: null,
      // A Page's videos go up with the user's token.
      facebook: { userAccessToken: longLived.value, userId: meta.user.id },
    });
    expect(credentials(BAKERY).scopes).toContain('pages_manage_posts');
    expect(credentials(CATERING).accessToken).toBe(pageToken(CATERING).value);
    expect(credentials(BAKERY_INSTAGRAM)).toMatchObject({
      accessToken: pageToken(BAKERY).value,
      expiresAt: null,
      instagram: { api: 'facebook', pageId: BAKERY },
    });
    expect(credentials(BAKERY_INSTAGRAM).facebook).toBeUndefined();
    // Their access ends when the user's data access does (90 days), a Page's when its user token does
    // if that is sooner (60 days), as Meta's /debug_token says.
    const seconds = (ms: number) => new Date(Math.floor(ms / 1000) * 1000);
    const ends = await server.ctx.db.selectFrom('channel_access_ends').selectAll().execute();
    const endOf = (externalId: string) =>
      ends.find((e) => e.channel_id === channels.find((c) => c.external_id === externalId)!.id)?.ends_at;
    expect(endOf(BAKERY)).toEqual(seconds(longLived.expiresAt!));
    expect(endOf(CATERING)).toEqual(seconds(longLived.expiresAt!));
    expect(endOf(BAKERY_INSTAGRAM)).toEqual(seconds(longLived.issuedAt + 90 * 86_400_000));
    const events = await server.ctx.db
      .selectFrom('channel_events')
      .select(['channel_id', 'type'])
      .where('organization_id', '=', org.id)
      .execute();
    expect(events.toSorted((a, b) => a.channel_id.localeCompare(b.channel_id))).toEqual(
      channels
        .map((c) => ({ channel_id: c.id, type: 'connected' }))
        .toSorted((a, b) => a.channel_id.localeCompare(b.channel_id)),
    );

    // The choice is made once.
    const again = await sendChoice(browser, form, [`facebook:${BAKERY}`]);
    expect(again.status).toBe(400);
  });

  it('shows the accounts connected already as such, and says reconnected when only those are chosen again', async () => {
    const { choicePath, browser } = await connectThroughApi('again');
    const html = await (await browser.get(choicePath)).text();
    expect(html.match(/Connected already/g)).toHaveLength(3);
    const chosen = await choose(browser, choicePath, [`facebook:${CATERING}`]);
    const landed = new URL(chosen.headers.get('location')!);
    expect(landed.searchParams.get('reconnected')).toBe('true');
    expect(landed.searchParams.get('channelIds')).toBe(landed.searchParams.get('channelId'));
    expect(await channelsOf(org.id)).toHaveLength(3);
  });

  it('connects nothing when nothing is chosen, and says so', async () => {
    const other = await createOrganization(server.ctx.db, 'Acme Nothing');
    await addReturnOrigin(server.ctx.db, other.id, new URL(RETURN_URL).origin);
    const body = dataOf(
      await publicApi(server, other.auth).POST('/public/v1/channels/connect', {
        body: { provider: 'facebook', returnUrl: RETURN_URL },
      }),
      200,
    );
    const browser = new BrowserSession(server);
    const callback = await browser.get(await atDialog(body.authorizationUrl));
    const chosen = await choose(browser, pathOf(callback), []);
    const landed = new URL(chosen.headers.get('location')!);
    expect(landed.searchParams.get('error')).toBe('access_denied');
    expect(landed.searchParams.get('errorDescription')).toBe(
      'No account was chosen, so nothing was connected; start again to choose one.',
    );
    expect(landed.searchParams.has('channelId')).toBe(false);
    expect(await channelsOf(other.id)).toEqual([]);
  });

  it('sends the user back with error=access_denied when they cancel in Meta’s dialog', async () => {
    const other = await createOrganization(server.ctx.db, 'Acme Denied');
    await addReturnOrigin(server.ctx.db, other.id, new URL(RETURN_URL).origin);
    const body = dataOf(
      await publicApi(server, other.auth).POST('/public/v1/channels/connect', {
        body: { provider: 'facebook', returnUrl: RETURN_URL, state: 's-1' },
      }),
      200,
    );
    meta.deny();
    const back = await server.fetch(await atDialog(body.authorizationUrl), { redirect: 'manual' });
    const landed = new URL(back.headers.get('location')!);
    expect(landed.origin + landed.pathname).toBe(RETURN_URL);
    expect(landed.searchParams.get('error')).toBe('access_denied');
    expect(landed.searchParams.get('state')).toBe('s-1');
    expect(await channelsOf(other.id)).toEqual([]);
  });

  it('shows, but does not offer, the accounts whose permissions the user declined in the dialog', async () => {
    meta.grantOnly(
      FACEBOOK_SCOPES.filter((scope) => scope !== 'instagram_basic' && scope !== 'instagram_content_publish'),
    );
    const { choicePath, browser } = await connectThroughApi('declined');
    const html = decodeEntities(await (await browser.get(choicePath)).text());
    expect(html).toContain(`value="facebook:${BAKERY}"`);
    expect(html).not.toContain(`value="instagram:${BAKERY_INSTAGRAM}"`);
    expect(html).toContain('Instagram account of Acme Bakery');
    expect(html).toContain('reading Instagram accounts (instagram_basic) was not allowed');
    // A choice of it anyway connects nothing of it.
    const chosen = await choose(browser, choicePath, [`instagram:${BAKERY_INSTAGRAM}`]);
    expect(new URL(chosen.headers.get('location')!).searchParams.get('error')).toBe('access_denied');
  });

  it('ends the connection at once, saying why, when nothing the user allowed can be published to', async () => {
    meta.grantOnly(
      FACEBOOK_SCOPES.filter(
        (scope) => !['pages_manage_posts', 'instagram_basic', 'instagram_content_publish'].includes(scope),
      ),
    );
    const { choicePath, browser } = await connectThroughApi('none-offered');
    const answer = await browser.get(choicePath);
    expect(answer.status).toBe(303);
    const landed = new URL(answer.headers.get('location')!);
    expect(landed.origin + landed.pathname).toBe(RETURN_URL);
    expect(landed.searchParams.get('error')).toBe('refused');
    expect(landed.searchParams.get('errorDescription')).toContain(
      'None of the accounts you allowed can be published to',
    );
    expect(landed.searchParams.get('state')).toBe('none-offered');
    // The connection is over: its page answers no more.
    expect((await browser.get(choicePath)).status).toBe(400);
  });

  it('refuses the choice once the connection’s 15 minutes are over', async () => {
    const { choicePath, browser } = await connectThroughApi('late');
    const html = await (await browser.get(choicePath)).text();
    await server.clock.advance(16 * 60_000);
    const late = await sendChoice(browser, html, [`facebook:${BAKERY}`]);
    const landed = new URL(late.headers.get('location')!);
    expect(landed.searchParams.get('error')).toBe('expired');
    expect(landed.searchParams.get('state')).toBe('late');
  });

  it('knows no choice for the state Meta sent back, nor for a state it never issued', async () => {
    const body = dataOf(
      await publicApi(server, org.auth).POST('/public/v1/channels/connect', {
        body: { provider: 'facebook', returnUrl: RETURN_URL },
      }),
      200,
    );
    const dialogState = new URL(body.authorizationUrl).searchParams.get('state')!;
    const browser = new BrowserSession(server);
    expect((await browser.get(`/channels/choose/facebook?state=${dialogState}`)).status).toBe(400);
    expect((await browser.get('/channels/choose/facebook?state=made-up')).status).toBe(400);
    expect((await browser.get('/channels/choose/x?state=made-up')).status).toBe(404);
  });
});

describe('connecting Facebook in Settings → Channels', () => {
  it('goes from Connect Facebook through Meta’s dialog to the choice page and lists the channels chosen', async () => {
    const web = await createOrganization(server.ctx.db, 'Acme Web');
    const session = new BrowserSession(server);
    await session.logIn(web.email, web.password);
    const settings = await session.get('/settings/channels');
    const html = await settings.text();
    expect(html).toContain('action="/settings/channels/connect/facebook"');
    expect(settings.headers.get('content-security-policy')).toContain(meta.wwwUrl);

    const started = await session.submit('/settings/channels', '/settings/channels/connect/facebook', {});
    expect(started.status).toBe(303);
    const callback = await session.get(await atDialog(started.headers.get('location')!));
    const choicePath = pathOf(callback);

    // Another browser (or another session of the same user) cannot finish it, and the connection is over.
    const stranger = new BrowserSession(server);
    const refused = await stranger.get(choicePath);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('another browser session');
    expect((await session.get(choicePath)).status).toBe(400);

    // Started again, and finished where it started.
    const restarted = await session.submit('/settings/channels', '/settings/channels/connect/facebook', {});
    const back = await session.get(await atDialog(restarted.headers.get('location')!));
    const chosen = await choose(session, pathOf(back), [
      `facebook:${BAKERY}`,
      `facebook:${CATERING}`,
      `instagram:${BAKERY_INSTAGRAM}`,
    ]);
    expect(chosen.headers.get('location')).toBe('/settings/channels?done=several_connected');
    const listed = await (await session.get('/settings/channels?done=several_connected')).text();
    expect(listed).toContain('The accounts you chose are connected.');
    expect((await channelsOf(web.id)).map((c) => c.external_id)).toEqual([BAKERY, CATERING, BAKERY_INSTAGRAM]);
  });

  it('says plainly that nothing was connected when nothing is chosen', async () => {
    const web = await createOrganization(server.ctx.db, 'Acme None');
    const session = new BrowserSession(server);
    await session.logIn(web.email, web.password);
    const started = await session.submit('/settings/channels', '/settings/channels/connect/facebook', {});
    const back = await session.get(await atDialog(started.headers.get('location')!));
    const chosen = await choose(session, pathOf(back), []);
    expect(chosen.headers.get('location')).toBe('/settings/channels?failed=none_chosen&network=facebook');
    const page = await (await session.get(chosen.headers.get('location')!)).text();
    expect(page).toContain('No account was chosen, so nothing was connected.');
    expect(await channelsOf(web.id)).toEqual([]);
  });

  it('connects an Instagram account whose access ended again through Facebook, updating its channel', async () => {
    const web = await createOrganization(server.ctx.db, 'Acme Reconnect');
    const session = new BrowserSession(server);
    await session.logIn(web.email, web.password);
    const started = await session.submit('/settings/channels', '/settings/channels/connect/facebook', {});
    const back = await session.get(await atDialog(started.headers.get('location')!));
    await choose(session, pathOf(back), [`instagram:${BAKERY_INSTAGRAM}`]);
    const [channel] = await channelsOf(web.id);
    const before = channelCredentials(server.ctx.keyring, channel!)!;
    await server.ctx.db
      .updateTable('channels')
      .set({ status: 'needs_reconnect' })
      .where('id', '=', channel!.id)
      .execute();
    // The user logged out of Facebook everywhere: the Page tokens of that login ended.
    meta.endTokens('logged-out');

    const settings = await (await session.get('/settings/channels')).text();
    // Its Reconnect goes through Facebook, beside Connect Facebook.
    expect(settings.match(/action="\/settings\/channels\/connect\/facebook"/g)).toHaveLength(2);
    expect(settings).toContain(`name="channel" value="${channel!.id}"`);
    const reconnect = await session.submit('/settings/channels', '/settings/channels/connect/facebook', {
      channel: channel!.id,
    });
    const again = await session.get(await atDialog(reconnect.headers.get('location')!));
    const choicePath = pathOf(again);
    expect(await (await session.get(choicePath)).text()).toContain('Connected already');
    const chosen = await choose(session, choicePath, [`instagram:${BAKERY_INSTAGRAM}`]);
    expect(chosen.headers.get('location')).toBe('/settings/channels?done=reconnected');
    const [updated] = await channelsOf(web.id);
    expect(updated).toMatchObject({ id: channel!.id, status: 'active' });
    const after = channelCredentials(server.ctx.keyring, updated!)!;
    expect(after.accessToken).not.toBe(before.accessToken);
  });
});

describe('removing a channel connected through Facebook', () => {
  it('forgets its Page token and ends nothing at Meta, where the other Pages of the login go on working', async () => {
    const web = await createOrganization(server.ctx.db, 'Acme Remove');
    const session = new BrowserSession(server);
    await session.logIn(web.email, web.password);
    const started = await session.submit('/settings/channels', '/settings/channels/connect/facebook', {});
    const back = await session.get(await atDialog(started.headers.get('location')!));
    await choose(session, pathOf(back), [`facebook:${BAKERY}`, `instagram:${BAKERY_INSTAGRAM}`]);
    const channels = await channelsOf(web.id);
    for (const channel of channels) {
      const removed = await session.submit('/settings/channels', `/settings/channels/${channel.id}/remove`, {
        confirm: 'yes',
      });
      expect(removed.headers.get('location')).toBe('/settings/channels?done=removed');
    }
    expect((await channelsOf(web.id)).map((c) => [c.status, c.credentials])).toEqual([
      ['removed', null],
      ['removed', null],
    ]);
    await keepHouse(server.ctx);
    const waiting = await server.ctx.db
      .selectFrom('account_revocations')
      .select('id')
      .where('organization_id', '=', web.id)
      .execute();
    expect(waiting).toEqual([]);
    // Revoking the user's grant would have ended every channel of the login, in every organization.
    expect(meta.requests.filter((r) => r.operation === 'revokePermissions')).toEqual([]);
    expect(meta.grants.every((grant) => !grant.removed)).toBe(true);
  });
});

describe('a channel whose data access ends', () => {
  // Last: the server's clock goes 84 days on.
  it('is warned of a week before, once, on Settings → Channels, until it is connected again', async () => {
    const warnings = () =>
      server.ctx.db
        .selectFrom('channel_events')
        .select('channel_id')
        .where('organization_id', '=', org.id)
        .where('type', '=', 'expiring')
        .execute();
    await keepHouse(server.ctx);
    expect(await warnings()).toEqual([]);

    // Meta's 90 days of data access, less six.
    await server.clock.advance(84 * 86_400_000);
    meta.advanceClock(84 * 86_400);
    await keepHouse(server.ctx);
    await keepHouse(server.ctx);
    const warned = await warnings();
    expect(warned.map((w) => w.channel_id).toSorted()).toEqual((await channelsOf(org.id)).map((c) => c.id).toSorted());
    const session = new BrowserSession(server);
    await session.logIn(org.email, org.password);
    const settings = await (await session.get('/settings/channels')).text();
    expect(settings.match(/Access ends on \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC: reconnect it before then/g)).toHaveLength(
      3,
    );

    // Connected again: its new access lasts 90 days from now, and the warning is gone for it.
    const { choicePath, browser } = await connectThroughApi('renew');
    await choose(browser, choicePath, [`facebook:${BAKERY}`]);
    await keepHouse(server.ctx);
    const after = await (await session.get('/settings/channels')).text();
    expect(after.match(/Access ends on/g)).toHaveLength(2);
    const bakery = (await channelsOf(org.id)).find((c) => c.external_id === BAKERY)!;
    expect(after.split(`data-channel-id="${bakery.id}"`)[1]!.split('</li>')[0]).not.toContain('Access ends on');
  });
});

describe('the dialog with an operator’s Login for Business configuration', () => {
  it('names the configuration instead of the permissions', () => {
    const config = {
      appId: meta.appId,
      appSecret: meta.appSecret,
      graphVersion: 'v23.0',
      graphUrl: meta.url,
      dialogUrl: meta.wwwUrl,
      loginConfigId: '987654321098765',
    };
    const connection = new FacebookConnection(
      config,
      new GraphApi({ network: 'Facebook', url: meta.url, version: 'v23.0' }, server.ctx.outbound),
      server.ctx.clock,
    );
    const url = new URL(
      connection.authorizeUrl({ state: 's', redirectUri: 'https://social.example.com/channels/callback/facebook' }),
    );
    expect(url.searchParams.get('config_id')).toBe('987654321098765');
    expect(url.searchParams.has('scope')).toBe(false);
  });
});
