import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addReturnOrigin } from '../src/channels/return-origins.js';
import { dataOf, publicApi } from './support/api.js';
import {
  contractProblems,
  describe as describeRequest,
  generateRequests,
  readOperations,
  type Answer,
  type FuzzOperation,
  type FuzzRequest,
} from './support/contract-fuzz.js';
import {
  createChannel,
  createOrganization,
  insertMedia,
  insertPost,
  type TestOrganization,
} from './support/fixtures.js';
import { jpeg } from './support/media-samples.js';
import { approve, createOAuthApp, type TestApp } from './support/oauth.js';
import { FakeTikTok } from './support/posts.js';
import { startRemoteServer, type RemoteServer } from './support/remote-server.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled } from './support/timeouts.js';
import { OAUTH_SPEC, startPrism, type PrismServer } from './sdk/support/prism.js';

/**
 * The contract fuzz: requests generated from both contracts (see support/contract-fuzz.ts), valid
 * and invalid, sent to the real server as an integrator with a real API key and real ids, and then
 * once more through Prism's validating proxy. The server must answer only what each operation
 * declares, in its declared schema, refuse what the contract refuses, and never answer a 5xx it
 * does not declare; Prism, an independent validator, must find nothing to report.
 */

const SEED = 20261121;
const VALID_PER_OPERATION = 36;
const INVALID_PER_OPERATION = 28;
// The examples and the generator's date-times are about the weeks after this instant.
const NOW = '2026-11-21T12:00:00.000Z';

let server: TestServer;
let remote: RemoteServer;
let org: TestOrganization;
let app: TestApp;
let requests: FuzzRequest[];
const tiktok = new FakeTikTok();

/** Real records of the organization, per id prefix; deleting operations get a fresh one each time. */
const pools = new Map<string, string[]>();
const fresh = new Map<string, () => Promise<string>>();
let turn = 0;
const rotate = <T>(list: T[]): T => list[turn++ % list.length]!;

beforeAll(async () => {
  remote = await startRemoteServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'image/jpeg' }).end(jpeg());
  });
  server = await startTestServer({
    env: {
      RATE_LIMIT_MAX: '1000000',
      OAUTH_AUTH_FAILURES_PER_ADDRESS: '1000000',
      OAUTH_AUTH_FAILURES_PER_CLIENT: '1000000',
      DAILY_POST_LIMIT_SANDBOX: '10000',
      DAILY_POST_LIMIT_YOUTUBE: '10000',
      DAILY_POST_LIMIT_TIKTOK: '10000',
      MEDIA_FETCH_ALLOW_RANGES: '127.0.0.1/32',
      WEBHOOK_ALLOW_RANGES: '127.0.0.1/32',
      MEDIA_FETCH_TIMEOUT_SECONDS: '2',
      MEDIA_FETCH_MAX_DURATION_SECONDS: '5',
      YOUTUBE_CLIENT_ID: 'example-client.apps.googleusercontent.com',
      YOUTUBE_CLIENT_SECRET: 'example-client-secret',
    },
    providers: { tiktok: { creatorInfo: tiktok } },
  });
  server.setNow(NOW);
  const { db } = server.ctx;
  org = await createOrganization(db, 'Fuzz');
  // Redirects to the app stay on this machine, whoever follows them.
  app = await createOAuthApp(db, org.id, { redirectUri: `${remote.origin}/callback` });
  await addReturnOrigin(db, org.id, remote.origin);

  const channel = async (provider: 'sandbox' | 'youtube' | 'tiktok') => (await createChannel(db, org.id, provider)).id;
  const channels = [
    await channel('sandbox'),
    await channel('sandbox'),
    await channel('youtube'),
    await channel('tiktok'),
  ];
  const media = [
    await insertMedia(db, org.id, 'image'),
    await insertMedia(db, org.id, 'video', 15_000),
    await insertMedia(db, org.id, 'video', 30_000),
  ];
  const post = (status: 'draft' | 'scheduled' | 'failed' | 'published') => () =>
    insertPost(db, {
      organizationId: org.id,
      channelId: channels[0]!,
      status,
      scheduledAt: '2026-12-01T09:30:00.000Z',
    });
  const api = publicApi(server, org.auth);
  // An organization keeps at most 20 endpoints: a fresh one makes room by deleting all but the newest.
  const webhook = async () => {
    const newest = db
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('organization_id', '=', org.id)
      .orderBy('created_at', 'desc')
      .limit(3);
    await db
      .deleteFrom('webhook_endpoints')
      .where('organization_id', '=', org.id)
      .where('id', 'not in', newest)
      .where('id', 'not in', pools.get('whk_') ?? ['-'])
      .execute();
    const body = { url: `${remote.origin}/hooks`, eventTypes: ['post.published' as const] };
    return (await dataOf(api.POST('/public/v1/webhooks', { body }), 201)).id;
  };
  const upload = async () => {
    const body = { fileName: 'poster.jpg', contentType: 'image/jpeg', size: 2048 };
    return (await dataOf(api.POST('/public/v1/media/uploads', { body }), 201)).uploadId;
  };

  pools.set('ch_', channels);
  pools.set('med_', media);
  pools.set('post_', [
    await post('draft')(),
    await post('scheduled')(),
    await post('failed')(),
    await post('published')(),
    await post('draft')(),
  ]);
  pools.set('whk_', [await webhook()]);
  const test = api.POST('/public/v1/webhooks/{id}/test', { params: { path: { id: pools.get('whk_')![0]! } } });
  pools.set('msg_', [(await dataOf(test, 202)).id]);
  pools.set('upl_', [await upload()]);
  fresh.set('ch_', () => channel('sandbox'));
  fresh.set('med_', () => insertMedia(db, org.id, 'image'));
  fresh.set('post_', post('draft'));
  fresh.set('whk_', webhook);
  fresh.set('upl_', upload);

  const ids = (list: Json[] | undefined, pool: string[]) =>
    (list ?? []).map((_, i) => pool[i % pool.length]!).filter((id, i, all) => all.indexOf(id) === i);
  requests = generateRequests([...readOperations('public'), ...readOperations('oauth')], {
    seed: SEED,
    valid: VALID_PER_OPERATION,
    invalid: INVALID_PER_OPERATION,
    dateTimes: { min: '2026-11-22T00:00:00Z', max: '2027-05-31T00:00:00Z' },
    realistic: {
      // Records of the organization in place of generated ids, the local file server in place of
      // generated addresses (nothing leaves the machine), the OAuth app's real client credentials.
      body: (op, value) => {
        const swap = (node: Json, key?: string): Json => {
          if (Array.isArray(node)) {
            if (key === 'channelIds') return ids(node, rotateFrom(channels));
            if (key === 'mediaIds') return ids(node.slice(0, 1), rotateFrom(media));
            return node.map((item) => swap(item));
          }
          if (node && typeof node === 'object')
            return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, swap(v, k)]));
          if (typeof node !== 'string') return node;
          if (key === 'channelId') return rotate(channels);
          if (key === 'url' || key === 'returnUrl') return `${remote.origin}/${op.id}`;
          // A Mastodon instance is asked at once: the local file server, which answers as none.
          if (key === 'instance') return remote.origin;
          if (key === 'client_id') return app.clientId;
          if (key === 'client_secret') return app.secret;
          if (key === 'contentType' && op.id === 'createUpload')
            return rotate(['image/jpeg', 'image/png', 'video/mp4', 'application/pdf', 'application/zip']);
          return node;
        };
        return swap(value);
      },
      parameter: (op, name) => {
        if (op.id === 'authorize' && name === 'client_id') return app.clientId;
        if (op.id === 'authorize' && name === 'redirect_uri') return app.app.redirect_uri;
        return undefined;
      },
    },
  });
}, scaled(120_000));

afterAll(async () => {
  await server?.close();
  await remote?.close();
});

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
const rotateFrom = (list: string[]) => [...list.slice(turn % list.length), ...list.slice(0, turn++ % list.length)];

const prefixOf = (example: unknown) => /^[a-z]+_/.exec(String(example))?.[0] ?? '';

/** The operation's path with real ids: a fresh record for an operation that deletes it. */
async function pathOf(op: FuzzOperation): Promise<string> {
  let path = op.path;
  for (const parameter of op.parameters.filter((p) => p.in === 'path')) {
    const prefix = prefixOf(parameter.example);
    const id =
      op.method === 'DELETE' && fresh.has(prefix)
        ? await fresh.get(prefix)!()
        : rotate(pools.get(prefix) ?? [`${prefix}unknown`]);
    path = path.replace(`{${parameter.name}}`, id);
  }
  return path;
}

/** Every third valid token request redeems a code the organization's user just approved, so some succeed. */
async function bodyOf(request: FuzzRequest): Promise<unknown> {
  if (request.op.id === 'token' && request.valid && turn++ % 3 === 0) {
    return {
      grant_type: 'authorization_code',
      code: await approve(server.ctx.db, app, org, { now: new Date(NOW) }),
      client_id: app.clientId,
      client_secret: app.secret,
    };
  }
  return request.body?.value;
}

async function sendTo(origin: string, request: FuzzRequest): Promise<{ answer: Answer; line: string }> {
  const path = await pathOf(request.op);
  const query = request.query.length
    ? `?${request.query.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`
    : '';
  const headers: Record<string, string> = { ...request.headers };
  if (request.op.api === 'public') Object.assign(headers, org.auth);
  let body: string | undefined;
  if (request.body) {
    const value = await bodyOf(request);
    headers['Content-Type'] = request.body.mediaType;
    body =
      request.body.mediaType === 'application/x-www-form-urlencoded'
        ? new URLSearchParams(
            Object.entries(value as Record<string, unknown>).map(([k, v]): [string, string] => [k, String(v)]),
          ).toString()
        : JSON.stringify(value);
  }
  const send = () =>
    fetch(`${origin}${path}${query}`, { method: request.op.method, headers, body, redirect: 'manual' });
  // A connection the setup left idle may be closed by the server just as it is reused (the keep-alive
  // race every HTTP client meets): a read, which the server never saw, is sent again once.
  const response = await send().catch((error: unknown) => {
    const code = ((error as Error).cause as { code?: string } | undefined)?.code;
    if (request.op.method === 'GET' && code === 'ECONNRESET') return send();
    throw error;
  });
  return {
    answer: { status: response.status, headers: response.headers, text: await response.text() },
    line: describeRequest(request, path),
  };
}

/** Sends the requests a few at a time, as several clients would: the server waits on its database between them. */
async function inFlight(
  list: FuzzRequest[],
  send: (request: FuzzRequest) => Promise<void>,
  concurrency = 4,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < list.length) await send(list[next++]!);
    }),
  );
}

describe('requests generated from the contracts', () => {
  it('are many, valid and invalid, for every operation of both APIs', () => {
    const operations = [...readOperations('public'), ...readOperations('oauth')];
    expect(requests.length).toBeGreaterThanOrEqual(2_000);
    for (const op of operations) {
      const mine = requests.filter((request) => request.op.id === op.id);
      expect(mine.filter((r) => r.valid).length, `valid requests of ${op.id}`).toBeGreaterThan(VALID_PER_OPERATION / 2);
      // The discovery documents take no input, so no request of theirs is invalid.
      if (!op.id.endsWith('Metadata') && op.method !== 'DELETE')
        expect(
          mine.some((r) => !r.valid),
          `invalid requests of ${op.id}`,
        ).toBe(true);
    }
  });

  it('are answered by the server only as the contract declares', { timeout: scaled(120_000) }, async () => {
    const findings = new Map<string, string[]>();
    const statuses = new Map<string, Set<number>>();
    await inFlight(requests, async (request) => {
      const { answer, line } = await sendTo(server.baseUrl, request);
      statuses.set(request.op.id, (statuses.get(request.op.id) ?? new Set()).add(answer.status));
      for (const problem of contractProblems(request, answer)) {
        const key = `${request.op.id}: ${problem.slice(0, 160)}`;
        findings.set(key, [...(findings.get(key) ?? []), `${line} → ${answer.text.slice(0, 200)}`]);
      }
    });
    const report = [...findings.entries()].map(([key, lines]) => `${key} (${lines.length}×, e.g. ${lines[0]})`);
    expect(report).toEqual([]);
    // The requests reach the handlers, not only the validator: most operations succeed at least once.
    const succeeded = [...statuses.entries()]
      .filter(([, seen]) => [...seen].some((status) => status < 400))
      .map(([id]) => id);
    expect(
      succeeded.length,
      JSON.stringify(Object.fromEntries([...statuses].map(([id, seen]) => [id, [...seen]]))),
    ).toBeGreaterThanOrEqual(25);
  });
});

describe('the same requests through Prism’s validating proxy', () => {
  let publicProxy: PrismServer;
  let oauthProxy: PrismServer;
  beforeAll(async () => {
    [publicProxy, oauthProxy] = await Promise.all([
      startPrism({ proxy: server.baseUrl }),
      startPrism({ proxy: server.baseUrl }, OAUTH_SPEC),
    ]);
  }, scaled(60_000));
  afterAll(async () => {
    await Promise.all([publicProxy?.stop(), oauthProxy?.stop()]);
  });

  it('are found breaking nothing', { timeout: scaled(180_000) }, async () => {
    const violations = new Map<string, string[]>();
    // Prism's proxy follows redirects (stoplightio/prism#1977) and answers with wherever they lead,
    // so the authorize endpoint, whose answers are redirects, is checked by the direct run only.
    await inFlight(
      requests.filter((r) => r.op.id !== 'authorize'),
      async (request) => {
        const { answer, line } = await sendTo(request.op.api === 'public' ? publicProxy.url : oauthProxy.url, request);
        for (const violation of prismViolations(request, answer)) {
          const key = `${request.op.id}: ${violation.slice(0, 200)}`;
          violations.set(key, [...(violations.get(key) ?? []), line]);
        }
      },
    );
    expect([...violations.entries()].map(([key, lines]) => `${key} (${lines.length}×, e.g. ${lines[0]})`)).toEqual([]);
  });
});

/**
 * What Prism reports about an exchange: anything at all for a valid request; for an invalid one,
 * refusing the request (422 with the request's violations) is Prism agreeing with the contract, but
 * nothing may be said of an answer.
 */
function prismViolations(request: FuzzRequest, answer: Answer): string[] {
  const found: string[] = [];
  const header = answer.headers.get('sl-violations');
  for (const violation of header ? (JSON.parse(header) as { location?: string[]; message: string }[]) : []) {
    const location = violation.location ?? [];
    if (!request.valid && location[0] === 'request') continue;
    found.push(`${location.join('.')}: ${violation.message}`);
  }
  const refused = answer.headers.get('content-type')?.startsWith('application/problem+json');
  if (refused && (request.valid || answer.status !== 422))
    found.push(`Prism refused the exchange (${answer.status}): ${answer.text.slice(0, 300)}`);
  return [...new Set(found)];
}
