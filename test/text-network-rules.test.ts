import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi, type Schemas } from './support/api.js';
import { createChannel, createOrganization, insertMedia, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { stringContaining } from './support/typed-matchers.js';

// The text networks' rules, checked when a post is created: each counts a text as the network does
// (Bluesky in graphemes, Mastodon with every URL as 23, X weighted), takes up to 4 images or one
// video alone, its own length of alternative text, and threads whose every part keeps the same rules.
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
      { path: 'posts[0].mediaIds', message: stringContaining('up to 4 images (channel') },
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
