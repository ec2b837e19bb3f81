import http from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Channel } from '../src/channels/tables.js';
import type { ThreadsConfig } from '../src/core/config.js';
import { OutboundClient } from '../src/net/outbound-client.js';
import { ConnectionRefusedError, type AccountCredentials } from '../src/providers/connection-contract.js';
import { GraphApi } from '../src/providers/meta/graph.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  TransientPublishError,
  type Progress,
  type PublicationInput,
  type PublishableMedia,
  type StepResult,
} from '../src/providers/publishing-contract.js';
import { ThreadsAdapter } from '../src/providers/threads/adapter.js';
import { THREADS_SCOPES, ThreadsConnection } from '../src/providers/threads/connection.js';
import { startFakeThreads, type FakeThreads } from './support/fake-threads.js';
import { jpeg, mp4 } from './support/media-samples.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { TestClock } from './support/test-clock.js';

// The Threads adapter's parts on their own, against the fake Threads: the connection (Threads's OAuth, the
// long-lived token and its refresh), containers and their processing, the publishing quota, posts and
// replies, and what happens after an answer that was lost, driven step by step as the publisher drives
// them, without a database. The publisher's own run of it is test/threads-publishing.test.ts.
const REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/threads';
let threads: FakeThreads;
let files: RemoteServer;
let clock: TestClock;
let connection: ThreadsConnection;
let credentials: AccountCredentials;
let adapter: ThreadsAdapter;
let channel: Channel;

/** The consent page, which consents at once: where it sends the browser back. */
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

/** Connects the fake's account as the callback does: consent, then the code traded for tokens. */
async function connect(): Promise<AccountCredentials> {
  const back = await consent(connection.authorizeUrl({ state: 'st', redirectUri: REDIRECT_URI }));
  return connection.exchangeCode({ code: back.searchParams.get('code')!, redirectUri: REDIRECT_URI });
}

function mediaOf(name: string, kind: 'image' | 'video', altText?: string): PublishableMedia {
  const bytes = kind === 'image' ? jpeg() : mp4();
  return {
    id: `med_${name}`,
    fileName: name,
    contentType: kind === 'image' ? 'image/jpeg' : 'video/mp4',
    kind,
    size: bytes.length,
    url: `${files.origin}/${name}`,
    open: () => Promise.resolve(Readable.from([bytes])),
    ...(altText ? { altText } : {}),
  };
}

function inputOf(
  content: string,
  options: { media?: PublishableMedia[]; replyTo?: string; replyControl?: string } = {},
): PublicationInput {
  const input: PublicationInput = {
    post: {
      id: 'pst_1',
      attempt: 1,
      content,
      settings: { __type: 'threads', replyControl: options.replyControl ?? 'everyone' },
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
async function drive(input: PublicationInput, progress: Progress = adapter.start()): Promise<Run> {
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

/** Drives a publication to its outcome, running a pending step again as the queue would. */
async function publish(input: PublicationInput): Promise<Run> {
  let run = await drive(input);
  for (let again = 0; run.result && 'pending' in run.result && again < 10; again++)
    run = await drive(input, run.progress);
  return run;
}

const postsWith = (text: string) => threads.posts.filter((p) => p.text === text);

beforeAll(async () => {
  threads = await startFakeThreads({ redirectUris: [REDIRECT_URI] });
  files = await startRemoteServer((req, res) => {
    if (req.url?.endsWith('.jpg')) res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end(jpeg());
    else if (req.url?.endsWith('.mp4')) res.writeHead(200, { 'Content-Type': 'video/mp4' }).end(mp4());
    else res.writeHead(404).end();
  });
  clock = new TestClock();
  const config: ThreadsConfig = {
    appId: threads.appId,
    appSecret: threads.appSecret,
    graphVersion: 'v1.0',
    graphUrl: threads.url,
    authorizeUrl: threads.authorizeUrl,
  };
  const outbound = new OutboundClient({
    allowPrivateAddresses: true,
    allowedRanges: [],
    idleTimeoutSeconds: 5,
    maxDurationSeconds: 60,
  });
  const graph = new GraphApi({ network: 'Threads', url: config.graphUrl, version: config.graphVersion }, outbound);
  connection = new ThreadsConnection(config, graph, clock);
  adapter = new ThreadsAdapter(graph, { accessToken: () => Promise.resolve(credentials.accessToken) }, clock);
  channel = {
    id: 'ch_threads',
    organization_id: 'org_threads',
    provider: 'threads',
    name: 'Acme on Threads',
    username: threads.account.username,
    picture: null,
    status: 'active',
    external_id: threads.account.id,
    credentials: null,
    connected_at: null,
    refreshing_until: null,
    created_at: new Date(),
  };
});
afterAll(async () => {
  await threads?.close();
  await files?.close();
});
beforeEach(async () => {
  // Every test on a fresh token: one that revoked or expired its tokens leaves none behind.
  threads.processingPolls(undefined);
  credentials = await connect();
});

describe('connecting an account', () => {
  it('sends the user to Threads’s consent page, keeps the long-lived token, and reads who the account is', async () => {
    const url = new URL(connection.authorizeUrl({ state: 'the-state', redirectUri: REDIRECT_URI }));
    expect(url.origin + url.pathname).toBe(threads.authorizeUrl);
    expect(Object.fromEntries(url.searchParams)).toEqual({
      client_id: threads.appId,
      redirect_uri: REDIRECT_URI,
      scope: 'threads_basic,threads_content_publish,threads_manage_replies,threads_read_replies',
      response_type: 'code',
      state: 'the-state',
    });
    expect(connection.consentOrigin).toBe(threads.url);
    const fresh = await connect();
    expect(threads.consents.at(-1)).toMatchObject({ scopes: THREADS_SCOPES, state: 'st', outcome: 'granted' });
    // The short-lived token of the code was exchanged for a 60-day one, which the channel keeps.
    const kept = threads.tokens.find((t) => t.value === fresh.accessToken)!;
    expect(kept.kind).toBe('long');
    expect(fresh.refreshToken).toBeNull();
    expect(Date.parse(fresh.expiresAt!) - clock.now().getTime()).toBeGreaterThan(59 * 86_400_000);
    expect(await connection.identity(fresh)).toEqual({
      externalId: threads.account.id,
      name: threads.account.name,
      username: threads.account.username,
      picture: threads.account.profilePictureUrl,
    });
  });

  it('refuses a code used twice, and an expired token at /me, as a connection to make again', async () => {
    const back = await consent(connection.authorizeUrl({ state: 'st', redirectUri: REDIRECT_URI }));
    const code = back.searchParams.get('code')!;
    await connection.exchangeCode({ code, redirectUri: REDIRECT_URI });
    await expect(connection.exchangeCode({ code, redirectUri: REDIRECT_URI })).rejects.toThrow(ConnectionRefusedError);
    threads.expireTokens();
    await expect(connection.identity(credentials)).rejects.toThrow(ConnectionRefusedError);
  });

  it('refreshes the long-lived token with itself once it is a day old, for 60 more days', async () => {
    threads.advanceClock(86_400);
    await clock.advance(86_400_000);
    const refreshed = await connection.refresh(credentials);
    expect(refreshed.accessToken).not.toBe(credentials.accessToken);
    expect(Date.parse(refreshed.expiresAt!) - clock.now().getTime()).toBeGreaterThan(59 * 86_400_000);
    expect(threads.requests.at(-1)).toMatchObject({ operation: 'refreshToken' });
    threads.revokeTokens();
    await expect(connection.refresh(refreshed)).rejects.toThrow(ConnectionRefusedError);
  });
});

describe('publishing', () => {
  it('publishes a text post with its reply control, at its permalink', async () => {
    const run = await drive(inputOf('Hello Threads', { replyControl: 'mentioned_only' }));
    expect(run.steps).toEqual(['quota', 'container', 'processing', 'publish']);
    const [post] = postsWith('Hello Threads');
    expect(post).toMatchObject({ mediaType: 'TEXT_POST', replyControl: 'mentioned_only', repliedTo: null });
    expect(run.result).toEqual({
      outcome: { status: 'published', releaseId: post!.id, releaseUrl: post!.permalink },
    });
  });

  it('publishes an image from its URL with its alt text, and a video once Threads processed it', async () => {
    const image = await drive(inputOf('A photo', { media: [mediaOf('photo.jpg', 'image', 'A black square')] }));
    expect(image.result).toMatchObject({ outcome: { status: 'published' } });
    const container = threads.containers.find((c) => c.params.text === 'A photo')!;
    expect(container.params).toMatchObject({
      media_type: 'IMAGE',
      image_url: `${files.origin}/photo.jpg`,
      alt_text: 'A black square',
    });

    threads.processingPolls(2);
    const input = inputOf('A clip', { media: [mediaOf('clip.mp4', 'video')] });
    const first = await drive(input);
    // Still processing: asked about again as a queued job, a minute later.
    expect(first.steps).toEqual(['quota', 'container', 'processing']);
    expect(first.result).toEqual({ pending: { checkAgainInSeconds: 60 } });
    const second = await drive(input, first.progress);
    expect(second.result).toEqual({ pending: { checkAgainInSeconds: 60 } });
    const done = await drive(input, second.progress);
    expect(done.steps).toEqual(['processing', 'publish']);
    expect(done.result).toMatchObject({ outcome: { status: 'published' } });
    expect(postsWith('A clip')[0]).toMatchObject({ mediaType: 'VIDEO', mediaUrl: `${files.origin}/clip.mp4` });
  });

  it('publishes a carousel of an image and a video as one post with its items', async () => {
    const input = inputOf('Two things', { media: [mediaOf('one.jpg', 'image'), mediaOf('two.mp4', 'video')] });
    const run = await publish(input);
    expect(run.result).toMatchObject({ outcome: { status: 'published' } });
    const [album] = postsWith('Two things');
    expect(album!.mediaType).toBe('CAROUSEL_ALBUM');
    const items = album!.children.map((id) => threads.posts.find((p) => p.id === id)!);
    expect(items.map((item) => [item.mediaType, item.mediaUrl])).toEqual([
      ['IMAGE', `${files.origin}/one.jpg`],
      ['VIDEO', `${files.origin}/two.mp4`],
    ]);
  });

  it('publishes a thread’s later part as a reply to the part before, under the replies’ quota', async () => {
    const first = await drive(inputOf('Part 1'));
    const parent = (first.result as { outcome: { releaseId: string } }).outcome.releaseId;
    const second = await drive(inputOf('Part 2', { replyTo: parent }));
    expect(second.result).toMatchObject({ outcome: { status: 'published' } });
    expect(postsWith('Part 2')[0]).toMatchObject({ repliedTo: parent, rootPost: parent });
    // A reply counts toward the replies' 1,000 a day, apart from the posts' 250.
    threads.usePublishingQuota(0, 1000);
    const waiting = await drive(inputOf('Part 3', { replyTo: postsWith('Part 2')[0]!.id }));
    expect(waiting.result).toEqual({ pending: { checkAgainInSeconds: 1800, forQuota: true } });
    expect((await drive(inputOf('A post meanwhile'))).result).toMatchObject({ outcome: { status: 'published' } });
  });

  it('fails the post with Meta’s words when its container ends in ERROR', async () => {
    threads.endNextContainer('ERROR', 'INVALID_ASPEC_RATIO');
    const run = await drive(inputOf('Refused'));
    expect(run.error).toBeInstanceOf(PermanentPublishError);
    expect(run.error!.message).toContain('INVALID_ASPEC_RATIO');
    expect(postsWith('Refused')).toHaveLength(0);
  });

  it('starts over, with a new container, when Threads let the container expire', async () => {
    threads.endNextContainer('EXPIRED');
    const run = await drive(inputOf('Expired'));
    expect(run.steps.at(-1)).toBe('processing');
    expect(run.result).toEqual({ restart: { reason: expect.stringContaining('expire') as string } });
    const again = await drive(inputOf('Expired'));
    expect(again.result).toMatchObject({ outcome: { status: 'published' } });
    expect(threads.containers.filter((c) => c.params.text === 'Expired')).toHaveLength(2);
    expect(postsWith('Expired')).toHaveLength(1);
  });

  it('waits while the rolling day’s 250 posts are used, and publishes once the quota frees', async () => {
    threads.usePublishingQuota(250);
    const input = inputOf('Over the quota');
    const waiting = await drive(input);
    expect(waiting.steps).toEqual(['quota']);
    expect(waiting.result).toEqual({ pending: { checkAgainInSeconds: 1800, forQuota: true } });
    // Nothing was made at Threads meanwhile: no container left to expire.
    expect(threads.containers.some((c) => c.params.text === 'Over the quota')).toBe(false);
    threads.advanceClock(86_400);
    credentials = await connect();
    const later = await drive(input, waiting.progress);
    expect(later.result).toMatchObject({ outcome: { status: 'published' } });
  });

  it('needs the channel connected again when Threads no longer takes its token, fbtrace_id kept', async () => {
    threads.revokeTokens();
    const run = await drive(inputOf('Revoked'));
    expect(run.error).toBeInstanceOf(ReconnectNeededError);
    expect((run.error as ReconnectNeededError).logId).toBe(threads.errors.at(-1)!.fbtrace_id);
  });

  it('waits for the time of a rate limit, before the irreversible point as at it', async () => {
    threads.rateLimitNext(17, 'createContainer');
    const run = await drive(inputOf('Limited'));
    expect(run.error).toBeInstanceOf(TransientPublishError);
    expect(run.error).toMatchObject({ answered: true, retryAfterSeconds: 60 });
  });
});

describe('after an answer that was lost', () => {
  it('finds the post published by its container among the account’s threads, and publishes it once', async () => {
    threads.loseNextAnswer('publish');
    const input = inputOf('Lost on the way back');
    const run = await drive(input);
    expect(run.progress).toMatchObject({ step: 'publish', irreversible: true });
    expect(run.error).toMatchObject({ answered: false });
    const found = await adapter.lookup(input, run.progress);
    const [post] = postsWith('Lost on the way back');
    expect(found).toEqual({ status: 'published', releaseId: post!.id, releaseUrl: post!.permalink });
    expect(postsWith('Lost on the way back')).toHaveLength(1);
  });

  it('finds a reply among the account’s replies under the part before', async () => {
    const parent = ((await drive(inputOf('Lost parent'))).result as { outcome: { releaseId: string } }).outcome
      .releaseId;
    threads.loseNextAnswer('publish');
    const input = inputOf('Lost reply', { replyTo: parent });
    const run = await drive(input);
    const found = await adapter.lookup(input, run.progress);
    expect(found).toMatchObject({ status: 'published', releaseId: postsWith('Lost reply')[0]!.id });
  });

  it('finds the post when its publish step runs again after Threads published it, rather than failing it', async () => {
    threads.loseNextAnswer('publish');
    const input = inputOf('Published already');
    const lost = await drive(input);
    // Threads refuses to publish a container twice ("Media Not Found"): its status says why.
    const again = await drive(input, lost.progress);
    const [post] = postsWith('Published already');
    expect(again.result).toEqual({
      outcome: { status: 'published', releaseId: post!.id, releaseUrl: post!.permalink },
    });
    expect(postsWith('Published already')).toHaveLength(1);
  });

  it('answers absent for a container never published, so the step runs again, once', async () => {
    // Threads failed the call having done nothing (a 503): the container stays ready, not published.
    threads.failNext(503, 'publish');
    const second = inputOf('Stopped before the call');
    const stopped = await drive(second);
    expect(stopped.progress.step).toBe('publish');
    expect(stopped.error).toMatchObject({ answered: false });
    expect(await adapter.lookup(second, stopped.progress)).toEqual({ status: 'absent' });
    const again = await drive(second, stopped.progress);
    expect(again.result).toMatchObject({ outcome: { status: 'published' } });
    expect(postsWith('Stopped before the call')).toHaveLength(1);
  });
});
