import type { Client } from 'openapi-fetch';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { paths } from '../generated/public-v1.js';
import { bodyOf, dataOf, errorOf, publicApi, type Schemas } from './support/api.js';
import {
  countPosts,
  createChannel,
  createOrganization,
  insertPost,
  type TestOrganization,
} from './support/fixtures.js';
import { POSTS_TEST_ENV, send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { stringContaining } from './support/typed-matchers.js';

const NOW = '2026-11-21T12:00:00.000Z';

let server: TestServer;
let acme: TestOrganization;
let api: Client<paths>;
let sandbox: string;
let draft: string;

beforeAll(async () => {
  server = await startTestServer({ env: POSTS_TEST_ENV });
  acme = await createOrganization(server.ctx.db);
  api = publicApi(server, acme.auth);
  sandbox = (await createChannel(server.ctx.db, acme.id, 'sandbox')).id;
  draft = await insertPost(server.ctx.db, {
    organizationId: acme.id,
    channelId: sandbox,
    status: 'draft',
    scheduledAt: null,
  });
});
afterAll(() => server?.close());
beforeEach(() => server.setNow(NOW));

async function refusedWith400(response: Response): Promise<Schemas['ErrorDetail'][] | undefined> {
  const error = await errorOf(response);
  expect(response.status, JSON.stringify(error)).toBe(400);
  expect(error.code).toBe('validation_failed');
  expect(error.requestId).toBe(response.headers.get('x-request-id'));
  return error.details;
}

const getPost = (id: string) => api.GET('/public/v1/posts/{id}', { params: { path: { id } } });

describe('text the database cannot store as sent', () => {
  it('a NUL character in a body field is 400 naming the field, and nothing is created', async () => {
    const response = await send(server, acme.auth, 'POST', '/public/v1/posts', {
      type: 'draft',
      posts: [
        { channelId: sandbox, content: 'ok' },
        { channelId: sandbox, content: 'a\u0000b' },
      ],
    });
    expect(await refusedWith400(response)).toEqual([{ path: 'posts[1].content', message: stringContaining('NUL') }]);
    expect(await countPosts(server.ctx.db, acme.id)).toBe(1);
  });

  it('a lone surrogate in a body field is 400 instead of being stored as U+FFFD', async () => {
    const response = await server.fetch(`/public/v1/posts/${draft}`, {
      method: 'PATCH',
      headers: { ...acme.auth, 'Content-Type': 'application/json' },
      body: '{"content": "caf\\ud800"}',
    });
    expect(await refusedWith400(response)).toEqual([{ path: 'content', message: stringContaining('surrogate') }]);
    const post = await dataOf(getPost(draft), 200);
    expect(post.content).toBe('inserted by the test');
  });

  it('a NUL character in a path or query parameter is 400', async () => {
    expect(await refusedWith400(await server.fetch('/public/v1/posts/post_%00', { headers: acme.auth }))).toEqual([
      { path: 'params.id', message: stringContaining('NUL') },
    ]);
    expect(
      await refusedWith400(await server.fetch('/public/v1/media/med_%00', { method: 'DELETE', headers: acme.auth })),
    ).toEqual([{ path: 'params.id', message: stringContaining('NUL') }]);
    expect(await refusedWith400(await server.fetch('/public/v1/posts?group=grp_%00', { headers: acme.auth }))).toEqual([
      { path: 'query.group', message: stringContaining('NUL') },
    ]);
  });

  it('a body nested 100 000 levels deep is no 500, even where no body is expected', async () => {
    const body = '['.repeat(100_000) + ']'.repeat(100_000);
    const headers = { ...acme.auth, 'Content-Type': 'application/json' };
    const ignored = await server.fetch(`/public/v1/posts/${draft}`, { method: 'DELETE', headers, body });
    expect(ignored.status).toBe(204);
    const refused = await server.fetch('/public/v1/posts', { method: 'POST', headers, body });
    expect(refused.status).toBe(400);
    draft = await insertPost(server.ctx.db, {
      organizationId: acme.id,
      channelId: sandbox,
      status: 'draft',
      scheduledAt: null,
    });
  });

  it('emoji and combining characters are stored and answered exactly', async () => {
    const content = 'Ready 🚀 café\u0301 \u202e';
    const post = await dataOf(
      api.PATCH('/public/v1/posts/{id}', { params: { path: { id: draft } }, body: { content } }),
      200,
    );
    expect(post.content).toBe(content);
  });
});

describe('timestamps', () => {
  const NOT_AN_INSTANT = [
    '2026-02-30T10:00:00Z',
    '2026-02-29T10:00:00Z',
    '2026-12-31T23:59:60Z',
    '2026-19-39T29:59:59Z',
    '2026-12-01T24:00:00Z',
    '0000-01-01T00:00:00Z',
    '1970-01-01T00:00:00+01:00',
    '1969-12-31T23:59:59.999Z',
    '9999-12-31T23:59:59-01:00',
    '+275760-09-13T00:00:00.000Z',
  ];

  it.each(NOT_AN_INSTANT)('%s as a create date is 400 on `date`, and nothing is created', async (date) => {
    const before = await countPosts(server.ctx.db, acme.id);
    for (const type of ['schedule', 'draft']) {
      const response = await send(server, acme.auth, 'POST', '/public/v1/posts', {
        type,
        date,
        content: 'x',
        channelIds: [sandbox],
      });
      expect(await refusedWith400(response)).toEqual([{ path: 'date', message: stringContaining('real instant') }]);
    }
    expect(await countPosts(server.ctx.db, acme.id)).toBe(before);
  });

  it.each(NOT_AN_INSTANT)('%s is 400 as scheduledAt and as a list filter', async (date) => {
    const schedule = await send(server, acme.auth, 'POST', `/public/v1/posts/${draft}/schedule`, { scheduledAt: date });
    expect(await refusedWith400(schedule)).toEqual([
      { path: 'scheduledAt', message: stringContaining('real instant') },
    ]);
    const list = await server.fetch(`/public/v1/posts?from=${encodeURIComponent(date)}`, { headers: acme.auth });
    expect(await refusedWith400(list)).toEqual([{ path: 'query.from', message: stringContaining('real instant') }]);
  });

  it('accepts any offset and the edges of the range, and answers them in UTC', async () => {
    const created = await dataOf(
      api.POST('/public/v1/posts', {
        body: {
          type: 'draft',
          posts: [
            { channelId: sandbox, content: 'offset' },
            { channelId: sandbox, content: 'edge' },
          ],
          date: '2026-12-01T10:30:00.5+01:00',
        },
      }),
      201,
    );
    expect(created.data[0]!.scheduledAt).toBe('2026-12-01T09:30:00.500Z');
    for (const date of ['1970-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '2028-02-29T00:00:00-00:00']) {
      const answer = await dataOf(
        api.POST('/public/v1/posts', { body: { type: 'draft', date, content: 'x', channelIds: [sandbox] } }),
        201,
      );
      expect(answer.data[0]!.scheduledAt).toBe(new Date(date).toISOString());
    }
    await dataOf(api.GET('/public/v1/posts', { params: { query: { limit: 100 } } }), 200);
  });
});

describe('types in a JSON body', () => {
  it('are taken as sent: null, numbers and strings are not converted into the declared type (400)', async () => {
    const youtube = (await createChannel(server.ctx.db, acme.id, 'youtube')).id;
    const settings = { __type: 'youtube', title: 'Winter', privacyStatus: 'unlisted', madeForKids: false };
    const cases: [unknown, string][] = [
      [
        { type: 'draft', posts: [{ channelId: youtube, settings: { ...settings, madeForKids: null } }] },
        'posts[0].settings.madeForKids',
      ],
      [
        { type: 'draft', posts: [{ channelId: youtube, settings: { ...settings, madeForKids: 'false' } }] },
        'posts[0].settings.madeForKids',
      ],
      [
        { type: 'draft', posts: [{ channelId: youtube, settings: { ...settings, title: 0 } }] },
        'posts[0].settings.title',
      ],
      [{ type: 'draft', content: true, channelIds: [sandbox] }, 'content'],
    ];
    const before = await countPosts(server.ctx.db, acme.id);
    for (const [body, path] of cases) {
      const details = await refusedWith400(await send(server, acme.auth, 'POST', '/public/v1/posts', body));
      expect(
        details?.map((d) => d.path),
        JSON.stringify(body),
      ).toContain(path);
    }
    expect(await countPosts(server.ctx.db, acme.id)).toBe(before);
    const upload = await send(server, acme.auth, 'POST', '/public/v1/media/uploads', {
      fileName: 'a.png',
      contentType: 'image/png',
      size: '2048',
    });
    expect(await refusedWith400(upload)).toEqual([{ path: 'size', message: 'must be integer' }]);
  });

  it('query and path parameters, always strings on the wire, are still read as their declared types', async () => {
    const response = await server.fetch('/public/v1/posts?limit=1', { headers: acme.auth });
    expect(response.status).toBe(200);
    expect((await bodyOf<Schemas['PostPage']>(response)).data).toHaveLength(1);
  });
});
