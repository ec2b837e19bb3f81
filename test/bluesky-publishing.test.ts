import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { TID } from '@atproto/common-web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Channel } from '../src/channels/tables.js';
import type { Clock } from '../src/core/clock.js';
import { Keyring } from '../src/crypto/keyring.js';
import { OutboundClient } from '../src/net/outbound-client.js';
import { credentialsContext } from '../src/providers/account-credentials.js';
import { BlueskyAdapter } from '../src/providers/bluesky/adapter.js';
import { BlueskyApi } from '../src/providers/bluesky/api.js';
import { storedBlueskyCredentials } from '../src/providers/bluesky/credentials.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  TransientPublishError,
  type Outcome,
  type Progress,
  type PublicationInput,
  type PublishableMedia,
  type PublishedPart,
} from '../src/providers/publishing-contract.js';
import { mp4, png } from './support/media-samples.js';
import { startPdsProxy, type PdsProxy } from './support/pds-proxy.js';
import { startPds, type PdsAccount, type TestPds } from './support/pds.js';

// The Bluesky adapter publishing to Bluesky's reference PDS (test/support/pds.ts), driven step by step as
// the publisher drives it: each step's progress taken from the one before, the irreversible one run again
// as after a lost answer, and the network asked about a publication as after a crash.
const POST = 'app.bsky.feed.post';
const ORGANIZATION = randomUUID();
let pds: TestPds;
let outbound: OutboundClient;
let adapter: BlueskyAdapter;
const keyring = new Keyring([{ id: 'test', key: randomBytes(32) }]);
// Held still: the record keys of publications started at one instant must differ all the same.
const clock: Clock = { now: () => new Date('2026-11-27T10:00:00.000Z') };

beforeAll(async () => {
  pds = await startPds();
  // The PDS listens on loopback, which the outbound policy refuses unless told otherwise.
  outbound = new OutboundClient({
    allowPrivateAddresses: true,
    allowedRanges: [],
    idleTimeoutSeconds: 10,
    maxDurationSeconds: 30,
  });
  adapter = new BlueskyAdapter(new BlueskyApi(outbound), outbound, keyring, clock);
});
afterAll(async () => {
  outbound?.close();
  await pds?.close();
});

function channelOf(account: PdsAccount, identifier = account.handle): Channel {
  const credentials = storedBlueskyCredentials({ identifier, appPassword: account.appPassword, service: pds.url });
  return {
    id: randomUUID(),
    organization_id: ORGANIZATION,
    provider: 'bluesky',
    name: account.handle,
    username: account.handle,
    picture: null,
    status: 'active',
    external_id: account.did,
    credentials: keyring.encrypt(JSON.stringify(credentials), credentialsContext(ORGANIZATION, 'bluesky', account.did)),
    connected_at: clock.now(),
    refreshing_until: null,
    created_at: clock.now(),
  };
}

function image(bytes: Buffer, altText?: string): PublishableMedia {
  const id = randomUUID();
  return {
    id,
    fileName: `${id}.png`,
    contentType: 'image/png',
    kind: 'image',
    size: bytes.length,
    ...(altText === undefined ? {} : { altText }),
    url: `http://127.0.0.1:1/${id}`,
    open: () => Promise.resolve(Readable.from([bytes])),
  };
}

function publication(
  channel: Channel,
  content: string,
  options: {
    media?: PublishableMedia[];
    languages?: string[];
    linkCard?: boolean;
    postId?: string;
    reply?: PublicationInput['reply'];
  } = {},
): PublicationInput {
  return {
    post: {
      id: options.postId ?? randomUUID(),
      attempt: 1,
      content,
      // No card unless a test asks for one: the links of the other texts lead nowhere.
      settings: { __type: 'bluesky', languages: options.languages ?? [], linkCard: options.linkCard ?? false },
    },
    channel,
    media: options.media ?? [],
    ...(options.reply ? { reply: options.reply } : {}),
    signal: new AbortController().signal,
  };
}

/** Runs the steps from `progress` up to (not including) the irreversible one; its progress, and the steps run. */
async function untilIrreversible(input: PublicationInput, progress: Progress = adapter.start()) {
  const steps: string[] = [];
  while (!progress.irreversible) {
    steps.push(progress.step);
    const result = await adapter.run(input, progress);
    if (!('next' in result)) throw new Error(`the step ${progress.step} ended with ${JSON.stringify(result)}`);
    progress = result.next;
  }
  return { progress, steps };
}

/** Runs a publication from its first step to its outcome, as the publisher does without failures. */
async function publish(input: PublicationInput): Promise<Outcome> {
  const { progress } = await untilIrreversible(input);
  const result = await adapter.run(input, progress);
  if (!('outcome' in result)) throw new Error(`the post step ended with ${JSON.stringify(result)}`);
  return result.outcome;
}

function published(outcome: Outcome): PublishedPart {
  if (outcome.status !== 'published') throw new Error(`not published: ${JSON.stringify(outcome)}`);
  return { releaseId: outcome.releaseId, releaseUrl: outcome.releaseUrl, reference: outcome.reference ?? {} };
}

/** What a rejected promise was rejected with. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

/** The UTF-8 byte range of `part` in `text`, as a facet's index counts it. */
function bytesOf(text: string, part: string): { byteStart: number; byteEnd: number } {
  const at = text.indexOf(part);
  const byteStart = Buffer.byteLength(text.slice(0, at));
  return { byteStart, byteEnd: byteStart + Buffer.byteLength(part) };
}

describe('publishing to Bluesky', () => {
  it('publishes a text with its link, hashtag and mention as facets over their UTF-8 bytes, in its languages', async () => {
    const account = await pds.createAccount();
    const friend = await pds.createAccount();
    const text = `Café ☕ notes: https://example.com/a?b=1 #scheduling with @${friend.handle} and @nobody.test`;
    const input = publication(channelOf(account), text, { languages: ['en', 'pt-BR'] });

    const { steps, progress } = await untilIrreversible(input);
    expect(steps).toEqual(['session']);
    expect(progress.step).toBe('post');
    const outcome = await adapter.run(input, progress);
    if (!('outcome' in outcome) || outcome.outcome.status !== 'published') throw new Error('not published');
    const { releaseId, releaseUrl, reference } = outcome.outcome;

    const rkey = progress.reference.rkey as string;
    expect(TID.is(rkey)).toBe(true);
    expect(releaseId).toBe(`at://${account.did}/${POST}/${rkey}`);
    expect(releaseUrl).toBe(`https://bsky.app/profile/${account.did}/post/${rkey}`);
    const stored = await pds.getRecord(releaseId);
    expect(reference).toEqual({ cid: stored?.cid });
    expect(stored?.value).toMatchObject({
      text,
      langs: ['en', 'pt-BR'],
      createdAt: '2026-11-27T10:00:00.000Z',
    });
    // The mention of a handle that names nobody stays plain text.
    expect(stored?.value.facets).toEqual([
      {
        index: bytesOf(text, 'https://example.com/a?b=1'),
        features: [{ $type: 'app.bsky.richtext.facet#link', uri: 'https://example.com/a?b=1' }],
      },
      {
        index: bytesOf(text, '#scheduling'),
        features: [{ $type: 'app.bsky.richtext.facet#tag', tag: 'scheduling' }],
      },
      {
        index: bytesOf(text, `@${friend.handle}`),
        features: [{ $type: 'app.bsky.richtext.facet#mention', did: friend.did }],
      },
    ]);
  });

  it('shows a card of the first link of a post without images: the page’s title, description and image', async () => {
    const picture = png(6, 4, [10, 120, 200, 255]);
    const site = await startSite({
      '/article': {
        type: 'text/html; charset=utf-8',
        body:
          '<!doctype html><html><head><title>Not this title</title>' +
          '<meta property="og:title" content="Tom &amp; Jerry&#8217;s guide">' +
          "<meta name='description' content='All about &lt;scheduling&gt;.'>" +
          '<meta property="og:image" content="/pictures/card.png"></head><body>Hello</body></html>',
      },
      '/pictures/card.png': { type: 'image/png', body: picture },
    });
    try {
      const account = await pds.createAccount();
      const channel = channelOf(account);
      const text = `Read ${site.url}/article, then ${site.url}/other`;
      const input = publication(channel, text, { linkCard: true });
      expect((await untilIrreversible(input)).steps).toEqual(['session', 'card']);
      const carded = published(await publish(input));
      const embed = (await pds.getRecord(carded.releaseId))?.value.embed as {
        $type: string;
        external: { uri: string; title: string; description: string; thumb: { ref: { toString(): string } } };
      };
      expect(embed).toMatchObject({
        $type: 'app.bsky.embed.external',
        external: { uri: `${site.url}/article`, title: 'Tom & Jerry’s guide', description: 'All about <scheduling>.' },
      });
      expect(await pds.getBlob(account.did, embed.external.thumb.ref.toString())).toEqual(picture);

      // A post that asks for no card, and a link whose page cannot be read, go without one.
      const uncarded = published(await publish(publication(channel, text, { linkCard: false })));
      expect((await pds.getRecord(uncarded.releaseId))?.value.embed).toBeUndefined();
      const missing = publication(channel, `Gone: ${site.url}/missing`, { linkCard: true });
      expect((await untilIrreversible(missing)).steps).toEqual(['session', 'card']);
      const unread = published(await publish(missing));
      expect((await pds.getRecord(unread.releaseId))?.value.embed).toBeUndefined();
    } finally {
      await site.close();
    }
  });

  it('publishes 4 images with their alt texts as blobs of the account', async () => {
    const account = await pds.createAccount();
    const pictures = [
      png(4, 3, [200, 30, 30, 255]),
      png(3, 4, [30, 200, 30, 255]),
      png(5, 5, [30, 30, 200, 255]),
      png(2, 2, [9, 9, 9, 255]),
    ];
    const alts = ['A red rectangle', 'A green rectangle', 'A blue square', undefined];
    const input = publication(channelOf(account, account.did), 'Four colours', {
      media: pictures.map((bytes, i) => image(bytes, alts[i])),
    });

    const { steps } = await untilIrreversible(input);
    expect(steps).toEqual(['session', 'upload', 'upload', 'upload', 'upload']);
    const part = published(await publish(input));

    const stored = await pds.getRecord(part.releaseId);
    const embed = stored?.value.embed as {
      $type: string;
      images: {
        alt: string;
        image: { ref: { toString(): string }; mimeType: string; size: number };
        aspectRatio: { width: number; height: number };
      }[];
    };
    expect(embed.$type).toBe('app.bsky.embed.images');
    expect(embed.images.map(({ alt, image, aspectRatio }) => [alt, image.mimeType, image.size, aspectRatio])).toEqual([
      ['A red rectangle', 'image/png', pictures[0]!.length, { width: 4, height: 3 }],
      ['A green rectangle', 'image/png', pictures[1]!.length, { width: 3, height: 4 }],
      ['A blue square', 'image/png', pictures[2]!.length, { width: 5, height: 5 }],
      ['', 'image/png', pictures[3]!.length, { width: 2, height: 2 }],
    ]);
    for (const [i, { image: blob }] of embed.images.entries())
      expect(await pds.getBlob(account.did, blob.ref.toString())).toEqual(pictures[i]);
  });

  it('publishes an MP4 video with its alt text as a blob of the account, and refuses a video it cannot take', async () => {
    const account = await pds.createAccount();
    const channel = channelOf(account);
    const bytes = mp4(64 * 1024);
    const clip = (contentType: 'video/mp4' | 'video/quicktime'): PublishableMedia => ({
      ...image(bytes, 'A short clip'),
      fileName: 'clip.mp4',
      contentType,
      kind: 'video',
    });
    const input = publication(channel, 'A clip', { media: [clip('video/mp4')] });
    expect((await untilIrreversible(input)).steps).toEqual(['session', 'upload']);
    const part = published(await publish(input));
    const embed = (await pds.getRecord(part.releaseId))?.value.embed as {
      $type: string;
      alt: string;
      video: { ref: { toString(): string }; mimeType: string; size: number };
    };
    expect([embed.$type, embed.alt, embed.video.mimeType, embed.video.size]).toEqual([
      'app.bsky.embed.video',
      'A short clip',
      'video/mp4',
      bytes.length,
    ]);
    expect(await pds.getBlob(account.did, embed.video.ref.toString())).toEqual(bytes);

    const described = { ...clip('video/mp4'), altText: '🎬'.repeat(1001) };
    const refusals: [PublishableMedia[], string][] = [
      [[clip('video/quicktime')], 'as MP4'],
      [[clip('video/mp4'), image(png(2, 2), 'A square')], 'one video alone'],
      [[described], 'alt text of up to 1000 characters'],
    ];
    for (const [media, why] of refusals) {
      const refused = publication(channel, 'Not this one', { media });
      const error = await rejection(adapter.run(refused, adapter.start()));
      expect(error).toBeInstanceOf(PermanentPublishError);
      expect((error as Error).message).toContain(why);
    }
    expect(await pds.listRecords(account.did, POST)).toHaveLength(1);
  });

  it('refuses an image, or a text, larger than the lexicon allows before sending anything', async () => {
    const account = await pds.createAccount();
    const input = publication(channelOf(account), 'Too big', {
      media: [image(png(2, 2)), image(Buffer.alloc(1_000_001, 1), 'Noise')],
    });
    const error = await rejection(adapter.run(input, adapter.start()));
    expect(error).toBeInstanceOf(PermanentPublishError);
    expect((error as PermanentPublishError).code).toBe('rejected_by_network');
    expect((error as PermanentPublishError).message).toContain('up to 1000000 bytes');
    expect(await pds.listRecords(account.did, POST)).toEqual([]);

    // 300 graphemes, each a family of four: within the graphemes, over the lexicon's 3000 bytes.
    const families = publication(channelOf(account), '👨‍👩‍👧‍👦'.repeat(300));
    const long = await rejection(adapter.run(families, adapter.start()));
    expect(long).toBeInstanceOf(PermanentPublishError);
    expect((long as Error).message).toContain('up to 3000 bytes');
  });

  it('publishes a thread of 3 parts, each a reply to the one before in the thread of the first', async () => {
    const account = await pds.createAccount();
    const channel = channelOf(account);
    const postId = randomUUID();
    const first = published(await publish(publication(channel, 'Thread, part 1', { postId })));
    const second = published(
      await publish(
        publication(channel, 'Thread, part 2', {
          postId,
          media: [image(png(2, 2, [1, 2, 3, 255]), 'A dark square')],
          reply: { part: 2, parts: 3, root: first, parent: first },
        }),
      ),
    );
    const third = published(
      await publish(
        publication(channel, 'Thread, part 3', {
          postId,
          reply: { part: 3, parts: 3, root: first, parent: second },
        }),
      ),
    );

    expect(new Set([first.releaseId, second.releaseId, third.releaseId]).size).toBe(3);
    const ref = (part: PublishedPart) => ({ uri: part.releaseId, cid: part.reference.cid });
    expect((await pds.getRecord(first.releaseId))?.value.reply).toBeUndefined();
    expect((await pds.getRecord(second.releaseId))?.value.reply).toEqual({ root: ref(first), parent: ref(first) });
    expect((await pds.getRecord(third.releaseId))?.value.reply).toEqual({ root: ref(first), parent: ref(second) });
    for (const part of [first, second, third])
      expect((await pds.getRecord(part.releaseId))?.cid).toBe(part.reference.cid);
    expect((await pds.listRecords(account.did, POST)).map((post) => post.value.text)).toEqual([
      'Thread, part 3',
      'Thread, part 2',
      'Thread, part 1',
    ]);
  });

  it('publishes once when the post is sent again after a lost answer, and finds it after a crash', async () => {
    const account = await pds.createAccount();
    const channel = channelOf(account);
    const postId = randomUUID();
    const input = publication(channel, 'Sent twice, published once #once', {
      postId,
      media: [image(png(3, 3, [50, 60, 70, 255]), 'A grey square')],
    });
    const { progress } = await untilIrreversible(input);
    // Recorded before the record was sent: the network knows nothing of it yet.
    expect(await adapter.lookup(input, progress)).toEqual({ status: 'absent' });

    const sent = await adapter.run(input, progress);
    // The answer was lost: the step runs again, from the same recorded progress, and in another process
    // (its own adapter, which holds no session).
    const again = await new BlueskyAdapter(new BlueskyApi(outbound), outbound, keyring, clock).run(
      publication(channel, input.post.content, { postId, media: input.media }),
      progress,
    );
    expect(again).toEqual(sent);
    const found = await adapter.lookup(input, progress);
    expect(found).toEqual('outcome' in sent ? sent.outcome : undefined);
    // A record sent again that came out otherwise (a mention that resolves differently by now) finds the
    // one at its key, which is the publication's own; another publication's there would be refused.
    const otherwise = publication(channel, input.post.content, { postId, media: [] });
    expect(await adapter.run(otherwise, progress)).toEqual(sent);
    const another = publication(channel, 'Another post', { postId, media: input.media });
    expect(await rejection(adapter.run(another, progress))).toBeInstanceOf(PermanentPublishError);

    const records = await pds.listRecords(account.did, POST);
    expect(records.map((post) => [post.uri, post.cid])).toEqual([
      [published(found as Outcome).releaseId, published(found as Outcome).reference.cid],
    ]);
  });

  it('asks for a reconnection when the account revoked its app password', async () => {
    const account = await pds.createAccount();
    const channel = channelOf(account);
    published(await publish(publication(channel, 'Before the revocation')));

    await pds.revokeAppPassword(account, account.appPasswordName);

    const input = publication(channel, 'After the revocation');
    const error = await rejection(adapter.run(input, adapter.start()));
    expect(error).toBeInstanceOf(ReconnectNeededError);
    expect((error as Error).message).toContain('AuthenticationRequired');
    expect((await pds.listRecords(account.did, POST)).map((post) => post.value.text)).toEqual([
      'Before the revocation',
    ]);
  });
});

/** A web site on loopback serving `pages` by path; any other path is 404. */
async function startSite(pages: Record<string, { type: string; body: string | Buffer }>) {
  const server = http.createServer((request, response) => {
    const page = pages[new URL(request.url ?? '/', 'http://site').pathname];
    if (!page) {
      response.writeHead(404, { 'Content-Type': 'text/plain' });
      response.end('not found');
      return;
    }
    response.writeHead(200, { 'Content-Type': page.type });
    response.end(page.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('Bluesky’s refusals', () => {
  let proxy: PdsProxy;
  beforeAll(async () => {
    proxy = await startPdsProxy(pds);
  });
  afterAll(async () => {
    await proxy?.close();
  });

  function proxiedChannel(account: PdsAccount): Channel {
    const channel = channelOf(account);
    const credentials = storedBlueskyCredentials({
      identifier: account.handle,
      appPassword: account.appPassword,
      service: proxy.url,
    });
    const context = credentialsContext(ORGANIZATION, 'bluesky', account.did);
    return { ...channel, credentials: keyring.encrypt(JSON.stringify(credentials), context) };
  }

  it('waits until the rate limit resets after a 429, and tries again after a 5xx', async () => {
    const account = await pds.createAccount();
    const input = publication(proxiedChannel(account), 'After a wait', { media: [image(png(2, 2), 'A square')] });
    const signedIn = await adapter.run(input, adapter.start());
    if (!('next' in signedIn)) throw new Error('not signed in');
    expect(signedIn.next.reference.pds).toBe(proxy.url);

    const reset = Math.floor(clock.now().getTime() / 1000) + 42;
    proxy.refuseNext('com.atproto.repo.uploadBlob', {
      status: 429,
      error: 'RateLimitExceeded',
      headers: { 'RateLimit-Limit': '5000', 'RateLimit-Remaining': '0', 'RateLimit-Reset': String(reset) },
    });
    const limited = await rejection(adapter.run(input, signedIn.next));
    expect(limited).toBeInstanceOf(TransientPublishError);
    expect(limited).toMatchObject({ answered: true, retryAfterSeconds: 42 });

    const uploaded = await adapter.run(input, signedIn.next);
    if (!('next' in uploaded)) throw new Error('not uploaded');
    expect(uploaded.next.irreversible).toBe(true);
    proxy.refuseNext('com.atproto.repo.putRecord', { status: 502, error: 'UpstreamFailure' });
    const failed = await rejection(adapter.run(input, uploaded.next));
    expect(failed).toBeInstanceOf(TransientPublishError);
    expect(failed).toMatchObject({ answered: true, retryAfterSeconds: undefined });
    proxy.refuseNext('com.atproto.repo.getRecord', { status: 503, error: 'NotReady' });
    expect(await rejection(adapter.lookup(input, uploaded.next))).toBeInstanceOf(TransientPublishError);

    const outcome = await adapter.run(input, uploaded.next);
    expect('outcome' in outcome && outcome.outcome.status).toBe('published');
    expect(await pds.listRecords(account.did, POST)).toHaveLength(1);
  });

  it('refreshes the session when the PDS says its access token expired', async () => {
    const account = await pds.createAccount();
    const input = publication(proxiedChannel(account), 'With a refreshed session');
    const { progress } = await untilIrreversible(input);
    proxy.calls.length = 0;
    proxy.refuseNext('com.atproto.repo.putRecord', { status: 400, error: 'ExpiredToken' });

    const outcome = await adapter.run(input, progress);

    expect('outcome' in outcome && outcome.outcome.status).toBe('published');
    expect(proxy.calls).toEqual([
      'com.atproto.repo.putRecord',
      'com.atproto.server.refreshSession',
      'com.atproto.repo.putRecord',
    ]);
  });

  it('publishes nowhere this server’s outbound policy refuses', async () => {
    const account = await pds.createAccount();
    proxy.calls.length = 0;
    const strict = new OutboundClient({
      allowPrivateAddresses: false,
      allowedRanges: [],
      idleTimeoutSeconds: 10,
      maxDurationSeconds: 30,
    });
    try {
      const guarded = new BlueskyAdapter(new BlueskyApi(strict), strict, keyring, clock);
      const input = publication(proxiedChannel(account), 'To a loopback PDS');
      const error = await rejection(guarded.run(input, guarded.start()));
      expect(error).toBeInstanceOf(PermanentPublishError);
      expect((error as Error).message).toContain(`does not connect to the PDS at ${proxy.url}`);
      expect(proxy.calls.filter((call) => call === 'com.atproto.server.createSession')).toHaveLength(0);
    } finally {
      strict.close();
    }
  });
});
