import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi, type Schemas } from './support/api.js';
import { createChannel, createOrganization, insertMedia, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { threadsTextLength } from './support/threads-text.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { stringContaining } from './support/typed-matchers.js';

// Threads's rules, checked when a post is created (developers.facebook.com, Threads API, "Posts" and its
// media specifications): 500 characters with an emoji counted as its UTF-8 bytes, at most 5 links, one image
// or video or a carousel of 2 to 20 mixed, JPEG or PNG images of up to 8 MB, MP4 or MOV videos of up to 1 GB
// and 300 seconds; each part of a thread by the same rules, each problem naming its part.
const MB = 1024 * 1024;
let server: TestServer;
let org: TestOrganization;
let channelId: string;

beforeAll(async () => {
  server = await startTestServer();
  org = await createOrganization(server.ctx.db, 'Threads rules');
  channelId = (await createChannel(server.ctx.db, org.id, 'threads')).id;
});
afterAll(async () => {
  await server?.close();
});

const api = () => publicApi(server, org.auth);
const draft = (item: Omit<Schemas['PostItem'], 'channelId'>) =>
  api().POST('/public/v1/posts', { body: { type: 'draft', posts: [{ channelId, ...item }] } });

describe('the text', () => {
  it('takes 500 characters as Threads counts them, an emoji as its UTF-8 bytes', async () => {
    const full = `${'é'.repeat(496)}👍`;
    expect(threadsTextLength(full)).toBe(500);
    dataOf(await draft({ content: full }), 201);
    const over = `${'a'.repeat(493)}👍🏽`;
    expect(threadsTextLength(over)).toBe(501);
    const refusal = refusalOf(await draft({ content: over }), 422);
    expect(refusal.details).toEqual([
      { path: 'posts[0].content', message: stringContaining('Threads takes 500 characters of text') },
    ]);
  });

  it('takes at most 5 links, each distinct URL counted once', async () => {
    const links = (count: number) => Array.from({ length: count }, (_, i) => `https://example.com/${i}`).join(' ');
    dataOf(await draft({ content: `${links(5)} https://example.com/0 and again https://example.com/4` }), 201);
    const refusal = refusalOf(await draft({ content: `${links(5)} www.example.org` }), 422);
    expect(refusal.details).toEqual([
      { path: 'posts[0].content', message: stringContaining('Threads takes up to 5 links in a post') },
    ]);
  });
});

describe('media', () => {
  it('takes a carousel of up to 20 images and videos mixed', async () => {
    const images = await Promise.all(Array.from({ length: 19 }, () => insertMedia(server.ctx.db, org.id, 'image')));
    const video = await insertMedia(server.ctx.db, org.id, 'video', 300_000, { contentType: 'video/quicktime' });
    dataOf(await draft({ content: 'Twenty', mediaIds: [...images, video] }), 201);
    dataOf(await draft({ content: '', mediaIds: [video] }), 201);
  });

  it('refuses each media Threads does not take, naming it in the post and in its thread’s parts', async () => {
    const image = await insertMedia(server.ctx.db, org.id, 'image');
    const webp = await insertMedia(server.ctx.db, org.id, 'image', null, { contentType: 'image/webp' });
    const large = await insertMedia(server.ctx.db, org.id, 'image', null, { size: 8 * MB + 1 });
    const long = await insertMedia(server.ctx.db, org.id, 'video', 300_001);
    const webm = await insertMedia(server.ctx.db, org.id, 'video', 10_000, { contentType: 'video/webm' });
    const refusal = refusalOf(
      await draft({
        content: 'Media',
        mediaIds: [image, webp, large],
        thread: [{ content: 'A long clip', mediaIds: [long] }, { content: `${'a'.repeat(501)}` }, { mediaIds: [webm] }],
      }),
      422,
    );
    expect(refusal.details).toEqual([
      { path: 'posts[0].mediaIds[1]', message: stringContaining('Threads takes images of type JPEG or PNG') },
      { path: 'posts[0].mediaIds[2]', message: stringContaining('Threads takes images of up to 8 MB') },
      { path: 'posts[0].thread[0].mediaIds[0]', message: stringContaining('videos of up to 300 seconds') },
      { path: 'posts[0].thread[1].content', message: stringContaining('Threads takes 500 characters') },
      { path: 'posts[0].thread[2].mediaIds[0]', message: stringContaining('Threads takes videos of type MP4 or MOV') },
    ]);
  });

  it('takes alt text of up to 1,000 characters for each image and video', async () => {
    const image = await insertMedia(server.ctx.db, org.id, 'image');
    dataOf(await draft({ content: 'Described', mediaIds: [image], altTexts: { [image]: 'a'.repeat(1000) } }), 201);
    const refusal = refusalOf(
      await draft({ content: 'Described', mediaIds: [image], altTexts: { [image]: 'a'.repeat(1001) } }),
      422,
    );
    expect(refusal.details).toEqual([{ path: `posts[0].altTexts.${image}`, message: expect.any(String) as string }]);
  });

  it('refuses a first comment: a Threads post continues as a thread of replies', async () => {
    const refusal = refusalOf(await draft({ content: 'Hi', firstComment: { content: 'A comment' } }), 422);
    expect(refusal.details).toEqual([{ path: 'posts[0].firstComment', message: expect.any(String) as string }]);
  });
});
