import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { addChannel } from '../src/channels/channels.js';
import type { Channel } from '../src/channels/tables.js';
import { Metrics } from '../src/core/metrics.js';
import { Keyring } from '../src/crypto/keyring.js';
import { OutboundClient } from '../src/net/outbound-client.js';
import { credentialsContext } from '../src/providers/account-credentials.js';
import { AccountTokens, TokenRefreshFailedError } from '../src/providers/account-tokens.js';
import type { AccountCredentials, ConsentConnection } from '../src/providers/connection-contract.js';
import { PinterestApi } from '../src/providers/pinterest/api.js';
import { TransientPublishError } from '../src/providers/publishing-contract.js';
import { PinterestConnection } from '../src/providers/pinterest/connection.js';
import { createTestDatabase } from './support/database.js';
import { startFakePinterest, type FakePinterest } from './support/fake-pinterest.js';
import { createOrganization } from './support/fixtures.js';
import { TestClock } from './support/test-clock.js';

// Two workers refreshing one account's tokens, against the fake Pinterest, which rotates its refresh
// tokens and refuses a spent one: a refresh still in flight keeps its lease, and a worker whose refresh
// token was spent by another uses the pair that one stored.
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/pinterest';
let pinterest: FakePinterest;
let handle: Awaited<ReturnType<typeof createTestDatabase>>;
let connection: PinterestConnection;
let clock: TestClock;
let organizationId: string;
const keyring = new Keyring([{ id: 'test', key: randomBytes(32) }]);
const metrics = new Metrics();

function consent(url: string): Promise<URL> {
  return new Promise<URL>((resolve, reject) => {
    http
      .get(url, { agent: false }, (response) => {
        response.resume();
        resolve(new URL(response.headers.location!));
      })
      .on('error', reject);
  });
}

/** A channel whose access token has expired: the next use refreshes it. */
async function expiredChannel(): Promise<Channel> {
  const back = await consent(connection.authorizeUrl({ state: 'st', redirectUri: REDIRECT_URI }));
  const connected = await connection.exchangeCode({ code: back.searchParams.get('code')!, redirectUri: REDIRECT_URI });
  const credentials: AccountCredentials = {
    ...connected,
    expiresAt: new Date(clock.now().getTime() - 1000).toISOString(),
  };
  const externalId = pinterest.account.id;
  return addChannel(handle.db, {
    organization_id: organizationId,
    provider: 'pinterest',
    name: 'Acme Studio',
    username: pinterest.account.username,
    picture: null,
    external_id: `${externalId}-${randomBytes(4).toString('hex')}`,
    credentials: null,
  }).then(async (channel) => {
    const encrypted = keyring.encrypt(
      JSON.stringify(credentials),
      credentialsContext(organizationId, 'pinterest', channel.external_id!),
    );
    await handle.db.updateTable('channels').set({ credentials: encrypted }).where('id', '=', channel.id).execute();
    return { ...channel, credentials: encrypted };
  });
}

/** A worker whose token calls wait for `gate` before they leave. */
function workerHeldBy(gate: Promise<void>): AccountTokens {
  const held: ConsentConnection = Object.assign(Object.create(connection) as PinterestConnection, {
    refresh: async (credentials: AccountCredentials) => {
      await gate;
      return connection.refresh(credentials);
    },
  });
  return new AccountTokens(handle.db, keyring, held, clock, metrics);
}

const worker = () => new AccountTokens(handle.db, keyring, connection, clock, metrics);

function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

beforeAll(async () => {
  pinterest = await startFakePinterest();
  handle = await createTestDatabase();
  clock = new TestClock();
  const config = {
    appId: pinterest.appId,
    appSecret: pinterest.appSecret,
    apiUrl: pinterest.url,
    authorizeUrl: pinterest.authorizeUrl,
  };
  const outbound = new OutboundClient({
    allowPrivateAddresses: true,
    allowedRanges: [],
    idleTimeoutSeconds: 5,
    maxDurationSeconds: 60,
  });
  connection = new PinterestConnection(config, new PinterestApi(config, outbound), clock);
  organizationId = (await createOrganization(handle.db)).id;
});
afterAll(async () => {
  await handle?.close();
  await pinterest?.close();
});
beforeEach(() => {
  pinterest.refreshes.granted = 0;
  pinterest.refreshes.refused = 0;
});

describe('two workers refreshing one account', () => {
  it('leaves a refresh in flight for longer than its call may take to the worker that began it', async () => {
    const channel = await expiredChannel();
    const first = gate();
    const slow = workerHeldBy(first.opened).accessToken(channel);
    // The first worker's call to Pinterest is under way; half a minute passes, its longest.
    await expect.poll(async () => (await channelRow(channel)).refreshing_until).not.toBeNull();
    await clock.advance(31_000);
    const other = worker().accessToken(channel);
    first.open();
    const [one, two] = await Promise.all([slow, other]);
    expect(two).toBe(one);
    expect(pinterest.refreshes).toEqual({ granted: 1, refused: 0 });
    expect((await channelRow(channel)).refreshing_until).toBeNull();
  });

  it('uses the pair another worker stored when its own refresh token was spent by it', async () => {
    const channel = await expiredChannel();
    const first = gate();
    const stalled = workerHeldBy(first.opened).accessToken(channel);
    await expect.poll(async () => (await channelRow(channel)).refreshing_until).not.toBeNull();
    // The first worker stalled past its lease: another refreshes, with the same refresh token.
    await clock.advance(121_000);
    const fresh = await worker().accessToken(channel);
    first.open();
    expect(await stalled).toBe(fresh);
    expect(pinterest.refreshes).toEqual({ granted: 1, refused: 1 });
  });
});

describe('a token endpoint that fails', () => {
  it('is a passing failure the call was not made for, and lets the next worker refresh at once', async () => {
    const channel = await expiredChannel();
    const broken: ConsentConnection = Object.assign(Object.create(connection) as PinterestConnection, {
      refresh: () => Promise.reject(new Error('Pinterest answered 503')),
    });
    const failure = await new AccountTokens(handle.db, keyring, broken, clock, metrics)
      .accessToken(channel)
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TokenRefreshFailedError);
    expect(failure).toBeInstanceOf(TransientPublishError);
    expect((failure as TokenRefreshFailedError).answered).toBe(false);
    expect((failure as TokenRefreshFailedError).message).toContain('Pinterest answered 503');
    // Its lease is let go: another worker refreshes now, not two minutes later.
    expect((await channelRow(channel)).refreshing_until).toBeNull();
    expect(await worker().accessToken(channel)).not.toBe('');
    expect(pinterest.refreshes).toEqual({ granted: 1, refused: 0 });
  });
});

async function channelRow(channel: Channel) {
  return handle.db.selectFrom('channels').selectAll().where('id', '=', channel.id).executeTakeFirstOrThrow();
}
