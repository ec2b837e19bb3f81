import { randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Channel } from '../src/channels/tables.js';
import { Keyring } from '../src/crypto/keyring.js';
import { OutboundClient } from '../src/net/outbound-client.js';
import { credentialsContext } from '../src/providers/account-credentials.js';
import { FacebookAdapter } from '../src/providers/facebook/adapter.js';
import type { StoredFacebookCredentials } from '../src/providers/facebook/credentials.js';
import { GraphApi, publishErrorOf } from '../src/providers/meta/graph.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  TransientPublishError,
  type Outcome,
  type Progress,
  type PublicationInput,
  type PublishableMedia,
  type StepResult,
} from '../src/providers/publishing-contract.js';
import { pageCredentials } from './support/facebook-page.js';
import { startFakeMeta, type FakeMeta } from './support/fake-meta.js';
import { jpeg, mp4, png } from './support/media-samples.js';
import { TestClock } from './support/test-clock.js';

// The Facebook Pages adapter against the fake Meta, driven step by step as the publisher drives it,
// without a database: a post with a link, photos (one published at once; several uploaded unpublished,
// then attached), a video through the Resumable Upload API resumed after a cut transfer, a first comment,
// what happens after an answer that was lost, and how Meta's errors are read (src/providers/meta/graph.ts).
const ORGANIZATION = 'org_facebook';
const PAGE = '110000000000001';
const keyring = new Keyring([{ id: 'test', key: randomBytes(32) }]);
const outbound = new OutboundClient({
  allowPrivateAddresses: true,
  allowedRanges: [],
  idleTimeoutSeconds: 5,
  maxDurationSeconds: 60,
});
let meta: FakeMeta;
let clock: TestClock;
let graph: GraphApi;
let adapter: FacebookAdapter;
let channel: Channel;

function channelOf(credentials: StoredFacebookCredentials): Channel {
  return {
    id: randomUUID(),
    organization_id: ORGANIZATION,
    provider: 'facebook',
    name: 'Acme Bakery',
    username: 'acmebakery',
    picture: null,
    status: 'active',
    external_id: PAGE,
    credentials: keyring.encrypt(JSON.stringify(credentials), credentialsContext(ORGANIZATION, 'facebook', PAGE)),
    connected_at: clock.now(),
    refreshing_until: null,
    created_at: clock.now(),
  };
}

function mediaOf(bytes: Buffer, contentType: PublishableMedia['contentType'], altText?: string): PublishableMedia {
  const id = randomUUID();
  return {
    id,
    fileName: `${id}.${contentType.split('/')[1]}`,
    contentType,
    kind: contentType.startsWith('video/') ? 'video' : 'image',
    size: bytes.length,
    url: `http://127.0.0.1:9/media/${id}`,
    open: (range) => Promise.resolve(Readable.from([range ? bytes.subarray(range.start, range.end + 1) : bytes])),
    ...(altText ? { altText } : {}),
  };
}

function inputOf(
  content: string,
  options: { media?: PublishableMedia[]; link?: string; commentOn?: Outcome & { status: 'published' } } = {},
): PublicationInput {
  const input: PublicationInput = {
    post: {
      id: 'pst_1',
      attempt: 1,
      content,
      settings: { __type: 'facebook', ...(options.link ? { link: options.link } : {}) },
    },
    channel,
    media: options.media ?? [],
    signal: new AbortController().signal,
  };
  if (options.commentOn) {
    const { releaseId, releaseUrl } = options.commentOn;
    input.comment = { on: { releaseId, releaseUrl, reference: {} }, part: 2 };
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

function outcomeOf(run: Run): Outcome & { status: 'published' } {
  expect(run.error).toBeUndefined();
  const outcome = (run.result as { outcome: Outcome }).outcome;
  expect(outcome.status).toBe('published');
  return outcome as Outcome & { status: 'published' };
}

/** Moves this server's clock and Meta's together, as time passes for both. */
async function pass(seconds: number) {
  await clock.advance(seconds * 1000);
  meta.advanceClock(seconds);
}

beforeEach(async () => {
  meta = await startFakeMeta();
  clock = new TestClock();
  graph = new GraphApi({ network: 'Facebook', url: meta.url, version: 'v23.0' }, outbound);
  adapter = new FacebookAdapter(graph, keyring, meta.appId, clock);
  channel = channelOf(await pageCredentials(meta, PAGE));
});
afterEach(async () => {
  await meta?.close();
});
afterAll(() => {
  outbound.close();
});

describe('publishing to a Page', () => {
  it('posts text with the settings’ link to the Page’s feed, its permalink as the release’s URL', async () => {
    const run = await drive(inputOf('Fresh bread at 7', { link: 'https://acme.example/bread' }));
    expect(run.steps).toEqual(['ready', 'feed']);
    const outcome = outcomeOf(run);
    const post = meta.posts.at(-1)!;
    expect(post).toMatchObject({
      pageId: PAGE,
      kind: 'link',
      message: 'Fresh bread at 7',
      link: 'https://acme.example/bread',
    });
    expect(outcome).toEqual({ status: 'published', releaseId: post.id, releaseUrl: post.permalinkUrl });
  });

  it('leaves the link out without one, for Facebook to preview the first link of the text', async () => {
    outcomeOf(await drive(inputOf('Menu: https://acme.example/menu')));
    expect(meta.posts.at(-1)).toMatchObject({ kind: 'status', message: 'Menu: https://acme.example/menu', link: null });
  });

  it('publishes one photo with its text and alt text as a photo post', async () => {
    const bytes = jpeg();
    const run = await drive(
      inputOf('Croissants', { media: [mediaOf(bytes, 'image/jpeg', 'Six croissants on a tray')] }),
    );
    expect(run.steps).toEqual(['ready', 'photo']);
    const outcome = outcomeOf(run);
    const photo = meta.photos.at(-1)!;
    expect(photo).toMatchObject({ published: true, caption: 'Croissants', altText: 'Six croissants on a tray' });
    expect(photo.bytes.equals(bytes)).toBe(true);
    const post = meta.posts.find((p) => p.id === photo.postId)!;
    expect(outcome).toEqual({ status: 'published', releaseId: post.id, releaseUrl: post.permalinkUrl });
  });

  it('uploads several photos unpublished, each a step of its own, then attaches them to one post', async () => {
    const media = [
      mediaOf(jpeg(), 'image/jpeg', 'The counter'),
      mediaOf(png(4, 4), 'image/png'),
      mediaOf(jpeg(4096), 'image/jpeg'),
    ];
    const run = await drive(inputOf('Our shop', { media }));
    expect(run.steps).toEqual(['photo-upload', 'photo-upload', 'photo-upload', 'feed']);
    const outcome = outcomeOf(run);
    expect(meta.photos.map((p) => p.published)).toEqual([false, false, false]);
    expect(meta.photos[0]!.altText).toBe('The counter');
    expect(meta.posts).toHaveLength(1);
    expect(meta.posts[0]).toMatchObject({ kind: 'photo', message: 'Our shop', photoIds: meta.photos.map((p) => p.id) });
    expect(outcome.releaseId).toBe(meta.posts[0]!.id);
  });

  it('uploads a video with the Resumable Upload API, resuming from Meta’s offset after a cut transfer', async () => {
    const bytes = mp4(64 * 1024);
    const input = inputOf('A morning at the bakery', { media: [mediaOf(bytes, 'video/mp4')] });
    meta.cutUploadAfter(20_000);
    const cut = await drive(input);
    expect(cut.steps).toEqual(['upload-session', 'upload-transfer']);
    expect(cut.error).toBeInstanceOf(TransientPublishError);
    expect((cut.error as TransientPublishError).answered).toBe(false);

    // The worker runs the step again: it asks Meta where the bytes end and sends the rest from there.
    const run = await drive(input, cut.progress);
    expect(run.steps).toEqual(['upload-transfer', 'video']);
    const outcome = outcomeOf(run);
    const session = meta.uploads.at(-1)!;
    expect(session).toMatchObject({ fileLength: bytes.length, fileType: 'video/mp4', transfers: [0, 20_000] });
    expect(meta.uploadedBytes(session.id)!.equals(bytes)).toBe(true);
    const video = meta.videos.at(-1)!;
    expect(video).toMatchObject({ via: 'handle', description: 'A morning at the bakery' });
    expect(outcome).toEqual({
      status: 'published',
      releaseId: video.postId,
      releaseUrl: `https://www.facebook.com/acmebakery/videos/${video.id}/`,
    });
    // The session, its status and the transfers with the user's token; the transfers as the guide writes it (`OAuth`).
    const uploads = meta.requests.filter((r) => r.operation?.startsWith('upload'));
    expect(uploads.map((r) => [r.operation, r.token, r.scheme])).toEqual([
      ['uploadStart', 'user', 'Bearer'],
      ['uploadStatus', 'user', 'OAuth'],
      ['uploadTransfer', 'user', 'OAuth'],
      ['uploadStatus', 'user', 'OAuth'],
      ['uploadTransfer', 'user', 'OAuth'],
    ]);
  });

  it('asks for the channel to be connected again when it holds no user token to upload a video with', async () => {
    const { facebook: _, ...pageOnly } = await pageCredentials(meta, PAGE);
    channel = channelOf(pageOnly);
    const run = await drive(inputOf('Video', { media: [mediaOf(mp4(), 'video/mp4')] }));
    expect(run.error).toBeInstanceOf(ReconnectNeededError);
    expect(meta.uploads).toHaveLength(0);
  });

  it('publishes the first comment as the Page, on the post, as a publication of its own', async () => {
    const post = outcomeOf(await drive(inputOf('Opening day', { media: [mediaOf(jpeg(), 'image/jpeg')] })));
    const run = await drive(inputOf('Doors open at 8!', { commentOn: post }));
    expect(run.steps).toEqual(['ready', 'comment']);
    expect(run.progress.irreversible).toBe(true);
    const outcome = outcomeOf(run);
    const comment = meta.comments.at(-1)!;
    expect(comment).toMatchObject({ objectId: post.releaseId, message: 'Doors open at 8!', from: { id: PAGE } });
    const url = new URL(outcome.releaseUrl!);
    expect(url.origin + url.pathname).toBe(post.releaseUrl);
    expect(url.searchParams.get('comment_id')).toBe(comment.id.split('_')[1]);
    expect(outcome.releaseId).toBe(comment.id);
  });
});

describe('after an answer that was lost', () => {
  it('finds the post among the Page’s recent posts, and never sends it twice', async () => {
    await drive(inputOf('Same words'));
    await pass(600);
    meta.loseNextAnswer('pageFeed');
    const input = inputOf('Same words');
    const run = await drive(input);
    expect(run.progress.step).toBe('feed');
    expect((run.error as TransientPublishError).answered).toBe(false);
    const lookup = await adapter.lookup(input, run.progress);
    const made = meta.posts.at(-1)!;
    expect(made.answerLost).toBe(true);
    // The earlier post with the same words, from before the step, is not taken for it.
    expect(lookup).toEqual({ status: 'published', releaseId: made.id, releaseUrl: made.permalinkUrl });
    expect(meta.posts).toHaveLength(2);
  });

  it('finds a photo post by its kind, and the photos attached to a post by their ids', async () => {
    meta.loseNextAnswer('pagePhotos');
    const one = inputOf('One photo', { media: [mediaOf(jpeg(), 'image/jpeg')] });
    const lost = await drive(one);
    expect(lost.progress.step).toBe('photo');
    expect(await adapter.lookup(one, lost.progress)).toMatchObject({
      status: 'published',
      releaseId: meta.posts.at(-1)!.id,
    });

    meta.loseNextAnswer('pageFeed');
    const several = inputOf('Two photos', { media: [mediaOf(jpeg(), 'image/jpeg'), mediaOf(png(2, 2), 'image/png')] });
    const attached = await drive(several);
    expect(attached.progress.step).toBe('feed');
    expect(await adapter.lookup(several, attached.progress)).toMatchObject({
      status: 'published',
      releaseId: meta.posts.at(-1)!.id,
    });
  });

  it('asks about a post Meta answered with a failure of its own, which may have made it', async () => {
    meta.failNext('pageFeed', { status: 500, code: 2, message: 'Service temporarily unavailable' }, { applied: true });
    const input = inputOf('Made despite the 500');
    const run = await drive(input);
    const error = run.error as TransientPublishError;
    expect(error).toBeInstanceOf(TransientPublishError);
    expect(error.answered).toBe(false);
    expect(error.logId).toBe(meta.errors.at(-1)!.fbtrace_id);
    expect(await adapter.lookup(input, run.progress)).toMatchObject({
      status: 'published',
      releaseId: meta.posts[0]!.id,
    });
  });

  it('believes a post absent once Facebook would show it, and sends it again', async () => {
    const input = inputOf('Never arrived');
    const ready = await adapter.run(input, adapter.start(input));
    const feed = (ready as { next: Progress }).next;
    expect(feed).toMatchObject({ step: 'feed', irreversible: true });
    // The worker stopped before the call reached Meta.
    expect(await adapter.lookup(input, feed)).toMatchObject({ status: 'pending' });
    await pass(121);
    const absent = await adapter.lookup(input, feed);
    // Sent again as a step of its own, looked for from now on.
    expect(absent).toEqual({ status: 'absent', again: { ...feed, reference: expect.any(Object) as object } });
    const sentAgain = (absent as { again: Progress }).again.reference.startedAt as string;
    expect(Date.parse(sentAgain)).toBeGreaterThanOrEqual(Date.parse(feed.reference.startedAt as string) + 121_000);
    outcomeOf(await drive(input, (absent as { again: Progress }).again));
    expect(meta.posts).toHaveLength(1);
  });

  it('cannot tell when the Page posted more since than a search reads', async () => {
    const input = inputOf('Buried');
    const feed = ((await adapter.run(input, adapter.start(input))) as { next: Progress }).next;
    for (let i = 0; i < 101; i++) await drive(inputOf(`Other post ${i}`));
    expect(await adapter.lookup(input, feed)).toMatchObject({ status: 'unknown' });
  });

  it('finds the first comment among the post’s comments by the Page', async () => {
    const post = outcomeOf(await drive(inputOf('With a comment')));
    meta.loseNextAnswer('comments');
    const input = inputOf('First!', { commentOn: post });
    const run = await drive(input);
    expect(run.progress.step).toBe('comment');
    expect((run.error as TransientPublishError).answered).toBe(false);
    const comment = meta.comments.at(-1)!;
    expect(await adapter.lookup(input, run.progress)).toMatchObject({ status: 'published', releaseId: comment.id });
    expect(meta.comments).toHaveLength(1);
  });
});

describe('Meta’s errors', () => {
  it('asks for the channel to be connected again when Meta no longer takes the token (190)', async () => {
    meta.endTokens('expired');
    const run = await drive(inputOf('Too late'));
    expect(run.error).toBeInstanceOf(ReconnectNeededError);
    expect((run.error as ReconnectNeededError).logId).toBe(meta.errors.at(-1)!.fbtrace_id);
    expect(meta.errors.at(-1)).toMatchObject({ code: 190 });
    expect(meta.posts).toHaveLength(0);
  });

  it('waits for the time X-Business-Use-Case-Usage names at a rate limit, and the post may be sent again', async () => {
    meta.rateLimitNext(32, { operation: 'pageFeed' });
    const run = await drive(inputOf('Busy Page'));
    const error = run.error as TransientPublishError;
    expect(error).toBeInstanceOf(TransientPublishError);
    // Meta did not take the call: even the irreversible step runs again.
    expect(error.answered).toBe(true);
    expect(error.retryAfterSeconds).toBe(5 * 60);
    expect(error.logId).toBe(meta.errors.at(-1)!.fbtrace_id);
  });

  it('refuses the post with Meta’s words for a permanent error (100)', async () => {
    meta.failNext('pageFeed', { code: 100, type: 'OAuthException', message: '(#100) Invalid parameter' });
    const run = await drive(inputOf('Refused'));
    const error = run.error as PermanentPublishError;
    expect(error).toBeInstanceOf(PermanentPublishError);
    expect(error.code).toBe('rejected_by_network');
    expect(error.message).toContain('(#100) Invalid parameter');
    expect(error.logId).toBe(meta.errors.at(-1)!.fbtrace_id);
  });

  describe('graph.ts’s reading of an answer', () => {
    const feed = (token: string) =>
      graph.call(`${PAGE}/feed`, { method: 'POST', accessToken: token, params: { message: 'Direct' } });

    it('reads a token Meta ended as needing a reconnection, with the fbtrace_id', async () => {
      const token = (await pageCredentials(meta, PAGE)).accessToken;
      meta.endTokens('password-changed');
      const answer = await feed(token);
      const error = publishErrorOf(answer, 'the post', 'Facebook');
      expect(error).toBeInstanceOf(ReconnectNeededError);
      expect(error.logId).toBe((answer.data as { error: { fbtrace_id: string } }).error.fbtrace_id);
    });

    it('reads a rate limit as a wait of the X-Business-Use-Case-Usage header’s minutes', async () => {
      const token = (await pageCredentials(meta, PAGE)).accessToken;
      meta.rateLimitNext(4);
      const answer = await feed(token);
      expect(answer.headers['x-business-use-case-usage']).toContain('"estimated_time_to_regain_access":5');
      const error = publishErrorOf(answer, 'the post', 'Facebook') as TransientPublishError;
      expect(error).toBeInstanceOf(TransientPublishError);
      expect(error).toMatchObject({ answered: true, retryAfterSeconds: 300 });
    });

    it('reads a permanent 100 error as the post refused', async () => {
      const token = (await pageCredentials(meta, PAGE)).accessToken;
      meta.failNext('pageFeed', { code: 100, message: '(#100) param message must be non-empty.' });
      const answer = await feed(token);
      const error = publishErrorOf(answer, 'the post', 'Facebook');
      expect(error).toBeInstanceOf(PermanentPublishError);
      expect(error.message).toBe('Facebook refused the post: (#100) param message must be non-empty.');
    });
  });
});
