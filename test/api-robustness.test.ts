import fs from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseYaml, SPEC_FILES } from '../src/core/contract.js';
import { dataOf, publicApi, type ApiError } from './support/api.js';
import {
  createChannel,
  createOrganization,
  insertMedia,
  insertPost,
  type TestOrganization,
} from './support/fixtures.js';
import { jpeg } from './support/media-samples.js';
import { FakeTikTok } from './support/posts.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { startFakeMastodon, type FakeMastodon } from './support/fake-mastodon.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled, TIMEOUTS } from './support/timeouts.js';
import { addReturnOrigin } from '../src/channels/return-origins.js';

/**
 * Every operation of the contract, read from the spec when the suite starts (so an operation added
 * later is covered without touching this file), gets a battery of hostile requests against the real
 * server. Whatever the input, the answer must be a declared status below 500 with the error envelope
 * (or a valid success: the server validates its own responses in tests and answers 500 otherwise).
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
interface SpecParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  example?: unknown;
  schema?: { type?: string; items?: unknown; default?: unknown };
}
interface SpecOperation {
  operationId: string;
  parameters?: ({ $ref: string } | SpecParameter)[];
  requestBody?: { content: Record<string, { examples?: Record<string, { value: Json }> }> };
  responses: Record<string, unknown>;
}
interface Operation {
  id: string;
  method: string;
  /** e.g. `/public/v1/posts/{id}`. */
  path: string;
  pathParams: SpecParameter[];
  queryParams: SpecParameter[];
  bodyExamples: Json[];
  bodyExampleNames: string[];
  declared: Set<number>;
}

// The contract as plain data: tests walk it by the names the OpenAPI format gives its parts.
const spec = parseYaml(fs.readFileSync(SPEC_FILES.publicV1, 'utf8')) as {
  paths: Record<string, Record<string, unknown>>;
};

function resolve<T>(node: T | { $ref: string }): T {
  if (node && typeof node === 'object' && '$ref' in node) {
    return node.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce(
        (at: Record<string, unknown>, key) => at[key] as Record<string, unknown>,
        spec as Record<string, unknown>,
      ) as T;
  }
  return node;
}

function readOperations(): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(spec.paths)) {
    const shared = ((item.parameters ?? []) as SpecOperation['parameters'] & object).map(resolve<SpecParameter>);
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method] as SpecOperation | undefined;
      if (!op) continue;
      const params = [...shared, ...(op.parameters ?? []).map(resolve<SpecParameter>)];
      const examples = op.requestBody?.content['application/json']?.examples ?? {};
      operations.push({
        id: op.operationId,
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path'),
        queryParams: params.filter((p) => p.in === 'query'),
        bodyExamples: Object.values(examples).map((example) => example.value),
        bodyExampleNames: Object.keys(examples),
        declared: new Set(Object.keys(op.responses).map(Number)),
      });
    }
  }
  return operations;
}

const OPERATIONS = readOperations();

/**
 * The operations without a request body whose hostile bodies are probed: the first of each method. A body
 * sent to any other is read by the same parser and refused or ignored by the same validator, with no handler
 * reading it.
 */
const bodyless = OPERATIONS.filter((op) => op.bodyExamples.length === 0);
const BODYLESS_PROBED = new Set(
  bodyless.filter((op, i) => bodyless.findIndex((other) => other.method === op.method) === i).map((op) => op.id),
);

// Statuses the contract's introduction promises for every operation, whether or not it lists them.
const GENERIC_STATUSES: Record<number, string> = {
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
};
const CODE_BY_STATUS: Record<number, string> = {
  400: 'validation_failed',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'rate_limited',
  501: 'not_implemented',
  502: 'provider_error',
};

const deep = (depth: number, leaf: Json = 1): Json => {
  let value: Json = leaf;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
};

/** Values put in place of every field of a valid body, one at a time. */
const HOSTILE_VALUES: Json[] = [
  null,
  true,
  0,
  -1,
  1.5,
  1e308,
  Number.MAX_SAFE_INTEGER + 2,
  '',
  ' ',
  'x'.repeat(100_000),
  '\u0000',
  'a\u0000b',
  '\ud800',
  '😀'.repeat(50),
  'e\u0301\u202e\ufeff',
  [],
  [null],
  [{}],
  ['x'.repeat(200)],
  {},
  { __proto__: { polluted: true } },
  deep(200),
  'NaN',
  '1e3',
  '0x10',
  'true',
  'null',
  '../../etc/passwd',
  "'; drop table posts; --",
  '<script>alert(1)</script>',
  '2026-02-30T10:00:00Z',
  '2026-19-39T29:59:59Z',
  '2026-12-31T23:59:60Z',
  '0000-01-01T00:00:00Z',
  '0000-01-01T00:00:00+01:00',
  '9999-12-31T23:59:59-01:00',
  '+275760-09-13T00:00:00.000Z',
  '275760-09-13T00:00:00.000Z',
  '2026-12-01',
  '2026-12-01T09:30:00',
];

/** The original value's type swapped: numbers as strings and the reverse, and so on. */
function swapped(value: Json): Json[] {
  if (typeof value === 'number') return [String(value), [value], { value }];
  if (typeof value === 'boolean') return [String(value), value ? 1 : 0];
  if (typeof value === 'string') return [Number(value) || 42, [value], { value }, value.toUpperCase(), ` ${value} `];
  if (Array.isArray(value))
    return [
      value[0] ?? 'x',
      Object.fromEntries(value.map((v, i) => [String(i), v])),
      [...value, ...value],
      Array(60).fill(value[0] ?? 'x'),
    ];
  if (value && typeof value === 'object') return [Object.values(value), JSON.stringify(value)];
  return [];
}

const jsonType = (value: Json) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value);

type PathKey = (string | number)[];

/** Every position in a JSON value (the root excluded), parents before children. */
function positions(value: Json, at: PathKey = []): PathKey[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => [[...at, i], ...positions(item, [...at, i])]);
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([key, item]) => [[...at, key], ...positions(item, [...at, key])]);
  return [];
}

function valueAt(value: Json, path: PathKey): Json {
  return path.reduce((node: Json, key) => (node as Record<string | number, Json>)[key] as Json, value);
}

function replaced(value: Json, path: PathKey, replacement: Json | undefined): Json {
  const copy = structuredClone(value);
  const parent = valueAt(copy, path.slice(0, -1)) as Record<string | number, Json>;
  const key = path.at(-1)!;
  if (replacement === undefined) {
    if (Array.isArray(parent)) parent.splice(key as number, 1);
    else delete parent[key];
  } else {
    parent[key] = replacement;
  }
  return copy;
}

/** Ids that break a path segment in every way we could think of; `%…` are sent as written. */
const HOSTILE_IDS = [
  '..%2F..%2Fetc%2Fpasswd',
  '%2e%2e',
  '..',
  '%00',
  'a%00b',
  '%F0%9F%98%80',
  '%C3%A9t%C3%A9',
  '%ED%A0%80',
  '%E0%A4%A',
  '%',
  '%25',
  '%20',
  '%0D%0ASet-Cookie:%20x=1',
  'x'.repeat(10 * 1024),
  'post_' + 'a'.repeat(96),
  '__proto__',
  'constructor',
  'null',
  '%27%3B%20drop%20table%20posts%3B--',
];

const HOSTILE_QUERY_VALUES = [
  '',
  'abc',
  '-1',
  '0',
  '101',
  '1e2',
  '1.5',
  '0x10',
  '%201',
  'true',
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%E0%A4%A',
  'x'.repeat(10 * 1024),
  '%F0%9F%98%80',
  '2026-02-30T10:00:00Z',
  '2026-12-31T23:59:60Z',
  '2026-19-39T29:59:59Z',
  '0000-01-01T00:00:00Z',
  '0000-01-01T00:00:00%2B01:00',
  '9999-12-31T23:59:59-01:00',
  '%2B275760-09-13T00:00:00.000Z',
  'eyJzIjoiMjAyNi0xMi0wMVQwOTozMDowMC4wMDBaIiwiaSI6InBvc3RfNEtpN0xvMVBtM05qOEJoNUd2MkMifQ',
  'eyJzIjpudWxsLCJpIjoiXHUwMDAwIn0',
  'eyJjIjoiMDAwMC0wMS0wMVQwMDowMDowMCswMTowMCIsImkiOiJ4In0',
  'bnVsbA',
];

/** Bodies that are not JSON, or not the JSON any operation expects. */
const HOSTILE_RAW_BODIES: { label: string; body: string | Buffer; status?: number }[] = [
  { label: 'truncated JSON', body: '{"type": "now",', status: 400 },
  { label: 'a bare word', body: 'nul', status: 400 },
  { label: 'an empty body', body: '' },
  { label: 'JSON null', body: 'null' },
  { label: 'a JSON string', body: '"posts"' },
  { label: 'a JSON number', body: '42' },
  { label: 'an array', body: '[]' },
  { label: 'an array of objects', body: '[{"type":"now"}]' },
  { label: 'a number too large for a double', body: '{"size": 1e999999}' },
  { label: 'arrays nested 100 000 deep', body: '['.repeat(100_000) + ']'.repeat(100_000) },
  { label: 'objects nested 20 000 deep', body: '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000) },
  {
    label: '__proto__ keys',
    body: '{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}',
  },
  { label: 'duplicate keys', body: '{"status": "draft", "status": "published"}' },
  { label: 'a byte-order mark', body: '\ufeff{}' },
  { label: 'bytes that are not UTF-8', body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) },
  { label: 'a lone surrogate escape', body: '{"content": "\\ud800"}' },
  { label: 'a NUL escape', body: '{"content": "\\u0000"}' },
  { label: 'over 1 MB', body: JSON.stringify({ content: 'x'.repeat(1_100_000) }), status: 413 },
];

const HOSTILE_CONTENT_TYPES: { type: string | undefined; status?: number }[] = [
  { type: 'text/plain', status: 415 },
  { type: 'application/x-www-form-urlencoded', status: 415 },
  { type: 'multipart/form-data; boundary=x', status: 415 },
  { type: 'application/xml', status: 415 },
  { type: undefined },
  { type: 'application/json; charset=utf-16' },
  { type: 'application/json; charset=latin1' },
  { type: 'application/vnd.api+json' },
  { type: 'application/json, text/plain' },
  { type: 'APPLICATION/JSON' },
];

interface Finding {
  operation: string;
  request: string;
  problem: string;
}

let server: TestServer;
let remote: RemoteServer;
/** The Mastodon instance the examples name (`mastodon.social`): a fake on loopback. */
let mastodon: FakeMastodon;
let acme: TestOrganization;
let globex: TestOrganization;
const tiktok = new FakeTikTok();
/** Example ids of the spec mapped to real records of the organization, so examples reach the domain code. */
const exampleIds = new Map<string, string>();
/** For each id prefix, an id of the other organization (answered 404 like an unknown id). */
const foreignIds = new Map<string, string>();
/** For each id prefix, makes a fresh record of the organization (deleting operations consume them). */
const freshIds = new Map<string, () => Promise<string>>();
const findings: Finding[] = [];
let requestCount = 0;

/** Walks the spec's examples for records with an id and the facts needed to build a real one. */
function exampleRecords(): { id: string; provider?: string; kind?: string }[] {
  const records: { id: string; provider?: string; kind?: string }[] = [];
  // Channel ids written inside text (an import's CSV file, a list of channels): sandbox channels, after
  // the records whose provider the examples name.
  const inText: { id: string; provider: string }[] = [];
  const walk = (node: unknown): void => {
    if (typeof node === 'string') {
      for (const [id] of node.matchAll(/\bch_[A-Za-z0-9]{20}\b/g)) inText.push({ id, provider: 'sandbox' });
    } else if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const record = node as { id?: unknown; provider?: unknown; kind?: unknown; channelId?: unknown };
      if (typeof record.id === 'string' && /^ch_/.test(record.id) && typeof record.provider === 'string') {
        records.push({ id: record.id, provider: record.provider });
      }
      if (typeof record.channelId === 'string' && typeof record.provider === 'string') {
        records.push({ id: record.channelId, provider: record.provider });
      }
      if (typeof record.id === 'string' && /^med_/.test(record.id) && typeof record.kind === 'string') {
        records.push({ id: record.id, kind: record.kind });
      }
      Object.values(node).forEach(walk);
    }
  };
  walk(spec.paths);
  return [...records, ...inText];
}

// A record for every example of the contract, and one of each kind for the other organization.
beforeAll(async () => {
  remote = await startRemoteServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end(jpeg());
  });
  mastodon = await startFakeMastodon();
  server = await startTestServer({
    env: {
      RATE_LIMIT_MAX: '1000000',
      MEDIA_FETCH_ALLOW_RANGES: '127.0.0.1/32',
      // Webhook receivers of the examples are sent to the local file server too.
      WEBHOOK_ALLOW_RANGES: '127.0.0.1/32',
      MEDIA_FETCH_TIMEOUT_SECONDS: '2',
      MEDIA_FETCH_MAX_DURATION_SECONDS: '5',
      // Starting a connection asks nothing of Google: an app's credentials are enough.
      YOUTUBE_CLIENT_ID: 'example-client.apps.googleusercontent.com',
      YOUTUBE_CLIENT_SECRET: 'example-client-secret',
    },
    providers: { tiktok: { creatorInfo: tiktok } },
  });
  // The examples are written as of 21 November 2026, scheduling for 1 December.
  server.setNow('2026-11-21T16:00:00.000Z');
  const { db } = server.ctx;
  acme = await createOrganization(db, 'Acme Studio');
  globex = await createOrganization(db, 'Globex');
  // The examples' return URLs are sent to the local file server (see withRealIds).
  await addReturnOrigin(db, acme.id, remote.origin);

  for (const record of exampleRecords()) {
    if (exampleIds.has(record.id)) continue;
    if (record.provider) {
      const provider = record.provider as 'youtube' | 'tiktok' | 'sandbox';
      exampleIds.set(record.id, (await createChannel(db, acme.id, provider)).id);
    } else if (record.kind) {
      exampleIds.set(record.id, await insertMedia(db, acme.id, record.kind as 'image' | 'video'));
    }
  }
  const sandbox = (await createChannel(db, acme.id, 'sandbox')).id;
  const tiktokChannel = (await createChannel(db, acme.id, 'tiktok')).id;
  const foreignChannel = (await createChannel(db, globex.id, 'tiktok')).id;
  const newPost = (organizationId: string, channelId: string) => () =>
    insertPost(db, { organizationId, channelId, status: 'draft', scheduledAt: '2026-12-01T09:30:00.000Z' });
  const newUpload = (org: TestOrganization) => async () => {
    const upload = await dataOf(
      publicApi(server, org.auth).POST('/public/v1/media/uploads', {
        body: { fileName: 'poster.jpg', contentType: 'image/jpeg', size: 2048 },
      }),
      201,
    );
    return upload.uploadId;
  };
  // An organization keeps at most 20 endpoints: a fresh one makes room by deleting all but the 5 newest.
  const newWebhook = (org: TestOrganization) => async () => {
    const newest = db
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('organization_id', '=', org.id)
      .orderBy('created_at', 'desc')
      .limit(5);
    await db
      .deleteFrom('webhook_endpoints')
      .where('organization_id', '=', org.id)
      .where('id', 'not in', newest)
      .execute();
    const webhook = await dataOf(
      publicApi(server, org.auth).POST('/public/v1/webhooks', {
        body: { url: `${remote.origin}/hooks`, eventTypes: ['post.published'] },
      }),
      201,
    );
    return webhook.id;
  };
  const newDelivery = (org: TestOrganization) => async () => {
    const id = await newWebhook(org)();
    const delivery = await dataOf(
      publicApi(server, org.auth).POST('/public/v1/webhooks/{id}/test', { params: { path: { id } } }),
      202,
    );
    return delivery.id;
  };
  // A weekly series on the sandbox channel, from the examples' first Monday of December.
  const newSeries = (org: TestOrganization, channelId: string) => async () => {
    const series = await dataOf(
      publicApi(server, org.auth).POST('/public/v1/series', {
        body: {
          rule: 'FREQ=WEEKLY',
          timeZone: 'UTC',
          startsAt: '2026-12-07T08:00:00.000Z',
          posts: [{ channelId, content: 'Every Monday' }],
        },
      }),
      201,
    );
    return series.id;
  };
  freshIds.set('post_', newPost(acme.id, sandbox));
  freshIds.set('ser_', newSeries(acme, sandbox));
  freshIds.set('whk_', newWebhook(acme));
  freshIds.set('msg_', newDelivery(acme));
  freshIds.set('ch_', () => Promise.resolve(tiktokChannel));
  freshIds.set('med_', () => insertMedia(db, acme.id, 'image'));
  freshIds.set('upl_', newUpload(acme));
  foreignIds.set('post_', await newPost(globex.id, foreignChannel)());
  foreignIds.set('ser_', await newSeries(globex, (await createChannel(db, globex.id, 'sandbox')).id)());
  foreignIds.set('ch_', foreignChannel);
  foreignIds.set('med_', await insertMedia(db, globex.id, 'image'));
  foreignIds.set('upl_', await newUpload(globex)());
  foreignIds.set('whk_', await newWebhook(globex)());
  foreignIds.set('msg_', await newDelivery(globex)());
}, 2 * TIMEOUTS.hook);

afterAll(async () => {
  await server?.close();
  await remote?.close();
  await mastodon?.close();
});

const prefixOf = (param: SpecParameter) => /^[a-z]+_/.exec(String(param.example))?.[0] ?? '';

/** The operation's path with each parameter given, or a real id of the organization when not. */
async function pathOf(op: Operation, given: Record<string, string> = {}): Promise<string> {
  let path = op.path;
  for (const param of op.pathParams) {
    const value = given[param.name] ?? (await freshIds.get(prefixOf(param))!());
    path = path.replace(`{${param.name}}`, value);
  }
  return path;
}

/**
 * The body with the spec's example ids replaced by the test organization's records, and its URLs by
 * the local file server.
 */
function withRealIds(value: Json): Json {
  if (typeof value === 'string') {
    if (exampleIds.has(value)) return exampleIds.get(value)!;
    // Ids within text, as in a CSV file's.
    if (/\bch_[A-Za-z0-9]{20}\b/.test(value))
      return value.replace(/\bch_[A-Za-z0-9]{20}\b/g, (id) => exampleIds.get(id) ?? id);
    if (value === 'mastodon.social') return mastodon.url;
    if (/^https?:\/\//.test(value)) return value.replace(/^https?:\/\/[^/]+/, remote.origin);
    return value;
  }
  if (Array.isArray(value)) return value.map(withRealIds);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withRealIds(v)]));
  return value;
}

const STACK_TRACE =
  /\bat .*\.(ts|js|mjs|cjs):\d+|node_modules|\/src\/|Error: |invalid byte sequence|syntax error at|violates .* constraint|relation "/;

/**
 * Sends one request and records every way its answer breaks the contract: a status of 500 or more
 * (a declared 501 `not_implemented` aside), a status the
 * operation does not declare, an error that is not the envelope or has no request id, internals in
 * the body, or a status other than the one expected.
 */
async function probe(
  op: Operation,
  label: string,
  path: string,
  init: { body?: string | Buffer; contentType?: string | undefined; headers?: Record<string, string> } = {},
  expected?: number | number[],
): Promise<{ status: number; body: unknown }> {
  requestCount++;
  const headers: Record<string, string> = { ...acme.auth, ...init.headers };
  if (init.contentType !== undefined) headers['Content-Type'] = init.contentType;
  const response = await send(op.method, path, headers, init.body);
  const { text } = response;
  const record = (problem: string) =>
    findings.push({ operation: op.id, request: label, problem: `${problem} — ${text.slice(0, 300)}` });
  const { status } = response;
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = text;
  }
  const error = (
    body as { error?: { code?: unknown; message?: unknown; requestId?: unknown; details?: unknown } } | undefined
  )?.error;
  const expectedList = expected === undefined ? undefined : [expected].flat();
  if (expectedList && !expectedList.includes(status))
    record(`answered ${status}, expected ${expectedList.join(' or ')}`);
  // 501 is a declared answer of an operation this installation does not offer yet, not a failure.
  const notOffered = status === 501 && op.declared.has(501) && error?.code === 'not_implemented';
  if (status >= 500 && !notOffered) record(`answered ${status}`);
  if (!op.declared.has(status) && !(status in GENERIC_STATUSES))
    record(`answered ${status}, which the operation does not declare`);
  if (status >= 400) {
    if (!response.headers.get('content-type')?.startsWith('application/json'))
      record(`error with Content-Type ${response.headers.get('content-type')}`);
    if (!error || typeof error.code !== 'string' || typeof error.message !== 'string')
      record('error without the envelope');
    else {
      if (error.requestId !== response.headers.get('x-request-id') || !/^req_/.test(String(error.requestId)))
        record('error without its request id');
      if (CODE_BY_STATUS[status] && error.code !== CODE_BY_STATUS[status])
        record(`code ${error.code} with status ${status}`);
      if (
        error.details !== undefined &&
        (!Array.isArray(error.details) ||
          (error.details as unknown[]).some((detail) => {
            const { path, message } = (detail ?? {}) as { path?: unknown; message?: unknown };
            return typeof path !== 'string' || typeof message !== 'string';
          }))
      ) {
        record('details that are not [{path, message}]');
      }
    }
    if (STACK_TRACE.test(text)) record('internals in the body');
  }
  if (status === 401 && !response.headers.get('www-authenticate')) record('401 without WWW-Authenticate');
  if (status !== 401 && status < 500 && !response.headers.get('ratelimit-remaining')) record('no RateLimit-* headers');
  return { status, body };
}

/**
 * A request exactly as written: unlike `fetch`, node:http leaves `..` and percent-escapes in the path
 * alone and sends a body with any method, as a hostile client may.
 */
function send(method: string, path: string, headers: Record<string, string>, body: string | Buffer | undefined) {
  const url = new URL(server.baseUrl);
  return new Promise<{ status: number; headers: { get(name: string): string | null }; text: string }>(
    (resolve, reject) => {
      const request = http.request(
        {
          host: url.hostname,
          port: url.port,
          method,
          path,
          headers: body === undefined ? headers : { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              headers: { get: (name) => [response.headers[name.toLowerCase()] ?? null].flat()[0] ?? null },
              text: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(body);
    },
  );
}

const querySeparator = (path: string) => (path.includes('?') ? '&' : '?');

/**
 * A post of the organization that a request example can act on: on a channel of the provider the
 * example's settings name, with one video and valid settings, so an edit passes the provider's rules.
 */
async function postFor(example: Json, operationId: string): Promise<string> {
  const provider = ((example as { settings?: { __type?: string } } | null)?.settings?.__type ?? 'sandbox') as
    'youtube' | 'tiktok' | 'sandbox';
  const { db } = server.ctx;
  const channel = (await createChannel(db, acme.id, provider)).id;
  const settings = {
    youtube: { __type: 'youtube', title: 'Winter', privacyStatus: 'unlisted', madeForKids: false, tags: [] },
    tiktok: { __type: 'tiktok', postMode: 'direct', privacyLevel: 'SELF_ONLY' },
    sandbox: { __type: 'sandbox', outcome: 'published', failingPart: 1 },
  }[provider];
  // What an approval decides on waits for it; a post put in a slot of the queue needs the slot (the
  // example's, Wednesday 08:00 in the organization's zone, UTC).
  const waits = operationId === 'approvePost' || operationId === 'rejectPost';
  if (operationId === 'queuePost')
    await db.insertInto('channel_slots').values({ channel_id: channel, weekday: 3, minute: 480 }).execute();
  const id = await insertPost(db, {
    organizationId: acme.id,
    channelId: channel,
    status: waits ? 'pending_approval' : 'draft',
    scheduledAt: '2026-12-01T09:30:00.000Z',
  });
  const video = await insertMedia(db, acme.id, 'video');
  await db
    .updateTable('posts')
    .set({ media_ids: JSON.stringify([video]), settings: JSON.stringify(settings) })
    .where('id', '=', id)
    .execute();
  return id;
}

describe('the request examples of the contract', () => {
  const withExamples = OPERATIONS.flatMap((op) =>
    op.bodyExamples.map((example, i) => [`${op.id} ${op.bodyExampleNames[i]}`, op, example] as const),
  );

  it.each(withExamples)('%s succeeds against the real server', async (_name, op, example) => {
    const ids = Object.fromEntries(
      await Promise.all(
        op.pathParams.map(async (param): Promise<[string, string]> => [
          param.name,
          prefixOf(param) === 'post_' ? await postFor(example, op.id) : await freshIds.get(prefixOf(param))!(),
        ]),
      ),
    );
    const { status, body } = await probe(op, 'the example', await pathOf(op, ids), {
      body: JSON.stringify(withRealIds(example)),
      contentType: 'application/json',
    });
    expect(status, JSON.stringify(body)).toBeLessThan(300);
  });
});

describe.each(OPERATIONS.map((op) => [op.id, op] as const))(
  '%s answers hostile input in the envelope, never 5xx',
  (_id, op) => {
    it("hostile ids in the path: 400 or 404, another organization's id exactly 404", async () => {
      for (const param of op.pathParams) {
        for (const id of HOSTILE_IDS) {
          await probe(
            op,
            `${param.name}=${id.slice(0, 40)}`,
            await pathOf(op, { [param.name]: id }),
            jsonBody(op),
            [400, 404],
          );
        }
        const foreign = foreignIds.get(prefixOf(param))!;
        await probe(op, `${param.name}=foreign`, await pathOf(op, { [param.name]: foreign }), jsonBody(op), 404);
        const otherKind = [...foreignIds.keys()].find((prefix) => prefix !== prefixOf(param))!;
        await probe(
          op,
          `${param.name}=an id of another kind`,
          await pathOf(op, { [param.name]: await freshIds.get(otherKind)!() }),
          jsonBody(op),
          404,
        );
      }
    });

    it('the path in another case is no operation: 404 in the envelope, no handler reached', async () => {
      const path = await pathOf(op);
      const shouted = path.replace(
        /^(\/public\/v1\/)(.*)$/,
        (_all, base: string, rest: string) => base + rest.toUpperCase(),
      );
      const response = await send(op.method, shouted, acme.auth, jsonBody(op).body);
      expect(response.status, response.text).toBe(404);
      expect((JSON.parse(response.text) as ApiError).error.code).toBe('not_found');
    });

    it('hostile query parameters: 400 or a valid answer', async () => {
      // The hostile values under each parameter of the operation, or under an unknown name when it has none
      // (the query string is parsed whole, whatever its names); every unknown name with one value below.
      const known = op.queryParams.map((p) => p.name);
      const names = [...known, ...(known.length === 0 ? ['colour'] : []), '__proto__', 'constructor', 'toString'];
      for (const name of names) {
        const valued = known.length === 0 ? name === 'colour' : known.includes(name);
        for (const value of valued ? HOSTILE_QUERY_VALUES : ['1']) {
          const path = await pathOf(op);
          await probe(
            op,
            `?${name}=${value.slice(0, 40)}`,
            `${path}${querySeparator(path)}${name}=${value}`,
            jsonBody(op),
          );
        }
        const path = await pathOf(op);
        await probe(op, `?${name} twice`, `${path}?${name}=1&${name}=2`, jsonBody(op));
        const isArray = op.queryParams.find((p) => p.name === name)?.schema?.type === 'array';
        await probe(op, `?${name}[]`, `${path}?${name}[]=1`, jsonBody(op), isArray ? undefined : 400);
        await probe(op, `?${name}[a]`, `${path}?${name}[a]=1`, jsonBody(op), 400);
      }
      for (const unknown of ['__proto__', 'constructor', 'colour']) {
        await probe(op, `unknown ?${unknown}`, `${await pathOf(op)}?${unknown}=1`, jsonBody(op), 400);
      }
    });

    it.skipIf(op.bodyExamples.length === 0 && !BODYLESS_PROBED.has(op.id))(
      'hostile bodies and content types',
      async () => {
        for (const raw of HOSTILE_RAW_BODIES) {
          await probe(
            op,
            raw.label,
            await pathOf(op),
            { body: raw.body, contentType: 'application/json' },
            op.bodyExamples.length ? raw.status : undefined,
          );
        }
        const example = op.bodyExamples[0] === undefined ? '{}' : JSON.stringify(withRealIds(op.bodyExamples[0]));
        for (const { type, status } of HOSTILE_CONTENT_TYPES) {
          await probe(
            op,
            `Content-Type ${type}`,
            await pathOf(op),
            { body: example, contentType: type },
            op.bodyExamples.length ? status : undefined,
          );
        }
      },
    );

    // Only operations that take a body have examples to vary.
    if (op.bodyExamples.length > 0)
      it('every field of every example replaced by hostile values', { timeout: scaled(300_000) }, async () => {
        // Each field once, by where it is in the body and the type of its value: the same field in a
        // later example, or in a later item of the same list, is the same check again.
        const probed = new Set<string>();
        for (const [index, rawExample] of op.bodyExamples.entries()) {
          const example = withRealIds(rawExample);
          for (const at of positions(example)) {
            const original = valueAt(example, at);
            // With the variant of each object on the way (`type`, `__type`): a field of another branch
            // of a union is another field.
            const variants = at.map((_, depth) => {
              const node = valueAt(example, at.slice(0, depth));
              return node && typeof node === 'object' && !Array.isArray(node)
                ? [node.type, node.__type].filter((value) => typeof value === 'string').join('/')
                : '';
            });
            const field = `${at.map((key, depth) => `${typeof key === 'number' ? '[]' : key}(${variants[depth]})`).join('.')}: ${jsonType(original)}`;
            if (probed.has(field)) continue;
            probed.add(field);
            for (const value of [...HOSTILE_VALUES, ...swapped(original), undefined]) {
              const body = JSON.stringify(replaced(example, at, value));
              if (body.length > 1_000_000) continue;
              // No request field of the contract accepts two JSON types, and nothing is converted; but
              // an import's columns may be null (an export's JSON file, read back, has them so).
              const nullColumn = op.id === 'importPosts' && at[0] === 'rows' && value === null;
              const wrongType =
                value !== undefined &&
                !nullColumn &&
                typeof original !== 'object' &&
                jsonType(value) !== jsonType(original);
              await probe(
                op,
                `example ${index}, ${at.join('.')} = ${JSON.stringify(value)?.slice(0, 40)}`,
                await pathOf(op),
                { body, contentType: 'application/json' },
                wrongType ? 400 : undefined,
              );
            }
          }
          for (const key of ['__proto__', 'constructor', 'prototype', '__type', 'extra']) {
            const body = `{"${key}": {"polluted": true}, ${JSON.stringify(example).slice(1)}`;
            await probe(
              op,
              `example ${index} with "${key}"`,
              await pathOf(op),
              { body, contentType: 'application/json' },
              400,
            );
          }
        }
      });
  },
);

/** A valid body for operations that take one, so that only the part under test is wrong. */
function jsonBody(op: Operation): { body?: string; contentType?: string } {
  if (op.bodyExamples.length === 0) return {};
  return { body: JSON.stringify(withRealIds(op.bodyExamples[0]!)), contentType: 'application/json' };
}

describe('after the battery', () => {
  it('pollutes no prototype', () => {
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('every stored post and media still reads back through the contract', async () => {
    for (const list of ['/public/v1/posts', '/public/v1/media']) {
      let cursor: string | null = null;
      do {
        const response = await server.fetch(`${list}?limit=100${cursor ? `&cursor=${cursor}` : ''}`, {
          headers: acme.auth,
        });
        const body = (await response.json()) as { data: { id: string }[]; nextCursor: string | null };
        expect(response.status, JSON.stringify(body).slice(0, 500)).toBe(200);
        cursor = body.nextCursor;
      } while (cursor);
    }
  });

  it('found no answer that breaks the contract', () => {
    expect(requestCount).toBeGreaterThan(OPERATIONS.length * 50);
    const summary = new Map<string, Finding[]>();
    for (const finding of findings) {
      const key = `${finding.operation}: ${finding.problem.replace(/ — .*/s, '')}`;
      summary.set(key, [...(summary.get(key) ?? []), finding]);
    }
    const report = [...summary.entries()].map(
      ([key, list]) =>
        `${key} (${list.length}×, e.g. ${list[0]!.request}: ${list[0]!.problem.replace(/^.* — /s, '').slice(0, 200)})`,
    );
    expect(report).toEqual([]);
  });
});
