import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi, type Schemas } from './support/api.js';
import { createChannel, createOrganization, insertMedia, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { stringContaining } from './support/typed-matchers.js';

// The text networks' rules, checked when a post is created: each counts a text as the network does
// (Bluesky in graphemes, Mastodon with every URL as 23, X weighted), takes up to 4 images or one
// video alone, each of a type, size and length it takes, its own length of alternative text, and
// threads whose every part keeps the same rules.
let server: TestServer;
let org: TestOrganization;
const channels = {} as Record<'bluesky' | 'mastodon' | 'x', string>;

beforeAll(async () => {
  server = await startTestServer();
  org = await createOrganization(server.ctx.db, 'Text networks');
  for (const provider of ['bluesky', 'mastodon', 'x'] as const)
    channels[provider] = (await createChannel(server.ctx.db, org.id, provider)).id;
});
afterAll(async () => {
  await server?.close();
});

const api = () => publicApi(server, org.auth);
const draft = (item: Schemas['PostItem']) => api().POST('/public/v1/posts', { body: { type: 'draft', posts: [item] } });

describe('the length of a text, as each network counts it', () => {
  it('Bluesky: 300 graphemes, an emoji with its modifiers being one', async () => {
    const family = '👩‍👩‍👧‍👦';
    dataOf(await draft({ channelId: channels.bluesky, content: family.repeat(300) }), 201);
    const refusal = refusalOf(await draft({ channelId: channels.bluesky, content: 'a'.repeat(301) }), 422);
    expect(refusal.details).toEqual([
      { path: 'posts[0].content', message: stringContaining('Bluesky takes 300 graphemes of text') },
    ]);
  });

  it('Mastodon: 500, every URL as 23, the content warning included', async () => {
    const url = `https://example.com/${'long-path/'.repeat(40)}`;
    dataOf(await draft({ channelId: channels.mastodon, content: `${'a'.repeat(476)} ${url}` }), 201);
    const refusal = refusalOf(
      await draft({
        channelId: channels.mastodon,
        content: 'a'.repeat(480),
        settings: { __type: 'mastodon', spoilerText: 'Spoilers ahead, twenty-one' },
      }),
      422,
    );
    expect(refusal.details).toEqual([{ path: 'posts[0].content', message: stringContaining('Mastodon takes') }]);
  });

  it('X: 280 as X weighs them, CJK characters twice and every URL 23', async () => {
    dataOf(await draft({ channelId: channels.x, content: '漢'.repeat(140) }), 201);
    dataOf(
      await draft({ channelId: channels.x, content: `${'a'.repeat(256)} https://example.com/${'x'.repeat(200)}` }),
      201,
    );
    const refusal = refusalOf(await draft({ channelId: channels.x, content: '漢'.repeat(141) }), 422);
    expect(refusal.details).toEqual([
      { path: 'posts[0].content', message: stringContaining('X takes 280 characters as it weighs them') },
    ]);
  });
});

describe('media, alternative texts and threads', () => {
  it('take up to 4 images, or one video alone, in the post and in every part', async () => {
    const images = await Promise.all(Array.from({ length: 5 }, () => insertMedia(server.ctx.db, org.id, 'image')));
    const video = await insertMedia(server.ctx.db, org.id, 'video', 10_000);
    dataOf(await draft({ channelId: channels.bluesky, mediaIds: images.slice(0, 4) }), 201);
    dataOf(await draft({ channelId: channels.bluesky, mediaIds: [video] }), 201);
    const refusal = refusalOf(
      await draft({
        channelId: channels.x,
        mediaIds: images,
        thread: [{ content: 'Two', mediaIds: [video, images[0]!] }],
      }),
      422,
    );
    expect(refusal.details).toEqual([
      { path: 'posts[0].mediaIds', message: stringContaining('X takes up to 4 images in a post (channel') },
      { path: 'posts[0].thread[0].mediaIds', message: stringContaining('one video alone') },
    ]);
  });

  it("hold each network's length of alternative text", async () => {
    const image = await insertMedia(server.ctx.db, org.id, 'image');
    dataOf(
      await draft({ channelId: channels.bluesky, mediaIds: [image], altTexts: { [image]: 'a'.repeat(2000) } }),
      201,
    );
    const refusal = refusalOf(
      await draft({ channelId: channels.x, mediaIds: [image], altTexts: { [image]: 'a'.repeat(1001) } }),
      422,
    );
    expect(refusal.details).toEqual([
      { path: `posts[0].altTexts.${image}`, message: 'X takes 1000 characters of alternative text; this has 1001.' },
    ]);
    // Bluesky's video embed takes up to 1000 graphemes, an image's 2000 characters.
    const video = await insertMedia(server.ctx.db, org.id, 'video', 10_000);
    const long = refusalOf(
      await draft({ channelId: channels.bluesky, mediaIds: [video], altTexts: { [video]: 'a'.repeat(1001) } }),
      422,
    );
    expect(long.details).toEqual([
      {
        path: `posts[0].altTexts.${video}`,
        message: "Bluesky takes 1000 characters of a video's alternative text; this has 1001.",
      },
    ]);
    dataOf(
      await draft({ channelId: channels.bluesky, mediaIds: [video], altTexts: { [video]: 'a'.repeat(1000) } }),
      201,
    );
  });

  it('take Mastodon focal points of the media of the post and its parts, and no other', async () => {
    const [own, inPart, elsewhere] = await Promise.all([
      insertMedia(server.ctx.db, org.id, 'image'),
      insertMedia(server.ctx.db, org.id, 'image'),
      insertMedia(server.ctx.db, org.id, 'image'),
    ]);
    const item = (focus: Record<string, { x: number; y: number }>) => ({
      channelId: channels.mastodon,
      mediaIds: [own],
      thread: [{ content: 'Two', mediaIds: [inPart] }],
      settings: { __type: 'mastodon' as const, focus },
    });
    const focus = { [own]: { x: 0.5, y: -1 }, [inPart]: { x: 0, y: 0.75 } };
    const stored = dataOf(await draft(item(focus)), 201).data[0]!.settings;
    expect(stored).toMatchObject({ __type: 'mastodon', focus });
    const refusal = refusalOf(await draft(item({ [elsewhere]: { x: 0, y: 0 } })), 422);
    expect(refusal.details).toEqual([
      {
        path: `posts[0].settings.focus.${elsewhere}`,
        message: `${elsewhere} is not among the media of the post or of its thread's parts.`,
      },
    ]);
    // Beyond the image's edges: the contract refuses it.
    const outside = refusalOf(await draft(item({ [own]: { x: 1.5, y: 0 } })), 400);
    expect(outside.details).toEqual([
      { path: `posts[0].settings.focus.${own}.x`, message: stringContaining('must be <= 1') },
    ]);
  });

  it('thread up to 25 parts, each part counted like a post', async () => {
    const parts = (n: number, content = 'More') => Array.from({ length: n }, () => ({ content }));
    dataOf(await draft({ channelId: channels.mastodon, content: 'One', thread: parts(24) }), 201);
    const refusal = refusalOf(
      await draft({ channelId: channels.bluesky, content: 'One', thread: [{ content: 'b'.repeat(301) }] }),
      422,
    );
    expect(refusal.details).toEqual([
      { path: 'posts[0].thread[0].content', message: stringContaining('Bluesky takes 300 graphemes') },
    ]);
  });

  it('store each network’s settings with their defaults', async () => {
    const [bluesky, mastodon, x] = await Promise.all([
      draft({ channelId: channels.bluesky, content: 'Hi', settings: { __type: 'bluesky', languages: ['en'] } }),
      draft({ channelId: channels.mastodon, content: 'Hi' }),
      draft({ channelId: channels.x, content: 'Hi', settings: { __type: 'x', replySettings: 'following' } }),
    ]);
    expect(dataOf(bluesky, 201).data[0]!.settings).toEqual({ __type: 'bluesky', languages: ['en'], linkCard: true });
    expect(dataOf(mastodon, 201).data[0]!.settings).toEqual({
      __type: 'mastodon',
      visibility: 'public',
      spoilerText: '',
      sensitive: false,
    });
    expect(dataOf(x, 201).data[0]!.settings).toEqual({ __type: 'x', replySettings: 'following' });
  });
});

describe('the media each network takes: types, sizes and lengths, in the post and every part', () => {
  const MB = 1024 * 1024;
  const media = (kind: 'image' | 'video', contentType: string, size: number, durationMs: number | null = null) =>
    insertMedia(server.ctx.db, org.id, kind, durationMs, { contentType, size });
  const create = (posts: Schemas['PostItem'][]) => api().POST('/public/v1/posts', { body: { type: 'draft', posts } });

  it('Bluesky: images of up to 1,000,000 bytes, or one MP4 of up to 100,000,000 bytes and 3 minutes', async () => {
    const types = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];
    const images = await Promise.all(types.map((type) => media('image', type, 1_000_000)));
    const video = await media('video', 'video/mp4', 100_000_000, 180_000);
    dataOf(
      await create([
        {
          channelId: channels.bluesky,
          content: 'Four',
          mediaIds: images,
          thread: [{ content: 'Clip', mediaIds: [video] }],
        },
      ]),
      201,
    );

    const [large, webm, heavy, long] = await Promise.all([
      media('image', 'image/png', 1_000_001),
      media('video', 'video/webm', 1024),
      media('video', 'video/mp4', 100_000_001),
      media('video', 'video/mp4', 1024, 180_500),
    ]);
    const refusal = refusalOf(
      await create([
        { channelId: channels.bluesky, mediaIds: [images[0]!, large], thread: [{ content: 'Two', mediaIds: [webm] }] },
        { channelId: channels.bluesky, mediaIds: [heavy], thread: [{ content: 'Long', mediaIds: [long] }] },
      ]),
      422,
    );
    const on = `(channel ${channels.bluesky}).`;
    expect(refusal.details).toEqual([
      {
        path: 'posts[0].mediaIds[1]',
        message: `Bluesky takes images of up to 1,000,000 bytes; this one has 1,000,001 bytes ${on}`,
      },
      {
        path: 'posts[0].thread[0].mediaIds[0]',
        message: `Bluesky takes videos of type video/mp4; this one is video/webm ${on}`,
      },
      {
        path: 'posts[1].mediaIds[0]',
        message: `Bluesky takes videos of up to 100,000,000 bytes; this one has 100,000,001 bytes ${on}`,
      },
      {
        path: 'posts[1].thread[0].mediaIds[0]',
        message: `Bluesky takes videos of up to 180 seconds; this one lasts 180.5 seconds ${on}`,
      },
    ]);
  });

  it('X: images of up to 5 MB, one GIF alone of up to 15 MB, or one MP4 or MOV of up to 512 MB and 140 seconds', async () => {
    const images = await Promise.all(
      ['image/jpeg', 'image/png', 'image/webp', 'image/png'].map((type) => media('image', type, 5 * MB)),
    );
    const gif = await media('image', 'image/gif', 15 * MB);
    const video = await media('video', 'video/quicktime', 512 * MB, 140_000);
    dataOf(
      await create([
        {
          channelId: channels.x,
          content: 'Four',
          mediaIds: images,
          thread: [
            { content: 'A GIF', mediaIds: [gif] },
            { content: 'A clip', mediaIds: [video] },
          ],
        },
      ]),
      201,
    );

    const [large, heavyGif, webm, heavy, long, short] = await Promise.all([
      media('image', 'image/jpeg', 5 * MB + 1),
      media('image', 'image/gif', 15 * MB + 1),
      media('video', 'video/webm', 1024, 10_000),
      media('video', 'video/mp4', 512 * MB + 1),
      media('video', 'video/mp4', 1024, 140_001),
      media('video', 'video/mp4', 1024, 400),
    ]);
    const refusal = refusalOf(
      await create([
        { channelId: channels.x, mediaIds: [gif, images[0]!] },
        { channelId: channels.x, mediaIds: [large], thread: [{ content: 'GIF', mediaIds: [heavyGif] }] },
        {
          channelId: channels.x,
          mediaIds: [webm],
          thread: [
            { content: 'Heavy', mediaIds: [heavy] },
            { content: 'Long', mediaIds: [long] },
            { content: 'Short', mediaIds: [short] },
          ],
        },
      ]),
      422,
    );
    const on = `(channel ${channels.x}).`;
    expect(refusal.details).toEqual([
      {
        path: 'posts[0].mediaIds',
        message: `X takes one video alone, or one GIF alone, or up to 4 images in a post ${on}`,
      },
      {
        path: 'posts[1].mediaIds[0]',
        message: `X takes images of up to 5 MB (5,242,880 bytes); this one has 5,242,881 bytes ${on}`,
      },
      {
        path: 'posts[1].thread[0].mediaIds[0]',
        message: `X takes GIFs of up to 15 MB (15,728,640 bytes); this one has 15,728,641 bytes ${on}`,
      },
      {
        path: 'posts[2].mediaIds[0]',
        message: `X takes videos of type video/mp4 or video/quicktime; this one is video/webm ${on}`,
      },
      { path: 'posts[2].thread[0].mediaIds[0]', message: stringContaining('X takes videos of up to 512 MB') },
      { path: 'posts[2].thread[1].mediaIds[0]', message: stringContaining('X takes videos of up to 140 seconds') },
      {
        path: 'posts[2].thread[2].mediaIds[0]',
        message: `X takes videos of at least 0.5 seconds; this one lasts 0.4 seconds ${on}`,
      },
    ]);
  });

  it('Mastodon, on an instance it could not ask: Mastodon’s own types and sizes', async () => {
    const video = await media('video', 'video/webm', 99 * MB);
    dataOf(await create([{ channelId: channels.mastodon, mediaIds: [video] }]), 201);
    const large = await media('image', 'image/png', 16 * MB + 1);
    const refusal = refusalOf(
      await create([{ channelId: channels.mastodon, content: 'One', thread: [{ content: 'Two', mediaIds: [large] }] }]),
      422,
    );
    expect(refusal.details).toEqual([
      {
        path: 'posts[0].thread[0].mediaIds[0]',
        message: `Mastodon takes images of up to 16 MB (16,777,216 bytes); this one has 16,777,217 bytes (channel ${channels.mastodon}).`,
      },
    ]);
  });

  it('are checked again when a post is changed', async () => {
    const image = await media('image', 'image/jpeg', 1024);
    const post = dataOf(await create([{ channelId: channels.bluesky, mediaIds: [image] }]), 201).data[0]!;
    const large = await media('image', 'image/jpeg', 2_000_000);
    const refusal = refusalOf(
      await api().PATCH('/public/v1/posts/{id}', {
        params: { path: { id: post.id } },
        body: { thread: [{ content: 'More', mediaIds: [image, large] }] },
      }),
      422,
    );
    expect(refusal.details).toEqual([
      { path: 'thread[0].mediaIds[1]', message: stringContaining('Bluesky takes images of up to 1,000,000 bytes') },
    ]);
  });
});
