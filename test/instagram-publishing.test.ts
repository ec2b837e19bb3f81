import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { newId } from '../src/core/ids.js';
import { credentialsContext } from '../src/providers/account-credentials.js';
import type { InstagramCredentials } from '../src/providers/instagram/credentials.js';
import { bodyOf, publicApi, type Schemas } from './support/api.js';
import { eventually } from './support/eventually.js';
import { startFakeInstagramLogin, type FakeInstagramLogin } from './support/fake-instagram-login.js';
import { startFakeMeta, type FakeMeta } from './support/fake-meta.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { jpeg, mp4 } from './support/media-samples.js';
import { metaPageToken } from './support/meta-page-token.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled } from './support/timeouts.js';
import { dataOf } from './support/typed-answers.js';
import { completeUpload, startUpload } from './support/uploads.js';

// Instagram end to end through the Public API and a worker, against the fake Meta: an Instagram
// account linked to a Page (its channel holding the Page's token, as a connection through Facebook
// Login stores it), media uploaded to this server and downloaded by Meta from its signed URLs, the
// containers polled as queued jobs, and the post's outcome and history.
let meta: FakeMeta;
let instagram: FakeInstagramLogin;
let server: TestServer;
let org: TestOrganization;
let channelId: string;
let loginChannelId: string;
const IG = '17841400000000001';
const IG_REDIRECT_URI = 'http://127.0.0.1:9/channels/callback/instagram';

beforeAll(async () => {
  meta = await startFakeMeta();
  instagram = await startFakeInstagramLogin({ redirectUris: [IG_REDIRECT_URI] });
  server = await startTestServer({
    worker: true,
    env: {
      META_APP_ID: meta.appId,
      META_APP_SECRET: meta.appSecret,
      META_GRAPH_URL: meta.url,
      INSTAGRAM_APP_ID: instagram.appId,
      INSTAGRAM_APP_SECRET: instagram.appSecret,
      INSTAGRAM_AUTHORIZE_URL: instagram.authorizeUrl,
      INSTAGRAM_TOKEN_URL: instagram.url,
      INSTAGRAM_API_URL: instagram.url,
      INSTAGRAM_API_VERSION: instagram.version,
      PUBLISH_RETRY_BASE_MS: '200',
      RATE_LIMIT_MAX: '100000',
    },
  });
  org = await createOrganization(server.ctx.db, 'Acme Bakery');
  const credentials: InstagramCredentials = {
    accessToken: await metaPageToken(meta),
    refreshToken: null,
    expiresAt: null,
    scopes: ['instagram_basic', 'instagram_content_publish', 'instagram_manage_comments', 'pages_read_engagement'],
    instagram: { api: 'facebook', pageId: meta.pages[0]!.id },
  };
  channelId = await insertChannel(IG, 'acme.bakery', credentials);
  // An account without a Page, connected through Instagram Login: its own token, good for 60 days.
  loginChannelId = await insertChannel(instagram.account.userId, instagram.account.username, {
    accessToken: await instagramLoginToken(),
    refreshToken: null,
    expiresAt: new Date(server.clock.now().getTime() + 59 * 86_400_000).toISOString(),
    scopes: ['instagram_business_basic', 'instagram_business_content_publish'],
    instagram: { api: 'instagram' },
  });
});
afterAll(async () => {
  await server?.close();
  await meta?.close();
  await instagram?.close();
});
beforeEach(() => {
  meta.processingPolls(0);
});

/** A channel of the organization holding the account's credentials, encrypted as connecting stores them. */
async function insertChannel(externalId: string, username: string, credentials: InstagramCredentials) {
  const id = newId('ch');
  const context = credentialsContext(org.id, 'instagram', externalId);
  await server.ctx.db
    .insertInto('channels')
    .values({
      id,
      organization_id: org.id,
      provider: 'instagram',
      name: username,
      username,
      picture: null,
      external_id: externalId,
      credentials: server.ctx.keyring.encrypt(JSON.stringify(credentials), context),
    })
    .execute();
  return id;
}

/** A token of the fake Instagram's account, from its authorization window and code. */
async function instagramLoginToken(): Promise<string> {
  const consent = new URL(instagram.authorizeUrl);
  consent.search = new URLSearchParams({
    client_id: instagram.appId,
    redirect_uri: IG_REDIRECT_URI,
    scope: 'instagram_business_basic,instagram_business_content_publish',
    response_type: 'code',
    state: 'st',
  }).toString();
  const back = await fetch(consent, { redirect: 'manual' });
  const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
  const answer = await fetch(`${instagram.url}/oauth/access_token`, {
    method: 'POST',
    body: new URLSearchParams({
      client_id: instagram.appId,
      client_secret: instagram.appSecret,
      grant_type: 'authorization_code',
      redirect_uri: IG_REDIRECT_URI,
      code,
    }),
  });
  return (JSON.parse(await answer.text()) as { access_token: string }).access_token;
}

const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

async function upload(name: string, bytes: Buffer, contentType: 'image/jpeg' | 'video/mp4'): Promise<string> {
  const started = await startUpload(server, org, name, contentType, bytes.length);
  expect((await fetch(started.uploadUrl, { method: 'PUT', headers: started.headers, body: bytes })).status).toBe(200);
  return (await bodyOf<{ id: string }>(await completeUpload(server, org, started.uploadId))).id;
}

async function publishNow(item: Omit<Schemas['PostItem'], 'channelId'>, on = channelId): Promise<string> {
  const created = await api().POST('/public/v1/posts', { body: { type: 'now', posts: [{ channelId: on, ...item }] } });
  return dataOf(created, 201).data[0]!.id;
}

/**
 * The post once it is published or failed. A container still processed is asked about again as a
 * queued job a few seconds on: the server's clock is moved past that each time instead of waiting.
 */
function settled(id: string, stepMs = 60_000): Promise<Schemas['Post']> {
  return eventually(
    async () => {
      await server.clock.advance(stepMs);
      const post = dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
      expect(['published', 'failed'], `post ${id} is ${post.status}`).toContain(post.status);
      return post;
    },
    { timeout: scaled(30_000), interval: 200 },
  );
}

async function history(id: string): Promise<Schemas['PostEvent'][]> {
  const page = await api().GET('/public/v1/posts/{id}/history', { params: { path: { id }, query: { limit: 100 } } });
  return dataOf(page).data;
}

describe('an Instagram post through the API', () => {
  it('publishes a carousel of 3 in order, then its first comment', async () => {
    const media = [
      await upload('one.jpg', jpeg(), 'image/jpeg'),
      await upload('two.jpg', jpeg(4096), 'image/jpeg'),
      await upload('three.mp4', mp4(64 * 1024), 'video/mp4'),
    ];
    const id = await publishNow({
      content: 'Three loaves #bread',
      mediaIds: media,
      settings: { __type: 'instagram', collaborators: ['friend.bakery'] },
      firstComment: { content: 'Recipe in bio' },
    });
    const post = await settled(id);
    const album = meta.instagramMedia.find((m) => m.mediaType === 'CAROUSEL_ALBUM')!;
    expect(post).toMatchObject({ status: 'published', releaseId: album.id, releaseUrl: album.permalink });
    expect(album.children.map((child) => meta.instagramMedia.find((m) => m.id === child)!.mediaType)).toEqual([
      'IMAGE',
      'IMAGE',
      'VIDEO',
    ]);
    // Meta downloaded each media from this server's signed URLs.
    expect(meta.fetches.filter((f) => f.url.startsWith(server.baseUrl)).map((f) => f.status)).toEqual([200, 200, 200]);
    await eventually(() => expect(meta.comments).toHaveLength(1));
    expect(meta.comments[0]).toMatchObject({ objectId: album.id, message: 'Recipe in bio' });
    await eventually(async () => expect((await history(id)).map((event) => event.type)).toContain('comment_published'));
  });

  it('publishes a reel whose container takes three polls, each asked as a queued job', async () => {
    meta.processingPolls(3);
    const video = await upload('reel.mp4', mp4(64 * 1024), 'video/mp4');
    const id = await publishNow({
      content: 'Shaping',
      mediaIds: [video],
      settings: { __type: 'instagram', postType: 'reel' },
    });
    const post = await settled(id);
    const reel = meta.instagramMedia.find((m) => m.productType === 'REELS')!;
    expect(post).toMatchObject({ status: 'published', releaseUrl: reel.permalink });
    expect(meta.containers.find((c) => c.id === reel.containerId)!.polls).toBe(4);
  });

  it('fails the post with Meta’s words when its container ends in ERROR', async () => {
    meta.failNextContainer({ statusCode: 'ERROR', status: 'Error: The aspect ratio is not supported.' });
    const image = await upload('wide.jpg', jpeg(), 'image/jpeg');
    const post = await settled(await publishNow({ content: 'Too wide', mediaIds: [image] }));
    expect(post).toMatchObject({
      status: 'failed',
      error: {
        code: 'rejected_by_network',
        message: 'Instagram could not publish the media: Error: The aspect ratio is not supported.',
      },
    });
  });

  it('keeps a post over the publishing limit waiting past a day until the limit frees, then publishes it once', async () => {
    meta.processingPolls(2);
    meta.usePublishingQuota(IG, 50);
    const video = await upload('proof.mp4', mp4(64 * 1024), 'video/mp4');
    const id = await publishNow({
      content: 'Proofed overnight',
      mediaIds: [video],
      settings: { __type: 'instagram', postType: 'reel' },
    });
    const limitReads = () => meta.requests.filter((r) => r.operation === 'igPublishingLimit').length;
    const readAgain = async (advanceMs: number) => {
      const before = limitReads();
      await eventually(
        async () => {
          await server.clock.advance(advanceMs);
          expect(limitReads()).toBeGreaterThan(before);
        },
        { timeout: scaled(30_000), interval: 200 },
      );
    };
    await readAgain(0);
    // More than a day on this server's clock, twice, while the limit stays used (Meta's own clock stands
    // still): each reading is a wait for the limit, never a publication given up, and the post stays publishing.
    await readAgain(25 * 3_600_000);
    await readAgain(25 * 3_600_000);
    expect(dataOf(await api().GET('/public/v1/posts/{id}', byId(id)))).toMatchObject({ status: 'publishing' });
    expect(meta.containers.filter((c) => c.caption === 'Proofed overnight')).toEqual([]);
    // The day on Meta's clock passes: the limit frees, the reel's container is made and processed (its
    // polls a day after the attempt began, a day being counted from its last step), and it is published once.
    meta.advanceClock(86_400 + 60);
    const post = await settled(id, 3_600_000);
    const reels = meta.instagramMedia.filter((m) => m.caption === 'Proofed overnight');
    expect(reels).toHaveLength(1);
    expect(post).toMatchObject({ status: 'published', releaseId: reels[0]!.id });
    expect((await history(id)).map((event) => event.type)).not.toContain('failed');
  });

  it('publishes to an account connected through Instagram Login with its own token', async () => {
    const image = await upload('rye.jpg', jpeg(), 'image/jpeg');
    const post = await settled(await publishNow({ content: 'Rye, no Page', mediaIds: [image] }, loginChannelId));
    const [made] = instagram.media;
    expect(post).toMatchObject({ status: 'published', releaseId: made!.id, releaseUrl: made!.permalink });
    expect(made).toMatchObject({ caption: 'Rye, no Page', mediaType: 'IMAGE' });
    expect(meta.instagramMedia.some((m) => m.caption === 'Rye, no Page')).toBe(false);
  });
});
