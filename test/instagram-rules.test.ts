import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/core/config.js';
import { mediaUnreachableReason } from '../src/providers/meta/media-reach.js';
import { publicApi, type Schemas } from './support/api.js';
import { createChannel, createOrganization, insertMedia, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { stringContaining } from './support/typed-matchers.js';
import { jpeg, png } from './support/media-samples.js';
import { completeUpload, startUpload } from './support/uploads.js';

// What an Instagram post is refused for at create, before anything is sent: media Meta cannot fetch
// from this server, and media outside what Instagram publishes (formats, sizes, durations), each with
// the path of the media concerned; a first comment on a story. Threads, which downloads media the
// same way, is refused media Meta cannot fetch too.
const MB = 1024 * 1024;
let server: TestServer;
let closed: TestServer;
let org: TestOrganization;
let closedOrg: TestOrganization;
let channel: string;
let closedChannel: string;

beforeAll(async () => {
  server = await startTestServer();
  // An installation on a closed network: its operator says Meta cannot reach its media URLs.
  closed = await startTestServer({ env: { MEDIA_URLS_PUBLIC: 'false' } });
  org = await createOrganization(server.ctx.db, 'Instagram rules');
  closedOrg = await createOrganization(closed.ctx.db, 'Closed network');
  channel = (await createChannel(server.ctx.db, org.id, 'instagram')).id;
  closedChannel = (await createChannel(closed.ctx.db, closedOrg.id, 'instagram')).id;
});
afterAll(async () => {
  await server?.close();
  await closed?.close();
});

type Item = Schemas['PostItem'];

/** Media uploaded through the signed upload, as a client sends it. */
async function upload(bytes: Buffer, contentType: 'image/jpeg' | 'image/png' = 'image/jpeg'): Promise<string> {
  const started = await startUpload(
    server,
    org,
    contentType === 'image/png' ? 'a.png' : 'a.jpg',
    contentType,
    bytes.length,
  );
  expect((await fetch(started.uploadUrl, { method: 'PUT', headers: started.headers, body: bytes })).status).toBe(200);
  const completed = await completeUpload(server, org, started.uploadId);
  expect(completed.status).toBe(200);
  return ((await completed.json()) as { id: string }).id;
}
const create = (on: TestServer, auth: TestOrganization['auth'], item: Item) =>
  publicApi(on, auth).POST('/public/v1/posts', { body: { type: 'draft', posts: [item] } });

describe('media Meta must fetch', () => {
  it('refuses an item with media when the operator says the media URLs are not public, naming why', async () => {
    const image = await insertMedia(closed.ctx.db, closedOrg.id, 'image');
    const refused = refusalOf(
      await create(closed, closedOrg.auth, { channelId: closedChannel, mediaIds: [image] }),
      422,
    );
    expect(refused.details).toEqual([
      { path: 'posts[0].mediaIds', message: stringContaining('MEDIA_URLS_PUBLIC=false') },
    ]);
  });

  it('refuses a Threads post or thread part with media there too, and takes one without', async () => {
    const threads = (await createChannel(closed.ctx.db, closedOrg.id, 'threads')).id;
    const image = await insertMedia(closed.ctx.db, closedOrg.id, 'image');
    const refused = refusalOf(
      await create(closed, closedOrg.auth, {
        channelId: threads,
        content: 'Fresh bread',
        mediaIds: [image],
        thread: [{ content: 'And rolls', mediaIds: [image] }],
      }),
      422,
    );
    expect(refused.details).toEqual([
      { path: 'posts[0].mediaIds', message: stringContaining('Threads cannot publish') },
      { path: 'posts[0].thread[0].mediaIds', message: stringContaining('Threads cannot publish') },
    ]);
    const text = await create(closed, closedOrg.auth, { channelId: threads, content: 'Just words' });
    expect(dataOf(text, 201).data).toHaveLength(1);
  });

  it('judges the media URLs from PUBLIC_URL and the storage when the operator does not say', () => {
    const reason = (env: Record<string, string>) =>
      mediaUnreachableReason(loadConfig({ NODE_ENV: 'test', ENCRYPTION_KEY: 'a'.repeat(64), ...env }));
    expect(reason({ PUBLIC_URL: 'https://social.example.org' })).toBeUndefined();
    expect(reason({ PUBLIC_URL: 'http://social.example.org' })).toContain('is not a public https origin');
    for (const local of ['https://localhost:3000', 'https://127.0.0.1', 'https://scheduler.internal', 'https://box'])
      expect(reason({ PUBLIC_URL: local })).toContain('PUBLIC_URL');
    expect(reason({ PUBLIC_URL: 'http://localhost:3000', MEDIA_STORAGE: 's3', S3_BUCKET: 'media' })).toBeUndefined();
    expect(reason({ PUBLIC_URL: 'http://localhost:3000', MEDIA_URLS_PUBLIC: 'true' })).toBeUndefined();
    expect(reason({ PUBLIC_URL: 'https://social.example.org', MEDIA_URLS_PUBLIC: 'false' })).toContain(
      'MEDIA_URLS_PUBLIC=false',
    );
  });
});

describe('what Instagram publishes', () => {
  it('names each media outside Instagram’s limits', async () => {
    const [png, large, jpeg, long, webm] = await Promise.all([
      insertMedia(server.ctx.db, org.id, 'image', null, { contentType: 'image/png' }),
      insertMedia(server.ctx.db, org.id, 'image', null, { size: 9 * MB }),
      insertMedia(server.ctx.db, org.id, 'image'),
      insertMedia(server.ctx.db, org.id, 'video', 90_000),
      insertMedia(server.ctx.db, org.id, 'video', 10_000, { contentType: 'video/webm' }),
    ]);
    const carousel = refusalOf(
      await create(server, org.auth, { channelId: channel, mediaIds: [png, large, jpeg, long, webm] }),
      422,
    );
    expect(carousel.details).toEqual([
      { path: 'posts[0].mediaIds[0]', message: `Instagram publishes JPEG images only; ${png} is image/png.` },
      { path: 'posts[0].mediaIds[1]', message: `Instagram takes images of up to 8 MB; ${large} has 9 MB.` },
      {
        path: 'posts[0].mediaIds[3]',
        message: `Instagram takes a story or a carousel item of 3 to 60 seconds; ${long} lasts 90.`,
      },
      { path: 'posts[0].mediaIds[4]', message: `Instagram publishes MP4 or MOV videos only; ${webm} is video/webm.` },
    ]);
    // The same minute and a half is a reel's length.
    const reel = await create(server, org.auth, {
      channelId: channel,
      mediaIds: [long],
      settings: { __type: 'instagram', postType: 'reel' },
    });
    expect(dataOf(reel, 201).data).toHaveLength(1);
  });

  it('holds feed images to 4:5 to 1.91:1, read from the uploaded files, and a story’s to nothing', async () => {
    // The frame's header after 300 kB of metadata, as a camera's EXIF with its thumbnail may put it.
    const [portrait, landscape, tall, wide] = await Promise.all([
      upload(jpeg(4096, { width: 1080, height: 1350 })),
      upload(jpeg(400_000, { width: 1080, height: 566, metadata: 300_000 })),
      upload(jpeg(4096, { width: 1080, height: 1920 })),
      upload(jpeg(4096, { width: 2000, height: 1000 })),
    ]);
    const carousel = refusalOf(
      await create(server, org.auth, { channelId: channel, mediaIds: [portrait, landscape, tall, wide] }),
      422,
    );
    expect(carousel.details).toEqual([
      {
        path: 'posts[0].mediaIds[2]',
        message: `Instagram takes feed images of an aspect ratio from 4:5 to 1.91:1 (width to height); ${tall} is 1080×1920 (0.56:1).`,
      },
      {
        path: 'posts[0].mediaIds[3]',
        message: `Instagram takes feed images of an aspect ratio from 4:5 to 1.91:1 (width to height); ${wide} is 2000×1000 (2:1).`,
      },
    ]);
    const single = refusalOf(await create(server, org.auth, { channelId: channel, mediaIds: [tall] }), 422);
    expect(single.details).toEqual([{ path: 'posts[0].mediaIds[0]', message: stringContaining('(0.56:1)') }]);
    dataOf(await create(server, org.auth, { channelId: channel, mediaIds: [portrait, landscape] }), 201);
    // A story of 9:16, and an image stored before its dimensions were read (its shape left to Instagram).
    const story = { __type: 'instagram', postType: 'story' } as const;
    dataOf(await create(server, org.auth, { channelId: channel, mediaIds: [tall], settings: story }), 201);
    const older = await insertMedia(server.ctx.db, org.id, 'image');
    dataOf(await create(server, org.auth, { channelId: channel, mediaIds: [older] }), 201);
  });

  it('holds Threads’ images to 10:1 either way', async () => {
    const threads = (await createChannel(server.ctx.db, org.id, 'threads')).id;
    const [banner, strip] = await Promise.all([upload(png(1000, 100), 'image/png'), upload(png(20, 201), 'image/png')]);
    const refused = refusalOf(
      await create(server, org.auth, {
        channelId: threads,
        content: 'Shapes',
        mediaIds: [banner],
        thread: [{ content: 'A strip', mediaIds: [strip] }],
      }),
      422,
    );
    expect(refused.details).toEqual([
      {
        path: 'posts[0].thread[0].mediaIds[0]',
        message: `Threads takes images of an aspect ratio up to 10:1 either way; ${strip} is 20×201 (channel ${threads}).`,
      },
    ]);
  });

  it('refuses a first comment on a story', async () => {
    const image = await insertMedia(server.ctx.db, org.id, 'image');
    const story = refusalOf(
      await create(server, org.auth, {
        channelId: channel,
        mediaIds: [image],
        settings: { __type: 'instagram', postType: 'story' },
        firstComment: { content: 'Swipe up' },
      }),
      422,
    );
    expect(story.details).toEqual([
      { path: 'posts[0].firstComment', message: 'An Instagram story takes no comments.' },
    ]);
  });
});
