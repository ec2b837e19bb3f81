import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostStatus } from '../src/core/contract.js';
import { plainText } from '../src/providers/network-text.js';
import { BrowserSession } from './support/browser-session.js';
import { eventually } from './support/eventually.js';
import { connectYouTube, startFakeGoogle, youtubeEnv, type FakeGoogle } from './support/fake-google.js';
import { connectTikTok, startFakeTikTok, tiktokEnv, type FakeTikTok } from './support/fake-tiktok.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { bodyOf } from './support/api.js';
import { mp4, mp4WithDuration } from './support/media-samples.js';
import { send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { completeUpload, startUpload } from './support/uploads.js';

// What the publisher does when a network misbehaves as its documentation says it may, against the
// project's fakes of the networks, each case in its own block. Retries wait the publisher's retry
// delays (5 s, then 30 s) on the server's clock, which the tests move instead of waiting.
const MB = 1024 * 1024;
const TIKTOK_CHUNK = 5 * MB;
const YOUTUBE_CHUNK = 256 * 1024;
const RETRY_BASE_MS = 5000;
let tiktok: FakeTikTok;
let google: FakeGoogle;
let server: TestServer;
let org: TestOrganization;
let session: BrowserSession;
const channels = { tiktok: '', youtube: '' };
/** 12 MB of video: two TikTok chunks, 5 MiB and the rest. */
let twoChunks: { id: string; bytes: Buffer };
/** 1 MB of video: one TikTok chunk, the last. */
let oneChunk: { id: string; bytes: Buffer };
/** 600 KiB of video: three YouTube chunks of 256 KiB and the rest. */
let youtubeVideo: { id: string; bytes: Buffer };

interface Post {
  id: string;
  status: PostStatus;
  releaseId: string | null;
  error: { code: string; message: string } | null;
}

async function uploadMedia(name: string, bytes: Buffer): Promise<{ id: string; bytes: Buffer }> {
  const upload = await startUpload(server, org, name, 'video/mp4', bytes.length);
  expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
  const media = await bodyOf<{ id: string }>(await completeUpload(server, org, upload.uploadId));
  return { id: media.id, bytes };
}

async function channelOf(provider: 'tiktok' | 'youtube'): Promise<string> {
  const row = await server.ctx.db
    .selectFrom('channels')
    .select('id')
    .where('organization_id', '=', org.id)
    .where('provider', '=', provider)
    .executeTakeFirstOrThrow();
  return row.id;
}

beforeAll(async () => {
  tiktok = await startFakeTikTok({ account: { displayName: 'Acme on TikTok', username: 'acme' } });
  // Published at the first status check, so that a test waits for nothing but what it is about.
  tiktok.processingChecks(0);
  google = await startFakeGoogle({ account: { channelId: 'UC_misbehave_0001', title: 'Acme Videos' } });
  server = await startTestServer({
    worker: true,
    env: {
      ...tiktokEnv(tiktok, TIKTOK_CHUNK),
      ...youtubeEnv(google, YOUTUBE_CHUNK),
      PUBLISH_RETRY_BASE_MS: String(RETRY_BASE_MS),
      DAILY_POST_LIMIT_TIKTOK: '100',
      DAILY_POST_LIMIT_YOUTUBE: '100',
      RATE_LIMIT_MAX: '100000',
    },
  });
  org = await createOrganization(server.ctx.db, 'Acme');
  session = new BrowserSession(server);
  await session.logIn(org.email, org.password);
  expect((await connectTikTok(session)).headers.get('location')).toBe('/settings/channels?done=connected');
  expect((await connectYouTube(session)).headers.get('location')).toBe('/settings/channels?done=connected');
  channels.tiktok = await channelOf('tiktok');
  channels.youtube = await channelOf('youtube');
  twoChunks = await uploadMedia('two-chunks.mp4', mp4WithDuration(15, { mdatBytes: 12 * MB }));
  oneChunk = await uploadMedia('one-chunk.mp4', mp4WithDuration(8, { mdatBytes: MB }));
  youtubeVideo = await uploadMedia('youtube.mp4', mp4(600 * 1024));
}, TIMEOUTS.hook);
afterAll(async () => {
  await server?.close();
  await tiktok?.close();
  await google?.close();
});

async function publishNow(provider: 'tiktok' | 'youtube', mediaId: string, title = 'Misbehaving'): Promise<string> {
  const settings =
    provider === 'tiktok'
      ? { __type: 'tiktok', postMode: 'direct', privacyLevel: 'PUBLIC_TO_EVERYONE' }
      : { __type: 'youtube', title, privacyStatus: 'unlisted', madeForKids: false };
  const response = await send(server, org.auth, 'POST', '/public/v1/posts', {
    type: 'now',
    posts: [{ channelId: channels[provider], content: title, mediaIds: [mediaId], settings }],
  });
  const answer = await bodyOf<{ data: { id: string }[] }>(response);
  expect(response.status, JSON.stringify(answer)).toBe(201);
  return answer.data[0]!.id;
}

async function getPost(id: string): Promise<Post> {
  return await bodyOf<Post>(await send(server, org.auth, 'GET', `/public/v1/posts/${id}`));
}

async function settled(id: string): Promise<Post> {
  return eventually(
    async () => {
      const post = await getPost(id);
      expect(post.status).toMatch(/^(published|failed)$/);
      return post;
    },
    { timeout: TIMEOUTS.eventually * 2 },
  );
}

interface PostEvent {
  type: string;
  reason?: string;
  nextAttemptAt?: string;
  error?: { code: string; message: string };
}

async function history(id: string): Promise<PostEvent[]> {
  const page = await bodyOf<{
    data: PostEvent[];
  }>(await send(server, org.auth, 'GET', `/public/v1/posts/${id}/history`));
  return page.data;
}

/** Waits for the post's `count`-th retry to be planned; the event. */
function retryPlanned(id: string, count: number): Promise<PostEvent> {
  return eventually(async () => {
    const retries = (await history(id)).filter((event) => event.type === 'retrying');
    expect(retries).toHaveLength(count);
    return retries.at(-1)!;
  });
}

/** Waits for the post's `count`-th retry to be planned, then moves the clock to it: the retry runs. Its reason. */
async function passRetry(id: string, count: number): Promise<string> {
  const retry = await retryPlanned(id, count);
  await server.clock.advance(Date.parse(retry.nextAttemptAt!) - server.clock.now().getTime() + 1000);
  return retry.reason!;
}

describe('TikTok: a chunk TikTok stored whose answer was lost', () => {
  it('is answered 416 when sent again: the upload goes on from the bytes status/fetch reports, and the post is published once', async () => {
    const before = tiktok.publications.length;
    tiktok.loseNextChunkAnswer();
    const id = await publishNow('tiktok', twoChunks.id);
    await passRetry(id, 1);
    const post = await settled(id);
    expect(post.error).toBeNull();
    expect(post.status).toBe('published');
    // One publication, each chunk stored once, the first sent twice (the second time refused with 416).
    expect(tiktok.publications).toHaveLength(before + 1);
    const publication = tiktok.publications.at(-1)!;
    expect(publication).toMatchObject({ status: 'PUBLISH_COMPLETE', stored: twoChunks.bytes.length });
    expect(publication.chunks).toHaveLength(2);
    expect(publication.received).toBe(twoChunks.bytes.length + TIKTOK_CHUNK);
    expect(tiktok.videoBytes(publication.publishId)!.equals(twoChunks.bytes)).toBe(true);
    expect(post.releaseId).toBe(publication.postId);
  });
});

describe('TikTok: an upload URL that expired (it lasts an hour)', () => {
  it('before the last chunk: the post starts over with a new init instead of sending to the dead URL again', async () => {
    const before = tiktok.publications.length;
    tiktok.loseNextChunkAnswer();
    const id = await publishNow('tiktok', twoChunks.id);
    // The worker waits to try the chunk again; meanwhile the upload URL's hour passes.
    await retryPlanned(id, 1);
    tiktok.advanceClock(3601);
    await passRetry(id, 1);
    expect(await passRetry(id, 2)).toMatch(/upload URL lasts an hour.*starts over with a new upload/);
    const post = await settled(id);
    expect(post.error).toBeNull();
    expect(post.status).toBe('published');
    // The first publication got its first chunk and one refused try (403); the second, the video.
    const [dead, fresh] = tiktok.publications.slice(before);
    expect(tiktok.publications).toHaveLength(before + 2);
    expect(dead).toMatchObject({ status: 'PROCESSING_UPLOAD', stored: TIKTOK_CHUNK, received: 2 * TIKTOK_CHUNK });
    expect(fresh).toMatchObject({ status: 'PUBLISH_COMPLETE', stored: twoChunks.bytes.length });
    expect(fresh!.received).toBe(twoChunks.bytes.length);
    expect(post.releaseId).toBe(fresh!.postId);
  });

  it('after the last chunk: status/fetch is asked, and nothing is sent again', async () => {
    const before = tiktok.publications.length;
    tiktok.loseNextChunkAnswer();
    const id = await publishNow('tiktok', oneChunk.id);
    await retryPlanned(id, 1);
    tiktok.advanceClock(3601);
    await passRetry(id, 1);
    const post = await settled(id);
    expect(post.status).toBe('published');
    expect(tiktok.publications).toHaveLength(before + 1);
    const publication = tiktok.publications.at(-1)!;
    expect(publication).toMatchObject({ status: 'PUBLISH_COMPLETE', received: oneChunk.bytes.length });
    expect(post.releaseId).toBe(publication.postId);
  });
});

describe('YouTube: a token that expired while a chunk went up (401)', () => {
  it('is refreshed once, and the upload goes on from the range the session reports', async () => {
    const tokenCalls = () => google.requests.filter((r) => r.path === '/token').length;
    const refreshesBefore = tokenCalls();
    google.expireTokensDuringNextChunk();
    const id = await publishNow('youtube', youtubeVideo.id, 'Token expired mid-chunk');
    const post = await settled(id);
    expect(post.error).toBeNull();
    expect(post.status).toBe('published');
    expect(tokenCalls()).toBe(refreshesBefore + 1);
    const video = google.videos.find((v) => v.id === post.releaseId)!;
    const upload = google.sessions().find((s) => s.id === video.sessionId)!;
    // The refused chunk went up twice; every other byte once.
    expect(upload).toMatchObject({ stored: youtubeVideo.bytes.length, completed: true });
    expect(upload.received).toBe(youtubeVideo.bytes.length + YOUTUBE_CHUNK);
    expect(google.videoBytes(video.id)!.equals(youtubeVideo.bytes)).toBe(true);
    const listed = await bodyOf<{
      data: { id: string; status: string }[];
    }>(await send(server, org.auth, 'GET', '/public/v1/channels'));
    expect(listed.data.find((c) => c.id === channels.youtube)?.status).toBe('active');
  });
});

describe('YouTube: an upload session that expired (404)', () => {
  it('before the last chunk: a new session is opened and the video uploaded to it, as Google’s guide says', async () => {
    const sessionsBefore = google.sessions().length;
    google.failNextChunk(503);
    const id = await publishNow('youtube', youtubeVideo.id, 'Session expired');
    // The worker waits to try the chunk again; meanwhile the session expires.
    await retryPlanned(id, 1);
    google.expireUploadSessions();
    await passRetry(id, 1);
    expect(await passRetry(id, 2)).toMatch(/no longer knows the upload session.*starts over with a new session/);
    const post = await settled(id);
    expect(post.error).toBeNull();
    expect(post.status).toBe('published');
    const sessions = google.sessions().slice(sessionsBefore);
    expect(sessions).toHaveLength(2);
    expect(sessions[0]).toMatchObject({ completed: false });
    expect(sessions[1]).toMatchObject({ completed: true, received: youtubeVideo.bytes.length });
    expect(google.videos.find((v) => v.id === post.releaseId)!.sessionId).toBe(sessions[1]!.id);
  });

  it('after the last chunk: the video may exist, so nothing is sent again and the post is outcome_unknown', async () => {
    const videosBefore = google.videos.length;
    google.cutAfterFinalChunk();
    const id = await publishNow('youtube', youtubeVideo.id, 'Expired after the last chunk');
    await retryPlanned(id, 1);
    google.expireUploadSessions();
    await passRetry(id, 1);
    const post = await settled(id);
    expect(post.status).toBe('failed');
    expect(post.error!.code).toBe('outcome_unknown');
    // The video exists once: it was not uploaded again.
    expect(google.videos).toHaveLength(videosBefore + 1);
  });
});

describe('A Google account without a YouTube channel', () => {
  it('connecting it says that the account has no YouTube channel, and where to make one', async () => {
    google.withoutChannel(true);
    try {
      const back = await connectYouTube(session);
      expect(back.headers.get('location')).toBe('/settings/channels?failed=no_channel&network=youtube');
      const page = await (await session.get(back.headers.get('location')!)).text();
      expect(page).toContain(
        'YouTube: The account you signed in with has no channel there, so nothing was connected. Create one with that account at https://www.youtube.com/create_channel, then connect again.',
      );
      expect(page).not.toContain('allow every access');
    } finally {
      google.withoutChannel(false);
    }
  });

  it('publishing to it fails saying so, and the channel waits to be connected again', async () => {
    google.withoutChannel(true);
    try {
      const post = await settled(await publishNow('youtube', youtubeVideo.id, 'No channel'));
      expect(post.status).toBe('failed');
      expect(post.error!.code).toBe('channel_needs_reconnect');
      expect(post.error!.message).toContain('has no YouTube channel');
      expect(post.error!.message).toContain('https://www.youtube.com/create_channel');
    } finally {
      google.withoutChannel(false);
    }
    expect((await connectYouTube(session)).headers.get('location')).toBe('/settings/channels?done=reconnected');
  });
});

describe('A network’s message written in HTML', () => {
  it('is stored and shown as its text: Google’s quotaExceeded link is no markup on the post page', async () => {
    google.failNextUploads(1, 'quotaExceeded');
    const post = await settled(await publishNow('youtube', youtubeVideo.id, 'Over quota'));
    expect(post.error!.code).toBe('quota_exceeded');
    expect(post.error!.message).toContain('The request cannot be completed because you have exceeded your quota.');
    expect(post.error!.message).not.toMatch(/[<>]/);
    const failed = (await history(post.id)).find((event) => event.type === 'failed')!;
    expect(failed.error!.message).toBe(post.error!.message);
    const page = await (await session.get(`/posts/${post.id}`)).text();
    expect(page).toContain('you have exceeded your quota.');
    expect(page).not.toContain('&lt;a');
  });

  it('plainText drops tags and decodes entities, and leaves a < in words alone', () => {
    expect(plainText('exceeded your <a href="/youtube/v3/getting-started#quota">quota</a>.')).toBe(
      'exceeded your quota.',
    );
    expect(plainText('Tom &amp; Jerry&#39;s &lt;b&gt; &#x1F600;<!-- note -->')).toBe("Tom & Jerry's <b> 😀");
    expect(plainText('The title contains < or >, &bogus; and\n  a line break')).toBe(
      'The title contains < or >, &bogus; and a line break',
    );
    expect(plainText('&#0;&#xD800;&#1114112;')).toBe('\uFFFD\uFFFD\uFFFD');
  });
});
