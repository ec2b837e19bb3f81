import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyOf, errorOf, type ApiError, type Schemas } from './support/api.js';
import { createOrganization, type TestOrganization } from './support/fixtures.js';
import { startTestServer, type TestServer } from './support/server.js';
import { stringContaining, stringMatching } from './support/typed-matchers.js';

let server: TestServer;
let org: TestOrganization;

beforeAll(async () => {
  server = await startTestServer();
  org = await createOrganization(server.ctx.db);
});
afterAll(() => server?.close());

/** The error of a refusal, which every refusal sends alike: as JSON, naming its request, with no stack trace. */
async function refusal(response: Response): Promise<ApiError['error']> {
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const error = await errorOf(response);
  expect(error.requestId).toBe(response.headers.get('x-request-id'));
  expect(JSON.stringify(error)).not.toMatch(/\bat .*\.(ts|js):\d+/); // no stack trace
  return error;
}

describe('the error envelope', () => {
  it('400 names each invalid parameter', async () => {
    const response = await server.fetch('/public/v1/posts?limit=1000&status=archived', { headers: org.auth });
    expect(response.status).toBe(400);
    const error = await refusal(response);
    expect(error.code).toBe('validation_failed');
    expect(error.details?.map((detail) => detail.path)).toEqual(
      expect.arrayContaining([stringContaining('limit'), stringContaining('status')]),
    );
  });

  it('400 refuses unknown query parameters', async () => {
    const response = await server.fetch('/public/v1/channels?colour=blue', { headers: org.auth });
    expect(response.status).toBe(400);
    const error = await refusal(response);
    expect(error.details?.[0]?.path).toContain('colour');
  });

  it('400 for a body that is not JSON', async () => {
    const response = await server.fetch('/public/v1/posts', {
      method: 'POST',
      headers: { ...org.auth, 'Content-Type': 'application/json' },
      body: '{"type": "now",',
    });
    expect(response.status).toBe(400);
    expect((await refusal(response)).code).toBe('validation_failed');
  });

  it('400 names the fields of a body that breaks the schema', async () => {
    const response = await server.fetch('/public/v1/posts', {
      method: 'POST',
      headers: { ...org.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'later', content: 'hi', channelIds: [] }),
    });
    expect(response.status).toBe(400);
    const error = await refusal(response);
    expect(error.code).toBe('validation_failed');
    expect(error.details?.length).toBeGreaterThan(0);
  });

  it('401 when unauthenticated', async () => {
    const response = await server.fetch('/public/v1/channels');
    expect(response.status).toBe(401);
    expect((await refusal(response)).code).toBe('unauthorized');
  });

  it('404 for an unknown operation', async () => {
    const response = await server.fetch('/public/v1/channels/ch_1/everything', { headers: org.auth });
    expect(response.status).toBe(404);
    expect((await refusal(response)).code).toBe('not_found');
  });

  it('matches paths in their exact case: another case never reaches a handler without the contract check', async () => {
    const { createChannel } = await import('./support/fixtures.js');
    const sandbox = await createChannel(server.ctx.db, org.id, 'sandbox');
    // Settings the contract refuses (an unknown field), which a handler reached around the validator would store.
    const body = JSON.stringify({
      type: 'draft',
      posts: [{ channelId: sandbox.id, content: 'x', settings: { __type: 'sandbox', extra: { a: 1 } } }],
    });
    const headers = { ...org.auth, 'Content-Type': 'application/json' };
    for (const path of ['/PUBLIC/v1/posts', '/Public/V1/Posts', '/public/v1/Posts']) {
      const response = await server.fetch(path, { method: 'POST', headers, body });
      expect(response.status, path).toBe(404);
    }
    const lower = await server.fetch('/public/v1/POSTS', { headers: org.auth });
    expect(lower.status).toBe(404);
    expect((await refusal(lower)).message).toBe('There is no operation at GET /public/v1/POSTS.');
    const list = await server.fetch('/public/v1/posts', { headers: org.auth });
    expect(list.status).toBe(200);
    expect((await bodyOf<Schemas['PostPage']>(list)).data).toEqual([]);
  });

  it('405 for a method the path does not have', async () => {
    const response = await server.fetch('/public/v1/channels', { method: 'DELETE', headers: org.auth });
    expect(response.status).toBe(405);
    const error = await refusal(response);
    expect(error.code).toBe('method_not_allowed');
    expect(error.message).toBe('DELETE is not allowed on /public/v1/channels.');
    expect(response.headers.get('allow')).toBe('GET, HEAD');
  });

  it('415 for a body of another media type', async () => {
    const response = await server.fetch('/public/v1/posts', {
      method: 'POST',
      headers: { ...org.auth, 'Content-Type': 'text/plain' },
      body: 'hello',
    });
    expect(response.status).toBe(415);
    expect((await refusal(response)).code).toBe('unsupported_media_type');
  });

  it('413 for an oversized body', async () => {
    const response = await server.fetch('/public/v1/posts', {
      method: 'POST',
      headers: { ...org.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ type: 'now', content: 'x'.repeat(2 * 1024 * 1024), channelIds: ['ch_x'] }),
    });
    expect(response.status).toBe(413);
    expect((await refusal(response)).code).toBe('payload_too_large');
  });
});

/** The raw bytes of an answer, read off the socket: a client library would hide a body sent to a HEAD. */
async function rawExchange(
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Map<string, string>; body: string }> {
  const { port } = new URL(server.baseUrl);
  const socket = net.connect(Number(port), '127.0.0.1');
  const lines = [
    `${method} ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  // Written without ending the socket: the server closes it after answering (Connection: close).
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  const [statusLine, ...headerLines] = text.slice(0, end).split('\r\n');
  return {
    status: Number(statusLine!.split(' ')[1]),
    headers: new Map(
      headerLines.map((line) => [
        line.slice(0, line.indexOf(':')).toLowerCase(),
        line.slice(line.indexOf(':') + 1).trim(),
      ]),
    ),
    body: text.slice(end + 4),
  };
}

describe('HEAD', () => {
  it('answers as GET would, with the same headers and no body (RFC 9110 §9.3.2)', async () => {
    const get = await rawExchange('GET', '/public/v1/channels', org.auth);
    const head = await rawExchange('HEAD', '/public/v1/channels', org.auth);
    expect(get.status).toBe(200);
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(get.body.length).toBeGreaterThan(0);
    expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
    expect(head.headers.get('content-length')).toBe(get.headers.get('content-length'));
    for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'x-request-id'])
      expect(head.headers.has(name), name).toBe(true);
  });

  it('answers the GET’s errors without a body: 404 for no operation or an unknown id, 401 without credentials', async () => {
    for (const path of ['/public/v1/channels/ch_1/everything', '/public/v1/posts/post_unknown']) {
      const head = await rawExchange('HEAD', path, org.auth);
      expect(head.status, path).toBe(404);
      expect(head.body, path).toBe('');
      expect(head.headers.get('content-type'), path).toMatch(/^application\/json/);
    }
    const anonymous = await rawExchange('HEAD', '/public/v1/channels', {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(anonymous.body).toBe('');
  });

  it('is refused where there is no GET, naming the methods there are', async () => {
    const head = await rawExchange('HEAD', '/public/v1/media/uploads', org.auth);
    expect(head.status).toBe(405);
    expect(head.headers.get('allow')).toBe('POST');
    expect(head.body).toBe('');
  });
});

describe('requests the HTTP parser refuses before any route', () => {
  function envelopeOf(answer: { headers: Map<string, string>; body: string }) {
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    const { error } = JSON.parse(answer.body) as { error: { code: string; message: string; requestId: string } };
    expect(error.requestId).toMatch(/^req_/);
    expect(error.requestId).toBe(answer.headers.get('x-request-id'));
    return error;
  }

  it('answers headers over the limit with 431 in the envelope', async () => {
    const answer = await rawExchange('GET', '/public/v1/channels', { ...org.auth, 'X-Padding': 'x'.repeat(20_000) });
    expect(answer.status).toBe(431);
    expect(envelopeOf(answer)).toMatchObject({
      code: 'headers_too_large',
      message: stringMatching(/headers are larger/),
    });
  });

  it('answers a header with a NUL or a broken request line with 400 in the envelope', async () => {
    const nul = await rawExchange('GET', '/public/v1/channels', { ...org.auth, 'X-Note': 'a\u0000b' });
    expect(nul.status).toBe(400);
    expect(envelopeOf(nul).code).toBe('validation_failed');
    const broken = await rawExchange('GET', '/public/v1/channels extra words', org.auth);
    expect(broken.status).toBe(400);
    expect(envelopeOf(broken)).toMatchObject({
      code: 'validation_failed',
      message: stringMatching(/not valid HTTP/),
    });
  });
});

describe('health', () => {
  it('reports the process and the database', async () => {
    expect(await bodyOf<unknown>(await server.fetch('/healthz'))).toEqual({ status: 'ok' });
    expect(await bodyOf<unknown>(await server.fetch('/readyz'))).toEqual({ status: 'ready' });
  });
});

describe('documentation', () => {
  it('serves the contracts and the API reference, loading nothing from other origins', async () => {
    const spec = await server.fetch('/openapi/public-v1.yaml');
    expect(spec.status).toBe(200);
    expect(await spec.text()).toMatch(/^openapi: 3\.1\.0/);
    const oauth = await server.fetch('/openapi/oauth.yaml');
    expect(oauth.status).toBe(200);
    // The suite's global setup builds the reference when a checkout has none.
    for (const path of ['/docs', '/docs/oauth']) {
      const docs = await server.fetch(path);
      expect(docs.status).toBe(200);
      expect(docs.headers.get('content-security-policy')).toContain("default-src 'self'");
      const html = await docs.text();
      expect(html).toContain(path === '/docs' ? 'Post Scheduler Public API' : 'OAuth');
      expect(html).not.toMatch(/<script[^>]+src="https?:/);
      // Redoc's badge logo, which the page's policy would block, is inlined at build.
      expect(html).not.toContain('https://cdn.redoc.ly/');
    }
  });
});
