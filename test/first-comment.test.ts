import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi, type Schemas } from './support/api.js';
import { eventually } from './support/eventually.js';
import { createChannel, createOrganization, insertMedia, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { stringContaining } from './support/typed-matchers.js';

// A post's first comment: published on the post right after it, as a recorded part of its own, on the
// sandbox network served by the server under test (which keeps what each comment is on). A network
// without comments refuses one; a comment that fails leaves the post on the network, and scheduling it
// again publishes the comment only.
let server: TestServer;
let org: TestOrganization;
const channels = {} as Record<'sandbox' | 'x' | 'youtube' | 'facebook' | 'instagram' | 'threads', string>;

beforeAll(async () => {
  server = await startTestServer({
    worker: true,
    env: { PUBLISH_RETRY_BASE_MS: '200', RATE_LIMIT_MAX: '100000', DAILY_POST_LIMIT_SANDBOX: '1000' },
  });
  server.ctx.config.sandbox.networkUrl = server.baseUrl;
  org = await createOrganization(server.ctx.db, 'First comments');
  for (const provider of Object.keys({ sandbox: 0, x: 0, youtube: 0, facebook: 0, instagram: 0, threads: 0 }))
    channels[provider as keyof typeof channels] = (
      await createChannel(server.ctx.db, org.id, provider as keyof typeof channels)
    ).id;
});
afterAll(async () => {
  await server?.close();
});

type Post = Schemas['Post'];
type Item = Schemas['PostItem'];
const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });
const create = (type: 'now' | 'draft', item: Item) => api().POST('/public/v1/posts', { body: { type, posts: [item] } });

async function settled(id: string): Promise<Post> {
  return eventually(async () => {
    const post = dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
    expect(['published', 'failed']).toContain(post.status);
    return post;
  });
}

async function history(id: string): Promise<Schemas['PostEvent'][]> {
  const page = await api().GET('/public/v1/posts/{id}/history', { params: { path: { id }, query: { limit: 100 } } });
  return dataOf(page).data;
}

/** The sandbox network's posts, oldest first, with what each is a comment on. */
function releases() {
  return server.ctx.db
    .selectFrom('sandbox_releases')
    .select(['id', 'content', 'comment_on', 'reply_to'])
    .where('channel_id', '=', channels.sandbox)
    .orderBy('published_at')
    .orderBy('id')
    .execute();
}

describe('a first comment as a request describes it', () => {
  it('is stored with the post, not published yet, and answered with it', async () => {
    const post = dataOf(
      await create('draft', { channelId: channels.sandbox, content: 'New menu', firstComment: { content: '#food' } }),
      201,
    ).data[0]!;
    expect(post.firstComment).toEqual({ content: '#food', releaseId: null, releaseUrl: null });
    const without = dataOf(await create('draft', { channelId: channels.sandbox, content: 'Plain' }), 201).data[0]!;
    expect(without.firstComment).toBeNull();
  });

  it('is refused on a network without comments, naming the field, and held to the network’s length', async () => {
    const x = refusalOf(
      await create('draft', { channelId: channels.x, content: 'Hi', firstComment: { content: 'c' } }),
      422,
    );
    expect(x.details).toEqual([
      {
        path: 'posts[0].firstComment',
        message: stringContaining('X posts cannot have a first comment'),
      },
    ]);
    expect(x.details![0]!.message).toContain('send a thread');
    const video = await insertMedia(server.ctx.db, org.id, 'video', 10_000);
    const youtube = refusalOf(
      await create('draft', {
        channelId: channels.youtube,
        mediaIds: [video],
        firstComment: { content: 'c' },
        settings: { __type: 'youtube', title: 'A video', privacyStatus: 'public', madeForKids: false },
      }),
      422,
    );
    expect(youtube.details!.map((d) => d.path)).toEqual(['posts[0].firstComment']);
    expect(
      refusalOf(
        await create('draft', { channelId: channels.threads, content: 'Hi', firstComment: { content: 'c' } }),
        422,
      ).details!.map((d) => d.path),
    ).toEqual(['posts[0].firstComment']);

    const image = await insertMedia(server.ctx.db, org.id, 'image');
    const long = refusalOf(
      await create('draft', {
        channelId: channels.instagram,
        mediaIds: [image],
        firstComment: { content: 'a'.repeat(2201) },
      }),
      422,
    );
    expect(long.details).toEqual([
      {
        path: 'posts[0].firstComment.content',
        message: stringContaining('Instagram takes a comment of 2200 characters'),
      },
    ]);
    dataOf(
      await create('draft', {
        channelId: channels.facebook,
        content: 'Hi',
        firstComment: { content: 'a'.repeat(8000) },
      }),
      201,
    );
  });
});

describe('publishing a first comment', () => {
  it('publishes the post, then the comment on it, and records each', async () => {
    const id = dataOf(
      await create('now', {
        channelId: channels.sandbox,
        content: 'Open today',
        firstComment: { content: 'Link below' },
      }),
      201,
    ).data[0]!.id;
    const post = await settled(id);
    expect(post.status).toBe('published');
    expect(post.firstComment).toMatchObject({ content: 'Link below', releaseId: stringContaining('rel_') });
    const byRelease = new Map((await releases()).map((release) => [release.id, release]));
    expect(byRelease.get(post.releaseId!)).toMatchObject({ content: 'Open today', comment_on: null });
    expect(byRelease.get(post.firstComment!.releaseId!)).toMatchObject({
      content: 'Link below',
      comment_on: post.releaseId,
      reply_to: null,
    });
    const events = (await history(id)).map((event) => event.type);
    expect(events.slice(-3)).toEqual(['part_published', 'comment_published', 'published']);
    const comment = (await history(id)).find((event) => event.type === 'comment_published')!;
    expect(comment).toMatchObject({
      releaseId: post.firstComment!.releaseId,
      releaseUrl: post.firstComment!.releaseUrl,
    });

    // The network's page of the post shows the comment.
    const page = await (await server.fetch(new URL(post.releaseUrl!).pathname)).text();
    expect(page).toContain('Link below');
  });

  it('keeps the post on the network when its comment fails, and publishes the comment only when scheduled again', async () => {
    const id = dataOf(
      await create('now', {
        channelId: channels.sandbox,
        content: 'Sale starts',
        firstComment: { content: 'Details in bio' },
        settings: { __type: 'sandbox', outcome: 'failed', failingPart: 2 },
      }),
      201,
    ).data[0]!.id;
    const failed = await settled(id);
    expect(failed).toMatchObject({
      status: 'failed',
      error: {
        code: 'rejected_by_network',
        message: stringContaining('The first comment was not published: The sandbox refused the first comment'),
      },
      releaseId: stringContaining('rel_'),
      firstComment: { content: 'Details in bio', releaseId: null, releaseUrl: null },
    });
    expect(failed.error!.message).toContain('scheduling it again publishes the comment only');

    // The comment is not published yet: it may change, and the post's settings let it through now.
    const edited = await api().PATCH('/public/v1/posts/{id}', {
      ...byId(id),
      body: { firstComment: { content: 'Details at the shop' }, settings: { __type: 'sandbox' } },
    });
    expect(dataOf(edited).firstComment).toEqual({ content: 'Details at the shop', releaseId: null, releaseUrl: null });
    // The post itself went out and cannot change.
    const refused = await api().PATCH('/public/v1/posts/{id}', { ...byId(id), body: { content: 'Sale started' } });
    expect(refused.response.status).toBe(409);

    dataOf(
      await api().POST('/public/v1/posts/{id}/schedule', {
        ...byId(id),
        body: { scheduledAt: new Date(server.clock.now().getTime() + 1000).toISOString() },
      }),
    );
    const published = await settled(id);
    expect(published.status).toBe('published');
    expect(published.releaseId).toBe(failed.releaseId);
    const mine = (await releases()).filter((r) => r.id === failed.releaseId || r.comment_on === failed.releaseId);
    expect(mine.map((r) => r.content)).toEqual(['Sale starts', 'Details at the shop']);
  });
});

describe('the settings of Meta’s networks', () => {
  it('are stored with their defaults', async () => {
    const image = await insertMedia(server.ctx.db, org.id, 'image');
    const [instagram, threads, facebook] = await Promise.all([
      create('draft', { channelId: channels.instagram, mediaIds: [image] }),
      create('draft', { channelId: channels.threads, content: 'Hi' }),
      create('draft', {
        channelId: channels.facebook,
        content: 'Hi',
        settings: { __type: 'facebook', link: 'https://example.com/' },
      }),
    ]);
    expect(dataOf(instagram, 201).data[0]!.settings).toEqual({
      __type: 'instagram',
      postType: 'feed',
      shareToFeed: true,
      collaborators: [],
      userTags: [],
    });
    expect(dataOf(threads, 201).data[0]!.settings).toEqual({ __type: 'threads', replyControl: 'everyone' });
    expect(dataOf(facebook, 201).data[0]!.settings).toEqual({ __type: 'facebook', link: 'https://example.com/' });
  });

  it('hold each kind of Instagram post to its media, and a tag to an image of the post', async () => {
    const [image, video, other] = await Promise.all([
      insertMedia(server.ctx.db, org.id, 'image'),
      insertMedia(server.ctx.db, org.id, 'video', 20_000),
      insertMedia(server.ctx.db, org.id, 'image'),
    ]);
    const reel = refusalOf(
      await create('draft', {
        channelId: channels.instagram,
        mediaIds: [image],
        settings: { __type: 'instagram', postType: 'reel' },
      }),
      422,
    );
    expect(reel.details).toEqual([{ path: 'posts[0].mediaIds', message: 'An Instagram reel is one video.' }]);
    const tagged = refusalOf(
      await create('draft', {
        channelId: channels.instagram,
        mediaIds: [image, video],
        settings: { __type: 'instagram', userTags: [{ mediaId: other, username: 'ada', x: 0.5, y: 0.5 }] },
      }),
      422,
    );
    expect(tagged.details).toEqual([
      { path: 'posts[0].settings.userTags[0].mediaId', message: stringContaining('is not an image of the post') },
    ]);
    const facebook = refusalOf(
      await create('draft', {
        channelId: channels.facebook,
        mediaIds: [image],
        settings: { __type: 'facebook', link: 'https://example.com/' },
      }),
      422,
    );
    expect(facebook.details!.map((d) => d.path)).toEqual(['posts[0].settings.link']);
  });
});
