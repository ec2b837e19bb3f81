import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostStatus } from '../src/core/contract.js';
import type { paths } from '../generated/public-v1.js';
import { errorOf, publicApi } from './support/api.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { POSTS_TEST_ENV, send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { dataOf } from './support/typed-answers.js';
import { anyString, stringContaining } from './support/typed-matchers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ env: POSTS_TEST_ENV });
  server.setNow('2026-11-21T12:00:00.000Z');
});
afterAll(() => server?.close());

interface Listed {
  id: string;
  channelId: string;
  /** An extensible value: the statuses of `PostStatus` and any added later. */
  status: string;
  scheduledAt: string | null;
  group: string;
}

type PostsQuery = NonNullable<paths['/public/v1/posts']['get']['parameters']['query']>;

async function list(
  org: TestOrganization,
  query: PostsQuery = {},
): Promise<{ data: Listed[]; nextCursor: string | null }> {
  return dataOf(await publicApi(server, org.auth).GET('/public/v1/posts', { params: { query } }));
}

/** Every post the query matches, page by page; `between` runs after each page. */
async function listAll(
  org: TestOrganization,
  query: PostsQuery,
  between: () => Promise<void> = () => Promise.resolve(),
) {
  const pages: Listed[][] = [];
  let cursor: string | null = null;
  do {
    const page = await list(org, cursor ? { ...query, cursor } : query);
    pages.push(page.data);
    cursor = page.nextCursor;
    await between();
  } while (cursor);
  return pages;
}

/** The error of a list request the contract refuses, sent as a client could. */
async function refusedList(org: TestOrganization, path: string) {
  const response = await send(server, org.auth, 'GET', path);
  expect(response.status, path).toBe(400);
  return errorOf(response);
}

const ids = (posts: Listed[]) => posts.map((p) => p.id);

/** The list order: scheduledAt ascending, undated last, then id compared byte by byte. */
function inListOrder(posts: Listed[]): Listed[] {
  const key = (p: Listed) => p.scheduledAt ?? '\uffff';
  return [...posts].sort((a, b) =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
  );
}

describe('GET /public/v1/posts', () => {
  let org: TestOrganization;
  let channelA: string;
  let channelB: string;
  const made: Listed[] = [];

  beforeAll(async () => {
    org = await createOrganization(server.ctx.db, 'Lister');
    channelA = (await createChannel(server.ctx.db, org.id, 'sandbox', 'A')).id;
    channelB = (await createChannel(server.ctx.db, org.id, 'sandbox', 'B')).id;
    const plan: [string, PostStatus, string | null][] = [
      [channelA, 'scheduled', '2026-12-01T09:00:00.000Z'],
      [channelA, 'scheduled', '2026-12-01T09:00:00.000Z'],
      [channelB, 'scheduled', '2026-12-01T09:00:00.000Z'],
      [channelB, 'published', '2026-11-20T10:00:00.000Z'],
      [channelA, 'failed', '2026-11-21T08:00:00.000Z'],
      [channelA, 'draft', null],
      [channelB, 'draft', null],
      [channelB, 'draft', '2026-12-08T00:00:00.000Z'],
      [channelA, 'scheduled', '2026-12-07T23:59:59.999Z'],
    ];
    for (const [channelId, status, scheduledAt] of plan) {
      const id = await insertPost(server.ctx.db, { organizationId: org.id, channelId, status, scheduledAt });
      made.push({ id, channelId, status, scheduledAt, group: '' });
    }
    // Another organization's posts never show.
    const other = await createOrganization(server.ctx.db, 'Other');
    const otherChannel = (await createChannel(server.ctx.db, other.id, 'sandbox')).id;
    await insertPost(server.ctx.db, {
      organizationId: other.id,
      channelId: otherChannel,
      status: 'scheduled',
      scheduledAt: '2026-12-01T09:00:00.000Z',
    });
  });

  it('orders by scheduledAt, then id, with undated posts last', async () => {
    const page = await list(org);
    expect(ids(page.data)).toEqual(ids(inListOrder(made)));
    expect(page.nextCursor).toBeNull();
    expect(page.data.slice(-2).every((p) => p.scheduledAt === null)).toBe(true);
  });

  it('filters by a range of scheduledAt, `from` inclusive and `to` exclusive, leaving undated posts out', async () => {
    const page = await list(org, { from: '2026-12-01T09:00:00.000Z', to: '2026-12-08T00:00:00.000Z' });
    const expected = made.filter(
      (p) => p.scheduledAt && p.scheduledAt >= '2026-12-01T09:00:00.000Z' && p.scheduledAt < '2026-12-08T00:00:00.000Z',
    );
    expect(ids(page.data)).toEqual(ids(inListOrder(expected)));
    expect(expected).toHaveLength(4);
    const from = await list(org, { from: '2026-12-07T23:59:59.999Z' });
    expect(from.data.map((p) => p.scheduledAt)).toEqual(['2026-12-07T23:59:59.999Z', '2026-12-08T00:00:00.000Z']);
  });

  it('filters by one or several channels and statuses', async () => {
    const onB = await list(org, { channelId: [channelB] });
    expect(ids(onB.data)).toEqual(ids(inListOrder(made.filter((p) => p.channelId === channelB))));
    const both = await list(org, { channelId: [channelA, channelB] });
    expect(both.data).toHaveLength(made.length);
    const drafts = await list(org, { status: ['draft'] });
    expect(ids(drafts.data)).toEqual(ids(inListOrder(made.filter((p) => p.status === 'draft'))));
    const settled = await list(org, { status: ['published', 'failed'], channelId: [channelA] });
    expect(ids(settled.data)).toEqual(ids(made.filter((p) => p.channelId === channelA && p.status === 'failed')));
    const unknownChannel = await list(org, { channelId: ['ch_unknown'] });
    expect(unknownChannel.data).toEqual([]);
  });

  it('filters by the group of one create call', async () => {
    const api = publicApi(server, org.auth);
    const created = await api.POST('/public/v1/posts', {
      body: { type: 'draft', content: 'grouped', channelIds: [channelA, channelB] },
    });
    const { group, data } = dataOf(created, 201);
    const page = await list(org, { group });
    expect(ids(page.data).sort()).toEqual(ids(data).sort());
    expect(page.data.every((p) => p.group === group)).toBe(true);
    for (const post of data) await api.DELETE('/public/v1/posts/{id}', { params: { path: { id: post.id } } });
  });

  it('pages through the same order with `limit` and `nextCursor`', async () => {
    for (const limit of [1, 2, 4, 100]) {
      const pages = await listAll(org, { limit });
      expect(pages.every((page) => page.length <= limit)).toBe(true);
      expect(ids(pages.flat())).toEqual(ids(inListOrder(made)));
      expect(pages.at(-1)?.length).toBeGreaterThan(0);
    }
    const filtered = await listAll(org, { limit: 1, channelId: [channelA], status: ['scheduled'] });
    expect(ids(filtered.flat())).toEqual(
      ids(inListOrder(made.filter((p) => p.channelId === channelA && p.status === 'scheduled'))),
    );
  });

  it('refuses a limit outside 1–100 and a cursor it did not make (400)', async () => {
    for (const query of ['?limit=0', '?limit=101', '?limit=ten']) {
      expect((await refusedList(org, `/public/v1/posts${query}`)).details?.[0]?.path).toBe('query.limit');
    }
    const notJson = Buffer.from('not json').toString('base64url');
    const wrongShape = Buffer.from(JSON.stringify({ s: 'yesterday', i: 'post_x' })).toString('base64url');
    const noId = Buffer.from(JSON.stringify({ s: null })).toString('base64url');
    // Well-formed but naming what the database cannot compare: a NUL in the id, year 0, a day that does not exist.
    const forged = [
      { s: null, i: 'post_\u0000' },
      { s: '0000-01-01T00:00:00.000Z', i: 'post_x' },
      { s: '2026-02-30T00:00:00.000Z', i: 'post_x' },
    ].map((key) => Buffer.from(JSON.stringify(key)).toString('base64url'));
    for (const cursor of ['garbage!', notJson, wrongShape, noId, Buffer.from('[]').toString('base64url'), ...forged]) {
      expect(await refusedList(org, `/public/v1/posts?cursor=${encodeURIComponent(cursor)}`)).toMatchObject({
        code: 'validation_failed',
        details: [{ path: 'query.cursor', message: anyString() }],
      });
    }
  });
});

describe('cursors of GET /public/v1/posts', () => {
  it('read back only as issued: not altered, with the same filters, for the same list and organization', async () => {
    const org = await createOrganization(server.ctx.db, 'Cursors');
    const other = await createOrganization(server.ctx.db, 'Cursors elsewhere');
    const channel = (await createChannel(server.ctx.db, org.id, 'sandbox')).id;
    for (const day of ['01', '02', '03']) {
      await insertPost(server.ctx.db, {
        organizationId: org.id,
        channelId: channel,
        status: 'scheduled',
        scheduledAt: `2026-12-${day}T09:00:00.000Z`,
      });
    }
    const query = `?limit=1&status=scheduled&channelId=${channel}`;
    const { nextCursor } = await list(org, { limit: 1, status: ['scheduled'], channelId: [channel] });
    const cursor = encodeURIComponent(nextCursor!);

    // The same filters in another order and another page size read it back.
    const again = await list(org, { channelId: [channel], status: ['scheduled'], limit: 5, cursor: nextCursor! });
    expect(again.data).toHaveLength(2);

    const [payload, tag] = nextCursor!.split('.');
    const flipped = (text: string) => text.slice(0, -1) + (text.endsWith('A') ? 'B' : 'A');
    const refused = [
      {
        who: org,
        path: `/public/v1/posts?limit=1&status=scheduled&channelId=${channel}&cursor=${encodeURIComponent(`${flipped(payload!)}.${tag}`)}`,
      },
      {
        who: org,
        path: `/public/v1/posts?limit=1&status=scheduled&channelId=${channel}&cursor=${encodeURIComponent(`${payload}.${flipped(tag!)}`)}`,
      },
      { who: org, path: `/public/v1/posts?limit=1&status=draft&channelId=${channel}&cursor=${cursor}` },
      { who: org, path: `/public/v1/posts?limit=1&cursor=${cursor}` },
      { who: other, path: `/public/v1/posts${query}&cursor=${cursor}` },
      { who: org, path: `/public/v1/media?cursor=${cursor}` },
    ];
    for (const { who, path } of refused) {
      expect((await refusedList(who, path)).details).toEqual([
        { path: 'query.cursor', message: stringContaining('not a cursor issued by this API') },
      ]);
    }
  });
});

describe('GET /public/v1/posts while posts are being created', () => {
  it('shows every post that existed once, in order, whatever is inserted between pages', async () => {
    const org = await createOrganization(server.ctx.db, 'Busy');
    const channelId = (await createChannel(server.ctx.db, org.id, 'sandbox')).id;
    const existing: Listed[] = [];
    const times = ['2026-12-01T09:00:00.000Z', '2026-12-02T09:00:00.000Z', '2026-12-03T09:00:00.000Z', null];
    for (let i = 0; i < 20; i++) {
      const scheduledAt = times[i % times.length]!;
      const id = await insertPost(server.ctx.db, {
        organizationId: org.id,
        channelId,
        status: scheduledAt ? 'scheduled' : 'draft',
        scheduledAt,
      });
      existing.push({ id, channelId, status: 'scheduled', scheduledAt, group: '' });
    }

    // Between pages, posts land before, among (same times, so only the id decides) and after the ones listed.
    const inserted = new Set<string>();
    let pagesFetched = 0;
    const insertAround = async () => {
      // Only while the first pages are read: posts inserted ahead of the cursor would otherwise never let it
      // reach the end.
      if (++pagesFetched > 4) return;
      for (const scheduledAt of ['2026-11-30T00:00:00.000Z', ...times, '2026-12-31T00:00:00.000Z']) {
        const id = await insertPost(server.ctx.db, {
          organizationId: org.id,
          channelId,
          status: scheduledAt ? 'scheduled' : 'draft',
          scheduledAt,
        });
        inserted.add(id);
      }
    };
    const seen = (await listAll(org, { limit: 3 }, insertAround)).flat();

    const seenIds = ids(seen);
    expect(new Set(seenIds).size).toBe(seenIds.length);
    const seenExisting = seen.filter((p) => !inserted.has(p.id));
    expect(ids(seenExisting)).toEqual(ids(inListOrder(existing)));
    // Whatever was inserted meanwhile and shown, it was shown in its place in the order.
    expect(ids(seen)).toEqual(ids(inListOrder(seen)));
    expect(seen.length).toBeGreaterThan(existing.length);
  });
});
