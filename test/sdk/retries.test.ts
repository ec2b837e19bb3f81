import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Service, { ServiceError, type CreatePostRequest } from '../../src/sdk/src/index.js';
import { eventually } from '../support/eventually.js';
import { scaled } from '../support/timeouts.js';

/** One scripted answer of the stand-in server; `drop` closes the connection without answering. */
interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  drop?: boolean;
}

interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

const CHANNELS = { data: [] };
const envelope = (code: string, extra: object = {}) => ({
  error: { code, message: `${code} for the test`, requestId: 'req_test', ...extra },
});

let server: Server;
let origin: string;
let script: Answer[] = [];
let received: Received[] = [];

/** The next answers of the stand-in server, in order; the last one repeats. */
function answer(...answers: Answer[]) {
  script = answers;
  received = [];
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const next = (script.length > 1 ? script.shift() : script[0]) ?? { status: 500 };
      if (next.drop) {
        req.socket.destroy();
        return;
      }
      const body = next.body === undefined ? '' : typeof next.body === 'string' ? next.body : JSON.stringify(next.body);
      res.writeHead(next.status ?? 200, { 'Content-Type': 'application/json', ...next.headers });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => answer({ status: 200, body: CHANNELS }));

async function failureOf(promise: Promise<unknown>): Promise<ServiceError> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(ServiceError);
  return outcome as ServiceError;
}

const KEY = 'svc_live_retryTestKey0000000000000';

describe('retries', () => {
  it('retries 5xx and network failures up to the count, then succeeds', async () => {
    answer(
      { status: 503, headers: { 'Retry-After': '0' }, body: envelope('internal') },
      { drop: true },
      { status: 200, body: CHANNELS },
    );
    await expect(new Service(KEY, origin).channels()).resolves.toEqual(CHANNELS);
    expect(received).toHaveLength(3);
  });

  it('waits the capped exponential backoff when the server gives no Retry-After', async () => {
    answer({ status: 502, body: envelope('provider_error') }, { status: 200, body: CHANNELS });
    await expect(new Service(KEY, origin, { maxRetries: 1 }).channels()).resolves.toEqual(CHANNELS);
    expect(received).toHaveLength(2);
  });

  it('gives up after the count with the last failure', async () => {
    answer({ status: 503, headers: { 'Retry-After': '0', 'X-Request-Id': 'req_last' }, body: 'upstream unavailable' });
    const error = await failureOf(new Service(KEY, origin).channels());
    expect(received).toHaveLength(3);
    expect(error).toMatchObject({ status: 503, code: 'http_503', requestId: 'req_last', retryAfter: 0 });
    expect(error.message).toMatch(/503/);
  });

  it('does not retry when the count is 0, on the client or on one call', async () => {
    answer({ status: 500, headers: { 'Retry-After': '0' }, body: envelope('internal') });
    await expect(new Service(KEY, origin, { maxRetries: 0 }).channels()).rejects.toMatchObject({
      status: 500,
      code: 'internal',
    });
    expect(received).toHaveLength(1);

    answer({ status: 500, headers: { 'Retry-After': '0' }, body: envelope('internal') });
    await expect(new Service(KEY, origin).channels({ maxRetries: 0 })).rejects.toMatchObject({ status: 500 });
    expect(received).toHaveLength(1);

    answer({ status: 500, headers: { 'Retry-After': '0' }, body: envelope('internal') });
    await expect(new Service(KEY, origin, { maxRetries: 0 }).channels({ maxRetries: 3 })).rejects.toMatchObject({
      status: 500,
    });
    expect(received).toHaveLength(4);
  });

  it('never retries other 4xx (409 included) or 501', async () => {
    for (const [status, code] of [
      [400, 'validation_failed'],
      [401, 'unauthorized'],
      [404, 'not_found'],
      [409, 'conflict'],
      [422, 'unprocessable'],
      [501, 'not_implemented'],
    ] as const) {
      answer({
        status,
        headers: { 'Retry-After': '0' },
        body: envelope(code, { details: [{ path: 'id', message: 'why' }] }),
      });
      const error = await failureOf(new Service(KEY, origin).channels());
      expect(error).toMatchObject({ status, code, details: [{ path: 'id', message: 'why' }], requestId: 'req_test' });
      expect(received).toHaveLength(1);
    }
  });

  it('retries a 429 after its Retry-After, and fails at once when the wait is beyond the cap', async () => {
    answer(
      { status: 429, headers: { 'Retry-After': '1' }, body: envelope('rate_limited', { retryAfter: 1 }) },
      { status: 200, body: CHANNELS },
    );
    await expect(new Service(KEY, origin).channels()).resolves.toEqual(CHANNELS);
    expect(received).toHaveLength(2);

    answer({ status: 429, headers: { 'Retry-After': '120' }, body: envelope('rate_limited', { retryAfter: 120 }) });
    const error = await failureOf(new Service(KEY, origin).channels());
    expect(error).toMatchObject({ status: 429, code: 'rate_limited', retryAfter: 120 });
    expect(received).toHaveLength(1);

    const later = new Date(Date.now() + 90_000).toUTCString();
    answer({ status: 429, headers: { 'Retry-After': later }, body: envelope('rate_limited') });
    const dated = await failureOf(new Service(KEY, origin, { maxRetryAfter: 30 }).channels());
    expect(dated.retryAfter).toBeGreaterThanOrEqual(88);
    expect(dated.retryAfter).toBeLessThanOrEqual(91);
    expect(received).toHaveLength(1);
  });

  it('fails fast by default on a Retry-After beyond 10 s, and lets the client or one call raise or lower the cap', async () => {
    answer({ status: 429, headers: { 'Retry-After': '42' }, body: envelope('rate_limited', { retryAfter: 42 }) });
    const started = Date.now();
    const error = await failureOf(new Service(KEY, origin).channels());
    expect(error).toMatchObject({ status: 429, retryAfter: 42 });
    expect(received).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(scaled(2_000));

    answer({ status: 429, headers: { 'Retry-After': '1' }, body: envelope('rate_limited', { retryAfter: 1 }) });
    await failureOf(new Service(KEY, origin).channels({ maxRetryAfter: 0 }));
    expect(received).toHaveLength(1);

    answer(
      { status: 429, headers: { 'Retry-After': '1' }, body: envelope('rate_limited', { retryAfter: 1 }) },
      { status: 200, body: CHANNELS },
    );
    await expect(new Service(KEY, origin, { maxRetryAfter: 0 }).channels({ maxRetryAfter: 5 })).resolves.toEqual(
      CHANNELS,
    );
    expect(received).toHaveLength(2);
    expect(() => new Service(KEY, origin, { maxRetryAfter: -1 })).toThrow(TypeError);
  });

  it('reports a network failure as status 0, after retrying it', async () => {
    answer({ drop: true });
    const error = await failureOf(new Service(KEY, origin, { maxRetries: 1 }).channels());
    expect(error).toMatchObject({ status: 0, code: 'network_error', retryAfter: undefined, headers: {} });
    expect(error.cause).toBeInstanceOf(Error);
    expect(received).toHaveLength(2);

    const closed = await failureOf(new Service(KEY, 'http://127.0.0.1:9', { maxRetries: 0 }).isConnected());
    expect(closed).toMatchObject({
      status: 0,
      code: 'network_error',
      request: { method: 'GET', url: 'http://127.0.0.1:9/public/v1/is-connected' },
    });
    expect(closed.message).not.toContain(KEY);
  });

  it('keeps one Idempotency-Key across the retries of a create; a caller’s key wins', async () => {
    const created = { group: 'grp_1', data: [] };
    const body: CreatePostRequest = { type: 'now', content: 'hello', channelIds: ['ch_1'] };
    answer(
      { status: 500, headers: { 'Retry-After': '0' }, body: envelope('internal') },
      { drop: true },
      { status: 201, body: created },
    );
    await expect(new Service(KEY, origin).createPost(body)).resolves.toEqual(created);
    const keys = received.map((request) => request.headers['idempotency-key']);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(received.map((request) => JSON.parse(request.body) as unknown)).toEqual([body, body, body]);

    answer(
      { status: 503, headers: { 'Retry-After': '0' }, body: envelope('internal') },
      { status: 201, body: created },
    );
    await new Service(KEY, origin).post(body, { idempotencyKey: 'mine-42' });
    expect(received.map((request) => request.headers['idempotency-key'])).toEqual(['mine-42', 'mine-42']);

    answer({ status: 201, body: created });
    const service = new Service(KEY, origin);
    await service.createPost(body);
    await service.createPost(body);
    expect(received[0]!.headers['idempotency-key']).not.toBe(received[1]!.headers['idempotency-key']);
  });

  it('retries creating media from a URL after a 429 only, as the server may have created it on a 5xx', async () => {
    answer({ status: 503, headers: { 'Retry-After': '0' }, body: envelope('internal') });
    await expect(new Service(KEY, origin).uploadFromUrl('https://cdn.example.org/a.jpg')).rejects.toMatchObject({
      status: 503,
    });
    expect(received).toHaveLength(1);

    const media = { id: 'med_1' };
    answer(
      { status: 429, headers: { 'Retry-After': '0' }, body: envelope('rate_limited') },
      { status: 201, body: media },
    );
    await expect(new Service(KEY, origin).uploadFromUrl('https://cdn.example.org/a.jpg')).resolves.toEqual(media);
    expect(received).toHaveLength(2);
  });

  it('stops waiting when the caller aborts, with the caller’s reason', async () => {
    answer({ status: 503, headers: { 'Retry-After': '30' }, body: envelope('internal') });
    const controller = new AbortController();
    const call = new Service(KEY, origin, { maxRetryAfter: 60 }).channels({ signal: controller.signal });
    // Aborted while it waits to try again: after the first answer.
    await eventually(() => expect(received).toHaveLength(1));
    controller.abort(new Error('the user went away'));
    await expect(call).rejects.toThrow('the user went away');
    expect(received).toHaveLength(1);
  });
});

describe('requests and answers', () => {
  it('sends the credential as a bearer token, the client’s headers and the call’s headers', async () => {
    const service = new Service(` ${KEY} `, `${origin}/`, { headers: { 'User-Agent': 'acme-scheduler/2.1' } });
    await service.channels({ headers: { 'X-Trace': 'abc' } });
    expect(received[0]).toMatchObject({
      method: 'GET',
      path: '/public/v1/channels',
      headers: { authorization: `Bearer ${KEY}`, 'user-agent': 'acme-scheduler/2.1', 'x-trace': 'abc' },
    });
  });

  it('refuses a success that is not JSON, as when the origin is another server', async () => {
    answer({ status: 200, headers: { 'Content-Type': 'text/html' }, body: '<!doctype html><title>Welcome</title>' });
    const error = await failureOf(new Service(KEY, origin).channels());
    expect(error).toMatchObject({ status: 200, code: 'invalid_response' });
    expect(error.message).toMatch(/text\/html/);
  });

  it('redacts the credential and signed URL parameters in a failed request', async () => {
    answer({ status: 403, headers: { 'Content-Type': 'application/json' }, body: envelope('forbidden') });
    const error = await failureOf(new Service(KEY, origin).channels({ headers: { Cookie: 'session=secret' } }));
    expect(error.request.headers).toMatchObject({ authorization: '[redacted]', cookie: '[redacted]' });
    expect(JSON.stringify(error)).not.toContain(KEY);
  });

  it('takes the origin from SERVICE_API_URL, else the default local installation', async () => {
    const saved = process.env.SERVICE_API_URL;
    try {
      process.env.SERVICE_API_URL = origin;
      await new Service(KEY).channels();
      expect(received).toHaveLength(1);
      delete process.env.SERVICE_API_URL;
      expect(new Service(KEY).origin).toBe('http://localhost:3000');
      expect(new Service(KEY, 'https://posts.example.com/').origin).toBe('https://posts.example.com');
    } finally {
      if (saved === undefined) delete process.env.SERVICE_API_URL;
      else process.env.SERVICE_API_URL = saved;
    }
  });

  it('refuses a missing credential, a bad origin and a negative retry count at construction', () => {
    expect(() => new Service('')).toThrow(TypeError);
    expect(() => new Service(KEY, 'not a url')).toThrow(TypeError);
    expect(() => new Service(KEY, origin, { maxRetries: -1 })).toThrow(TypeError);
    expect(() => new Service(KEY, origin, { maxRetries: 1.5 })).toThrow(TypeError);
  });
});
