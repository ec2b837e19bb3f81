import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { canonicalJson } from '../src/posts/idempotency.js';
import { publicApi, type Schemas } from './support/api.js';
import { countPosts, createChannel, createOrganization, type TestOrganization } from './support/fixtures.js';
import { POSTS_TEST_ENV, send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';

const NOW = '2026-11-21T12:00:00.000Z';

let server: TestServer;
let acme: TestOrganization;
let globex: TestOrganization;
let acmeChannel: string;
let globexChannel: string;

beforeAll(async () => {
  server = await startTestServer({ env: POSTS_TEST_ENV });
  acme = await createOrganization(server.ctx.db, 'Acme');
  globex = await createOrganization(server.ctx.db, 'Globex');
  acmeChannel = (await createChannel(server.ctx.db, acme.id, 'sandbox')).id;
  globexChannel = (await createChannel(server.ctx.db, globex.id, 'sandbox')).id;
});
afterAll(() => server?.close());
beforeEach(() => server.setNow(NOW));

type CreatePostRequest = Schemas['CreatePostRequest'];

const create = (body: CreatePostRequest, key: string, org = acme) =>
  publicApi(server, org.auth).POST('/public/v1/posts', { body, params: { header: { 'Idempotency-Key': key } } });
const scheduled = (content: string, channelId = acmeChannel): CreatePostRequest => ({
  type: 'schedule',
  date: '2026-12-01T09:30:00.000Z',
  content,
  channelIds: [channelId],
});

describe('Idempotency-Key on POST /public/v1/posts', () => {
  it('answers a retry with the first response, marked as a replay, and creates nothing more', async () => {
    const key = randomUUID();
    // Read as text: the replay is the first answer to the byte.
    const createAsText = () =>
      publicApi(server, acme.auth).POST('/public/v1/posts', {
        body: scheduled('once'),
        params: { header: { 'Idempotency-Key': key } },
        parseAs: 'text',
      });
    const first = await createAsText();
    expect(first.response.status).toBe(201);
    expect(first.response.headers.get('idempotent-replayed')).toBeNull();
    const count = await countPosts(server.ctx.db, acme.id);

    server.setNow('2026-11-22T11:59:59.000Z');
    const retry = await createAsText();
    expect(retry.response.status).toBe(201);
    expect(retry.response.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.data).toBe(first.data);
    expect(await countPosts(server.ctx.db, acme.id)).toBe(count);
  });

  it('replays even when the request would now be refused (its date has passed)', async () => {
    const key = randomUUID();
    const body: CreatePostRequest = {
      type: 'schedule',
      date: '2026-11-21T12:05:00.000Z',
      content: 'soon',
      channelIds: [acmeChannel],
    };
    const first = await create(body, key);
    server.setNow('2026-11-21T18:00:00.000Z');
    const retry = await create(body, key);
    expect(retry.response.status).toBe(201);
    expect(retry.data).toEqual(first.data);
  });

  it('treats a body with its keys in another order as the same request', async () => {
    const key = randomUUID();
    const first = await create({ type: 'now', content: 'same', channelIds: [acmeChannel] }, key);
    const retry = await create({ channelIds: [acmeChannel], content: 'same', type: 'now' }, key);
    expect(retry.response.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.data).toEqual(first.data);
  });

  it('refuses the same key with a different body (422) and creates nothing', async () => {
    const key = randomUUID();
    await create(scheduled('original'), key);
    const count = await countPosts(server.ctx.db, acme.id);
    const { error, response } = await create(scheduled('changed'), key);
    expect(response.status).toBe(422);
    expect(error?.error).toMatchObject({
      code: 'unprocessable',
      details: [
        { path: 'headers.idempotency-key', message: 'was already used with a different body in the last 24 hours' },
      ],
    });
    expect(await countPosts(server.ctx.db, acme.id)).toBe(count);
  });

  it('keeps keys apart between organizations', async () => {
    const key = randomUUID();
    const ours = await create(scheduled('ours'), key);
    const theirs = await create(scheduled('theirs', globexChannel), key, globex);
    expect(theirs.response.status).toBe(201);
    expect(theirs.response.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.data?.group).not.toBe(ours.data?.group);
  });

  it('forgets a key after 24 hours', async () => {
    const key = randomUUID();
    const first = await create(scheduled('day one'), key);
    server.setNow('2026-11-22T12:00:00.001Z');
    const later = await create(scheduled('day two'), key);
    expect(later.response.status).toBe(201);
    expect(later.response.headers.get('idempotent-replayed')).toBeNull();
    expect(later.data?.group).not.toBe(first.data?.group);
    server.setNow('2026-11-22T13:00:00.000Z');
    const again = await create(scheduled('day two'), key);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
  });

  it('does not remember a refused request: the same key works once the request is fixed', async () => {
    const key = randomUUID();
    const refused = await create({ type: 'now', content: 'x', channelIds: ['ch_unknown'] }, key);
    expect(refused.response.status).toBe(422);
    const fixed = await create({ type: 'now', content: 'x', channelIds: [acmeChannel] }, key);
    expect(fixed.response.status).toBe(201);
    expect(fixed.response.headers.get('idempotent-replayed')).toBeNull();
  });

  it('creates the posts once when concurrent requests carry the same key', async () => {
    const key = randomUUID();
    const body: CreatePostRequest = { type: 'now', content: 'race', channelIds: [acmeChannel] };
    const count = await countPosts(server.ctx.db, acme.id);
    const answers = await Promise.all(Array.from({ length: 8 }, () => create(body, key)));
    const responses = answers.map((answer) => answer.response);
    expect(responses.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(responses.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(new Set(answers.map((answer) => JSON.stringify(answer.data))).size).toBe(1);
    expect(await countPosts(server.ctx.db, acme.id)).toBe(count + 1);
  });

  it('creates once and refuses the others when concurrent requests carry one key with different bodies', async () => {
    const key = randomUUID();
    const count = await countPosts(server.ctx.db, acme.id);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        create({ type: 'now', content: `variant ${i}`, channelIds: [acmeChannel] }, key),
      ),
    );
    const statuses = answers.map((answer) => answer.response.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.filter((status) => status === 422)).toHaveLength(5);
    expect(await countPosts(server.ctx.db, acme.id)).toBe(count + 1);
  });

  it('refuses an empty or overlong key (400)', async () => {
    // Keys the contract refuses, sent as a client could.
    for (const key of ['', 'k'.repeat(256)]) {
      const response = await send(server, acme.auth, 'POST', '/public/v1/posts', scheduled('bad key'), {
        'Idempotency-Key': key,
      });
      expect(response.status, JSON.stringify(key)).toBe(400);
    }
  });
});

describe('canonical JSON of a request body', () => {
  it('sorts object keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}',
    );
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });
});
