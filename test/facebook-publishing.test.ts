import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addChannel } from '../src/channels/channels.js';
import { credentialsContext } from '../src/providers/account-credentials.js';
import { publicApi, type Schemas } from './support/api.js';
import { eventually } from './support/eventually.js';
import { pageCredentials } from './support/facebook-page.js';
import { startFakeMeta, type FakeMeta } from './support/fake-meta.js';
import { createOrganization, insertMedia, type TestOrganization } from './support/fixtures.js';
import { jpeg } from './support/media-samples.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { startUpload } from './support/uploads.js';

// A Facebook Page end to end against the fake Meta: its channel holding the Page's credentials as
// connecting stores them, then, through the Public API with the server's worker, a photo post with its
// first comment, published once each; a post whose answer Meta lost, found among the Page's posts; and
// a token Meta no longer takes, which leaves the channel needing to be connected again. The adapter's
// steps on their own are test/facebook-adapter.test.ts.
const PAGE = '110000000000001';
let meta: FakeMeta;
let server: TestServer;
let org: TestOrganization;
let channelId: string;

type Post = Schemas['Post'];
const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

async function uploadImage(name: string, bytes: Buffer, contentType: string): Promise<string> {
  const upload = await startUpload(server, org, name, contentType, bytes.length);
  expect((await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes })).status).toBe(200);
  const completed = await api().POST('/public/v1/media/uploads/{uploadId}/complete', {
    params: { path: { uploadId: upload.uploadId } },
  });
  return dataOf(completed).id;
}

async function publishNow(item: Omit<Schemas['CreatePostPerChannel']['posts'][number], 'channelId'>) {
  const created = await api().POST('/public/v1/posts', { body: { type: 'now', posts: [{ channelId, ...item }] } });
  return dataOf(created, 201).data[0]!.id;
}

/** The post once it and its first comment are published, or once it failed. */
function settled(id: string, options: { comment?: boolean } = {}): Promise<Post> {
  return eventually(
    async () => {
      const post = dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
      expect(['published', 'failed'], `post ${id} is ${post.status}`).toContain(post.status);
      if (options.comment && post.status === 'published') expect(post.firstComment?.releaseId).toBeTruthy();
      return post;
    },
    { timeout: scaled(30_000), interval: 200 },
  );
}

async function history(id: string): Promise<Schemas['PostEvent'][]> {
  return dataOf(await api().GET('/public/v1/posts/{id}/history', byId(id))).data;
}

beforeAll(async () => {
  meta = await startFakeMeta();
  server = await startTestServer({
    worker: true,
    env: {
      META_APP_ID: meta.appId,
      META_APP_SECRET: meta.appSecret,
      META_GRAPH_URL: meta.url,
      META_DIALOG_URL: meta.wwwUrl,
      PUBLISH_RETRY_BASE_MS: '200',
      RATE_LIMIT_MAX: '100000',
    },
  });
});
beforeAll(async () => {
  org = await createOrganization(server.ctx.db, 'Acme');
  const credentials = await pageCredentials(meta, PAGE);
  const channel = await addChannel(server.ctx.db, {
    organization_id: org.id,
    provider: 'facebook',
    name: 'Acme Bakery',
    username: 'acmebakery',
    picture: null,
    external_id: PAGE,
    credentials: server.ctx.keyring.encrypt(JSON.stringify(credentials), credentialsContext(org.id, 'facebook', PAGE)),
  });
  channelId = channel.id;
}, TIMEOUTS.hook);
afterAll(async () => {
  await server?.close();
  await meta?.close();
});

describe('publishing to a Facebook Page', () => {
  it('publishes a photo post with its first comment, each once, at the post’s permalink', async () => {
    const mediaId = await uploadImage('loaf.jpg', jpeg(), 'image/jpeg');
    const id = await publishNow({
      content: 'Our sourdough, fresh today',
      mediaIds: [mediaId],
      firstComment: { content: 'Order at acme.example' },
    });
    const post = await settled(id, { comment: true });
    const photoPosts = meta.posts.filter((p) => p.message === 'Our sourdough, fresh today');
    expect(photoPosts).toHaveLength(1);
    const [made] = photoPosts;
    expect(made).toMatchObject({ kind: 'photo', pageId: PAGE });
    expect(post).toMatchObject({ status: 'published', releaseId: made!.id, releaseUrl: made!.permalinkUrl });
    const comments = meta.comments.filter((c) => c.objectId === made!.id);
    expect(comments).toHaveLength(1);
    expect(comments[0]).toMatchObject({ message: 'Order at acme.example', from: { id: PAGE } });
    expect(post.firstComment).toMatchObject({ content: 'Order at acme.example', releaseId: comments[0]!.id });
  });
});

describe('the media a Facebook post may carry', () => {
  it('refuses at create, with a detail per media, what Meta would refuse', async () => {
    const webp = await insertMedia(server.ctx.db, org.id, 'image', null, { contentType: 'image/webp' });
    const large = await insertMedia(server.ctx.db, org.id, 'image', null, { size: 10 * 1024 * 1024 + 1 });
    const fine = await insertMedia(server.ctx.db, org.id, 'image');
    const photos = refusalOf(
      await api().POST('/public/v1/posts', {
        body: { type: 'draft', posts: [{ channelId, content: 'Photos', mediaIds: [fine, webp, large] }] },
      }),
      422,
    );
    expect(photos.details).toEqual([
      {
        path: 'posts[0].mediaIds[1]',
        message: `Facebook takes images of type image/jpeg, image/png or image/gif; this one is image/webp (channel ${channelId}).`,
      },
      {
        path: 'posts[0].mediaIds[2]',
        message: `Facebook takes images of up to 10 MB (10,485,760 bytes); this one has 10,485,761 bytes (channel ${channelId}).`,
      },
    ]);
    const mov = await insertMedia(server.ctx.db, org.id, 'video', 10_000, { contentType: 'video/quicktime' });
    const long = await insertMedia(server.ctx.db, org.id, 'video', 240 * 60_000 + 1_000);
    for (const [video, problem] of [
      [mov, 'of type video/mp4; this one is video/quicktime'],
      [long, 'of up to 14400 seconds; this one lasts 14401 seconds'],
    ] as const) {
      const refused = refusalOf(
        await api().POST('/public/v1/posts', {
          body: { type: 'draft', posts: [{ channelId, content: 'Video', mediaIds: [video] }] },
        }),
        422,
      );
      expect(refused.details).toEqual([
        { path: 'posts[0].mediaIds[0]', message: `Facebook takes videos ${problem} (channel ${channelId}).` },
      ]);
    }
  });
});

describe('when Meta does not answer as hoped', () => {
  it('finds a post whose answer was lost among the Page’s posts, and publishes it once', async () => {
    meta.loseNextAnswer('pageFeed');
    const id = await publishNow({ content: 'Lost on the way back' });
    const post = await settled(id);
    const made = meta.posts.filter((p) => p.message === 'Lost on the way back');
    expect(made).toHaveLength(1);
    expect(made[0]!.answerLost).toBe(true);
    // Asked about among the Page's posts, not sent again.
    expect(meta.requests.some((r) => r.operation === 'pagePosts')).toBe(true);
    expect((await history(id)).map((e) => e.type)).toContain('retrying');
    expect(post).toMatchObject({ status: 'published', releaseId: made[0]!.id, releaseUrl: made[0]!.permalinkUrl });
  });

  it('marks the channel needs_reconnect when Meta no longer takes the Page’s token, with Meta’s fbtrace_id', async () => {
    meta.endTokens('app-removed');
    const id = await publishNow({ content: 'After the app was removed' });
    const failed = await settled(id);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'channel_needs_reconnect' } });
    expect(meta.posts.filter((p) => p.message === 'After the app was removed')).toHaveLength(0);
    const channel = dataOf(await api().GET('/public/v1/channels')).data.find((c) => c.id === channelId);
    expect(channel!.status).toBe('needs_reconnect');
    const trace = meta.errors.findLast((e) => e.code === 190)!.fbtrace_id;
    expect((await history(id)).find((e) => e.type === 'failed')).toMatchObject({ logId: trace });
  });
});
