import fs from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from 'openapi-fetch';
import type { paths } from '../generated/public-v1.js';
import { parseYaml, SPEC_FILES } from '../src/core/contract.js';
import { bodyOf, dataOf, errorOf, oauthErrorOf, publicApi, type RequestBody, type Schemas } from './support/api.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { POSTS_TEST_ENV, send } from './support/posts.js';
import { startTestServer, type TestServer } from './support/server.js';
import { createOAuthApp, tokenRequest } from './support/oauth.js';
import { anyString, stringContaining } from './support/typed-matchers.js';

/**
 * The edges where a standards-following client and the contract must agree with the server: how a
 * query string is read, which paths exist, and what the OAuth endpoints answer at their limits.
 */

let server: TestServer;
let org: TestOrganization;
let api: Client<paths>;

beforeAll(async () => {
  // Webhook receivers on loopback, so that deliveries can be made for the list of deliveries.
  server = await startTestServer({ env: { ...POSTS_TEST_ENV, WEBHOOK_ALLOW_RANGES: '127.0.0.1/32' } });
  server.setNow('2026-11-21T12:00:00.000Z');
  org = await createOrganization(server.ctx.db, 'Edges');
  api = publicApi(server, org.auth);
});
afterAll(() => server?.close());

/** The parts of a contract (an OpenAPI document) these tests read. */
interface Contract {
  paths: Record<string, PathItem>;
  components: { schemas: Record<string, SchemaNode> };
}
interface Reference {
  $ref: string;
}
interface SchemaNode {
  type?: string;
  required?: string[];
  allOf?: SchemaNode[];
  oneOf?: Reference[];
  properties?: Record<string, SchemaNode & { default?: unknown }>;
}
interface OperationNode {
  operationId: string;
  parameters?: ({ name: string } | Reference)[];
  requestBody?: unknown;
  responses: Record<string, { content?: Record<string, { schema: SchemaNode | Reference }> }>;
}
type PathItem = Partial<Record<'get' | 'post' | 'put' | 'patch' | 'delete', OperationNode>> & {
  parameters?: ({ name: string } | Reference)[];
};
const contractOf = (file: string) => parseYaml(fs.readFileSync(file, 'utf8')) as Contract;

/** A GET exactly as written, its query string included, as the organization. */
const get = (path: string) => send(server, org.auth, 'GET', path);

/** The status and the error of a GET the server refuses. */
async function refusedGet(path: string) {
  const response = await get(path);
  return { status: response.status, error: await errorOf(response) };
}

/** Creates posts through the typed client; the first of them. */
const createPost = async (body: RequestBody<'createPost'>) =>
  (await dataOf(api.POST('/public/v1/posts', { body }), 201)).data[0]!;

/** A page of posts, as a GET exactly as written answers it. */
async function postsAt(path: string) {
  const response = await get(path);
  return { status: response.status, body: await bodyOf<Schemas['PostPage']>(response) };
}

describe('query strings are read as RFC 3986 says', () => {
  it('takes an unencoded + in a date offset as a plus, as allowReserved promises', async () => {
    const channel = await createChannel(server.ctx.db, org.id, 'sandbox');
    const post = await insertPost(server.ctx.db, {
      organizationId: org.id,
      channelId: channel.id,
      status: 'scheduled',
      scheduledAt: '2026-12-01T08:30:00.000Z',
    });

    const inside = await postsAt('/public/v1/posts?from=2026-12-01T09:00:00+01:00&to=2026-12-01T10:00:00+01:00');
    expect(inside.status, JSON.stringify(inside.body)).toBe(200);
    expect(inside.body.data.map((p) => p.id)).toEqual([post]);

    // The same instant written with an encoded plus means the same thing.
    const encoded = await postsAt(
      '/public/v1/posts?from=2026-12-01T09%3A00%3A00%2B01%3A00&to=2026-12-01T09:29:00%2B01:00',
    );
    expect(encoded.status).toBe(200);
    expect(encoded.body.data).toEqual([]);
  });

  it('takes only plain decimal integers', async () => {
    for (const limit of ['0x10', '1e1', '3.0', ' 5', '+5', '5 ', '']) {
      const answer = await refusedGet(`/public/v1/posts?limit=${encodeURIComponent(limit)}`);
      expect(answer.status, `limit=${limit}`).toBe(400);
      expect(answer.error.code).toBe('validation_failed');
      expect(answer.error.details?.map((d) => d.path)).toContain('query.limit');
    }
    expect((await get('/public/v1/posts?limit=7')).status).toBe(200);
  });

  it('says so when a single-valued parameter is repeated, and takes repeated array parameters', async () => {
    const repeated = await refusedGet('/public/v1/posts?limit=5&limit=6');
    expect(repeated.status).toBe(400);
    expect(repeated.error.details).toContainEqual({
      path: 'query.limit',
      message: 'must be given once; it was given 2 times',
    });

    const statuses = await postsAt('/public/v1/posts?status=draft&status=scheduled');
    expect(statuses.status, JSON.stringify(statuses.body)).toBe(200);
  });

  it('refuses broken percent-encoding with a 400, not a 500', async () => {
    const broken = await refusedGet('/public/v1/posts?from=100%');
    expect(broken.status).toBe(400);
    expect(broken.error.details?.[0]?.message).toMatch(/percent-encoding/);
  });
});

describe('paths match exactly', () => {
  it('answers 404 for a trailing slash instead of aliasing another route', async () => {
    for (const path of ['/public/v1/posts/', '/public/v1/channels/', '/public/v1/media/']) {
      const answer = await refusedGet(path);
      expect(answer.status, path).toBe(404);
      expect(answer.error.code).toBe('not_found');
      expect(answer.error.message).toBe(`There is no operation at GET ${path}.`);
    }
    const token = await server.fetch('/api/oauth/token/', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(token.status).toBe(404);
  });
});

describe('OAuth endpoints at their edges', () => {
  it('answers a POST to the metadata with the declared OAuth error body', async () => {
    const response = await server.fetch('/.well-known/oauth-authorization-server', { method: 'POST' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET, HEAD');
    expect(await oauthErrorOf(response)).toEqual({ error: 'invalid_request', error_description: anyString() });
  });

  it('refuses a revoke request whose token is missing or empty (RFC 7009 §2.1)', async () => {
    const app = await createOAuthApp(server.ctx.db, org.id);
    for (const parameters of [{ token: '' }, {}]) {
      const response = await tokenRequest(
        server,
        { ...parameters, client_id: app.clientId, client_secret: app.secret },
        { path: '/api/oauth/revoke' },
      );
      expect(response.status, JSON.stringify(parameters)).toBe(400);
      expect((await oauthErrorOf(response)).error).toBe('invalid_request');
    }
    const form = await tokenRequest(
      server,
      { token: '', client_id: app.clientId, client_secret: app.secret },
      { path: '/api/oauth/revoke', form: true },
    );
    expect(form.status).toBe(400);
  });
});

describe('the served contract', () => {
  let elsewhere: TestServer;
  beforeAll(async () => {
    elsewhere = await startTestServer({ env: { PUBLIC_URL: 'https://scheduler.example.org' } });
  });
  afterAll(() => elsewhere?.close());

  it('names the installation’s PUBLIC_URL as the server, in the YAML and in the reference pages', async () => {
    for (const path of ['/openapi/public-v1.yaml', '/openapi/oauth.yaml', '/docs', '/docs/oauth']) {
      const response = await elsewhere.fetch(path);
      expect(response.status, path).toBe(200);
      const text = await response.text();
      expect(text, path).toContain('https://scheduler.example.org');
      expect(text, path).not.toContain('localhost:3000');
    }
    const yaml = await (await elsewhere.fetch('/openapi/public-v1.yaml')).text();
    expect(yaml).toMatch(/servers:\n {2}- url: https:\/\/scheduler\.example\.org\n/);
  });
});

describe('the create body, a union discriminated by type', () => {
  let channel: string;
  beforeAll(async () => {
    channel = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Union')).id;
  });
  /** Sends a body the contract refuses; the status and the error. */
  const refusedCreate = async (body: unknown) => {
    const response = await send(server, org.auth, 'POST', '/public/v1/posts', body);
    return { status: response.status, error: await errorOf(response) };
  };

  it('requires date for schedule and names only that', async () => {
    const missing = await refusedCreate({ type: 'schedule', content: 'x', channelIds: [channel] });
    expect(missing.status).toBe(400);
    expect(missing.error.details).toEqual([{ path: 'date', message: "must have required property 'date'" }]);
    const perChannel = await refusedCreate({ type: 'schedule', posts: [{ channelId: channel, content: 'x' }] });
    expect(perChannel.error.details).toEqual([{ path: 'date', message: "must have required property 'date'" }]);
  });

  it('refuses scheduledAt on create instead of reading it as date, and an unknown type', async () => {
    const renamed = await refusedCreate({
      type: 'schedule',
      date: '2026-12-01T09:00:00Z',
      scheduledAt: '2026-12-01T09:00:00Z',
      content: 'x',
      channelIds: [channel],
    });
    expect(renamed.status).toBe(400);
    expect(renamed.error.details).toEqual([{ path: 'scheduledAt', message: 'must NOT have additional properties' }]);

    const unknown = await refusedCreate({ type: 'later', content: 'x', channelIds: [channel] });
    expect(unknown.status).toBe(400);
    expect(unknown.error.details).toEqual([{ path: 'type', message: 'must be equal to one of the allowed values' }]);
    const untyped = await refusedCreate({ content: 'x', channelIds: [channel] });
    expect(untyped.status).toBe(400);
    expect(untyped.error.details).toEqual([{ path: 'type', message: 'must be string' }]);
  });

  it('refuses a body or settings that are not objects (a union checks the type before its branches)', async () => {
    for (const body of [[], [{ type: 'now', content: 'x', channelIds: [channel] }]]) {
      const answer = await refusedCreate(body);
      expect(answer.status).toBe(400);
      expect(answer.error.details).toEqual([{ path: 'body', message: 'must be object' }]);
    }
    const draft = await createPost({ type: 'draft', content: 'x', channelIds: [channel] });
    for (const settings of [0, 'sandbox', [], false]) {
      const response = await send(server, org.auth, 'PATCH', `/public/v1/posts/${draft.id}`, { settings });
      expect(response.status, JSON.stringify(settings)).toBe(400);
      expect((await errorOf(response)).details).toEqual([{ path: 'settings', message: 'must be object' }]);
    }
  });

  it('refuses a body that mixes both forms', async () => {
    const mixed = await refusedCreate({
      type: 'now',
      content: 'x',
      channelIds: [channel],
      posts: [{ channelId: channel }],
    });
    expect(mixed.status).toBe(400);
    expect(mixed.error.code).toBe('validation_failed');
  });

  it('stores the same settings from the single-content and the per-channel form', async () => {
    const single = await createPost({ type: 'draft', content: 'x', channelIds: [channel] });
    const perChannel = await createPost({ type: 'draft', posts: [{ channelId: channel, content: 'x' }] });
    expect(single.settings).toEqual({ __type: 'sandbox', outcome: 'published', failingPart: 1 });
    expect(perChannel.settings).toEqual(single.settings);
  });
});

describe('property names of Object.prototype', () => {
  it('are declared nowhere in the contract and refused in any body', async () => {
    const names = Object.getOwnPropertyNames(Object.prototype);
    const declared = new Set<string>();
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
          if (key === 'properties' && value && typeof value === 'object')
            Object.keys(value).forEach((name) => declared.add(name));
          walk(value);
        }
      }
    };
    walk(parseYaml(fs.readFileSync(SPEC_FILES.publicV1, 'utf8')));
    expect(names.filter((name) => declared.has(name))).toEqual([]);

    const channel = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Prototype')).id;
    for (const name of ['__proto__', 'constructor', 'toString']) {
      const body = `{"type":"now","content":"x","channelIds":["${channel}"],"${name}":{"polluted":true}}`;
      const response = await server.fetch('/public/v1/posts', {
        method: 'POST',
        headers: { ...org.auth, 'Content-Type': 'application/json' },
        body,
      });
      expect(response.status, name).toBe(400);
      expect((await errorOf(response)).details).toEqual([
        { path: name, message: 'must NOT have additional properties' },
      ]);
    }
  });
});

describe('extensible enumerations', () => {
  // The contracts as a client generator sees them: Ajv 2020, every schema by its JSON pointer.
  const ajv = new Ajv2020({ strict: false, discriminator: true, allErrors: true });
  formats.default(ajv);
  ajv.addSchema(parseYaml(fs.readFileSync(SPEC_FILES.publicV1, 'utf8')) as object, 'public');
  ajv.addSchema(parseYaml(fs.readFileSync(SPEC_FILES.oauth, 'utf8')) as object, 'oauth');
  const valid = (ref: string, value: unknown) => ajv.validate({ $ref: ref }, value);

  const channel = {
    id: 'ch_x',
    provider: 'youtube',
    name: 'Acme',
    username: null,
    picture: null,
    status: 'active',
    disabled: false,
    createdAt: '2026-11-21T12:00:00.000Z',
  };

  it('take values added after this version in answers: provider, channel status, quota window, OAuth error', () => {
    expect(valid('public#/components/schemas/Channel', channel)).toBe(true);
    expect(valid('public#/components/schemas/Channel', { ...channel, provider: 'mastodon', status: 'paused' })).toBe(
      true,
    );
    const quota = {
      channelId: 'ch_x',
      provider: 'bluesky',
      window: 'week',
      limit: 5,
      used: 0,
      remaining: 5,
      resetsAt: '2026-11-22T00:00:00.000Z',
    };
    expect(valid('public#/components/schemas/ChannelQuota', quota)).toBe(true);
    expect(
      valid('oauth#/components/schemas/OAuthError', { error: 'temporarily_unavailable', error_description: 'Later.' }),
    ).toBe(true);
    expect(
      valid('public#/components/schemas/Error', {
        error: { code: 'quota_paused', message: 'Later.', requestId: 'req_x' },
      }),
    ).toBe(true);
    // Still typed: a number is no provider.
    expect(valid('public#/components/schemas/Channel', { ...channel, provider: 7 })).toBe(false);
  });

  it('stay closed where a client sends them: the server acts only on values it knows', async () => {
    const connect = await send(server, org.auth, 'POST', '/public/v1/channels/connect', {
      provider: 'tumblr',
      returnUrl: 'https://app.example.com/done',
    });
    expect(connect.status).toBe(400);
    expect((await errorOf(connect)).details).toEqual([
      { path: 'provider', message: stringContaining('must be equal to one of the allowed values') },
    ]);
  });
});

describe('answers declare the defaults they always carry', () => {
  it('requires every defaulted setting in a post’s stored settings, so generated clients see them as present', () => {
    const { schemas } = contractOf(SPEC_FILES.publicV1).components;
    const required = (name: string) => schemas[name]!.allOf!.flatMap((part) => part.required ?? []);
    expect(schemas.Post!.properties!.settings!.oneOf![0]!.$ref).toBe('#/components/schemas/StoredProviderSettings');
    // Every optional request field with a default is required in the stored form.
    for (const [request, stored] of [
      ['YouTubeSettings', 'StoredYouTubeSettings'],
      ['TikTokSettings', 'StoredTikTokSettings'],
      ['SandboxSettings', 'StoredSandboxSettings'],
      ['BlueskySettings', 'StoredBlueskySettings'],
      ['MastodonSettings', 'StoredMastodonSettings'],
      ['XSettings', 'StoredXSettings'],
    ] as const) {
      const defaulted = Object.entries(schemas[request]!.properties!)
        .filter(([, property]) => property.default !== undefined)
        .map(([name]) => name);
      expect(defaulted.length, request).toBeGreaterThan(0);
      expect(required(stored), stored).toEqual(expect.arrayContaining(defaulted));
    }
  });

  it('answers those defaults on posts created without them', async () => {
    const channel = (await createChannel(server.ctx.db, org.id, 'sandbox', 'Defaults')).id;
    const created = await createPost({
      type: 'draft',
      posts: [{ channelId: channel, content: 'x', settings: { __type: 'sandbox' } }],
    });
    expect(created.settings).toEqual({ __type: 'sandbox', outcome: 'published', failingPart: 1 });
  });
});

describe('the contract declares every answer the server gives at its limits', () => {
  const specs = { public: contractOf(SPEC_FILES.publicV1), oauth: contractOf(SPEC_FILES.oauth) };
  const operations = (spec: Contract) =>
    Object.entries(spec.paths).flatMap(([path, item]) =>
      (['get', 'post', 'put', 'patch', 'delete'] as const).flatMap((method) => {
        const op = item[method];
        return op ? [{ path, method, item, op }] : [];
      }),
    );
  /** The node a `$ref` points to (a JSON pointer into the contract), or the node itself. */
  const resolve = <T>(spec: Contract, node: T | Reference): T =>
    typeof node === 'object' && node !== null && '$ref' in node
      ? (node.$ref
          .slice(2)
          .split('/')
          .reduce<unknown>((at, key) => (at as Record<string, unknown>)[key.replaceAll('~1', '/')], spec) as T)
      : node;

  it('413 and 415 wherever a request body is taken', () => {
    const missing = operations(specs.public)
      .filter(({ op }) => op.requestBody)
      .flatMap(({ op }) =>
        ['413', '415'].filter((status) => !op.responses[status]).map((status) => `${op.operationId} ${status}`),
      );
    expect(missing).toEqual([]);
  });

  it('500 server_error on every OAuth operation', () => {
    const missing = operations(specs.oauth)
      .filter(({ op }) => !op.responses['500'])
      .map(({ op }) => op.operationId);
    expect(missing).toEqual([]);
  });

  it('one list shape: every list with a cursor takes limit and answers data and nextCursor', () => {
    const lists = operations(specs.public).filter(({ item, op }) =>
      [...(item.parameters ?? []), ...(op.parameters ?? [])]
        .map((p) => resolve(specs.public, p).name)
        .includes('cursor'),
    );
    expect(lists.map(({ op }) => op.operationId).sort()).toEqual([
      'getPostHistory',
      'listMedia',
      'listPosts',
      'listWebhookDeliveries',
      'pinterestBoards',
      'tiktokAnalytics',
    ]);
    for (const { item, op } of lists) {
      const names = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => resolve(specs.public, p).name);
      expect(names, op.operationId).toContain('limit');
      const page = resolve(specs.public, op.responses['200']!.content!['application/json']!.schema);
      expect(page.required, op.operationId).toEqual(expect.arrayContaining(['data', 'nextCursor']));
      expect(page.properties?.data?.type, op.operationId).toBe('array');
    }
  });
});

describe('arrays and sizes are bounded', () => {
  it('refuses more statuses than there are, more tags than YouTube takes, and an upload beyond any installation’s limit', async () => {
    const statuses = await refusedGet(`/public/v1/posts?${Array(8).fill('status=draft').join('&')}`);
    expect(statuses.status).toBe(400);
    expect(statuses.error.details).toEqual([{ path: 'query.status', message: 'must NOT have more than 7 items' }]);
    expect((await get(`/public/v1/posts?${Array(5).fill('status=draft').join('&')}`)).status).toBe(200);

    const channel = (await createChannel(server.ctx.db, org.id, 'youtube', 'Bounded')).id;
    const settings = {
      __type: 'youtube' as const,
      title: 'Winter',
      privacyStatus: 'private' as const,
      madeForKids: false,
      tags: Array.from({ length: 251 }, (_, i) => `t${i}`),
    };
    const tags = await api.POST('/public/v1/posts', {
      body: { type: 'draft', posts: [{ channelId: channel, content: 'x', settings }] },
    });
    expect(tags.response.status).toBe(400);
    expect(tags.error?.error.details).toEqual([
      { path: 'posts[0].settings.tags', message: 'must NOT have more than 250 items' },
    ]);

    const upload = (size: number) =>
      api.POST('/public/v1/media/uploads', { body: { fileName: 'film.mp4', contentType: 'video/mp4', size } });
    const huge = await upload(5 * 1024 ** 3 + 1);
    expect(huge.response.status).toBe(400);
    expect(huge.error?.error.details).toEqual([{ path: 'size', message: 'must be <= 5368709120' }]);
    // Within the contract, over this installation's limit for videos (1 GB by default).
    const large = await upload(5 * 1024 ** 3);
    expect(large.response.status).toBe(413);
    expect(large.error?.error.code).toBe('payload_too_large');
  });
});

describe('cursors of a post’s history and of an endpoint’s deliveries', () => {
  const altered = (cursor: string) => {
    const [payload, tag] = cursor.split('.');
    const flip = (text: string) => (text[0] === 'A' ? 'B' : 'A') + text.slice(1);
    return [`${flip(payload!)}.${tag}`, `${payload}.${flip(tag!)}`, payload!, `${cursor}.x`];
  };
  const refused = async (path: string) => {
    const answer = await refusedGet(path);
    expect(answer.status, path).toBe(400);
    expect(answer.error.details, path).toEqual([
      { path: 'query.cursor', message: 'is not a cursor issued by this API for this list and these filters' },
    ]);
  };

  it('read back only for the post that issued them, unaltered', async () => {
    const channel = (await createChannel(server.ctx.db, org.id, 'sandbox', 'History')).id;
    const create = async () => (await createPost({ type: 'draft', content: 'x', channelIds: [channel] })).id;
    const [first, second] = [await create(), await create()];
    for (const content of ['y', 'z'])
      await dataOf(api.PATCH('/public/v1/posts/{id}', { params: { path: { id: first } }, body: { content } }), 200);
    const history = (cursor?: string) =>
      dataOf(
        api.GET('/public/v1/posts/{id}/history', {
          params: { path: { id: first }, query: { limit: 1, ...(cursor ? { cursor } : {}) } },
        }),
        200,
      );
    const page = await history();
    expect(page.nextCursor).toEqual(anyString());
    const cursor = page.nextCursor!;
    expect((await history(cursor)).data[0]!.type).toBe('edited');

    for (const forged of altered(cursor))
      await refused(`/public/v1/posts/${first}/history?cursor=${encodeURIComponent(forged)}`);
    await refused(`/public/v1/posts/${second}/history?cursor=${encodeURIComponent(cursor)}`);
    await refused(`/public/v1/posts?cursor=${encodeURIComponent(cursor)}`);
  });

  it('read back only for the endpoint that issued them, unaltered', async () => {
    const endpoint = async () =>
      (
        await dataOf(
          api.POST('/public/v1/webhooks', { body: { url: 'http://127.0.0.1:9/hooks', eventTypes: ['post.failed'] } }),
          201,
        )
      ).id;
    const [first, second] = [await endpoint(), await endpoint()];
    for (const id of [first, first, second])
      await dataOf(api.POST('/public/v1/webhooks/{id}/test', { params: { path: { id } } }), 202);
    const deliveries = (cursor?: string) =>
      dataOf(
        api.GET('/public/v1/webhooks/{id}/deliveries', {
          params: { path: { id: first }, query: { limit: 1, ...(cursor ? { cursor } : {}) } },
        }),
        200,
      );
    const cursor = (await deliveries()).nextCursor!;
    expect(cursor).toEqual(anyString());
    const next = await deliveries(cursor);
    expect(next.data, JSON.stringify(next)).toHaveLength(1);

    for (const forged of altered(cursor))
      await refused(`/public/v1/webhooks/${first}/deliveries?cursor=${encodeURIComponent(forged)}`);
    await refused(`/public/v1/webhooks/${second}/deliveries?cursor=${encodeURIComponent(cursor)}`);
    await refused(`/public/v1/media?cursor=${encodeURIComponent(cursor)}`);
  });
});
