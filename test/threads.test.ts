import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicApi, type RequestBody, type Schemas } from './support/api.js';
import { eventually } from './support/eventually.js';
import { createChannel, createOrganization, insertMedia, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf, refusalOf } from './support/typed-answers.js';
import { stringContaining } from './support/typed-matchers.js';

// Threads on the sandbox network, served by the server under test: a post's parts after the first are
// published in order, each a reply to the part before, and a thread that fails midway keeps its
// published parts and goes on from the first one not published when it is scheduled again.
let server: TestServer;
let org: TestOrganization;
let sandbox: string;

beforeAll(async () => {
  server = await startTestServer({
    worker: true,
    env: { PUBLISH_RETRY_BASE_MS: '200', RATE_LIMIT_MAX: '100000', DAILY_POST_LIMIT_SANDBOX: '1000' },
  });
  // The sandbox network of the server itself, which keeps what each post replies to.
  server.ctx.config.sandbox.networkUrl = server.baseUrl;
  org = await createOrganization(server.ctx.db, 'Threads');
  sandbox = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Sandbox')).id;
});
afterAll(async () => {
  await server?.close();
});

type Post = Schemas['Post'];
type Item = Schemas['PostItem'];
const api = () => publicApi(server, org.auth);
const byId = (id: string) => ({ params: { path: { id } } });

async function create(type: 'now' | 'draft', item: Item) {
  return api().POST('/public/v1/posts', { body: { type, posts: [item] } });
}

async function get(id: string): Promise<Post> {
  return dataOf(await api().GET('/public/v1/posts/{id}', byId(id)));
}

async function settled(id: string): Promise<Post> {
  return eventually(async () => {
    const post = await get(id);
    expect(['published', 'failed']).toContain(post.status);
    return post;
  });
}

async function history(id: string): Promise<Schemas['PostEvent'][]> {
  const page = await api().GET('/public/v1/posts/{id}/history', { params: { path: { id }, query: { limit: 100 } } });
  return dataOf(page).data;
}

/** The sandbox network's posts of the channel, oldest first: what it was sent, and what each replies to. */
async function releases() {
  return server.ctx.db
    .selectFrom('sandbox_releases')
    .select(['id', 'content', 'reply_to', 'media'])
    .where('channel_id', '=', sandbox)
    .orderBy('published_at')
    .orderBy('id')
    .execute();
}

describe('a thread as a request describes it', () => {
  it('is stored with its parts, none of them published yet', async () => {
    const image = await insertMedia(server.ctx.db, org.id, 'image');
    const post = dataOf(
      await create('draft', {
        channelId: sandbox,
        content: 'One',
        thread: [{ content: 'Two', mediaIds: [image] }, { content: 'Three' }],
      }),
      201,
    ).data[0]!;
    expect(post.thread).toEqual([
      { content: 'Two', mediaIds: [image], altTexts: {}, releaseId: null, releaseUrl: null },
      { content: 'Three', mediaIds: [], altTexts: {}, releaseId: null, releaseUrl: null },
    ]);
    expect((await get(post.id)).thread).toEqual(post.thread);
    // A post without a thread has an empty one.
    const single = dataOf(await create('draft', { channelId: sandbox, content: 'Alone' }), 201).data[0]!;
    expect(single.thread).toEqual([]);
  });

  it('is refused on a network without replies, naming the field', async () => {
    const youtube = (await createChannel(server.ctx.db, org.id, 'youtube', 'Films')).id;
    const video = await insertMedia(server.ctx.db, org.id, 'video', 10_000);
    const refusal = refusalOf(
      await create('draft', {
        channelId: youtube,
        mediaIds: [video],
        settings: { __type: 'youtube', title: 'A film', privacyStatus: 'public', madeForKids: false },
        thread: [{ content: 'And a reply' }],
      }),
      422,
    );
    expect(refusal.details).toEqual([{ path: 'posts[0].thread', message: stringContaining('YouTube has no replies') }]);
  });

  it('names every part that breaks a rule, and a thread longer than the network takes', async () => {
    const refusal = refusalOf(
      await create('draft', {
        channelId: sandbox,
        content: 'One',
        thread: [{ content: '  ' }, { mediaIds: ['med_unknown'] }],
      }),
      422,
    );
    expect(refusal.details).toEqual([
      { path: 'posts[0].thread[0].content', message: stringContaining('Part 2 of the thread needs content or media') },
      { path: 'posts[0].thread[1].mediaIds[0]', message: stringContaining('no media med_unknown') },
    ]);
    const long = refusalOf(
      await create('draft', {
        channelId: sandbox,
        content: 'One',
        thread: Array.from({ length: 10 }, (_, i) => ({ content: `Part ${i + 2}` })),
      }),
      422,
    );
    expect(long.details).toEqual([
      {
        path: 'posts[0].thread',
        message: stringContaining("at most 10 parts, the post's own included; this one has 11"),
      },
    ]);
  });

  it('keeps media a thread part uses from being deleted while the post is to be published', async () => {
    const image = await insertMedia(server.ctx.db, org.id, 'image');
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    const item = { channelId: sandbox, content: 'One', thread: [{ content: 'Two', mediaIds: [image] }] };
    dataOf(await api().POST('/public/v1/posts', { body: { type: 'schedule', date: tomorrow, posts: [item] } }), 201);
    const refusal = refusalOf(await api().DELETE('/public/v1/media/{id}', byId(image)), 409);
    expect(refusal.message).toContain('post');
  });
});

describe('publishing a thread', () => {
  it('publishes every part in order, each a reply to the one before, and the post where its first part is', async () => {
    const before = (await releases()).length;
    const created = dataOf(
      await create('now', {
        channelId: sandbox,
        content: 'First',
        thread: [{ content: 'Second' }, { content: 'Third' }],
      }),
      201,
    ).data[0]!;
    const post = await settled(created.id);
    expect(post.status).toBe('published');
    const sent = (await releases()).slice(before);
    expect(sent.map((r) => r.content)).toEqual(['First', 'Second', 'Third']);
    expect(sent.map((r) => r.reply_to)).toEqual([null, sent[0]!.id, sent[1]!.id]);
    expect(post.releaseId).toBe(sent[0]!.id);
    expect(post.releaseUrl).toContain(`/sandbox/releases/${sent[0]!.id}`);
    expect(post.thread.map((part) => part.releaseId)).toEqual([sent[1]!.id, sent[2]!.id]);
    expect(post.thread[1]!.releaseUrl).toContain(`/sandbox/releases/${sent[2]!.id}`);

    const events = await history(post.id);
    expect(events.map((e) => [e.type, e.part ?? null, e.releaseId ?? null])).toEqual([
      ['created', null, null],
      ['scheduled', null, null],
      ['publishing', null, null],
      ['part_published', 1, sent[0]!.id],
      ['part_published', 2, sent[1]!.id],
      ['part_published', 3, sent[2]!.id],
      ['published', null, sent[0]!.id],
    ]);

    // The network's page of the second part links the parts around it.
    const page = await (await server.fetch(`/sandbox/releases/${sent[1]!.id}`)).text();
    expect(page).toContain(`href="/sandbox/releases/${sent[0]!.id}"`);
    expect(page).toContain(`href="/sandbox/releases/${sent[2]!.id}"`);
  });

  it('fails at the part the network refuses, keeps the parts before it, and goes on from there when scheduled again', async () => {
    const before = (await releases()).length;
    const created = dataOf(
      await create('now', {
        channelId: sandbox,
        content: 'Uno',
        thread: [{ content: 'Dos' }, { content: 'Tres' }],
        settings: { __type: 'sandbox', outcome: 'failed', failingPart: 2 },
      }),
      201,
    ).data[0]!;
    const failed = await settled(created.id);
    expect(failed.status).toBe('failed');
    expect(failed.error).toEqual({
      code: 'rejected_by_network',
      message: stringContaining('part 2 of 3 was not published'),
    });
    expect(failed.error!.message).toContain('goes on from part 2');
    const first = (await releases()).slice(before);
    expect(first.map((r) => r.content)).toEqual(['Uno']);
    expect(failed.releaseId).toBe(first[0]!.id);
    expect(failed.thread.map((part) => part.releaseId)).toEqual([null, null]);

    // The published part cannot change; the others and the settings can.
    const changed = refusalOf(
      await api().PATCH('/public/v1/posts/{id}', { ...byId(failed.id), body: { content: 'Eins' } }),
      409,
    );
    expect(changed.message).toContain('published and cannot change');
    const edit: RequestBody<'updatePost'> = {
      thread: [{ content: 'Dos!' }, { content: 'Tres' }, { content: 'Cuatro' }],
      settings: { __type: 'sandbox', outcome: 'published' },
    };
    const edited = dataOf(await api().PATCH('/public/v1/posts/{id}', { ...byId(failed.id), body: edit }));
    expect(edited.thread.map((part) => part.content)).toEqual(['Dos!', 'Tres', 'Cuatro']);
    expect(edited.releaseId).toBe(first[0]!.id);

    dataOf(
      await api().POST('/public/v1/posts/{id}/schedule', {
        ...byId(failed.id),
        body: { scheduledAt: new Date().toISOString() },
      }),
    );
    const published = await settled(failed.id);
    expect(published.status).toBe('published');
    const all = (await releases()).slice(before);
    // The first part went out once; the rest follow it, replying in order.
    expect(all.map((r) => r.content)).toEqual(['Uno', 'Dos!', 'Tres', 'Cuatro']);
    expect(all.map((r) => r.reply_to)).toEqual([null, all[0]!.id, all[1]!.id, all[2]!.id]);
    expect(published.releaseId).toBe(all[0]!.id);
    expect(published.thread.map((part) => part.releaseId)).toEqual([all[1]!.id, all[2]!.id, all[3]!.id]);
  });

  it('refuses an edit that changes a published part of the thread', async () => {
    const created = dataOf(
      await create('now', {
        channelId: sandbox,
        content: 'A',
        thread: [{ content: 'B' }, { content: 'C' }],
        settings: { __type: 'sandbox', outcome: 'failed', failingPart: 3 },
      }),
      201,
    ).data[0]!;
    const failed = await settled(created.id);
    expect(failed.thread.map((part) => part.releaseId === null)).toEqual([false, true]);
    const rewritten = await api().PATCH('/public/v1/posts/{id}', {
      ...byId(failed.id),
      body: { thread: [{ content: 'B, rewritten' }, { content: 'C' }] },
    });
    expect(refusalOf(rewritten, 409).message).toContain('The first 2 parts');
    const dropped = await api().PATCH('/public/v1/posts/{id}', { ...byId(failed.id), body: { thread: [] } });
    expect(refusalOf(dropped, 409).code).toBe('conflict');
    // Sending the published part as it is, with new parts after it, is an edit like any other.
    const kept = await api().PATCH('/public/v1/posts/{id}', {
      ...byId(failed.id),
      body: { thread: [{ content: 'B' }, { content: 'C, rewritten' }] },
    });
    expect(dataOf(kept).thread.map((part) => part.content)).toEqual(['B', 'C, rewritten']);
  });
});

describe('alternative texts', () => {
  it('are stored by media id for the post and each part, and shown on the network', async () => {
    const [one, two] = [
      await insertMedia(server.ctx.db, org.id, 'image'),
      await insertMedia(server.ctx.db, org.id, 'image'),
    ];
    const created = dataOf(
      await create('now', {
        channelId: sandbox,
        content: 'With a picture',
        mediaIds: [one],
        altTexts: { [one]: 'A green coat on a hanger' },
        thread: [{ content: 'And another', mediaIds: [two], altTexts: { [two]: 'The same coat, worn' } }],
      }),
      201,
    ).data[0]!;
    expect(created.altTexts).toEqual({ [one]: 'A green coat on a hanger' });
    expect(created.thread[0]!.altTexts).toEqual({ [two]: 'The same coat, worn' });
    const post = await settled(created.id);
    expect(post.status).toBe('published');
    const [release] = await server.ctx.db
      .selectFrom('sandbox_releases')
      .select('media')
      .where('id', '=', post.thread[0]!.releaseId!)
      .execute();
    expect(release!.media).toEqual([expect.objectContaining({ id: two, altText: 'The same coat, worn' })]);
  });

  it('name media of their own item, on a network that takes them, within its length', async () => {
    const image = await insertMedia(server.ctx.db, org.id, 'image');
    const other = await insertMedia(server.ctx.db, org.id, 'image');
    const foreign = refusalOf(
      await create('draft', { channelId: sandbox, mediaIds: [image], altTexts: { [other]: 'Not here' } }),
      422,
    );
    expect(foreign.details).toEqual([
      { path: `posts[0].altTexts.${other}`, message: `${other} is not among the media of posts[0].mediaIds.` },
    ]);
    const long = refusalOf(
      await create('draft', {
        channelId: sandbox,
        content: 'One',
        thread: [{ mediaIds: [image], altTexts: { [image]: 'x'.repeat(2001) } }],
      }),
      400,
    );
    expect(long.code).toBe('validation_failed');
    const youtube = (await createChannel(server.ctx.db, org.id, 'youtube', 'Films 2')).id;
    const video = await insertMedia(server.ctx.db, org.id, 'video', 10_000);
    const refusal = refusalOf(
      await create('draft', {
        channelId: youtube,
        mediaIds: [video],
        altTexts: { [video]: 'A film' },
        settings: { __type: 'youtube', title: 'A film', privacyStatus: 'public', madeForKids: false },
      }),
      422,
    );
    expect(refusal.details).toEqual([
      { path: `posts[0].altTexts.${video}`, message: 'YouTube takes no alternative text for media.' },
    ]);
  });

  it('of media taken out of a post by an edit go with them', async () => {
    const [one, two] = [
      await insertMedia(server.ctx.db, org.id, 'image'),
      await insertMedia(server.ctx.db, org.id, 'image'),
    ];
    const draft = dataOf(
      await create('draft', {
        channelId: sandbox,
        mediaIds: [one, two],
        altTexts: { [one]: 'First', [two]: 'Second' },
      }),
      201,
    ).data[0]!;
    const edited = dataOf(await api().PATCH('/public/v1/posts/{id}', { ...byId(draft.id), body: { mediaIds: [two] } }));
    expect(edited.altTexts).toEqual({ [two]: 'Second' });
  });
});
