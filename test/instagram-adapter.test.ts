import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Channel } from '../src/channels/tables.js';
import { OutboundClient } from '../src/net/outbound-client.js';
import { GraphApi } from '../src/providers/meta/graph.js';
import type { InstagramAccount, InstagramAccounts } from '../src/providers/instagram/accounts.js';
import { InstagramAdapter } from '../src/providers/instagram/adapter.js';
import type { SettingsOf } from '../src/providers/provider-adapter.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  TransientPublishError,
  type Progress,
  type PublicationInput,
  type PublishableMedia,
  type StepResult,
} from '../src/providers/publishing-contract.js';
import { startFakeInstagramLogin, type FakeInstagramLogin } from './support/fake-instagram-login.js';
import { startFakeMeta, type FakeMeta } from './support/fake-meta.js';
import { jpeg, mp4 } from './support/media-samples.js';
import { metaPageToken } from './support/meta-page-token.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { TestClock } from './support/test-clock.js';
import { anyString, stringContaining } from './support/typed-matchers.js';

// The Instagram adapter on its own, against the fake Meta (the Instagram API with Facebook Login, the
// linked Page's token) and the fake Instagram (with Instagram Login, the account's own token), driven
// step by step as the publisher drives it, without a database: each container a step, their status
// polled as `pending` results, the publishing limit read before the irreversible `media_publish`, and
// what a lost answer is found as.
const V = 'v23.0';
const IG_REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/instagram';
const IG = '17841400000000001';
let media: RemoteServer;
let meta: FakeMeta;
let clock: TestClock;
let outbound: OutboundClient;
let account: InstagramAccount;
let adapter: InstagramAdapter;

const channel: Channel = {
  id: 'ch_ig',
  organization_id: 'org_ig',
  provider: 'instagram',
  name: 'Acme Bakery on Instagram',
  username: 'acme.bakery',
  picture: null,
  status: 'active',
  external_id: IG,
  credentials: null,
  connected_at: null,
  refreshing_until: null,
  created_at: new Date(),
};

const accounts: InstagramAccounts = { account: () => Promise.resolve(account) };

beforeAll(async () => {
  // A web server on loopback standing in for the installation's signed media URLs, which Instagram fetches.
  media = await startRemoteServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://media').pathname;
    if (path.endsWith('.jpg')) res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end(jpeg());
    else if (path.endsWith('.mp4')) res.writeHead(200, { 'Content-Type': 'video/mp4' }).end(mp4(64 * 1024));
    else res.writeHead(404).end();
  });
  outbound = new OutboundClient({
    allowPrivateAddresses: true,
    allowedRanges: [],
    idleTimeoutSeconds: 5,
    maxDurationSeconds: 60,
  });
});
afterAll(async () => {
  await media?.close();
});
beforeEach(async () => {
  meta = await startFakeMeta();
  clock = new TestClock();
  account = { igUserId: IG, api: 'facebook', accessToken: await metaPageToken(meta) };
  const api = new GraphApi({ network: 'Instagram', url: meta.url, version: V }, outbound);
  adapter = new InstagramAdapter({ facebook: api }, accounts, clock);
});
afterEach(async () => {
  await meta?.close();
});

function mediaOf(id: string, kind: 'image' | 'video'): PublishableMedia {
  const bytes = kind === 'image' ? jpeg() : mp4(64 * 1024);
  return {
    id,
    fileName: `${id}.${kind === 'image' ? 'jpg' : 'mp4'}`,
    contentType: kind === 'image' ? 'image/jpeg' : 'video/mp4',
    kind,
    size: bytes.length,
    url: `${media.origin}/media/${id}.${kind === 'image' ? 'jpg' : 'mp4'}`,
    open: () => Promise.resolve(Readable.from([bytes])),
  };
}

function inputOf(
  content: string,
  items: PublishableMedia[],
  settings: Omit<SettingsOf<'instagram'>, '__type'> = {},
): PublicationInput {
  return {
    post: { id: 'pst_ig', attempt: 1, content, settings: { __type: 'instagram', ...settings } },
    channel,
    media: items,
    signal: new AbortController().signal,
  };
}

/** How a run of steps ended: the steps run, how many times the queue asked again, and the result or error. */
interface Run {
  progress: Progress;
  steps: string[];
  polls: number;
  result?: Exclude<StepResult, { next: Progress }>;
  error?: Error;
}

/**
 * Runs steps as the publisher does, until one leads to no other (or to the step `stopAt`, not run); a
 * `pending` result is asked again (as the queue's job would, later) up to `asks` times, then returned.
 */
async function drive(
  input: PublicationInput,
  progress: Progress = adapter.start(input),
  { asks = 10, stopAt }: { asks?: number; stopAt?: string } = {},
): Promise<Run> {
  const steps: string[] = [];
  let polls = 0;
  for (;;) {
    if (progress.step === stopAt) return { progress, steps, polls };
    steps.push(progress.step);
    let result: StepResult;
    try {
      result = await adapter.run(input, progress);
    } catch (error) {
      return { progress, steps, polls, error: error as Error };
    }
    if ('pending' in result && polls < asks) {
      polls += 1;
      continue;
    }
    if (!('next' in result)) return { progress, steps, polls, result };
    progress = result.next;
  }
}

const published = (run: Run) => (run.result && 'outcome' in run.result ? run.result.outcome : undefined);

describe('publishing through the Instagram API with Facebook Login', () => {
  it('publishes an image: its container, polled until FINISHED, the limit read, then media_publish', async () => {
    const photo = mediaOf('med_photo', 'image');
    const input = inputOf('Fresh rye today', [photo], {
      collaborators: ['friend.bakery'],
      userTags: [{ mediaId: photo.id, username: 'ada', x: 0.25, y: 0.75 }],
    });
    const loggedIn = meta.requests.length;
    const run = await drive(input);
    // Its status is read twice: IN_PROGRESS (asked again later), then FINISHED.
    expect(run.steps).toEqual(['limit', 'container', 'status', 'status', 'limit', 'publish']);
    expect(run.polls).toBe(1);
    const [container] = meta.containers;
    expect(container!.params).toMatchObject({
      image_url: photo.url,
      caption: 'Fresh rye today',
      collaborators: '["friend.bakery"]',
      user_tags: '[{"username":"ada","x":0.25,"y":0.75}]',
    });
    const [made] = meta.instagramMedia;
    expect(published(run)).toEqual({ status: 'published', releaseId: made!.id, releaseUrl: made!.permalink });
    expect(made).toMatchObject({ mediaType: 'IMAGE', caption: 'Fresh rye today', collaborators: ['friend.bakery'] });
    const calls = meta.requests.slice(loggedIn);
    expect(calls.filter((r) => r.operation === 'igPublishingLimit')).toHaveLength(2);
    expect(calls.every((r) => r.token === 'page')).toBe(true);
  });

  it('publishes a carousel of 3 in the order of its media, user tags on their image, then the first comment', async () => {
    const items = [mediaOf('med_a', 'image'), mediaOf('med_b', 'image'), mediaOf('med_c', 'video')];
    const input = inputOf('Three loaves', items, {
      collaborators: ['friend.bakery'],
      userTags: [{ mediaId: 'med_b', username: 'ada', x: 0.5, y: 0.5 }],
    });
    const run = await drive(input);
    expect(run.steps).toEqual([
      ...['limit', 'item', 'item', 'item', 'items', 'items'],
      ...['container', 'status', 'status', 'limit', 'publish'],
    ]);
    const [a, b, c, carousel] = meta.containers;
    expect([a, b, c].map((item) => item!.params)).toEqual([
      expect.objectContaining({ is_carousel_item: 'true', image_url: items[0]!.url }),
      expect.objectContaining({ is_carousel_item: 'true', image_url: items[1]!.url, user_tags: anyString() }),
      expect.objectContaining({ is_carousel_item: 'true', media_type: 'VIDEO', video_url: items[2]!.url }),
    ]);
    expect(a!.params.user_tags).toBeUndefined();
    expect(carousel).toMatchObject({
      mediaType: 'CAROUSEL',
      children: [a!.id, b!.id, c!.id],
      caption: 'Three loaves',
      collaborators: ['friend.bakery'],
      userTags: [],
    });
    const album = meta.instagramMedia.find((m) => m.mediaType === 'CAROUSEL_ALBUM')!;
    const outcome = published(run);
    expect(outcome).toEqual({ status: 'published', releaseId: album.id, releaseUrl: album.permalink });
    expect(album.children.map((id) => meta.instagramMedia.find((m) => m.id === id)!.userTags)).toEqual([
      [],
      [{ username: 'ada', x: 0.5, y: 0.5 }],
      [],
    ]);

    const on = { releaseId: album.id, releaseUrl: album.permalink, reference: {} };
    const comment = { ...inputOf('Recipe in bio', []), comment: { on, part: 2 } };
    const commented = await drive(comment);
    expect(commented.steps).toEqual(['comment']);
    expect(meta.comments).toEqual([expect.objectContaining({ objectId: album.id, message: 'Recipe in bio' })]);
    expect(published(commented)).toEqual({
      status: 'published',
      releaseId: meta.comments[0]!.id,
      releaseUrl: album.permalink,
    });
  });

  it('polls a reel whose container takes three polls, asking again as a job of the queue each time', async () => {
    meta.processingPolls(3);
    const input = inputOf('Shaping the loaves', [mediaOf('med_reel', 'video')], {
      postType: 'reel',
      shareToFeed: false,
    });
    const run = await drive(input, adapter.start(input), { asks: 0 });
    expect(run.steps).toEqual(['limit', 'container', 'status']);
    expect(run.result).toEqual({ pending: { checkAgainInSeconds: 5 } });
    const again = await drive(input, run.progress);
    expect(again.polls).toBe(2);
    expect(meta.containers[0]!.polls).toBe(4);
    expect(meta.containers[0]!.params).toMatchObject({ media_type: 'REELS', share_to_feed: 'false' });
    expect(published(again)).toMatchObject({ status: 'published', releaseUrl: stringContaining('/reel/') });
  });

  it('fails the post with Meta’s status when its container ends in ERROR, publishing nothing', async () => {
    meta.failNextContainer({ statusCode: 'ERROR', status: 'Error: The aspect ratio is not supported.' });
    const run = await drive(inputOf('Too wide', [mediaOf('med_wide', 'image')]));
    expect(published(run)).toEqual({
      status: 'failed',
      code: 'rejected_by_network',
      message: 'Instagram could not publish the media: Error: The aspect ratio is not supported.',
    });
    expect(meta.instagramMedia).toEqual([]);
    expect(meta.requests.some((r) => r.operation === 'igMediaPublish')).toBe(false);
  });

  it('keeps Meta’s fbtrace_id with a refusal, and asks for the channel again when Meta no longer takes its token', async () => {
    meta.failNext('igMedia', { message: 'Invalid parameter', code: 100, error_subcode: 2207001 });
    const refused = await drive(inputOf('Refused', [mediaOf('med_refused', 'image')]));
    expect(refused.error).toBeInstanceOf(PermanentPublishError);
    expect(refused.error).toMatchObject({
      code: 'rejected_by_network',
      message: 'Instagram refused med_refused.jpg: Invalid parameter',
      logId: meta.errors.at(-1)!.fbtrace_id,
    });

    meta.endTokens('expired');
    const expired = await drive(inputOf('Expired', [mediaOf('med_expired', 'image')]));
    expect(expired.error).toBeInstanceOf(ReconnectNeededError);
    expect(expired.error).toMatchObject({ logId: meta.errors.at(-1)!.fbtrace_id });
  });

  it('starts over with new containers when one expired before it was published', async () => {
    meta.failNextContainer({ statusCode: 'EXPIRED' });
    const run = await drive(inputOf('Late', [mediaOf('med_late', 'image')]));
    expect(run.result).toEqual({
      restart: { reason: 'Instagram let a container of the post expire before it was published' },
    });
  });

  it('finds the media of a media_publish whose answer was lost, and publishes again one never sent', async () => {
    const input = inputOf('Lost answer', [mediaOf('med_lost', 'image')]);
    const before = await drive(input);
    expect(published(before)).toMatchObject({ status: 'published' });

    const second = inputOf('Sent once', [mediaOf('med_once', 'image')]);
    meta.loseNextAnswer('igMediaPublish');
    const run = await drive(second);
    expect(run.progress).toMatchObject({ step: 'publish', irreversible: true });
    expect(run.error).toBeInstanceOf(TransientPublishError);
    expect((run.error as TransientPublishError).answered).toBe(false);
    const made = meta.instagramMedia.find((m) => m.caption === 'Sent once')!;
    expect(made.answerLost).toBe(true);
    expect(await adapter.lookup(second, run.progress)).toEqual({
      status: 'published',
      releaseId: made.id,
      releaseUrl: made.permalink,
    });

    // Never sent (a 500 before Meta did anything): its container is still FINISHED, so it is published again.
    const third = inputOf('Never sent', [mediaOf('med_never', 'image')]);
    const ready = await drive(third, adapter.start(third), { stopAt: 'publish' });
    meta.failNext('igMediaPublish', { message: 'An unknown error has occurred.', code: 1, status: 500 });
    const failedRun = await drive(third, ready.progress);
    expect(failedRun.error).toBeInstanceOf(TransientPublishError);
    expect(await adapter.lookup(third, ready.progress)).toEqual({ status: 'absent' });
    expect(published(await drive(third, ready.progress))).toMatchObject({ status: 'published' });
    expect(meta.instagramMedia.filter((m) => m.caption === 'Never sent')).toHaveLength(1);
  });

  it('finds a first comment whose answer was lost, and never comments twice', async () => {
    const post = await drive(inputOf('With a comment', [mediaOf('med_c1', 'image')]));
    const outcome = published(post) as { releaseId: string; releaseUrl: string };
    const on = { releaseId: outcome.releaseId, releaseUrl: outcome.releaseUrl, reference: {} };
    const comment = { ...inputOf('First!', []), comment: { on, part: 2 } };
    const progress = adapter.start(comment);
    expect(await adapter.lookup(comment, progress)).toEqual({ status: 'absent' });
    meta.loseNextAnswer('comments');
    const run = await drive(comment, progress);
    expect(run.error).toBeInstanceOf(TransientPublishError);
    expect(await adapter.lookup(comment, progress)).toEqual({
      status: 'published',
      releaseId: meta.comments[0]!.id,
      releaseUrl: outcome.releaseUrl,
    });
    expect(meta.comments).toHaveLength(1);
  });

  it('waits while the publishing limit is reached, until the moving day frees a publication', async () => {
    meta.publishingLimit(1);
    await drive(inputOf('Today’s one', [mediaOf('med_one', 'image')]));
    const before = meta.requests.length;
    const input = inputOf('Tomorrow’s', [mediaOf('med_two', 'image')]);
    const run = await drive(input, adapter.start(input), { asks: 1 });
    expect(run.steps).toEqual(['limit', 'limit']);
    expect(meta.containers).toHaveLength(1);
    // The day's one publication ages out a day after it was made: asked again then (a minute's margin).
    const wait = (run.result as { pending: { checkAgainInSeconds: number } }).pending.checkAgainInSeconds;
    expect(wait).toBeGreaterThan(86_400 - 60);
    expect(wait).toBeLessThanOrEqual(86_400 + 60);
    expect(meta.requests.slice(before).some((r) => r.operation === 'igMediaPublish')).toBe(false);

    meta.advanceClock(12 * 3600);
    await clock.advance(12 * 3600 * 1000);
    expect((await drive(input, run.progress, { asks: 0 })).result).toMatchObject({ pending: {} });
    meta.advanceClock(wait - 12 * 3600);
    await clock.advance((wait - 12 * 3600) * 1000);
    expect(published(await drive(input, run.progress))).toMatchObject({ status: 'published' });
  });

  it('waits, publishing nothing, when media_publish says the limit was reached meanwhile', async () => {
    const input = inputOf('Raced', [mediaOf('med_race', 'image')]);
    const ready = await drive(input, adapter.start(input), { stopAt: 'publish' });
    // Another app of the account published the day's fifty between the limit's reading and media_publish.
    meta.usePublishingQuota(IG, 50);
    const run = await drive(input, ready.progress);
    expect(run.result).toEqual({ pending: { checkAgainInSeconds: 3600, forQuota: true } });
    expect(meta.instagramMedia).toEqual([]);
    // Asked about afterwards (the step was irreversible): nothing was published, so it is sent again.
    expect(await adapter.lookup(input, ready.progress)).toEqual({ status: 'absent' });
  });
});

describe('publishing through the Instagram API with Instagram Login', () => {
  let instagram: FakeInstagramLogin;

  beforeEach(async () => {
    instagram = await startFakeInstagramLogin({ redirectUris: [IG_REDIRECT_URI] });
    const consent = new URL(instagram.authorizeUrl);
    consent.search = new URLSearchParams({
      client_id: instagram.appId,
      redirect_uri: IG_REDIRECT_URI,
      scope: 'instagram_business_basic,instagram_business_content_publish,instagram_business_manage_comments',
      response_type: 'code',
      state: 'st',
    }).toString();
    const back = await fetch(consent, { redirect: 'manual' });
    const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
    const token = await fetch(`${instagram.url}/oauth/access_token`, {
      method: 'POST',
      body: new URLSearchParams({
        client_id: instagram.appId,
        client_secret: instagram.appSecret,
        grant_type: 'authorization_code',
        redirect_uri: IG_REDIRECT_URI,
        code,
      }),
    });
    const { access_token } = JSON.parse(await token.text()) as { access_token: string };
    account = { igUserId: instagram.account.userId, api: 'instagram', accessToken: access_token };
    const api = new GraphApi({ network: 'Instagram', url: instagram.url, version: instagram.version }, outbound);
    adapter = new InstagramAdapter({ instagram: api }, accounts, clock);
  });
  afterEach(async () => {
    await instagram?.close();
  });

  it('publishes a carousel and its first comment with the account’s own token', async () => {
    const items = [mediaOf('med_x', 'image'), mediaOf('med_y', 'image')];
    const run = await drive(inputOf('Two loaves', items, { collaborators: ['friend.bakery'] }));
    const album = instagram.media.find((m) => m.mediaType === 'CAROUSEL_ALBUM')!;
    expect(published(run)).toEqual({ status: 'published', releaseId: album.id, releaseUrl: album.permalink });
    expect(album.children).toHaveLength(2);
    const on = { releaseId: album.id, releaseUrl: album.permalink, reference: {} };
    const commented = await drive({ ...inputOf('Recipe in bio', []), comment: { on, part: 2 } });
    expect(published(commented)).toMatchObject({ status: 'published', releaseId: instagram.comments[0]!.id });
    expect(instagram.requests.every((r) => !r.path.includes('access_token='))).toBe(true);
  });

  it('fails the post with Instagram’s status when a reel’s container ends in ERROR', async () => {
    instagram.endNextContainer('ERROR', '2207026');
    const run = await drive(inputOf('Broken', [mediaOf('med_broken', 'video')], { postType: 'reel' }));
    expect(published(run)).toEqual({
      status: 'failed',
      code: 'rejected_by_network',
      message: 'Instagram could not publish the media: Error: Media upload has failed with error code 2207026',
    });
  });
});
