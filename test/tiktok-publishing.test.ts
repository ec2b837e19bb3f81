import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TikTokCreatorInfo } from '../src/providers/tiktok/creator-info.js';
import Service from '../src/sdk/src/index.js';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { eventually } from './support/eventually.js';
import {
  connectTikTok,
  startFakeTikTok,
  tiktokEnv,
  type FakeTikTok,
  type FakeTikTokVideo,
} from './support/fake-tiktok.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { mp4WithDuration } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { anyNumber, anyString, stringMatching } from './support/typed-matchers.js';
import { startUpload } from './support/uploads.js';

// The mission's TikTok path end to end against a fake of TikTok that follows its documented API: a
// channel connected in Settings → Channels, creator info, direct and inbox video posts uploaded in
// chunks of 5 MiB (the smallest TikTok takes), their outcomes, and analytics — through the API and
// the SDK.
const MB = 1024 * 1024;
const CHUNK = 5 * MB;
let tiktok: FakeTikTok;
let server: TestServer;
let org: TestOrganization;
let session: BrowserSession;
let sdk: Service;
let channelId: string;
/** A 12 MB video of 15 seconds: two chunks, 5 MiB and the rest. */
let bigVideo: { id: string; bytes: Buffer };
/** A 1 MB video of 8 seconds: one chunk. */
let smallVideo: { id: string; bytes: Buffer };

const api = (on: TestServer = server) => publicApi(on, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

async function uploadVideo(name: string, bytes: Buffer): Promise<string> {
  const upload = await startUpload(server, org, name, 'video/mp4', bytes.length);
  expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
  const completed = await api().POST('/public/v1/media/uploads/{uploadId}/complete', {
    params: { path: { uploadId: upload.uploadId } },
  });
  return dataOf(completed).id;
}

beforeAll(async () => {
  tiktok = await startFakeTikTok({
    account: {
      displayName: 'Acme on TikTok',
      username: 'acme',
      openId: '-000acmeOpenId',
      followerCount: 3400,
      videoCount: 12,
    },
  });
  server = await startTestServer({
    worker: true,
    env: {
      ...tiktokEnv(tiktok, CHUNK),
      PUBLISH_RETRY_BASE_MS: '200',
      DAILY_POST_LIMIT_TIKTOK: '100',
      RATE_LIMIT_MAX: '100000',
    },
  });
});
// The server in a hook of its own, the account's setup in the next: each gets a hook's time on a busy machine.
beforeAll(async () => {
  org = await createOrganization(server.ctx.db, 'Acme');
  sdk = new Service(org.apiKey, server.baseUrl, { maxRetries: 0 });
  session = new BrowserSession(server);
  await session.logIn(org.email, org.password);
  const finished = await connectTikTok(session);
  expect(finished.headers.get('location')).toBe('/settings/channels?done=connected');
  channelId = (
    await server.ctx.db
      .selectFrom('channels')
      .select('id')
      .where('organization_id', '=', org.id)
      .where('provider', '=', 'tiktok')
      .executeTakeFirstOrThrow()
  ).id;
  const big = mp4WithDuration(15, { mdatBytes: 12 * MB });
  const small = mp4WithDuration(8, { mdatBytes: MB });
  bigVideo = { id: await uploadVideo('launch.mp4', big), bytes: big };
  smallVideo = { id: await uploadVideo('teaser.mp4', small), bytes: small };
}, TIMEOUTS.hook);
afterAll(async () => {
  await server?.close();
  await tiktok?.close();
});

type Settings = Schemas['TikTokSettings'];
const direct = (privacyLevel: Schemas['TikTokPrivacyLevel'] = 'PUBLIC_TO_EVERYONE'): Settings => ({
  __type: 'tiktok',
  postMode: 'direct',
  privacyLevel,
});

function createNow(content: string, mediaId: string, settings: Settings) {
  return api().POST('/public/v1/posts', {
    body: { type: 'now', posts: [{ channelId, content, mediaIds: [mediaId], settings }] },
  });
}

async function publishNow(content: string, mediaId: string, settings: Settings): Promise<string> {
  return dataOf(await createNow(content, mediaId, settings), 201).data[0]!.id;
}

/** The post once it is published or failed. */
function settled(id: string): Promise<Schemas['Post']> {
  return eventually(
    async () => {
      const post = dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
      expect(['published', 'failed'], `post ${id} is ${post.status}`).toContain(post.status);
      return post;
    },
    { timeout: scaled(30_000), interval: 200 },
  );
}

async function history(id: string): Promise<Schemas['PostEvent'][]> {
  return dataOf(await api().GET('/public/v1/posts/{id}/history', byId(id))).data;
}

const analytics = (query: { days?: number; limit?: number; cursor?: string }) =>
  api().GET('/public/v1/channels/{id}/tiktok/analytics', { params: { path: { id: channelId }, query } });

/** Forgets the creator info the server keeps for a while, so the next read asks TikTok. */
function pastCreatorInfoCache() {
  (server.ctx.providers.tiktok.creatorInfo as TikTokCreatorInfo).forget(channelId);
}

describe('a TikTok channel connected in Settings → Channels', () => {
  it('has the account’s name, handle and avatar from TikTok', async () => {
    const channels = (await sdk.channels()).data;
    expect(channels.find((c) => c.id === channelId)).toMatchObject({
      provider: 'tiktok',
      name: 'Acme on TikTok',
      username: 'acme',
      picture: tiktok.account.avatarUrl,
      status: 'active',
    });
  });

  it('answers its creator info through the SDK, reading TikTok once for calls close together', async () => {
    const queries = () => tiktok.requests.filter((r) => r.path === '/v2/post/publish/creator_info/query/').length;
    pastCreatorInfoCache();
    const before = queries();
    const info = await sdk.tiktokCreatorInfo(channelId);
    expect(info).toEqual({
      channelId,
      canPost: true,
      cannotPostReason: null,
      creatorNickname: 'Acme on TikTok',
      creatorUsername: 'acme',
      creatorAvatarUrl: tiktok.account.avatarUrl,
      privacyLevelOptions: ['PUBLIC_TO_EVERYONE', 'MUTUAL_FOLLOW_FRIENDS', 'SELF_ONLY'],
      commentDisabled: false,
      duetDisabled: false,
      stitchDisabled: false,
      maxVideoPostDurationSec: 600,
    });
    await sdk.tiktokCreatorInfo(channelId);
    expect(queries()).toBe(before + 1);
  });

  it('says canPost false with TikTok’s reason, and refuses a TikTok item then', async () => {
    tiktok.cannotPost('spam_risk_too_many_posts');
    try {
      pastCreatorInfoCache();
      const info = await sdk.tiktokCreatorInfo(channelId);
      expect(info.canPost).toBe(false);
      expect(info.cannotPostReason).toContain('spam_risk_too_many_posts');
      const refused = refusalOf(await createNow('Too many today', smallVideo.id, direct()), 422);
      expect(refused.details?.[0]?.message).toMatch(
        /cannot post now: the account reached the number of posts TikTok allows/,
      );
    } finally {
      tiktok.cannotPost(null);
      pastCreatorInfoCache();
    }
  });

  it('refuses a video longer than the creator may post, from the duration read at upload', async () => {
    tiktok.creator.maxVideoPostDurationSec = 10;
    try {
      pastCreatorInfoCache();
      const refused = refusalOf(await createNow('Too long', bigVideo.id, direct()), 422);
      expect(refused.details).toEqual([
        { path: 'posts[0].mediaIds', message: stringMatching(/up to 10 seconds; this one lasts 15 seconds/) },
      ]);
    } finally {
      tiktok.creator.maxVideoPostDurationSec = 600;
      pastCreatorInfoCache();
    }
  });
});

describe('publishing to TikTok', () => {
  it('posts a 12 MB video directly, in two chunks with Content-Range, and links to the public post', async () => {
    const id = await publishNow('Launch day #acme', bigVideo.id, { ...direct(), disableDuet: true });
    const post = await settled(id);
    expect(post).toMatchObject({ status: 'published', error: null });
    expect(post.releaseId).toMatch(/^7\d{18}$/);
    expect(post.releaseUrl).toBe(`https://www.tiktok.com/@acme/video/${post.releaseId}`);
    const publication = tiktok.publications.find((p) => p.postId === post.releaseId)!;
    expect(publication).toMatchObject({
      mode: 'direct',
      source: 'FILE_UPLOAD',
      videoSize: bigVideo.bytes.length,
      chunkSize: CHUNK,
      totalChunkCount: 2,
    });
    expect(publication.postInfo).toEqual({
      title: 'Launch day #acme',
      privacy_level: 'PUBLIC_TO_EVERYONE',
      disable_comment: false,
      disable_duet: true,
      disable_stitch: false,
      brand_content_toggle: false,
      brand_organic_toggle: false,
      is_aigc: false,
    });
    const size = bigVideo.bytes.length;
    expect(publication.chunks).toEqual([`bytes 0-${CHUNK - 1}/${size}`, `bytes ${CHUNK}-${size - 1}/${size}`]);
    // Every byte once, and the video TikTok holds is the file.
    expect(publication.received).toBe(size);
    expect(tiktok.videoBytes(publication.publishId)!.equals(bigVideo.bytes)).toBe(true);
    const events = await history(id);
    expect(events.map((e) => e.type)).toEqual(['created', 'scheduled', 'publishing', 'published']);
  });

  it('a post that is not public is published without a public id, and says so', async () => {
    const post = await settled(await publishNow('Only me', smallVideo.id, direct('SELF_ONLY')));
    const publication = tiktok.publications.at(-1)!;
    expect(post).toMatchObject({ status: 'published', releaseId: publication.publishId, releaseUrl: null });
    expect((await history(post.id)).at(-1)!.note).toMatch(/no public post id/);
  });

  it('sends an inbox post to the creator’s inbox, and the post says the creator finishes it in the app', async () => {
    const post = await settled(
      await publishNow('For the inbox', smallVideo.id, {
        __type: 'tiktok',
        postMode: 'inbox',
        privacyLevel: 'SELF_ONLY',
      }),
    );
    const publication = tiktok.publications.at(-1)!;
    expect(publication).toMatchObject({
      mode: 'inbox',
      postInfo: null,
      status: 'SEND_TO_USER_INBOX',
      received: smallVideo.bytes.length,
      totalChunkCount: 1,
    });
    expect(post).toMatchObject({ status: 'published', releaseId: publication.publishId, releaseUrl: null });
    expect((await history(post.id)).at(-1)).toMatchObject({
      type: 'published',
      note: stringMatching(/inbox: they finish the post in the TikTok app/),
    });
  });

  it('lets TikTok pull a video from a host the operator verified with TikTok, uploading nothing', async () => {
    const host = new URL(server.baseUrl).host;
    const verified = server.ctx.config.tiktok!.verifiedMediaHosts;
    verified.push(host);
    tiktok.verifiedUrlPrefixes.push(`${server.baseUrl}/`);
    try {
      const post = await settled(await publishNow('Pulled', bigVideo.id, direct()));
      const publication = tiktok.publications.at(-1)!;
      expect(publication).toMatchObject({ source: 'PULL_FROM_URL', status: 'PUBLISH_COMPLETE', received: 0 });
      expect(tiktok.videoBytes(publication.publishId)!.equals(bigVideo.bytes)).toBe(true);
      expect(post).toMatchObject({ status: 'published', releaseId: publication.postId });
      expect(tiktok.requests.filter((r) => r.method === 'PUT' && r.path.includes(publication.publishId))).toEqual([]);
    } finally {
      verified.splice(verified.indexOf(host), 1);
      tiktok.verifiedUrlPrefixes.length = 0;
    }
  });

  it('fails with TikTok’s fail_reason in words when TikTok cannot publish the video', async () => {
    tiktok.failNextPublication('frame_rate_check_failed');
    const post = await settled(await publishNow('Bad frame rate', smallVideo.id, direct()));
    expect(post.status).toBe('failed');
    expect(post.error).toEqual({
      code: 'rejected_by_network',
      message: stringMatching(/frame rate \(23 to 60 frames per second\) \(frame_rate_check_failed\)/),
    });
  });

  it('fails with TikTok’s refusal and keeps its log_id in the history for TikTok’s support', async () => {
    tiktok.unaudited(true);
    try {
      const post = await settled(await publishNow('Public from an unaudited app', smallVideo.id, direct()));
      expect(post.status).toBe('failed');
      expect(post.error!.message).toMatch(/not audited by TikTok yet, so it may only post with privacy SELF_ONLY/);
      const failed = (await history(post.id)).at(-1)!;
      expect(failed).toMatchObject({ type: 'failed', logId: stringMatching(/^\d{14}[0-9A-F]+$/) });
    } finally {
      tiktok.unaudited(false);
      pastCreatorInfoCache();
    }
  });
});

describe('TikTok analytics', () => {
  it('answers the account’s totals and its videos of the last `days`, newest first, over two pages', async () => {
    const now = Math.floor(Date.now() / 1000);
    const video = (i: number, ageDays: number): FakeTikTokVideo => ({
      id: String(7_100_000_000_000_000_000n + BigInt(i)),
      title: `Clip ${i}`,
      createTime: now - Math.round(ageDays * 86_400),
      duration: 20 + i,
      coverImageUrl: `https://p16.tiktokcdn.example/cover/${i}.jpeg`,
      shareUrl: `https://www.tiktok.com/@acme/video/${i}`,
      viewCount: 1000 + i,
      likeCount: 100 + i,
      commentCount: 10 + i,
      shareCount: i,
    });
    // 24 videos over the last six days, and 3 older than the period.
    tiktok.addVideos([
      ...Array.from({ length: 24 }, (_, i) => video(i, 6 - i * 0.25)),
      video(90, 8),
      video(91, 9),
      video(92, 30),
    ]);
    const inPeriod = (await collect()).length;

    const page1 = dataOf(await analytics({ days: 7 }));
    expect(page1.account).toEqual({
      followerCount: 3400,
      followingCount: tiktok.account.followingCount,
      likesCount: tiktok.account.likesCount,
      videoCount: anyNumber(),
    });
    expect(page1.data).toHaveLength(20);
    expect(page1.data[0]).toMatchObject({ durationSec: anyNumber(), shareUrl: anyString() });
    const times = page1.data.map((v) => Date.parse(v.createdAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(page1.nextCursor).toEqual(expect.any(String));
    const cursor = page1.nextCursor!;

    const page2 = dataOf(await analytics({ days: 7, cursor }));
    expect(page2.nextCursor).toBeNull();
    const all = [...page1.data, ...page2.data];
    // Every video of the period once, none older than it.
    expect(all).toHaveLength(inPeriod);
    expect(new Set(all.map((v) => v.id)).size).toBe(inPeriod);
    expect(all.map((v) => v.id)).not.toContain(String(7_100_000_000_000_000_090n));
    expect(all.find((v) => v.id === String(7_100_000_000_000_000_023n))).toEqual({
      id: String(7_100_000_000_000_000_023n),
      title: 'Clip 23',
      createdAt: new Date((now - Math.round((6 - 23 * 0.25) * 86_400)) * 1000).toISOString(),
      durationSec: 43,
      viewCount: 1023,
      likeCount: 123,
      commentCount: 33,
      shareCount: 23,
      shareUrl: 'https://www.tiktok.com/@acme/video/23',
      coverImageUrl: 'https://p16.tiktokcdn.example/cover/23.jpeg',
    });

    // `limit` sets the page size, as in every list; TikTok's own maximum (20) is the contract's.
    const small = dataOf(await analytics({ days: 7, limit: 5 }));
    expect(small.data.map((v) => v.id)).toEqual(page1.data.slice(0, 5).map((v) => v.id));
    const next = dataOf(await analytics({ days: 7, limit: 5, cursor: small.nextCursor! }));
    expect(next.data.map((v) => v.id)).toEqual(page1.data.slice(5, 10).map((v) => v.id));
    refusalOf(await analytics({ limit: 21 }), 400);

    // The cursor belongs to this reading: another period, or a forged one, is refused.
    refusalOf(await analytics({ days: 30, cursor }), 400);
    refusalOf(await analytics({ days: 7, cursor: cursor.slice(0, -2) + 'xx' }), 400);
  });

  async function collect(): Promise<{ id: string }[]> {
    const videos: { id: string }[] = [];
    for await (const video of sdk.iterateTiktokVideos(channelId, { days: 7 })) videos.push(video);
    return videos;
  }
});

describe('TikTok’s rotating refresh tokens', () => {
  const creatorInfo = (on: TestServer) => api(on).GET('/public/v1/channels/{id}/tiktok/creator-info', byId(channelId));

  describe('with a second server on the same database', () => {
    let other: TestServer;
    beforeAll(async () => {
      other = await startTestServer({ env: tiktokEnv(tiktok, CHUNK), database: server.ctx.database });
    });
    afterAll(() => other?.close({ keepDatabase: true }));

    it('two servers refreshing the channel’s token at once make one refresh, and both go on with the new token', async () => {
      // A day later: the access token has expired, on TikTok and for both servers.
      tiktok.advanceClock(86_400 + 60);
      const later = new Date(Date.now() + 86_400_000 + 60_000);
      server.setNow(later);
      other.setNow(later);
      const before = { ...tiktok.refreshes };
      const answers = await Promise.all([creatorInfo(server), creatorInfo(other)]);
      expect(answers.map((a) => a.response.status)).toEqual([200, 200]);
      expect(tiktok.refreshes).toEqual({ granted: before.granted + 1, refused: before.refused });

      // The refresh token stored is the new one: the next refresh works.
      tiktok.advanceClock(86_400 + 60);
      const dayAfter = new Date(later.getTime() + 86_400_000 + 60_000);
      server.setNow(dayAfter);
      other.setNow(dayAfter);
      dataOf(await creatorInfo(other));
      expect(tiktok.refreshes).toEqual({ granted: before.granted + 2, refused: before.refused });
    });
  });

  it('a refused refresh marks the channel needs_reconnect, and creator info says to connect it again', async () => {
    tiktok.revokeAll();
    tiktok.advanceClock(86_400 + 60);
    server.setNow(new Date(Date.now() + 3 * 86_400_000 + 240_000));
    expect(refusalOf(await creatorInfo(server), 422).message).toMatch(/needs to be connected again/);
    expect((await sdk.channels()).data.find((c) => c.id === channelId)!.status).toBe('needs_reconnect');
  });
});
