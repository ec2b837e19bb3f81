import http from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Channel } from '../src/channels/tables.js';
import type { PinterestConfig } from '../src/core/config.js';
import { OutboundClient } from '../src/net/outbound-client.js';
import { ConnectionRefusedError, type AccountCredentials } from '../src/providers/connection-contract.js';
import { PinterestAdapter } from '../src/providers/pinterest/adapter.js';
import { PinterestApi } from '../src/providers/pinterest/api.js';
import { PinterestConnection } from '../src/providers/pinterest/connection.js';
import { PinterestTokens } from '../src/providers/pinterest/tokens.js';
import {
  TransientPublishError,
  type Progress,
  type PublicationInput,
  type PublishableMedia,
} from '../src/providers/publishing-contract.js';
import { startFakePinterest, type FakePinterest } from './support/fake-pinterest.js';
import { jpeg, png } from './support/media-samples.js';
import { TestClock } from './support/test-clock.js';

// The Pinterest adapter's parts on their own, against the fake Pinterest, driven step by step as the
// publisher drives them, without a database: the connection's continuous refresh, images sent as base64
// where Pinterest cannot download this server's media, the answers that make a pin wait or be asked about,
// and the look-up of a pin after a lost answer (the settling window, a pin that is not this one). The
// publisher's own run of it is test/pinterest-publishing.test.ts.
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/pinterest';
let pinterest: FakePinterest;
let clock: TestClock;
let api: PinterestApi;
let connection: PinterestConnection;
let credentials: AccountCredentials;
let channel: Channel;
let boardId: string;

const tokens = () =>
  new PinterestTokens({
    accessToken: () => Promise.resolve(credentials.accessToken),
    afterRefusal: () => Promise.resolve(credentials.accessToken),
  });
const adapterFor = (mediaReachable: boolean) => new PinterestAdapter(api, tokens(), clock, mediaReachable);

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

async function connect(): Promise<AccountCredentials> {
  const back = await consent(connection.authorizeUrl({ state: 'st', redirectUri: REDIRECT_URI }));
  return connection.exchangeCode({ code: back.searchParams.get('code')!, redirectUri: REDIRECT_URI });
}

function imageOf(name: string, bytes: Buffer, contentType: string): PublishableMedia {
  return {
    id: `med_${name}`,
    fileName: name,
    contentType: contentType as PublishableMedia['contentType'],
    kind: 'image',
    size: bytes.length,
    // Not served anywhere: a pin that used the URL would fail to download it.
    url: `http://127.0.0.1:9/${name}`,
    open: () => Promise.resolve(Readable.from([bytes])),
  };
}

function inputOf(content: string, media: PublishableMedia[], title = 'A title'): PublicationInput {
  return {
    post: { id: 'pst_1', attempt: 1, content, settings: { __type: 'pinterest', boardId, title } },
    channel,
    media,
    signal: new AbortController().signal,
  };
}

/** Runs the steps from the first until one leads to no other. */
async function drive(adapter: PinterestAdapter, input: PublicationInput) {
  let progress: Progress = adapter.start(input);
  for (;;) {
    const result = await adapter.run(input, progress);
    if (!('next' in result)) return { progress, result };
    progress = result.next;
  }
}

beforeAll(async () => {
  pinterest = await startFakePinterest();
  boardId = pinterest.addBoard({ name: 'Adapter' }).id;
  clock = new TestClock();
  const config: PinterestConfig = {
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
  api = new PinterestApi(config, outbound);
  connection = new PinterestConnection(config, api, clock);
  channel = {
    id: 'ch_pinterest',
    organization_id: 'org_pinterest',
    provider: 'pinterest',
    name: 'Acme Studio',
    username: pinterest.account.username,
    picture: null,
    status: 'active',
    external_id: pinterest.account.id,
    credentials: null,
    connected_at: null,
    refreshing_until: null,
    created_at: new Date(),
  };
});
afterAll(async () => {
  await pinterest?.close();
});
beforeEach(async () => {
  credentials = await connect();
});

describe('the connection', () => {
  it('refreshes with the continuous refresh token, which Pinterest rotates, and is refused the used one', async () => {
    const fresh = await connection.refresh(credentials);
    expect(fresh.refreshToken).not.toBe(credentials.refreshToken);
    // Pinterest's 30 days, counted from the answer (the clock runs meanwhile).
    const lasts = Date.parse(fresh.expiresAt!) - clock.now().getTime();
    expect(lasts).toBeGreaterThan(30 * 86_400_000 - 60_000);
    expect(lasts).toBeLessThanOrEqual(30 * 86_400_000);
    expect(fresh.scopes).toEqual(['boards:read', 'boards:write', 'pins:read', 'pins:write', 'user_accounts:read']);
    await expect(connection.refresh(credentials)).rejects.toBeInstanceOf(ConnectionRefusedError);
    expect(await connection.identity(fresh)).toEqual({
      externalId: pinterest.account.id,
      name: 'Acme Studio',
      username: 'acmestudio',
      picture: pinterest.account.profileImage,
    });
    await expect(connection.revoke()).rejects.toBeInstanceOf(ConnectionRefusedError);
  });
});

describe('pins where Pinterest cannot download this server’s media', () => {
  it('sends an image and a carousel as base64 in the request', async () => {
    const adapter = adapterFor(false);
    const single = await drive(adapter, inputOf('One', [imageOf('one.png', png(3), 'image/png')]));
    expect(single.result).toMatchObject({ outcome: { status: 'published' } });
    expect(pinterest.pins.at(-1)!.images).toEqual([{ bytes: png(3), contentType: 'image/png', via: 'base64' }]);
    const carousel = await drive(
      adapter,
      inputOf('Two', [imageOf('a.png', png(2), 'image/png'), imageOf('b.jpg', jpeg(), 'image/jpeg')]),
    );
    expect(carousel.result).toMatchObject({ outcome: { status: 'published' } });
    expect(pinterest.pins.at(-1)!.images.map((image) => [image.via, image.contentType])).toEqual([
      ['base64', 'image/png'],
      ['base64', 'image/jpeg'],
    ]);
  });
});

describe('answers that make a pin wait or be asked about', () => {
  it('waits for the rate limit’s reset, and takes a 5xx to the pin as an answer that may hide a pin', async () => {
    const adapter = adapterFor(false);
    const input = inputOf('Limited', [imageOf('l.png', png(2), 'image/png')]);
    pinterest.exhaustLimit('createPin', 40);
    const limited = await drive(adapter, input).catch((error: unknown) => error);
    expect(limited).toBeInstanceOf(TransientPublishError);
    // Pinterest's seconds to the window's reset, and one more.
    expect(limited).toMatchObject({ answered: true });
    expect((limited as TransientPublishError).retryAfterSeconds).toBeGreaterThan(30);
    expect((limited as TransientPublishError).retryAfterSeconds).toBeLessThanOrEqual(41);
    pinterest.advanceClock(41);
    pinterest.failNext('createPin', 502);
    const failed = await drive(adapter, input).catch((error: unknown) => error);
    expect(failed).toMatchObject({ answered: false });
  });

  it('asks again while the board may not show the pin yet, then says it is absent; another pin is not this one', async () => {
    const adapter = adapterFor(false);
    const input = inputOf('Never sent', [imageOf('n.png', png(2), 'image/png')], 'Mine');
    // Another pin of the board, with the same text but another title, is not this publication's.
    await drive(adapter, inputOf('Never sent', [imageOf('o.png', png(2), 'image/png')], 'Someone else’s'));
    const progress: Progress = {
      step: 'pin',
      reference: { startedAt: clock.now().toISOString() },
      irreversible: true,
    };
    const waiting = await adapter.lookup(input, progress);
    expect(waiting.status).toBe('pending');
    // Until a minute after the call could have ended (60 seconds): asked again then.
    expect(waiting.status === 'pending' && waiting.checkAgainInSeconds).toBeGreaterThan(100);
    expect(waiting.status === 'pending' && waiting.checkAgainInSeconds).toBeLessThanOrEqual(120);
    await clock.advance(121_000);
    pinterest.advanceClock(121);
    const absent = await adapter.lookup(input, progress);
    expect(absent).toEqual({
      status: 'absent',
      again: { step: 'pin', reference: { startedAt: expect.any(String) as string }, irreversible: true },
    });
    const sentAgain = (absent as { again: Progress }).again.reference.startedAt as string;
    expect(Date.parse(sentAgain)).toBeGreaterThanOrEqual(Date.parse(progress.reference.startedAt as string) + 121_000);

    // Sent again, as the look-up recorded it, with its answer lost: found among the board's pins.
    pinterest.loseNextAnswer('createPin');
    const again = (absent as { again: Progress }).again;
    await expect(adapter.run(input, again)).rejects.toBeInstanceOf(TransientPublishError);
    const found = await adapter.lookup(input, again);
    expect(found).toEqual({
      status: 'published',
      releaseId: pinterest.pins.at(-1)!.id,
      releaseUrl: `https://www.pinterest.com/pin/${pinterest.pins.at(-1)!.id}/`,
    });
  });

  it('looks for a pin sent again from its new sending: a second lost answer never leads to a third pin', async () => {
    const adapter = adapterFor(false);
    const input = inputOf('Lost twice', [imageOf('t.png', png(2), 'image/png')], 'Twice');
    const before = pinterest.pins.length;
    // A new pin shows among the board's pins only a while after it was made.
    pinterest.pinsShowAfter(90);
    try {
      let progress = (
        (await adapter.run(input, adapter.start(input))) as {
          next: Progress;
        }
      ).next;
      // The first sending is answered by a 5xx, which may hide a pin: the board is asked, and shows none.
      pinterest.failNext('createPin', 502);
      await expect(adapter.run(input, progress)).rejects.toBeInstanceOf(TransientPublishError);
      expect((await adapter.lookup(input, progress)).status).toBe('pending');
      await clock.advance(121_000);
      pinterest.advanceClock(121);
      const absent = await adapter.lookup(input, progress);
      expect(absent.status).toBe('absent');
      // As the publisher does: the step the look-up gives is recorded, then sent; its answer is lost.
      progress = (absent as { again: Progress }).again;
      pinterest.loseNextAnswer('createPin');
      await expect(adapter.run(input, progress)).rejects.toBeInstanceOf(TransientPublishError);
      expect(pinterest.pins).toHaveLength(before + 1);

      // Asked a little later, before the board shows the new pin: waited for, not sent a third time.
      await clock.advance(30_000);
      pinterest.advanceClock(30);
      const waiting = await adapter.lookup(input, progress);
      expect(waiting.status).toBe('pending');
      await clock.advance(100_000);
      pinterest.advanceClock(100);
      expect(await adapter.lookup(input, progress)).toMatchObject({
        status: 'published',
        releaseId: pinterest.pins.at(-1)!.id,
      });
      expect(pinterest.pins).toHaveLength(before + 1);
    } finally {
      pinterest.pinsShowAfter(0);
    }
  });

  it('cannot tell which pin is this one when two match, and leaves out a pin recorded for another post', async () => {
    const adapter = adapterFor(false);
    const input = inputOf('Made twice', [imageOf('d.png', png(2), 'image/png')], 'Twice made');
    const progress: Progress = { step: 'pin', reference: { startedAt: clock.now().toISOString() }, irreversible: true };
    await drive(adapter, input);
    const first = pinterest.pins.at(-1)!.id;
    await drive(adapter, input);
    const other = pinterest.pins.at(-1)!.id;
    expect(other).not.toBe(first);
    const found = await adapter.lookup(input, progress);
    expect(found).toMatchObject({ status: 'unknown' });
    expect(found.status === 'unknown' && found.message).toContain(first);
    // One of them is another post's, as the ledger says: the other is this one.
    const released = (ids: string[]) => Promise.resolve(new Set(ids.filter((id) => id === other)));
    expect(await adapter.lookup({ ...input, released }, progress)).toMatchObject({
      status: 'published',
      releaseId: first,
    });
  });

  it('reads every page of the board, whatever its order, to find a pin whose answer was lost', async () => {
    const adapter = adapterFor(false);
    const board = pinterest.addBoard({ name: 'Oldest first' }).id;
    // Older pins of the board, more than a page of them, listed before the new one.
    const long = Date.now() - 30 * 86_400_000;
    for (let i = 0; i < 260; i += 1)
      pinterest.pins.push({
        ...pinterest.pins.at(-1)!,
        id: `9${String(i).padStart(17, '0')}`,
        boardId: board,
        title: `Older ${i}`,
        createdAt: long + i,
      });
    const base = inputOf('Listed last', [imageOf('z.png', png(2), 'image/png')], 'Last');
    const input = { ...base, post: { ...base.post, settings: { __type: 'pinterest', boardId: board, title: 'Last' } } };
    pinterest.listPinsOldestFirst(true);
    try {
      const ready = (await adapter.run(input, adapter.start(input))) as { next: Progress };
      pinterest.loseNextAnswer('createPin');
      await expect(adapter.run(input, ready.next)).rejects.toBeInstanceOf(TransientPublishError);
      await clock.advance(121_000);
      pinterest.advanceClock(121);
      expect(await adapter.lookup(input, ready.next)).toMatchObject({
        status: 'published',
        releaseId: pinterest.pins.at(-1)!.id,
      });
    } finally {
      pinterest.listPinsOldestFirst(false);
    }
  });
});
