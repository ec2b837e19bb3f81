import fs from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseYaml } from '../../src/core/contract.js';
import Service, { ServiceError, type CreatePostRequest, type ServiceOptions } from '../../src/sdk/src/index.js';
import { describeContract, PNG_PIXEL, take, type ContractTarget } from './support/contract-suite.js';
import { stringContaining } from '../support/typed-matchers.js';
import { PUBLIC_SPEC, startPrism, type PrismServer } from './support/prism.js';

/** The contract's example answer of an operation, as Prism serves it. */
function example(path: string, method: string, status: string, name: string): unknown {
  const spec = parseYaml(fs.readFileSync(PUBLIC_SPEC, 'utf8')) as ExamplesOfSpec;
  return spec.paths[path]![method]!.responses[status]!.content['application/json']!.examples[name]!.value;
}

/** What `example` reads of the contract. */
interface ExamplesOfSpec {
  paths: Record<
    string,
    Record<
      string,
      { responses: Record<string, { content: Record<string, { examples: Record<string, { value: unknown }> }> }> }
    >
  >;
}

// The signed upload URL of the contract's example points at the default local installation; the
// mock's uploads are routed to a loopback stand-in for the storage that URL would reach.
const EXAMPLE_ORIGIN = 'http://localhost:3000';

interface ReceivedUpload {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

let prism: PrismServer;
let storage: Server;
let storageUrl: string;
const uploads: ReceivedUpload[] = [];
/** Every request the SDK sent in the current test, as the mock received it. */
let sent: Request[] = [];

/** What Prism found wrong with the requests of the current test; checked after each test. */
let violations: string[] = [];

/**
 * Sends through Prism (with `send`) and records what Prism reports wrong with the request: Prism
 * still answers such a request with an example, so the call alone would not show it.
 */
function contractFetch(send: (request: Request) => Promise<Response> = fetch) {
  return async (request: Request): Promise<Response> => {
    sent.push(request.clone());
    let outgoing = request;
    if (request.url.startsWith(`${EXAMPLE_ORIGIN}/`)) {
      const body = request.body ? await request.arrayBuffer() : undefined;
      outgoing = new Request(storageUrl + request.url.slice(EXAMPLE_ORIGIN.length), {
        method: request.method,
        headers: request.headers,
        body,
      });
    }
    const response = await send(outgoing);
    const found = response.headers.get('sl-violations');
    if (found) violations.push(`${request.method} ${request.url}: ${found}`);
    return response;
  };
}

const API_KEY = 'svc_live_mockKey1234567890abcdef';

const target: ContractTarget = {
  client: ({ credential = API_KEY, fetch: inner, ...options }: ServiceOptions & { credential?: string } = {}) =>
    new Service(credential, prism.url, { ...options, fetch: contractFetch(inner) }),
  echoes: false,
  sandboxChannelId: 'ch_9Ab4Cd7Ef1Gh3Ij6Kl2M',
  refused: { credential: 'svc_live_refusedByTheMock0000000', options: { headers: { Prefer: 'code=401' } } },
  notFoundOptions: { headers: { Prefer: 'code=404' } },
  rateLimited: {
    client: (options) => target.client(options),
    options: { headers: { Prefer: 'code=429' } },
    retryAfter: 42,
  },
  unavailable: () => undefined,
};

beforeAll(async () => {
  storage = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      uploads.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => storage.listen(0, '127.0.0.1', () => resolve()));
  storageUrl = `http://127.0.0.1:${(storage.address() as AddressInfo).port}`;
  prism = await startPrism({ mock: true });
});
afterAll(async () => {
  await prism?.stop();
  storage?.closeAllConnections();
  await new Promise<void>((resolve) => (storage ? storage.close(() => resolve()) : resolve()));
});

afterEach(() => {
  const found = violations;
  violations = [];
  expect(found, 'requests Prism found breaking the contract').toEqual([]);
});

describeContract('Prism mocking openapi/public-v1.yaml', () => target);

describe('@service/sdk against the mock: what it sends and decodes', () => {
  const service = () => {
    sent = [];
    return target.client();
  };
  const bodyOf = async (request: Request | undefined) => JSON.parse(await request!.clone().text()) as unknown;

  it('decodes answers as the contract gives them', async () => {
    expect(await service().channels()).toEqual(example('/public/v1/channels', 'get', '200', 'channels'));
    expect(await service().quota()).toEqual(example('/public/v1/channels/quota', 'get', '200', 'quota'));
    expect(await service().getPost('post_7Uj2Mk5Nl8Bh1Vg4Cf9X')).toEqual(
      example('/public/v1/posts/{id}', 'get', '200', 'published'),
    );
  });

  it('would notice a request that breaks the contract (the mock really checks)', async () => {
    await expect(service().listPosts({ limit: 1000 })).rejects.toMatchObject({
      status: 400,
      code: 'validation_failed',
    });
    expect(violations).toEqual([expect.stringMatching(/limit must be <= 100/)]);
    violations = [];
  });

  it('sends the credential as a bearer token and filters as repeated query parameters', async () => {
    const client = service();
    await client.listPosts({
      channelId: ['ch_a', 'ch_b'],
      status: ['scheduled', 'failed'],
      from: '2026-12-01T00:00:00.000Z',
    });
    const request = sent[0]!;
    expect(request.headers.get('authorization')).toBe(`Bearer ${API_KEY}`);
    const query = new URL(request.url).searchParams;
    expect(query.getAll('channelId')).toEqual(['ch_a', 'ch_b']);
    expect(query.getAll('status')).toEqual(['scheduled', 'failed']);
    expect(query.get('from')).toBe('2026-12-01T00:00:00.000Z');
  });

  it('follows nextCursor when iterating', async () => {
    const client = service();
    const posts = await take(client.iteratePosts({ status: ['scheduled'] }), 2);
    expect(posts).toHaveLength(2);
    const cursor = example('/public/v1/posts', 'get', '200', 'page') as { nextCursor: string };
    expect(new URL(sent[0]!.url).searchParams.get('cursor')).toBeNull();
    expect(new URL(sent[1]!.url).searchParams.get('cursor')).toBe(cursor.nextCursor);
    expect(new URL(sent[1]!.url).searchParams.getAll('status')).toEqual(['scheduled']);
  });

  it('gives every create a fresh Idempotency-Key, unless the caller gives one', async () => {
    const client = service();
    const body: CreatePostRequest = {
      type: 'now',
      content: 'Doors open at 9',
      channelIds: ['ch_9Ab4Cd7Ef1Gh3Ij6Kl2M'],
    };
    await client.createPost(body);
    await client.post(body);
    await client.createPost(body, { idempotencyKey: 'order-1234-announcement' });
    await client.createPost(body, { headers: { 'idempotency-key': 'order-1234-reminder' } });
    const keys = sent.map((request) => request.headers.get('idempotency-key'));
    expect(keys[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(keys[1]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).not.toBe(keys[0]);
    expect(keys[2]).toBe('order-1234-announcement');
    expect(keys[3]).toBe('order-1234-reminder');
    expect(await bodyOf(sent[0])).toEqual(body);
  });

  it('schedules with an ISO timestamp and changes status with the status value', async () => {
    const client = service();
    await client.schedulePost('post_7Uj2Mk5Nl8Bh1Vg4Cf9X', new Date('2026-12-01T09:30:00Z'));
    await client.schedulePost('post_7Uj2Mk5Nl8Bh1Vg4Cf9X', '2026-12-02T09:30:00.000Z');
    await client.changePostStatus('post_7Uj2Mk5Nl8Bh1Vg4Cf9X', 'scheduled');
    expect(await bodyOf(sent[0])).toEqual({ scheduledAt: '2026-12-01T09:30:00.000Z' });
    expect(await bodyOf(sent[1])).toEqual({ scheduledAt: '2026-12-02T09:30:00.000Z' });
    expect(await bodyOf(sent[2])).toEqual({ status: 'scheduled' });
    expect(sent.map((request) => `${request.method} ${new URL(request.url).pathname}`)).toEqual([
      'POST /public/v1/posts/post_7Uj2Mk5Nl8Bh1Vg4Cf9X/schedule',
      'POST /public/v1/posts/post_7Uj2Mk5Nl8Bh1Vg4Cf9X/schedule',
      'PATCH /public/v1/posts/post_7Uj2Mk5Nl8Bh1Vg4Cf9X/status',
    ]);
  });

  it('approves with the time chosen (at its scheduledAt by default) and rejects with the comment', async () => {
    const client = service();
    await client.approvePost('post_7Uj2Mk5Nl8Bh1Vg4Cf9X');
    await client.approvePost('post_7Uj2Mk5Nl8Bh1Vg4Cf9X', { when: 'now' });
    await client.rejectPost('post_7Uj2Mk5Nl8Bh1Vg4Cf9X', 'Please add the link to the shop.');
    expect(await Promise.all(sent.map((request) => bodyOf(request)))).toEqual([
      {},
      { when: 'now' },
      { comment: 'Please add the link to the shop.' },
    ]);
    expect(sent.map((request) => `${request.method} ${new URL(request.url).pathname}`)).toEqual([
      'POST /public/v1/posts/post_7Uj2Mk5Nl8Bh1Vg4Cf9X/approve',
      'POST /public/v1/posts/post_7Uj2Mk5Nl8Bh1Vg4Cf9X/approve',
      'POST /public/v1/posts/post_7Uj2Mk5Nl8Bh1Vg4Cf9X/reject',
    ]);
  });

  it('uploads in three steps: declares the type read from the bytes, PUTs the bytes with the signed headers and no credential, completes', async () => {
    uploads.length = 0;
    const client = service();
    const media = await client.upload(PNG_PIXEL, 'scan.bin');
    expect(media).toEqual(example('/public/v1/media/uploads/{uploadId}/complete', 'post', '200', 'video'));

    const signed = example('/public/v1/media/uploads', 'post', '201', 'video') as {
      uploadId: string;
      uploadUrl: string;
      headers: Record<string, string>;
    };
    expect(sent.map((request) => `${request.method} ${request.url}`)).toEqual([
      `POST ${prism.url}/public/v1/media/uploads`,
      `PUT ${signed.uploadUrl}`,
      `POST ${prism.url}/public/v1/media/uploads/${signed.uploadId}/complete`,
    ]);
    expect(await bodyOf(sent[0])).toEqual({ fileName: 'scan.bin', contentType: 'image/png', size: PNG_PIXEL.length });
    const [put] = uploads;
    expect(put?.body.equals(PNG_PIXEL)).toBe(true);
    // Exactly the headers the API named (the example's, whatever was declared), and no credential.
    for (const [name, value] of Object.entries(signed.headers)) {
      // fetch sets the length from the bytes; the example's length is that of another file.
      if (name.toLowerCase() !== 'content-length') expect(put?.headers[name.toLowerCase()]).toBe(value);
    }
    expect(put?.headers['content-length']).toBe(String(PNG_PIXEL.length));
    expect(put?.headers.authorization).toBeUndefined();
  });

  it('takes the type from the file name when the bytes do not tell it, and refuses an unknown type before sending', async () => {
    const client = service();
    await client.upload(Buffer.from('not a real video'), 'holiday.MOV');
    expect(await bodyOf(sent[0])).toMatchObject({ fileName: 'holiday.MOV', contentType: 'video/quicktime' });

    sent = [];
    await expect(client.upload(new Uint8Array([1, 2, 3]), 'notes.txt')).rejects.toThrow(TypeError);
    expect(sent).toHaveLength(0);
    await client.upload(new Uint8Array([1, 2, 3]).buffer, 'notes.txt', { contentType: 'image/webp' });
    expect(await bodyOf(sent[0])).toMatchObject({ contentType: 'image/webp', size: 3 });
  });

  it('creates media from a URL, and reads TikTok creator info and analytics', async () => {
    const client = service();
    expect(await client.uploadFromUrl('https://cdn.example.org/campaigns/winter/poster.jpg')).toEqual(
      example('/public/v1/media/upload-from-url', 'post', '201', 'image'),
    );
    const info = await client.tiktokCreatorInfo('ch_5Hs3Jk8Pq2Rt6Yu1Zx4C');
    expect(info).toEqual(example('/public/v1/channels/{id}/tiktok/creator-info', 'get', '200', 'canPost'));
    const analytics = await client.tiktokAnalytics('ch_5Hs3Jk8Pq2Rt6Yu1Zx4C', { days: 30 });
    expect(analytics).toEqual(example('/public/v1/channels/{id}/tiktok/analytics', 'get', '200', 'analytics'));
    expect(new URL(sent.at(-1)!.url).searchParams.get('days')).toBe('30');
    const videos = await take(client.iterateTiktokVideos('ch_5Hs3Jk8Pq2Rt6Yu1Zx4C'), 10);
    expect(videos).toEqual(analytics.data);
  });

  it('maps the contract’s error examples: 404 on delete, 409 with details, 422 with details', async () => {
    const client = service();
    await expect(
      client.deleteMedia('med_8Rt2Yp5Lk9Jh3Gf7Ds1A', { headers: { Prefer: 'code=404' } }),
    ).rejects.toMatchObject({
      status: 404,
      code: 'not_found',
      requestId: 'req_2Hg5Jk8Lp1Qa4Ws7Ed9R',
    });
    const conflict = await client
      .deleteMedia('med_8Rt2Yp5Lk9Jh3Gf7Ds1A', { headers: { Prefer: 'code=409, example=mediaInUse' } })
      .catch((error: unknown) => error);
    expect(conflict).toBeInstanceOf(ServiceError);
    expect(conflict).toMatchObject({
      status: 409,
      code: 'conflict',
      details: [{ path: 'id', message: stringContaining('post_') }],
    });
    // 409 is the record's state, not a passing failure: one request, no retries.
    expect(sent.filter((request) => request.method === 'DELETE')).toHaveLength(2);

    const refused = await client
      .createPost(
        { type: 'now', content: 'hello', channelIds: ['ch_9Ab4Cd7Ef1Gh3Ij6Kl2M'] },
        { headers: { Prefer: 'code=422, example=quotaExceeded' } },
      )
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 422, code: 'unprocessable', details: [{ path: 'posts[1].channelId' }] });
  });
});
