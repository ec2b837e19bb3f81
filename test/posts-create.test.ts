import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, publicApi, type Schemas } from './support/api.js';
import {
  countPosts,
  createChannel,
  createOrganization,
  insertMedia,
  insertPost,
  type TestOrganization,
} from './support/fixtures.js';
import { FakeTikTok, POSTS_TEST_ENV, send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { stringContaining, stringMatching } from './support/typed-matchers.js';

const NOW = '2026-11-21T12:00:00.000Z';
const LATER = '2026-12-01T09:30:00.000Z';

let server: TestServer;
let tiktok: FakeTikTok;
let acme: TestOrganization;
let globex: TestOrganization;
let ch: { youtube: string; tiktok: string; sandbox: string; sandbox2: string; disabled: string; foreign: string };
let media: { video: string; video2: string; image: string; foreign: string };

beforeAll(async () => {
  tiktok = new FakeTikTok();
  server = await startTestServer({
    env: { ...POSTS_TEST_ENV, DAILY_POST_LIMIT_SANDBOX: '3' },
    providers: { tiktok: { creatorInfo: tiktok } },
  });
  const db = server.ctx.db;
  acme = await createOrganization(db, 'Acme');
  globex = await createOrganization(db, 'Globex');
  const disabled = await createChannel(db, acme.id, 'sandbox', 'Disabled');
  await db.updateTable('channels').set({ status: 'disabled' }).where('id', '=', disabled.id).execute();
  ch = {
    youtube: (await createChannel(db, acme.id, 'youtube')).id,
    tiktok: (await createChannel(db, acme.id, 'tiktok')).id,
    sandbox: (await createChannel(db, acme.id, 'sandbox')).id,
    sandbox2: (await createChannel(db, acme.id, 'sandbox', 'Second sandbox')).id,
    disabled: disabled.id,
    foreign: (await createChannel(db, globex.id, 'sandbox')).id,
  };
  media = {
    video: await insertMedia(db, acme.id, 'video'),
    video2: await insertMedia(db, acme.id, 'video'),
    image: await insertMedia(db, acme.id, 'image'),
    foreign: await insertMedia(db, globex.id, 'video'),
  };
});
afterAll(() => server?.close());
beforeEach(() => server.setNow(NOW));

/** A sandbox channel of its own, for a test whose posts must not count against another test's daily quota. */
const freshSandbox = async (name = 'Fresh sandbox') =>
  (await createChannel(server.ctx.db, acme.id, 'sandbox', name)).id;

type CreatePostRequest = Schemas['CreatePostRequest'];
type PostItem = Schemas['PostItem'];

const create = (body: CreatePostRequest, org: TestOrganization = acme) =>
  publicApi(server, org.auth).POST('/public/v1/posts', { body });

/** Sends a create body the contract refuses (so its types do too), as a client could. */
const sendCreate = (body: object, org: TestOrganization = acme) =>
  send(server, org.auth, 'POST', '/public/v1/posts', body);

const youtubeSettings = {
  __type: 'youtube',
  title: 'Winter collection',
  privacyStatus: 'unlisted',
  madeForKids: false,
} satisfies Schemas['YouTubeSettings'];
const tiktokSettings = {
  __type: 'tiktok',
  postMode: 'direct',
  privacyLevel: 'SELF_ONLY',
} satisfies Schemas['TikTokSettings'];
const youtubeItem = (extra: Partial<PostItem> = {}): PostItem => ({
  channelId: ch.youtube,
  content: 'Alps',
  mediaIds: [media.video],
  settings: youtubeSettings,
  ...extra,
});
const tiktokItem = (extra: Partial<PostItem> = {}): PostItem => ({
  channelId: ch.tiktok,
  content: 'Winter #acme',
  mediaIds: [media.video],
  settings: tiktokSettings,
  ...extra,
});

/** Sends a create that must be refused with 422, checks that nothing was created, and returns the details. */
async function refused(body: CreatePostRequest): Promise<Schemas['ErrorDetail'][]> {
  const before = await countPosts(server.ctx.db, acme.id);
  const { error, response } = await create(body);
  expect(response.status, JSON.stringify(error)).toBe(422);
  expect(error?.error.code).toBe('unprocessable');
  expect(await countPosts(server.ctx.db, acme.id)).toBe(before);
  return error?.error.details ?? [];
}

describe('POST /public/v1/posts: the two forms', () => {
  it('fans single content out to one post per channel, under one group, in the order of channelIds', async () => {
    const { data: body, response } = await create({
      type: 'now',
      content: 'Doors open at 9',
      channelIds: [ch.sandbox2, ch.sandbox],
      mediaIds: [media.image],
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('idempotent-replayed')).toBeNull();
    expect(body!.group).toMatch(/^grp_/);
    expect(body!.data).toHaveLength(2);
    expect(body!.data.map((p) => p.channelId)).toEqual([ch.sandbox2, ch.sandbox]);
    for (const post of body!.data) {
      expect(post).toEqual({
        id: stringMatching(/^post_/),
        group: body!.group,
        channelId: post.channelId,
        provider: 'sandbox',
        content: 'Doors open at 9',
        mediaIds: [media.image],
        altTexts: {},
        thread: [],
        firstComment: null,
        // The same defaults the per-channel form stores for a sandbox item without settings.
        settings: { __type: 'sandbox', outcome: 'published', failingPart: 1 },
        status: 'scheduled',
        queued: false,
        scheduledAt: NOW,
        publishedAt: null,
        releaseId: null,
        releaseUrl: null,
        error: null,
        createdAt: NOW,
        updatedAt: NOW,
      });
      const stored = await publicApi(server, acme.auth).GET('/public/v1/posts/{id}', {
        params: { path: { id: post.id } },
      });
      expect(stored.data).toEqual(post);
    }
  });

  it('gives each channel its own item in the per-channel form, filling in the settings’ defaults', async () => {
    const { data: created, response } = await create({
      type: 'schedule',
      date: LATER,
      posts: [
        youtubeItem({ settings: { ...youtubeSettings, description: 'Filmed in the Alps.' } }),
        tiktokItem(),
        {
          channelId: ch.sandbox,
          content: 'Trying the failure path',
          settings: { __type: 'sandbox', outcome: 'failed' },
        },
        { channelId: ch.sandbox2, content: 'Plain', settings: { __type: 'sandbox' } },
      ],
    });
    expect(response.status).toBe(201);
    const data = created!.data;
    expect(data.map((p) => p.provider)).toEqual(['youtube', 'tiktok', 'sandbox', 'sandbox']);
    expect(data.every((p) => p.status === 'scheduled' && p.scheduledAt === LATER)).toBe(true);
    expect(data[0]!.settings).toEqual({ ...youtubeSettings, description: 'Filmed in the Alps.', tags: [] });
    expect(data[1]!.settings).toEqual({
      ...tiktokSettings,
      disableComment: false,
      disableDuet: false,
      disableStitch: false,
      brandContentToggle: false,
      brandOrganicToggle: false,
      isAiGenerated: false,
    });
    expect(data[2]!.settings).toEqual({ __type: 'sandbox', outcome: 'failed', failingPart: 1 });
    expect(data[3]!.settings).toEqual({ __type: 'sandbox', outcome: 'published', failingPart: 1 });
    expect(data[2]!.content).toBe('Trying the failure path');
    expect(data[2]!.mediaIds).toEqual([]);
  });

  it('saves drafts unpublished, keeping a date when one is given', async () => {
    const dated = await create({ type: 'draft', date: LATER, content: 'Later maybe', channelIds: [ch.sandbox] });
    expect(dated.data?.data[0]).toMatchObject({ status: 'draft', scheduledAt: LATER });
    const undated = await create({ type: 'draft', content: 'Some day', channelIds: [ch.sandbox] });
    expect(undated.data?.data[0]).toMatchObject({ status: 'draft', scheduledAt: null });
  });

  it('queues `now` posts at the current time and ignores their date', async () => {
    const { data } = await create({ type: 'now', date: LATER, content: 'Now', channelIds: [ch.sandbox] });
    expect(data?.data[0]).toMatchObject({ status: 'scheduled', scheduledAt: NOW });
  });
});

describe('POST /public/v1/posts: dates', () => {
  it('refuses a schedule more than a minute in the past with 422 on `date`', async () => {
    const details = await refused({
      type: 'schedule',
      date: '2026-11-21T11:58:59.999Z',
      content: 'Late',
      channelIds: [ch.sandbox],
    });
    expect(details).toEqual([{ path: 'date', message: stringContaining('more than 1 minute in the past') }]);
  });

  it('accepts a date up to a minute in the past, for clock skew', async () => {
    const { response } = await create({
      type: 'schedule',
      date: '2026-11-21T11:59:00.000Z',
      content: 'Just now',
      channelIds: [await freshSandbox()],
    });
    expect(response.status).toBe(201);
  });

  it('answers 400 when `schedule` comes without a date (the contract requires it)', async () => {
    const response = await sendCreate({ type: 'schedule', content: 'When?', channelIds: [ch.sandbox] });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).details).toEqual([
      { path: 'date', message: "must have required property 'date'" },
    ]);
  });
});

describe('POST /public/v1/posts: the rules of every post', () => {
  it('refuses unknown, foreign and disabled channels, naming each', async () => {
    const details = await refused({
      type: 'now',
      posts: [
        { channelId: 'ch_doesNotExist000000', content: 'a' },
        { channelId: ch.foreign, content: 'b' },
        { channelId: ch.disabled, content: 'c' },
      ],
    });
    expect(details).toEqual([
      { path: 'posts[0].channelId', message: 'There is no channel ch_doesNotExist000000 in this organization.' },
      { path: 'posts[1].channelId', message: `There is no channel ${ch.foreign} in this organization.` },
      { path: 'posts[2].channelId', message: stringContaining(`Channel ${ch.disabled} is disabled`) },
    ]);
  });

  it('names the channel by its place in channelIds in the single-content form', async () => {
    const details = await refused({ type: 'now', content: 'x', channelIds: [ch.sandbox, ch.foreign] });
    expect(details).toEqual([
      { path: 'channelIds[1]', message: `There is no channel ${ch.foreign} in this organization.` },
    ]);
  });

  it('refuses unknown and foreign media ids', async () => {
    const details = await refused({
      type: 'now',
      posts: [{ channelId: ch.sandbox, mediaIds: [media.image, media.foreign, 'med_nope'] }],
    });
    expect(details).toEqual([
      { path: 'posts[0].mediaIds[1]', message: `There is no media ${media.foreign} in this organization.` },
      { path: 'posts[0].mediaIds[2]', message: 'There is no media med_nope in this organization.' },
    ]);
  });

  it('needs content or media', async () => {
    expect(await refused({ type: 'now', posts: [{ channelId: ch.sandbox, content: '  \n ' }] })).toEqual([
      { path: 'posts[0].content', message: `A post needs content or media (channel ${ch.sandbox}).` },
    ]);
    expect(await refused({ type: 'now', content: '', channelIds: [ch.sandbox] })).toEqual([
      { path: 'content', message: `A post needs content or media (channel ${ch.sandbox}).` },
    ]);
    const mediaOnly = await create({
      type: 'now',
      posts: [{ channelId: await freshSandbox(), mediaIds: [media.image] }],
    });
    expect(mediaOnly.response.status).toBe(201);
    expect(mediaOnly.data?.data[0]?.content).toBe('');
  });

  it('needs settings whose __type is the channel’s provider', async () => {
    const details = await refused({
      type: 'now',
      posts: [
        youtubeItem({ settings: tiktokSettings }),
        { channelId: ch.sandbox, content: 'x', settings: youtubeSettings },
      ],
    });
    expect(details).toEqual([
      {
        path: 'posts[0].settings.__type',
        message: `Channel ${ch.youtube} is a YouTube channel; its settings need __type "youtube", not "tiktok".`,
      },
      {
        path: 'posts[1].settings.__type',
        message: `Channel ${ch.sandbox} is a sandbox channel; its settings need __type "sandbox", not "youtube".`,
      },
    ]);
  });

  it('needs settings for YouTube and TikTok channels', async () => {
    const details = await refused({
      type: 'now',
      posts: [youtubeItem({ settings: undefined }), tiktokItem({ settings: undefined })],
    });
    expect(details).toEqual([
      {
        path: 'posts[0].settings',
        message: `A YouTube post needs settings with __type "youtube" (channel ${ch.youtube}).`,
      },
      {
        path: 'posts[1].settings',
        message: `A TikTok post needs settings with __type "tiktok" (channel ${ch.tiktok}).`,
      },
    ]);
    const single = await refused({
      type: 'now',
      content: 'x',
      mediaIds: [media.video],
      channelIds: [ch.sandbox, ch.youtube],
    });
    expect(single).toEqual([{ path: 'channelIds[1]', message: stringContaining('use the per-channel form (posts)') }]);
  });

  it('lists the problems of every item at once', async () => {
    const details = await refused({
      type: 'now',
      posts: [
        { channelId: ch.sandbox, content: 'fine' },
        tiktokItem({ content: 'x'.repeat(2201) }),
        youtubeItem({ mediaIds: [media.image] }),
      ],
    });
    expect(details.map((d) => d.path)).toEqual(['posts[1].content', 'posts[2].mediaIds']);
  });
});

describe('POST /public/v1/posts: YouTube', () => {
  it('needs exactly one video', async () => {
    const details = await refused({
      type: 'now',
      posts: [
        youtubeItem({ mediaIds: [media.image] }),
        youtubeItem({ mediaIds: [media.video, media.video2] }),
        youtubeItem({ mediaIds: [] }),
      ],
    });
    expect(details).toEqual([
      {
        path: 'posts[0].mediaIds',
        message: `A YouTube post needs exactly one video (channel ${ch.youtube}); it has 1 image.`,
      },
      {
        path: 'posts[1].mediaIds',
        message: `A YouTube post needs exactly one video (channel ${ch.youtube}); it has 2 videos.`,
      },
      {
        path: 'posts[2].mediaIds',
        message: `A YouTube post needs exactly one video (channel ${ch.youtube}); it has no media.`,
      },
    ]);
  });

  it('refuses a document (PDF) on every network but LinkedIn, naming the network', async () => {
    const document = await insertMedia(server.ctx.db, acme.id, 'document');
    const details = await refused({
      type: 'now',
      posts: [
        youtubeItem({ mediaIds: [document] }),
        tiktokItem({ mediaIds: [media.video, document] }),
        { channelId: ch.sandbox, content: 'Deck', mediaIds: [document] },
      ],
    });
    expect(details).toEqual([
      {
        path: 'posts[0].mediaIds[0]',
        message: `YouTube takes no documents (PDF): only LinkedIn publishes them (channel ${ch.youtube}).`,
      },
      {
        path: 'posts[1].mediaIds[1]',
        message: `TikTok takes no documents (PDF): only LinkedIn publishes them (channel ${ch.tiktok}).`,
      },
      {
        path: 'posts[2].mediaIds[0]',
        message: `sandbox takes no documents (PDF): only LinkedIn publishes them (channel ${ch.sandbox}).`,
      },
    ]);
  });

  it('needs a title (the contract requires it)', async () => {
    const { title: _title, ...withoutTitle } = youtubeSettings;
    const response = await sendCreate({ type: 'now', posts: [{ ...youtubeItem(), settings: withoutTitle }] });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).details).toEqual([
      { path: 'posts[0].settings.title', message: "must have required property 'title'" },
    ]);
  });

  it('limits the tags to 500 characters together, as YouTube counts them', async () => {
    // 50 tags of 9 characters and 49 commas: 499. A space in a tag adds 2 for the quotes YouTube puts around it.
    const tags = Array.from({ length: 50 }, (_, i) => `tag${String(i).padStart(6, '0')}`);
    const tagged = await create({ type: 'now', posts: [youtubeItem({ settings: { ...youtubeSettings, tags } })] });
    expect(tagged.response.status).toBe(201);
    const spaced = [...tags.slice(1), 'two words'];
    const details = await refused({
      type: 'now',
      posts: [youtubeItem({ settings: { ...youtubeSettings, tags: spaced } })],
    });
    expect(details).toEqual([{ path: 'posts[0].settings.tags', message: stringContaining('these count 501') }]);
  });

  it('uses the content as the description, under YouTube’s limits, when settings have none', async () => {
    const long = 'é'.repeat(2501); // 5002 bytes in UTF-8
    expect(await refused({ type: 'now', posts: [youtubeItem({ content: long })] })).toEqual([
      { path: 'posts[0].content', message: stringContaining('this has 5002 bytes') },
    ]);
    expect(await refused({ type: 'now', posts: [youtubeItem({ content: 'a <b> tag' })] })).toEqual([
      { path: 'posts[0].content', message: stringContaining('and < or >') },
    ]);
    const withDescription = await create({
      type: 'now',
      posts: [youtubeItem({ content: long, settings: { ...youtubeSettings, description: 'Short.' } })],
    });
    expect(withDescription.response.status).toBe(201);
  });
});

describe('POST /public/v1/posts: TikTok', () => {
  it('limits the caption to 2200 characters', async () => {
    const longest = await create({ type: 'now', posts: [tiktokItem({ content: 'x'.repeat(2200) })] });
    expect(longest.response.status).toBe(201);
    expect(await refused({ type: 'now', posts: [tiktokItem({ content: 'x'.repeat(2201) })] })).toEqual([
      {
        path: 'posts[0].content',
        message: `TikTok allows a caption of 2200 characters (channel ${ch.tiktok}); this one has 2201.`,
      },
    ]);
  });

  it('needs exactly one video', async () => {
    expect(await refused({ type: 'now', posts: [tiktokItem({ mediaIds: [media.image] })] })).toEqual([
      {
        path: 'posts[0].mediaIds',
        message: `A TikTok post needs exactly one video (channel ${ch.tiktok}); it has 1 image.`,
      },
    ]);
  });

  it('refuses private branded content', async () => {
    const details = await refused({
      type: 'now',
      posts: [tiktokItem({ settings: { ...tiktokSettings, brandContentToggle: true } })],
    });
    expect(details).toEqual([
      {
        path: 'posts[0].settings.brandContentToggle',
        message: stringContaining('does not allow branded content (a paid partnership) to be private'),
      },
    ]);
    const visible = { ...tiktokSettings, privacyLevel: 'PUBLIC_TO_EVERYONE', brandContentToggle: true } as const;
    const branded = await create({ type: 'now', posts: [tiktokItem({ settings: visible })] });
    expect(branded.response.status).toBe(201);
  });

  it('refuses an item when the creator cannot post now', async () => {
    const channel = (await createChannel(server.ctx.db, acme.id, 'tiktok', 'Capped')).id;
    tiktok.set(channel, { canPost: false, cannotPostReason: 'This account reached TikTok’s daily post limit' });
    expect(await refused({ type: 'now', posts: [tiktokItem({ channelId: channel })] })).toEqual([
      {
        path: 'posts[0].channelId',
        message: `The TikTok account of channel ${channel} cannot post now: This account reached TikTok’s daily post limit.`,
      },
    ]);
  });

  it('refuses a privacy level the creator does not offer', async () => {
    const channel = (await createChannel(server.ctx.db, acme.id, 'tiktok', 'Friends only')).id;
    tiktok.set(channel, { privacyLevelOptions: ['MUTUAL_FOLLOW_FRIENDS', 'SELF_ONLY'] });
    const item = tiktokItem({
      channelId: channel,
      settings: { ...tiktokSettings, privacyLevel: 'PUBLIC_TO_EVERYONE' },
    });
    expect(await refused({ type: 'now', posts: [item] })).toEqual([
      {
        path: 'posts[0].settings.privacyLevel',
        message: `The TikTok account of channel ${channel} allows MUTUAL_FOLLOW_FRIENDS, SELF_ONLY; not PUBLIC_TO_EVERYONE.`,
      },
    ]);
  });

  it('refuses interactions the creator turned off unless the post turns them off too', async () => {
    const channel = (await createChannel(server.ctx.db, acme.id, 'tiktok', 'Quiet')).id;
    tiktok.set(channel, { commentDisabled: true, duetDisabled: true, stitchDisabled: true });
    const details = await refused({
      type: 'now',
      posts: [tiktokItem({ channelId: channel, settings: { ...tiktokSettings, disableDuet: false } })],
    });
    expect(details).toEqual([
      {
        path: 'posts[0].settings.disableComment',
        message: `The creator of channel ${channel} turned comments off in TikTok; send disableComment: true.`,
      },
      {
        path: 'posts[0].settings.disableDuet',
        message: `The creator of channel ${channel} turned duets off in TikTok; send disableDuet: true.`,
      },
      {
        path: 'posts[0].settings.disableStitch',
        message: `The creator of channel ${channel} turned stitches off in TikTok; send disableStitch: true.`,
      },
    ]);
    const allOff = { ...tiktokSettings, disableComment: true, disableDuet: true, disableStitch: true };
    const quiet = await create({ type: 'now', posts: [tiktokItem({ channelId: channel, settings: allOff })] });
    expect(quiet.response.status).toBe(201);
  });

  it('refuses a video longer than the creator may post, and takes one that fits', async () => {
    const channel = (await createChannel(server.ctx.db, acme.id, 'tiktok', 'Short clips')).id;
    tiktok.set(channel, { maxVideoPostDurationSec: 60 });
    const long = await insertMedia(server.ctx.db, acme.id, 'video', 61_500);
    expect(await refused({ type: 'now', posts: [tiktokItem({ channelId: channel, mediaIds: [long] })] })).toEqual([
      {
        path: 'posts[0].mediaIds',
        message: `The TikTok account of channel ${channel} may post videos of up to 60 seconds; this one lasts 61.5 seconds.`,
      },
    ]);
    const fits = await insertMedia(server.ctx.db, acme.id, 'video', 60_000);
    const fitting = await create({ type: 'now', posts: [tiktokItem({ channelId: channel, mediaIds: [fits] })] });
    expect(fitting.response.status).toBe(201);
  });

  it('reads the creator info once per channel per request', async () => {
    const channel = (await createChannel(server.ctx.db, acme.id, 'tiktok', 'Twice')).id;
    const before = tiktok.reads.filter((id) => id === channel).length;
    const { response } = await create({
      type: 'draft',
      posts: [tiktokItem({ channelId: channel }), tiktokItem({ channelId: channel })],
    });
    expect(response.status).toBe(201);
    expect(tiktok.reads.filter((id) => id === channel).length - before).toBe(1);
  });

  it('answers 502 and creates nothing when the creator info cannot be read', async () => {
    const channel = (await createChannel(server.ctx.db, acme.id, 'tiktok', 'Unreachable')).id;
    tiktok.failFor(channel);
    const before = await countPosts(server.ctx.db, acme.id);
    const { error, response } = await create({
      type: 'now',
      posts: [{ channelId: ch.sandbox, content: 'x' }, tiktokItem({ channelId: channel })],
    });
    expect(response.status).toBe(502);
    expect(error?.error.code).toBe('provider_error');
    expect(await countPosts(server.ctx.db, acme.id)).toBe(before);
  });

  describe('on a server where TikTok publishing is not configured', () => {
    let plain: TestServer;
    beforeAll(async () => {
      plain = await startTestServer({ env: POSTS_TEST_ENV });
    });
    afterAll(() => plain?.close());

    it('refuses TikTok items with 422', async () => {
      const org = await createOrganization(plain.ctx.db);
      const channel = (await createChannel(plain.ctx.db, org.id, 'tiktok')).id;
      const video = await insertMedia(plain.ctx.db, org.id, 'video');
      const { error, response } = await publicApi(plain, org.auth).POST('/public/v1/posts', {
        body: {
          type: 'now',
          posts: [{ channelId: channel, content: 'x', mediaIds: [video], settings: tiktokSettings }],
        },
      });
      expect(response.status).toBe(422);
      expect(error?.error.details).toEqual([
        { path: 'posts[0].channelId', message: stringContaining('TikTok publishing is not configured on this server') },
      ]);
      expect(await countPosts(plain.ctx.db, org.id)).toBe(0);
    });
  });
});

describe('POST /public/v1/posts: daily quota', () => {
  // The sandbox cap is 3 posts per channel per UTC day on this server.
  it('refuses posts that would pass their channel’s cap on the UTC day of their scheduledAt, counting the request’s own posts', async () => {
    const channel = (await createChannel(server.ctx.db, acme.id, 'sandbox', 'Quota')).id;
    await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: channel,
      status: 'scheduled',
      scheduledAt: '2026-12-05T01:00:00.000Z',
    });
    await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: channel,
      status: 'draft',
      scheduledAt: '2026-12-05T02:00:00.000Z',
    });
    await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: channel,
      status: 'failed',
      scheduledAt: '2026-12-05T03:00:00.000Z',
    });
    const item = { channelId: channel, content: 'x' };

    const details = await refused({ type: 'schedule', date: '2026-12-05T23:59:59.999Z', posts: [item, item, item] });
    expect(details).toEqual([{ path: 'posts[2].channelId', message: 'daily quota of 3 posts used up for 2026-12-05' }]);

    const nextDay = await create({ type: 'schedule', date: '2026-12-06T00:00:00.000Z', posts: [item, item, item] });
    expect(nextDay.response.status).toBe(201);
    const lastTwo = await create({ type: 'schedule', date: '2026-12-05T12:00:00.000Z', posts: [item, item] });
    expect(lastTwo.response.status).toBe(201);
    expect(await refused({ type: 'schedule', date: '2026-12-05T12:00:00.000Z', posts: [item] })).toEqual([
      { path: 'posts[0].channelId', message: 'daily quota of 3 posts used up for 2026-12-05' },
    ]);
    // Drafts don't count against the quota.
    const drafts = await create({ type: 'draft', date: '2026-12-05T12:00:00.000Z', posts: [item, item, item, item] });
    expect(drafts.response.status).toBe(201);
  });

  it('counts `now` posts on the current UTC day', async () => {
    const channel = (await createChannel(server.ctx.db, acme.id, 'sandbox', 'Busy today')).id;
    const { error: refusal, response } = await create({
      type: 'now',
      posts: Array.from({ length: 4 }, () => ({ channelId: channel, content: 'x' })),
    });
    expect(response.status).toBe(422);
    const error = refusal!.error;
    expect(error.message).toBe(
      `Daily quota exceeded: channel ${channel} may publish 3 posts on 2026-11-21 (UTC), has 0 already and this request adds 4.`,
    );
    expect(error.details).toEqual([
      { path: 'posts[3].channelId', message: 'daily quota of 3 posts used up for 2026-11-21' },
    ]);
  });
});

describe('POST /public/v1/posts: all or nothing', () => {
  it('leaves nothing behind when a later channel fails while the posts are written', async () => {
    const doomed = (await createChannel(server.ctx.db, acme.id, 'sandbox', 'Doomed')).id;
    // A trigger makes the database itself refuse the second channel's post, after the first one was written.
    await sql`create function refuse_doomed_post() returns trigger language plpgsql as $$
      begin
        if new.channel_id = ${sql.lit(doomed)} then raise exception 'refused by the test'; end if;
        return new;
      end $$`.execute(server.ctx.db);
    await sql`create trigger refuse_doomed_post before insert on posts for each row execute function refuse_doomed_post()`.execute(
      server.ctx.db,
    );
    try {
      const before = await countPosts(server.ctx.db, acme.id);
      const body: CreatePostRequest = {
        type: 'now',
        posts: [
          { channelId: await freshSandbox(), content: 'first' },
          { channelId: doomed, content: 'second' },
        ],
      };
      const createOnce = () =>
        publicApi(server, acme.auth).POST('/public/v1/posts', {
          body,
          params: { header: { 'Idempotency-Key': 'doomed-create' } },
        });
      const { error, response } = await createOnce();
      expect(response.status).toBe(500);
      expect(JSON.stringify(error)).not.toMatch(/refused by the test|trigger|insert/i);
      expect(await countPosts(server.ctx.db, acme.id)).toBe(before);

      // The key was not kept either: once the channel works, the same request creates the posts.
      await sql`drop trigger refuse_doomed_post on posts`.execute(server.ctx.db);
      const retry = await createOnce();
      expect(retry.response.status).toBe(201);
      expect(retry.response.headers.get('idempotent-replayed')).toBeNull();
      expect(await countPosts(server.ctx.db, acme.id)).toBe(before + 2);
    } finally {
      await sql`drop trigger if exists refuse_doomed_post on posts`.execute(server.ctx.db);
      await sql`drop function if exists refuse_doomed_post()`.execute(server.ctx.db);
    }
  });

  it('creates nothing when one item of several breaks a rule', async () => {
    const details = await refused({
      type: 'now',
      posts: [
        { channelId: ch.sandbox, content: 'fine' },
        { channelId: ch.foreign, content: 'not ours' },
      ],
    });
    expect(details.map((d) => d.path)).toEqual(['posts[1].channelId']);
  });
});
