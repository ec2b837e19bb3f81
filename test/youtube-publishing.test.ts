import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi, type Schemas } from './support/api.js';
import { BrowserSession } from './support/browser-session.js';
import { eventually } from './support/eventually.js';
import { connectYouTube, startFakeGoogle, youtubeEnv, type FakeGoogle } from './support/fake-google.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { mp4 } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';
import { startUpload } from './support/uploads.js';

// The publisher uploads to a fake of YouTube that follows the resumable upload protocol, in chunks
// of 256 KiB (the smallest YouTube takes), with a channel connected through the fake Google.
const CHUNK = 256 * 1024;
let google: FakeGoogle;
let server: TestServer;
let org: TestOrganization;
let session: BrowserSession;
let channelId: string;
let videoId: string;
const VIDEO_BYTES = 600 * 1024;

async function connect(): Promise<void> {
  const finished = await connectYouTube(session);
  expect(finished.headers.get('location')).toMatch(/^\/settings\/channels\?done=(re)?connected$/);
}

beforeAll(async () => {
  google = await startFakeGoogle({
    account: { channelId: 'UC_publishing_0001', title: 'Acme Videos', handle: '@acmevideos' },
  });
  server = await startTestServer({
    worker: true,
    env: {
      ...youtubeEnv(google, CHUNK),
      PUBLISH_RETRY_BASE_MS: '200',
      DAILY_POST_LIMIT_YOUTUBE: '100',
      RATE_LIMIT_MAX: '10000',
    },
  });
});
// The server in a hook of its own, the account's setup in the next: each gets a hook's time on a busy machine.
beforeAll(async () => {
  org = await createOrganization(server.ctx.db, 'Acme');
  session = new BrowserSession(server);
  await session.logIn(org.email, org.password);
  await connect();
  channelId = (
    await server.ctx.db
      .selectFrom('channels')
      .select('id')
      .where('organization_id', '=', org.id)
      .where('provider', '=', 'youtube')
      .executeTakeFirstOrThrow()
  ).id;

  const bytes = mp4(VIDEO_BYTES);
  const upload = await startUpload(server, org, 'launch.mp4', 'video/mp4', bytes.length);
  expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
  const completed = await api().POST('/public/v1/media/uploads/{uploadId}/complete', {
    params: { path: { uploadId: upload.uploadId } },
  });
  videoId = dataOf(completed).id;
});
afterAll(async () => {
  await server?.close();
  await google?.close();
});

function api() {
  return publicApi(server, org.auth);
}
const byId = (id: string) => ({ params: { path: { id } } });

async function createVideoPost(title: string): Promise<string> {
  const created = await api().POST('/public/v1/posts', {
    body: {
      type: 'now',
      posts: [
        {
          channelId,
          content: 'Our launch, in two minutes.',
          mediaIds: [videoId],
          settings: {
            __type: 'youtube',
            title,
            privacyStatus: 'unlisted',
            madeForKids: false,
            tags: ['launch', 'acme'],
          },
        },
      ],
    },
  });
  return dataOf(created, 201).data[0]!.id;
}

/** The post once it is published or failed. */
function settled(id: string): Promise<Schemas['Post']> {
  return eventually(
    async () => {
      const post = dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
      expect(['published', 'failed'], `post ${id} is ${post.status}`).toContain(post.status);
      return post;
    },
    { timeout: scaled(20_000), interval: 200 },
  );
}

const sessionOf = (releaseId: string) => {
  const video = google.videos.find((v) => v.id === releaseId)!;
  return google.sessions().find((s) => s.id === video.sessionId)!;
};

describe('publishing a video post to YouTube', () => {
  it('uploads the video in chunks with the post’s settings, and the post links to its watch page', async () => {
    const post = await settled(await createVideoPost('Launch day'));
    expect(post).toMatchObject({ status: 'published', error: null });
    expect(post.releaseUrl).toBe(`https://www.youtube.com/watch?v=${post.releaseId}`);
    const video = google.videos.find((v) => v.id === post.releaseId)!;
    expect(video).toMatchObject({
      title: 'Launch day',
      description: 'Our launch, in two minutes.',
      tags: ['launch', 'acme'],
      privacyStatus: 'unlisted',
      madeForKids: false,
      bytes: VIDEO_BYTES,
      channelId: 'UC_publishing_0001',
    });
    // Every byte once: nothing was sent twice.
    expect(sessionOf(post.releaseId!).received).toBe(VIDEO_BYTES);
  });

  it('goes on from the byte YouTube holds after an interrupted chunk, instead of starting over', async () => {
    google.cutNextChunkAfter(100_000);
    const post = await settled(await createVideoPost('Interrupted'));
    expect(post.status).toBe('published');
    const upload = sessionOf(post.releaseId!);
    expect(upload.stored).toBe(VIDEO_BYTES);
    // What was sent twice is at most the rest of the chunk that was cut.
    expect(upload.received - VIDEO_BYTES).toBeLessThanOrEqual(CHUNK);
    const events = dataOf(await api().GET('/public/v1/posts/{id}/history', byId(post.id))).data.map((e) => e.type);
    expect(events).toContain('retrying');
  });

  it('never uploads the video a second time when the answer to the last chunk is lost', async () => {
    const before = google.videos.length;
    google.cutAfterFinalChunk();
    const post = await settled(await createVideoPost('Answer lost'));
    expect(post.status).toBe('published');
    expect(google.videos.length).toBe(before + 1);
    expect(post.releaseId).toBe(google.videos.at(-1)!.id);
  });

  it('fails with quota_exceeded, saying when the quota resets, when YouTube’s quota is used up', async () => {
    google.failNextUploads(1, 'quotaExceeded');
    const post = await settled(await createVideoPost('Over quota'));
    expect(post.status).toBe('failed');
    expect(post.error!.code).toBe('quota_exceeded');
    expect(post.error!.message).toContain('midnight Pacific Time');
  });

  it('fails with channel_needs_reconnect when Google refuses the channel’s grant, and publishes once reconnected', async () => {
    google.revokeAll();
    const failed = await settled(await createVideoPost('After revoking'));
    expect(failed.status).toBe('failed');
    expect(failed.error!.code).toBe('channel_needs_reconnect');
    const listed = dataOf(await api().GET('/public/v1/channels')).data;
    expect(listed.find((c) => c.id === channelId)).toMatchObject({ status: 'needs_reconnect' });

    await connect();
    dataOf(await api().PATCH('/public/v1/posts/{id}/status', { ...byId(failed.id), body: { status: 'scheduled' } }));
    const published = await settled(failed.id);
    expect(published.status).toBe('published');
  });

  it('refreshes an access token about to expire before it uploads', async () => {
    google.accessTokenLifetime(30);
    await connect();
    const before = await server.ctx.db
      .selectFrom('channels')
      .select('credentials')
      .where('id', '=', channelId)
      .executeTakeFirstOrThrow();
    const post = await settled(await createVideoPost('Fresh token'));
    expect(post.status).toBe('published');
    const after = await server.ctx.db
      .selectFrom('channels')
      .select('credentials')
      .where('id', '=', channelId)
      .executeTakeFirstOrThrow();
    // The refreshed token was stored (encrypted anew).
    expect(after.credentials).not.toBe(before.credentials);
    google.accessTokenLifetime(3600);
  });
});
