import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Channel } from '../src/channels/tables.js';
import type { XConfig } from '../src/core/config.js';
import { OutboundClient } from '../src/net/outbound-client.js';
import { ConnectionRefusedError, type AccountCredentials } from '../src/providers/connection-contract.js';
import {
  ReconnectNeededError,
  TransientPublishError,
  type Progress,
  type PublicationInput,
  type PublishableMedia,
  type StepResult,
} from '../src/providers/publishing-contract.js';
import { XAdapter } from '../src/providers/x/adapter.js';
import { rateLimitWait, XApi } from '../src/providers/x/api.js';
import { X_SCOPES, XConnection } from '../src/providers/x/connection.js';
import { XMedia } from '../src/providers/x/media.js';
import { XTimeline } from '../src/providers/x/timeline.js';
import { XTokens, type AccessTokens } from '../src/providers/x/tokens.js';
import { startFakeX, type FakeX } from './support/fake-x.js';
import { gif, jpeg, mp4, png, webp } from './support/media-samples.js';
import { TestClock } from './support/test-clock.js';

// The X adapter's parts on their own, against the fake X: the connection (OAuth 2.0 with PKCE, rotating
// refresh tokens), the media upload, posts and replies, and what happens after an answer that was lost,
// driven step by step as the publisher drives them, without a database. The publisher's own run of it
// is test/x-publishing.test.ts.
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/x';
const MB = 1024 * 1024;
let x: FakeX;
let clock: TestClock;
let connection: XConnection;
let tokens: MemoryTokens;
let adapter: XAdapter;
let channel: Channel;

/** The account's tokens, kept in memory, refreshed as AccountTokens refreshes them. */
class MemoryTokens implements AccessTokens {
  constructor(public credentials: AccountCredentials) {}

  accessToken(): Promise<string> {
    return Promise.resolve(this.credentials.accessToken);
  }

  async afterRefusal(_channel: Channel, rejected: string): Promise<string> {
    if (this.credentials.accessToken !== rejected) return this.credentials.accessToken;
    try {
      this.credentials = await connection.refresh(this.credentials);
    } catch (error) {
      if (error instanceof ConnectionRefusedError) throw new ReconnectNeededError(error.message);
      throw error;
    }
    return this.credentials.accessToken;
  }
}

/** Connects the fake's account as the callback does: consent, then the code traded for tokens. */
async function connect(): Promise<AccountCredentials> {
  const url = new URL(connection.authorizeUrl({ state: 'st', redirectUri: REDIRECT_URI, codeChallenge: CHALLENGE }));
  // A connection of its own: one kept alive from an earlier test may be closed by the fake meanwhile.
  const location = await new Promise<string>((resolve, reject) => {
    http
      .get(url, { agent: false }, (response) => {
        response.resume();
        resolve(response.headers.location!);
      })
      .on('error', reject);
  });
  const code = new URL(location).searchParams.get('code')!;
  return connection.exchangeCode({ code, redirectUri: REDIRECT_URI, codeVerifier: VERIFIER });
}
const VERIFIER = randomBytes(32).toString('base64url');
const CHALLENGE = createHash('sha256').update(VERIFIER).digest('base64url');

function mediaOf(id: string, bytes: Buffer, contentType: PublishableMedia['contentType'], altText?: string) {
  const media: PublishableMedia = {
    id,
    fileName: `${id}.${contentType.split('/')[1]}`,
    contentType,
    kind: contentType.startsWith('video/') ? 'video' : 'image',
    size: bytes.length,
    url: `http://127.0.0.1:9/media/${id}`,
    open: (range) => Promise.resolve(Readable.from([range ? bytes.subarray(range.start, range.end + 1) : bytes])),
    ...(altText ? { altText } : {}),
  };
  return media;
}

function inputOf(
  content: string,
  options: { media?: PublishableMedia[]; replyTo?: string; replySettings?: string } = {},
) {
  const input: PublicationInput = {
    post: {
      id: 'pst_1',
      attempt: 1,
      content,
      settings: { __type: 'x', replySettings: options.replySettings ?? 'everyone' },
    },
    channel,
    media: options.media ?? [],
    signal: new AbortController().signal,
  };
  if (options.replyTo) {
    const parent = { releaseId: options.replyTo, releaseUrl: null, reference: {} };
    input.reply = { part: 2, parts: 2, root: parent, parent };
  }
  return input;
}

/** How a run of steps ended: the step it stopped at, the steps run, and the result or the error. */
interface Run {
  progress: Progress;
  steps: string[];
  result?: Exclude<StepResult, { next: Progress }>;
  error?: Error;
}

/** Runs steps as the publisher does, from `progress` (the first step by default), until one leads to no other. */
async function drive(input: PublicationInput, progress: Progress = adapter.start(input)): Promise<Run> {
  const steps: string[] = [];
  for (;;) {
    steps.push(progress.step);
    let result: StepResult;
    try {
      result = await adapter.run(input, progress);
    } catch (error) {
      return { progress, steps, error: error as Error };
    }
    if (!('next' in result)) return { progress, steps, result };
    progress = result.next;
  }
}

const tweetsSent = (text: string) => x.tweets.filter((t) => t.sentText === text);

beforeAll(async () => {
  x = await startFakeX({ account: { username: 'acme', name: 'Acme on X' }, callbackUrls: [REDIRECT_URI] });
  clock = new TestClock();
  const config: XConfig = {
    clientId: x.clientId,
    clientSecret: x.clientSecret,
    apiUrl: x.url,
    authorizeUrl: x.authorizeUrl,
  };
  const outbound = new OutboundClient({
    allowPrivateAddresses: true,
    allowedRanges: [],
    idleTimeoutSeconds: 5,
    maxDurationSeconds: 60,
  });
  const api = new XApi(config, outbound);
  connection = new XConnection(config, api, clock);
  tokens = new MemoryTokens(await connect());
  const xTokens = new XTokens(tokens);
  adapter = new XAdapter(api, xTokens, new XMedia(api, xTokens, clock), new XTimeline(api, xTokens, clock), clock);
  channel = {
    id: 'ch_x',
    organization_id: 'org_x',
    provider: 'x',
    name: 'Acme on X',
    username: 'acme',
    picture: null,
    status: 'active',
    external_id: x.account.id,
    credentials: null,
    connected_at: null,
    refreshing_until: null,
    created_at: new Date(),
  };
});
afterAll(async () => {
  await x?.close();
});
beforeEach(async () => {
  // Every test on a fresh pair: one that revoked or rotated its tokens leaves none behind.
  tokens.credentials = await connect();
});

/** Moves this server's clock and X's together, as time passes for both. */
async function pass(seconds: number) {
  await clock.advance(seconds * 1000);
  x.advanceClock(seconds);
}

describe('connecting an account', () => {
  it('sends the user to X’s consent page with PKCE, trades the code with HTTP Basic, and reads who the account is', async () => {
    const url = new URL(
      connection.authorizeUrl({ state: 'the-state', redirectUri: REDIRECT_URI, codeChallenge: CHALLENGE }),
    );
    expect(url.origin + url.pathname).toBe(x.authorizeUrl);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: x.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'tweet.read tweet.write users.read media.write offline.access',
      state: 'the-state',
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
    });
    expect(connection.consentOrigin).toBe(x.url);

    const before = x.requests.length;
    const from = clock.now().getTime();
    const credentials = await connect();
    const to = clock.now().getTime();
    expect(x.requests.slice(before).find((r) => r.operation === 'token')?.auth).toBe('basic');
    const grant = x.grants.at(-1)!;
    expect(credentials).toMatchObject({
      accessToken: grant.accessTokens[0]!.value,
      refreshToken: grant.refreshTokens[0]!.value,
      scopes: X_SCOPES,
    });
    // X's access tokens live two hours.
    const expiresAt = Date.parse(credentials.expiresAt!);
    expect(expiresAt).toBeGreaterThanOrEqual(from + 7_200_000);
    expect(expiresAt).toBeLessThanOrEqual(to + 7_200_000);
    expect(await connection.identity(credentials)).toEqual({
      externalId: x.account.id,
      name: 'Acme on X',
      username: 'acme',
      picture: x.account.profileImageUrl,
    });
  });

  it('rotates refresh tokens (the one used is refused after), and revokes the grant', async () => {
    const credentials = await connect();
    const refreshed = await connection.refresh(credentials);
    expect(refreshed.refreshToken).not.toBe(credentials.refreshToken);
    expect(await connection.identity(refreshed)).toMatchObject({ externalId: x.account.id });
    await expect(connection.refresh(credentials)).rejects.toBeInstanceOf(ConnectionRefusedError);

    await connection.revoke(refreshed);
    expect(x.grants.find((g) => g.refreshTokens.some((t) => t.value === refreshed.refreshToken))?.revoked).toBe(true);
    await expect(connection.identity(refreshed)).rejects.toBeInstanceOf(ConnectionRefusedError);
    await expect(connection.refresh(refreshed)).rejects.toBeInstanceOf(ConnectionRefusedError);
  });
});

describe('posting', () => {
  it('posts a text, with the reply settings chosen, at X’s URL of the account', async () => {
    const run = await drive(inputOf('Hello from the scheduler', { replySettings: 'following' }));
    expect(run.steps).toEqual(['ready', 'post']);
    const [tweet] = tweetsSent('Hello from the scheduler');
    expect(run.result).toEqual({
      outcome: { status: 'published', releaseId: tweet!.id, releaseUrl: `https://x.com/acme/status/${tweet!.id}` },
    });
    expect(tweet).toMatchObject({ replySettings: 'following', inReplyToTweetId: null, mediaIds: [] });
  });

  it('uploads four images, each with its alt text, and posts them in order', async () => {
    const images = [
      mediaOf('med_1', png(4, 3), 'image/png', 'A red square'),
      mediaOf('med_2', jpeg(), 'image/jpeg'),
      mediaOf('med_3', webp(), 'image/webp', 'A tiny webp'),
      mediaOf('med_4', png(2, 2), 'image/png', 'Another one'),
    ];
    const run = await drive(inputOf('Four pictures', { media: images }));
    expect(run.steps).toEqual(['upload', 'describe', 'upload', 'upload', 'describe', 'upload', 'describe', 'post']);
    const [tweet] = tweetsSent('Four pictures');
    const uploaded = tweet!.mediaIds.map((id) => x.media.find((m) => m.id === id)!);
    expect(uploaded.map((m) => [m.mediaType, m.altText, m.upload])).toEqual([
      ['image/png', 'A red square', 'one-shot'],
      ['image/jpeg', null, 'one-shot'],
      ['image/webp', 'A tiny webp', 'one-shot'],
      ['image/png', 'Another one', 'one-shot'],
    ]);
    expect(x.mediaBytes(uploaded[0]!.id)).toEqual(png(4, 3));
  });

  it('uploads a video in segments, waits while X processes it, then posts it', async () => {
    // Two segments of X's: 4 MiB and the rest.
    const bytes = mp4(5 * MB);
    x.processingChecks(2);
    const input = inputOf('A video', { media: [mediaOf('med_v', bytes, 'video/mp4')] });
    const first = await drive(input);
    expect(first.steps).toEqual(['initialize', 'append', 'append', 'finalize', 'processing']);
    expect(first.result).toEqual({ pending: { checkAgainInSeconds: 1 } });
    const second = await drive(input, first.progress);
    expect(second.result).toEqual({ pending: { checkAgainInSeconds: 1 } });
    const third = await drive(input, second.progress);
    expect(third.steps).toEqual(['processing', 'post']);
    const video = x.media.find((m) => m.id === tweetsSent('A video')[0]!.mediaIds[0])!;
    expect(video).toMatchObject({ type: 'video', appended: [0, 1], state: 'succeeded', upload: 'chunked' });
    expect(x.mediaBytes(video.id)).toEqual(bytes);
    x.processingChecks(1);
  });

  it('uploads a GIF as X’s animated GIF, in segments and processed, then its alt text', async () => {
    const input = inputOf('A GIF', { media: [mediaOf('med_g', gif(), 'image/gif', 'A dancing pixel')] });
    const first = await drive(input);
    expect(first.steps).toEqual(['initialize', 'append', 'finalize', 'processing']);
    expect((await drive(input, first.progress)).steps).toEqual(['processing', 'describe', 'post']);
    const uploaded = x.media.find((m) => m.id === tweetsSent('A GIF')[0]!.mediaIds[0])!;
    expect(uploaded).toMatchObject({
      type: 'animated_gif',
      category: 'tweet_gif',
      state: 'succeeded',
      altText: 'A dancing pixel',
    });
  });

  it('posts a reply to the part before it, and a failed processing refuses the post', async () => {
    const root = await drive(inputOf('Thread, part 1'));
    const rootId = (root.result as { outcome: { releaseId: string } }).outcome.releaseId;
    const reply = await drive(inputOf('Thread, part 2', { replyTo: rootId }));
    expect(tweetsSent('Thread, part 2')[0]).toMatchObject({ inReplyToTweetId: rootId, conversationId: rootId });
    expect(reply.result).toMatchObject({ outcome: { status: 'published' } });

    x.failNextProcessing();
    x.processingChecks(0);
    const failed = await drive(inputOf('Broken video', { media: [mediaOf('med_b', mp4(MB), 'video/mp4')] }));
    expect(failed.error).toMatchObject({ code: 'rejected_by_network', message: 'X could not process the video.' });
    x.processingChecks(1);
  });
});

describe('after an answer that was lost', () => {
  it('finds the post in the account’s timeline, URLs and & < > as X shows them, and publishes it once', async () => {
    const text = 'Fish & chips <3 at https://example.com/menu/today';
    const input = inputOf(text);
    x.loseNextAnswer('createPosts');
    const lost = await drive(input);
    expect(lost.error).toBeInstanceOf(TransientPublishError);
    expect((lost.error as TransientPublishError).answered).toBe(false);
    expect(lost.progress).toMatchObject({ step: 'post', irreversible: true });
    expect(await adapter.lookup(input, lost.progress)).toEqual({
      status: 'published',
      releaseId: tweetsSent(text)[0]!.id,
      releaseUrl: `https://x.com/acme/status/${tweetsSent(text)[0]!.id}`,
    });
    expect(tweetsSent(text)).toHaveLength(1);
  });

  it('finds a lost reply with its images by the post it answers and the media it carries', async () => {
    const root = (await drive(inputOf('Root for the lost reply'))).result as { outcome: { releaseId: string } };
    const images = [mediaOf('med_a', png(2, 2), 'image/png'), mediaOf('med_b', png(3, 3), 'image/png')];
    const input = inputOf('A reply with two images', { replyTo: root.outcome.releaseId, media: images });
    x.loseNextAnswer('createPosts');
    const lost = await drive(input);
    expect(lost.steps).toEqual(['upload', 'upload', 'post']);
    const [tweet] = tweetsSent('A reply with two images');
    expect(tweet).toMatchObject({ inReplyToTweetId: root.outcome.releaseId, answerLost: true });
    expect(await adapter.lookup(input, lost.progress)).toMatchObject({ status: 'published', releaseId: tweet!.id });
    // The same text and reply with other media is not it.
    const other = { ...input, media: [images[0]!] };
    expect(
      await adapter.lookup(other, { ...lost.progress, reference: { ...lost.progress.reference, media: [] } }),
    ).toMatchObject({ status: 'pending' });
  });

  it('asks again while X’s timeline may not show the post yet, then finds it', async () => {
    x.timelineDelay(45);
    try {
      const input = inputOf('Slow to show');
      x.loseNextAnswer('createPosts');
      const lost = await drive(input);
      const early = await adapter.lookup(input, lost.progress);
      // Asked again once the call could have ended (30 s) and a minute more has passed.
      expect(early).toMatchObject({ status: 'pending' });
      expect((early as { checkAgainInSeconds: number }).checkAgainInSeconds).toBeGreaterThan(60);
      expect((early as { checkAgainInSeconds: number }).checkAgainInSeconds).toBeLessThanOrEqual(90);
      await pass(46);
      expect(await adapter.lookup(input, lost.progress)).toMatchObject({ status: 'published' });
    } finally {
      x.timelineDelay(0);
    }
  });

  it('sends the post again only once X’s timeline has long had time to show it, after a 5xx that created nothing', async () => {
    const input = inputOf('Created nothing');
    x.failNext('createPosts', 503);
    const failed = await drive(input);
    expect(failed.error).toBeInstanceOf(TransientPublishError);
    // X may answer a 5xx after creating the post: asked about like a lost answer.
    expect((failed.error as TransientPublishError).answered).toBe(false);
    expect(await adapter.lookup(input, failed.progress)).toMatchObject({ status: 'pending' });
    await pass(91);
    const absent = await adapter.lookup(input, failed.progress);
    // Sent again as a step of its own, looked for from now on.
    expect(absent).toEqual({
      status: 'absent',
      again: { ...failed.progress, reference: expect.any(Object) as object },
    });
    const sentAgain = (absent as { again: Progress }).again.reference.startedAt as string;
    expect(Date.parse(sentAgain)).toBeGreaterThanOrEqual(
      Date.parse(failed.progress.reference.startedAt as string) + 91_000,
    );
    const again = await drive(input, (absent as { again: Progress }).again);
    expect(again.result).toMatchObject({ outcome: { status: 'published' } });
    expect(tweetsSent('Created nothing')).toHaveLength(1);
  });

  it('takes X’s refusal of a duplicate for the post when the first copy was its own, found in the timeline', async () => {
    const input = inputOf('Sent twice by mistake');
    x.failNext('createPosts', 500, { applied: true });
    const failed = await drive(input);
    // As if the timeline had missed it: the step runs again, and X refuses the same text.
    const again = await drive(input, failed.progress);
    expect(again.result).toEqual({
      outcome: {
        status: 'published',
        releaseId: tweetsSent('Sent twice by mistake')[0]!.id,
        releaseUrl: expect.any(String) as string,
      },
    });
    expect(tweetsSent('Sent twice by mistake')).toHaveLength(1);

    // A duplicate of a post from before this one's step began is X's refusal, not this post.
    const old = inputOf('Said last week');
    await drive(old);
    await pass(600);
    const refused = await drive(inputOf('Said last week'));
    expect(refused.error).toMatchObject({
      code: 'rejected_by_network',
      message: expect.stringContaining('duplicate') as string,
    });
  });
});

describe('X’s refusals', () => {
  it('waits for the reset of the limit used up: the 15 minutes, or the account’s day while the 15 minutes have calls left', async () => {
    x.exhaustLimit('createPosts', '15min', 600);
    const limited = await drive(inputOf('Too soon'));
    expect(limited.error).toBeInstanceOf(TransientPublishError);
    const wait = (limited.error as TransientPublishError).retryAfterSeconds!;
    expect(wait).toBeGreaterThanOrEqual(600);
    expect(wait).toBeLessThanOrEqual(603);
    expect((limited.error as TransientPublishError).answered).toBe(true);
    await pass(wait);

    x.exhaustLimit('createPosts', 'user-24hour', 7200);
    const daily = await drive(inputOf('Too many today'));
    expect((daily.error as TransientPublishError).retryAfterSeconds).toBeGreaterThanOrEqual(7200);
    await pass(7201);
    expect((await drive(inputOf('Too many today'))).result).toMatchObject({ outcome: { status: 'published' } });
  });

  it('reads the wait from the headers of whichever window is used up', () => {
    const now = new Date('2030-01-01T00:00:00Z');
    const at = (seconds: number) => String(now.getTime() / 1000 + seconds);
    const answer = (headers: Record<string, string>) => ({ status: 429, headers, body: '' });
    expect(rateLimitWait(answer({ 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': at(300) }), now)).toBe(301);
    expect(
      rateLimitWait(
        answer({
          'x-rate-limit-remaining': '57',
          'x-rate-limit-reset': at(300),
          'x-user-limit-24hour-remaining': '0',
          'x-user-limit-24hour-reset': at(40_000),
          'x-app-limit-24hour-remaining': '12',
          'x-app-limit-24hour-reset': at(80_000),
        }),
        now,
      ),
    ).toBe(40_001);
    expect(rateLimitWait(answer({ 'x-rate-limit-reset': at(60) }), now)).toBe(61);
    expect(rateLimitWait(answer({ 'retry-after': '30' }), now)).toBe(30);
    expect(rateLimitWait(answer({}), now)).toBeUndefined();
  });

  it('refreshes a refused access token once, and says the account must be reconnected when the user removed the app', async () => {
    x.accessTokenLifetime(1);
    tokens.credentials = await connect();
    x.accessTokenLifetime(7200);
    await pass(2);
    const refreshed = await drive(inputOf('After a refresh'));
    expect(refreshed.result).toMatchObject({ outcome: { status: 'published' } });

    x.revokeAll();
    const revoked = await drive(inputOf('After the app was removed'));
    expect(revoked.error).toBeInstanceOf(ReconnectNeededError);
    expect(tweetsSent('After the app was removed')).toHaveLength(0);
  });

  it('refuses what X refuses in X’s words: a text too long', async () => {
    const run = await drive(inputOf('x'.repeat(281)));
    expect(run.error).toMatchObject({
      code: 'rejected_by_network',
      message: expect.stringContaining('Your Tweet text is too long') as string,
    });
  });
});
