import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/core/logger.js';
import { Keyring } from '../src/crypto/keyring.js';
import { randomBytes } from 'node:crypto';
import { channelCredentials, reencryptAccountSecrets } from '../src/providers/account-credentials.js';
import { revokeRemovedAccounts } from '../src/providers/account-revocations.js';
import { bodyOf, dataOf, publicApi } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { startFakeGoogle, youtubeEnv, type FakeGoogle } from './support/fake-google.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';

// The whole connection through HTTP as a browser makes it: this server's Connect button, the fake
// Google's consent (given at once), and the callback back here.
let google: FakeGoogle;
let server: TestServer;
let org: TestOrganization;
const logLines: string[] = [];

beforeAll(async () => {
  google = await startFakeGoogle({
    account: { channelId: 'UC_fake_channel_0001', title: 'Acme on YouTube', handle: '@acme' },
  });
  const logger = createLogger({ logLevel: 'debug' }, { write: (line: string) => void logLines.push(line) });
  server = await startTestServer({
    logger,
    env: {
      ...youtubeEnv(google),
    },
  });
  org = await createOrganization(server.ctx.db, 'Acme');
});
afterAll(async () => {
  await server?.close();
  await google?.close();
});

async function signedIn(who: TestOrganization = org): Promise<BrowserSession> {
  const session = new BrowserSession(server);
  await session.logIn(who.email, who.password);
  return session;
}

/** Clicks Connect YouTube; the address of Google's consent page it is sent to. */
async function connect(session: BrowserSession): Promise<URL> {
  const started = await session.submit('/settings/channels', '/settings/channels/connect/youtube', {});
  expect(started.status).toBe(303);
  return new URL(started.headers.get('location')!);
}

/** Google's answer: the consent page's redirect back to this server's callback. */
async function consent(authorize: URL): Promise<URL> {
  const answer = await fetch(authorize, { redirect: 'manual' });
  expect(answer.status).toBe(302);
  return new URL(answer.headers.get('location')!);
}

async function youtubeChannels() {
  return server.ctx.db
    .selectFrom('channels')
    .selectAll()
    .where('organization_id', '=', org.id)
    .where('provider', '=', 'youtube')
    .execute();
}

describe('connecting a YouTube channel in Settings → Channels', () => {
  it('sends the user to Google with offline access, PKCE and a state, and creates the channel on the way back', async () => {
    const session = await signedIn();
    const authorize = await connect(session);
    expect(authorize.origin + authorize.pathname).toBe(`${google.url}/o/oauth2/v2/auth`);
    const params = authorize.searchParams;
    expect(params.get('client_id')).toBe(google.clientId);
    expect(params.get('redirect_uri')).toBe(`${server.ctx.config.publicUrl}/channels/callback/youtube`);
    expect(params.get('response_type')).toBe('code');
    expect(params.get('access_type')).toBe('offline');
    expect(params.get('prompt')).toBe('consent');
    expect(params.get('code_challenge_method')).toBe('S256');
    expect(params.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(params.get('scope')!.split(' ')).toContain('https://www.googleapis.com/auth/youtube.upload');
    expect(params.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const back = await consent(authorize);
    const finished = await session.get(back.pathname + back.search);
    expect(finished.status).toBe(303);
    expect(finished.headers.get('location')).toBe('/settings/channels?done=connected');
    const page = await (await session.get('/settings/channels?done=connected')).text();
    expect(page).toContain('The account is connected.');
    expect(page).toContain('Acme on YouTube');

    const [channel] = await youtubeChannels();
    expect(channel).toMatchObject({
      name: 'Acme on YouTube',
      username: '@acme',
      external_id: 'UC_fake_channel_0001',
      status: 'active',
    });
    const listed = (await dataOf(publicApi(server, org.auth).GET('/public/v1/channels'), 200)).data;
    expect(listed.find((c) => c.id === channel!.id)).toMatchObject({
      provider: 'youtube',
      status: 'active',
      name: 'Acme on YouTube',
    });

    // The tokens are in the database only encrypted, bound to the channel, and in no log line.
    const credentials = channelCredentials(server.ctx.keyring, channel!)!;
    expect(credentials.accessToken.length).toBeGreaterThan(10);
    expect(credentials.refreshToken?.length).toBeGreaterThan(10);
    expect(Keyring.isEncrypted(channel!.credentials!)).toBe(true);
    for (const token of [credentials.accessToken, credentials.refreshToken!]) {
      expect(channel!.credentials).not.toContain(token);
      expect(logLines.join('\n')).not.toContain(token);
      expect(JSON.stringify(listed)).not.toContain(token);
    }
    const code = back.searchParams.get('code')!;
    const state = back.searchParams.get('state')!;
    expect(logLines.join('\n')).not.toContain(code);
    expect(logLines.join('\n')).not.toContain(state);
  });

  it('re-encrypts the tokens with a new first key, which old values still decrypt until then', async () => {
    const [channel] = await youtubeChannels();
    const before = channelCredentials(server.ctx.keyring, channel!)!;
    const rotated = new Keyring([{ id: 'next', key: randomBytes(32) }, ...server.ctx.keyring.keys]);
    expect(await reencryptAccountSecrets(server.ctx.db, rotated)).toBeGreaterThanOrEqual(1);
    const [after] = await youtubeChannels();
    expect(Keyring.keyIdOf(after!.credentials!)).toBe('next');
    expect(channelCredentials(rotated, after!)).toEqual(before);
    // Nothing is left under the old key: a second run writes nothing.
    expect(await reencryptAccountSecrets(server.ctx.db, rotated)).toBe(0);
    // Put back under the server's key for the tests that follow.
    await reencryptAccountSecrets(
      server.ctx.db,
      new Keyring([...server.ctx.keyring.keys, { id: 'next', key: rotated.keys[0]!.key }]),
    );
  });

  it('updates the channel when the same account is connected again, and refuses a replayed answer', async () => {
    const session = await signedIn();
    await server.ctx.db
      .updateTable('channels')
      .set({ status: 'needs_reconnect' })
      .where('organization_id', '=', org.id)
      .where('provider', '=', 'youtube')
      .execute();
    const back = await consent(await connect(session));
    const finished = await session.get(back.pathname + back.search);
    expect(finished.headers.get('location')).toBe('/settings/channels?done=reconnected');
    const channels = await youtubeChannels();
    expect(channels).toHaveLength(1);
    expect(channels[0]!.status).toBe('active');

    // The same answer again: single use.
    const replayed = await session.get(back.pathname + back.search);
    expect(replayed.headers.get('location')).toBe('/settings/channels?failed=unknown&network=youtube');
    expect(await youtubeChannels()).toHaveLength(1);
  });

  it('connects nothing when the user denies access on Google’s page', async () => {
    const session = await signedIn();
    const before = (await youtubeChannels()).length;
    google.deny();
    const back = await consent(await connect(session));
    expect(back.searchParams.get('error')).toBe('access_denied');
    const finished = await session.get(back.pathname + back.search);
    expect(finished.headers.get('location')).toBe('/settings/channels?failed=denied&network=youtube');
    expect(await (await session.get('/settings/channels?failed=denied&network=youtube')).text()).toContain(
      'YouTube: Access was not allowed on the network',
    );
    expect(await youtubeChannels()).toHaveLength(before);
  });

  it('finishes a connection only in the browser session that started it', async () => {
    const started = await signedIn();
    const back = await consent(await connect(started));
    // Another user's browser brings the answer back (a link sent to them, a login CSRF).
    const mallory = await createOrganization(server.ctx.db, 'Mallory');
    const other = await signedIn(mallory);
    const finished = await other.get(back.pathname + back.search);
    expect(finished.headers.get('location')).toBe('/settings/channels?failed=other_session&network=youtube');
    const theirs = await server.ctx.db
      .selectFrom('channels')
      .select('id')
      .where('organization_id', '=', mallory.id)
      .where('provider', '=', 'youtube')
      .execute();
    expect(theirs).toHaveLength(0);
    // Used up all the same: the rightful session cannot finish it later either.
    expect((await started.get(back.pathname + back.search)).headers.get('location')).toBe(
      '/settings/channels?failed=unknown&network=youtube',
    );
  });

  it('refuses a forged answer without a visitor, and a link cannot put words on the page', async () => {
    const anonymous = await server.fetch('/channels/callback/youtube?state=forged&code=x', { redirect: 'manual' });
    expect(anonymous.status).toBe(400);
    const session = await signedIn();
    const page = await (await session.get('/settings/channels?failed=Your%20account%20is%20locked')).text();
    expect(page).not.toContain('Your account is locked');
  });
});

describe('removing a connected channel', () => {
  /** Google's token endpoint's answer to refreshing with `refreshToken`. */
  const refreshAtGoogle = (refreshToken: string) =>
    fetch(`${google.url}/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        client_id: google.clientId,
        client_secret: google.clientSecret,
      }),
    });

  /**
   * The organization's YouTube channel, connected through the fake Google: of a Google account of the
   * organization's own unless `channelId` names one another organization connected too.
   */
  async function connectedChannel(owner: TestOrganization, channelId = `UC_of_${owner.id}`) {
    const session = await signedIn(owner);
    const usual = google.account.channelId;
    google.account.channelId = channelId;
    try {
      const back = await consent(await connect(session));
      expect((await session.get(back.pathname + back.search)).status).toBe(303);
    } finally {
      google.account.channelId = usual;
    }
    return server.ctx.db
      .selectFrom('channels')
      .selectAll()
      .where('organization_id', '=', owner.id)
      .where('provider', '=', 'youtube')
      .executeTakeFirstOrThrow();
  }

  it('takes the tokens off the channel at once and has Google revoke them', async () => {
    const owner = await createOrganization(server.ctx.db, 'Leavers');
    const channel = await connectedChannel(owner);
    const { refreshToken } = channelCredentials(server.ctx.keyring, channel)!;
    expect(
      (await server.fetch(`/public/v1/channels/${channel.id}`, { method: 'DELETE', headers: owner.auth })).status,
    ).toBe(204);

    const removed = await server.ctx.db
      .selectFrom('channels')
      .selectAll()
      .where('id', '=', channel.id)
      .executeTakeFirstOrThrow();
    expect(removed).toMatchObject({ status: 'removed', credentials: null });
    const waiting = await server.ctx.db
      .selectFrom('account_revocations')
      .selectAll()
      .where('organization_id', '=', owner.id)
      .execute();
    expect(waiting).toHaveLength(1);
    expect(waiting[0]!.credentials).not.toContain(refreshToken!);

    await revokeRemovedAccounts(server.ctx);
    expect(
      await server.ctx.db
        .selectFrom('account_revocations')
        .select('id')
        .where('organization_id', '=', owner.id)
        .execute(),
    ).toHaveLength(0);
    const refused = await refreshAtGoogle(refreshToken!);
    expect(refused.status).toBe(400);
    // Google's answer to a refresh with a revoked token (RFC 6749 §5.2).
    expect((await bodyOf<{ error: string }>(refused)).error).toBe('invalid_grant');
  });

  it('has Google revoke the tokens of an organization deleted with its channel connected', async () => {
    const owner = await createOrganization(server.ctx.db, 'Closing Studio');
    const channel = await connectedChannel(owner);
    const { refreshToken } = channelCredentials(server.ctx.keyring, channel)!;
    const session = await signedIn(owner);
    const deleted = await session.submit('/settings/organization/delete', '/settings/organization/delete', {
      name: 'Closing Studio',
    });
    expect(deleted.status).toBe(200);
    expect(await server.ctx.db.selectFrom('channels').select('id').where('id', '=', channel.id).execute()).toEqual([]);
    // The tokens outlive the organization, encrypted, until Google has revoked them.
    const waiting = await server.ctx.db
      .selectFrom('account_revocations')
      .selectAll()
      .where('organization_id', '=', owner.id)
      .execute();
    expect(waiting).toHaveLength(1);
    expect(waiting[0]!.credentials).not.toContain(refreshToken!);
    expect((await refreshAtGoogle(refreshToken!)).status).toBe(200);

    await revokeRemovedAccounts(server.ctx);
    expect((await refreshAtGoogle(refreshToken!)).status).toBe(400);
    expect(
      await server.ctx.db
        .selectFrom('account_revocations')
        .select('id')
        .where('organization_id', '=', owner.id)
        .execute(),
    ).toEqual([]);
  });

  it('revokes nothing of a deleted organization whose account another organization connected since', async () => {
    const first = await createOrganization(server.ctx.db, 'Started Over');
    await connectedChannel(first, 'UC_started_over');
    const session = await signedIn(first);
    const deleted = await session.submit('/settings/organization/delete', '/settings/organization/delete', {
      name: 'Started Over',
    });
    expect(deleted.status).toBe(200);
    const second = await createOrganization(server.ctx.db, 'Started Over Again');
    const { refreshToken } = channelCredentials(server.ctx.keyring, await connectedChannel(second, 'UC_started_over'))!;
    await revokeRemovedAccounts(server.ctx);
    // Revoking the old grant at Google would have ended the new one too.
    expect((await refreshAtGoogle(refreshToken!)).status).toBe(200);
    expect(
      await server.ctx.db
        .selectFrom('account_revocations')
        .select('id')
        .where('organization_id', '=', first.id)
        .execute(),
    ).toEqual([]);
  });

  it('revokes nothing when the account is connected again before housekeeping ran', async () => {
    const owner = await createOrganization(server.ctx.db, 'Returners');
    const channel = await connectedChannel(owner);
    expect(
      (await server.fetch(`/public/v1/channels/${channel.id}`, { method: 'DELETE', headers: owner.auth })).status,
    ).toBe(204);
    const again = await connectedChannel(owner);
    expect(again).toMatchObject({ id: channel.id, status: 'active' });
    expect(
      await server.ctx.db
        .selectFrom('account_revocations')
        .select('id')
        .where('organization_id', '=', owner.id)
        .execute(),
    ).toHaveLength(0);
    await revokeRemovedAccounts(server.ctx);
    const { refreshToken } = channelCredentials(server.ctx.keyring, again)!;
    expect((await refreshAtGoogle(refreshToken!)).status).toBe(200);
  });

  it('forgets a token Google no longer knows, and keeps trying one it could not reach', async () => {
    const owner = await createOrganization(server.ctx.db, 'Revokers');
    const channel = await connectedChannel(owner);
    google.revokeAll();
    expect(
      (await server.fetch(`/public/v1/channels/${channel.id}`, { method: 'DELETE', headers: owner.auth })).status,
    ).toBe(204);
    await revokeRemovedAccounts(server.ctx);
    expect(
      await server.ctx.db
        .selectFrom('account_revocations')
        .select('id')
        .where('organization_id', '=', owner.id)
        .execute(),
    ).toHaveLength(0);

    // Google unreachable: the revocation waits for a later round.
    const stranded = await createOrganization(server.ctx.db, 'Stranded');
    const other = await connectedChannel(stranded);
    expect(
      (await server.fetch(`/public/v1/channels/${other.id}`, { method: 'DELETE', headers: stranded.auth })).status,
    ).toBe(204);
    const unreachable = {
      ...server.ctx,
      providers: {
        ...server.ctx.providers,
        youtube: {
          ...server.ctx.providers.youtube,
          connection: {
            ...server.ctx.providers.youtube.connection!,
            revoke: () => Promise.reject(new Error('connect ECONNREFUSED')),
          },
        },
      },
    };
    await revokeRemovedAccounts(unreachable);
    const [left] = await server.ctx.db
      .selectFrom('account_revocations')
      .selectAll()
      .where('organization_id', '=', stranded.id)
      .execute();
    expect(left).toMatchObject({ attempts: 1 });
    expect(left!.next_attempt_at.getTime()).toBeGreaterThan(Date.now());
  });
});

describe('without a Google app', () => {
  it('shows YouTube as not configured and refuses to start a connection', async () => {
    const bare = await startTestServer();
    try {
      const owner = await createOrganization(bare.ctx.db, 'Bare');
      const session = new BrowserSession(bare);
      await session.logIn(owner.email, owner.password);
      expect(await (await session.get('/settings/channels')).text()).toContain(
        'Not configured by the operator of this server.',
      );
      const refused = await session.submit('/settings/channels', '/settings/channels/connect/youtube', {});
      expect(refused.status).toBe(422);
      expect(await refused.text()).toContain('not configured by the operator');
    } finally {
      await bare.close();
    }
  });
});
