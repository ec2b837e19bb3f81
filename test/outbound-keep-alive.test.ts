import fs from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo, type Socket } from 'node:net';
import tls from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_POOL_LIMITS, IDLE_CONNECTION_MS, type ConnectionPoolLimits } from '../src/net/connection-pool.js';
import { OutboundClient, type CallOptions } from '../src/net/outbound-client.js';
import { makeCertificate, type Certificate } from './support/certificate.js';
import { eventually } from './support/eventually.js';
import { scratchDirs } from './support/scratch.js';

// Outbound connections are kept alive per destination: scheme, host name, port and the address the
// host name was checked to resolve to. Real servers on loopback count the TCP connections they accept;
// the host names exist in no DNS, only in the resolver the client is given (as the service's tests
// give theirs), so every connection goes where that resolver's answer, checked, says.
const API_HOST = 'api.example.test';
const OTHER_HOST = 'other.example.test';
const FIRST = '127.0.0.1';
const SECOND = '127.0.0.2';
const BIG = Buffer.alloc(64 * 1024, 'x');

/** Host names to addresses, changed by the tests as a DNS zone would be. */
const zone = new Map<string, string>();
const resolve = (hostname: string): Promise<string[]> => {
  const address = zone.get(hostname);
  return address
    ? Promise.resolve([address])
    : Promise.reject(Object.assign(new Error(`${hostname} is not known here`), { code: 'ENOTFOUND' }));
};

interface Origin {
  port: number;
  /** TCP connections accepted, and how many of them have closed since. */
  connections: number;
  closed: number;
  /** Requests received: method, path, the connection (the client's port) and, over TLS, the SNI. */
  requests: { method: string; path: string; connection: number; servername: string | undefined }[];
  /** Closes the idle connections on the server's side, as a server whose keep-alive ran out does. */
  closeIdleConnections(): void;
  close(): Promise<void>;
}

/** Answers held back by `/hold` until the test releases them. */
const held: ServerResponse[] = [];

function answer(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const path = req.url ?? '';
    if (path === '/big') res.end(BIG);
    else if (path === '/hold') held.push(res);
    else if (path === '/trickle') res.writeHead(200, { 'Content-Length': '10' }).write('part');
    else if (path === '/slow') setTimeout(() => res.end('slow'), IDLE_CONNECTION_MS + 500);
    else if (req.method === 'POST') res.end(`published ${Buffer.concat(chunks).toString()}`);
    else res.end(`small ${path}`);
  });
}

async function startOrigin(
  options: { certificate?: Certificate; address?: string; port?: number; keepAliveMs?: number } = {},
): Promise<Origin> {
  const { certificate, address = FIRST, port = 0, keepAliveMs = 30_000 } = options;
  const origin: Origin = {
    port: 0,
    connections: 0,
    closed: 0,
    requests: [],
    closeIdleConnections: () => server.closeIdleConnections(),
    close: async () => {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    origin.requests.push({
      method: req.method ?? '',
      path: req.url ?? '',
      connection: req.socket.remotePort ?? 0,
      servername: (req.socket as tls.TLSSocket).servername || undefined,
    });
    answer(req, res);
  };
  const server = certificate
    ? https.createServer({ cert: certificate.cert, key: fs.readFileSync(certificate.keyPath) }, handler)
    : http.createServer(handler);
  // Longer than the pool keeps a connection, unless a test announces a shorter one.
  server.keepAliveTimeout = keepAliveMs;
  server.on('connection', (socket: Socket) => {
    origin.connections += 1;
    socket.on('close', () => (origin.closed += 1));
  });
  await new Promise<void>((done) => server.listen(port, address, done));
  origin.port = (server.address() as AddressInfo).port;
  return origin;
}

const clients: OutboundClient[] = [];
function outboundClient(limits: { idleTimeoutSeconds?: number; pool?: ConnectionPoolLimits } = {}): OutboundClient {
  const client = new OutboundClient(
    {
      allowPrivateAddresses: true,
      allowedRanges: [],
      idleTimeoutSeconds: limits.idleTimeoutSeconds ?? 20,
      maxDurationSeconds: 30,
    },
    resolve,
    limits.pool,
  );
  clients.push(client);
  return client;
}

/** A call as the networks' adapters and the webhooks make one, to a URL the address policy checks. */
async function call(client: OutboundClient, url: string, options: Partial<CallOptions> = {}) {
  const response = await client.call(url, {
    method: 'GET',
    trusted: false,
    timeoutSeconds: 20,
    maxResponseBytes: 1024,
    ...options,
  });
  return { status: response.status, body: response.body.toString() };
}

const scratchDir = scratchDirs();
let certificate: Certificate;
let defaultCAs: string[];
const origins: Origin[] = [];
async function origin(options: Parameters<typeof startOrigin>[0] = {}): Promise<Origin> {
  const started = await startOrigin(options);
  origins.push(started);
  return started;
}

beforeAll(() => {
  certificate = makeCertificate(scratchDir('outbound-keep-alive'), API_HOST);
  // The process trusts the test's certificate as it trusts a public CA: the client is not told.
  defaultCAs = tls.getCACertificates('default');
  tls.setDefaultCACertificates([...defaultCAs, certificate.cert]);
});
afterAll(() => {
  tls.setDefaultCACertificates(defaultCAs);
});
afterEach(async () => {
  for (const res of held.splice(0)) res.end();
  for (const client of clients.splice(0)) client.close();
  await Promise.all(origins.splice(0).map((started) => started.close()));
  zone.clear();
});

describe('calls to one origin share a connection', () => {
  it.each(['http', 'https'])('%s: calls in a row, GET and POST, go over one connection', async (scheme) => {
    const server = await origin(scheme === 'https' ? { certificate } : {});
    zone.set(API_HOST, FIRST);
    const client = outboundClient();
    const base = `${scheme}://${API_HOST}:${server.port}`;

    expect(await call(client, `${base}/one`)).toEqual({ status: 200, body: 'small /one' });
    expect(await call(client, `${base}/publish`, { method: 'POST', body: 'video' })).toEqual({
      status: 200,
      body: 'published video',
    });
    expect(await call(client, `${base}/three`)).toEqual({ status: 200, body: 'small /three' });

    expect(server.connections).toBe(1);
    expect(new Set(server.requests.map((request) => request.connection)).size).toBe(1);
    // TLS still names the host, not the address the connection goes to.
    const servernames = server.requests.map((request) => request.servername);
    expect(servernames).toEqual(
      scheme === 'https' ? [API_HOST, API_HOST, API_HOST] : [undefined, undefined, undefined],
    );
    expect(client.connectionCounts()).toEqual({ destinations: 1, busy: 0, idle: 1 });
  });

  it('a reused connection waits as long as the call allows, not as long as the pool keeps it idle', async () => {
    const server = await origin({ certificate });
    zone.set(API_HOST, FIRST);
    const client = outboundClient({ idleTimeoutSeconds: 20 });
    const base = `https://${API_HOST}:${server.port}`;

    await call(client, `${base}/first`);
    // The server answers after longer than the pool keeps an idle connection.
    expect(await call(client, `${base}/slow`)).toEqual({ status: 200, body: 'slow' });
    expect(server.connections).toBe(1);
  });

  it('a keep-alive time the server announces is honoured: the pool closes the connection first', async () => {
    // `Keep-Alive: timeout=2`: the pool keeps the connection a second less.
    const server = await origin({ keepAliveMs: 2000 });
    zone.set(API_HOST, FIRST);
    const client = outboundClient();
    const base = `http://${API_HOST}:${server.port}`;

    await call(client, `${base}/first`);
    expect(client.connectionCounts().idle).toBe(1);
    await eventually(() => expect(client.connectionCounts().idle).toBe(0));
    await eventually(() => expect(server.closed).toBe(1));
    expect(await call(client, `${base}/second`, { method: 'POST', body: 'again' })).toEqual({
      status: 200,
      body: 'published again',
    });
    expect(server.connections).toBe(2);
  });
});

describe('the address pinning holds', () => {
  it('a host name that now resolves to another address gets a connection to that address', async () => {
    const first = await origin({ address: FIRST });
    const second = await origin({ address: SECOND, port: first.port });
    const client = outboundClient();
    const url = (path: string) => `http://${API_HOST}:${first.port}${path}`;

    zone.set(API_HOST, FIRST);
    await call(client, url('/before'));
    zone.set(API_HOST, SECOND);
    expect(await call(client, url('/after'))).toEqual({ status: 200, body: 'small /after' });
    zone.set(API_HOST, FIRST);
    await call(client, url('/back'));

    expect(first.requests.map((request) => request.path)).toEqual(['/before', '/back']);
    expect(second.requests.map((request) => request.path)).toEqual(['/after']);
    // Each address has its own connection, kept for that address only.
    expect([first.connections, second.connections]).toEqual([1, 1]);
    expect(client.connectionCounts()).toEqual({ destinations: 2, busy: 0, idle: 2 });
  });

  it('a connection to an address is not reused for another host name there, and its certificate is checked', async () => {
    // The certificate names API_HOST only; OTHER_HOST resolves to the same address and port.
    const server = await origin({ certificate });
    zone.set(API_HOST, FIRST);
    zone.set(OTHER_HOST, FIRST);
    const client = outboundClient();

    await call(client, `https://${API_HOST}:${server.port}/named`);
    await expect(call(client, `https://${OTHER_HOST}:${server.port}/unnamed`)).rejects.toMatchObject({
      code: 'ERR_TLS_CERT_ALTNAME_INVALID',
    });
    expect(server.requests.map((request) => request.path)).toEqual(['/named']);
    expect(server.connections).toBe(2);
  });

  it('every call is checked: an address the policy refuses is refused while a connection to the host is kept', async () => {
    const server = await origin();
    const client = new OutboundClient(
      { allowPrivateAddresses: false, allowedRanges: [FIRST], idleTimeoutSeconds: 5, maxDurationSeconds: 5 },
      resolve,
    );
    clients.push(client);
    zone.set(API_HOST, FIRST);
    await call(client, `http://${API_HOST}:${server.port}/allowed`);
    expect(client.connectionCounts().idle).toBe(1);

    zone.set(API_HOST, SECOND);
    await expect(call(client, `http://${API_HOST}:${server.port}/refused`)).rejects.toMatchObject({
      status: 422,
      details: [{ path: 'url', message: `${SECOND} is a loopback address (${API_HOST})` }],
    });
    expect(server.requests.map((request) => request.path)).toEqual(['/allowed']);
  });
});

describe('a call that ends early leaves no broken connection behind', () => {
  it('a body longer than the cap closes its connection; the next call gets a new one and its whole answer', async () => {
    const server = await origin({ certificate });
    zone.set(API_HOST, FIRST);
    const client = outboundClient();
    const base = `https://${API_HOST}:${server.port}`;

    const cut = await call(client, `${base}/big`, { maxResponseBytes: 100 });
    expect(cut.body).toBe('x'.repeat(100));
    await eventually(() => expect(server.closed).toBe(1));
    expect(client.connectionCounts().idle).toBe(0);

    expect(await call(client, `${base}/after-big`)).toEqual({ status: 200, body: 'small /after-big' });
    expect(server.connections).toBe(2);
  });

  it('a call aborted while waiting for its answer closes its connection; the next call is answered', async () => {
    const server = await origin();
    zone.set(API_HOST, FIRST);
    const client = outboundClient();
    const base = `http://${API_HOST}:${server.port}`;
    await call(client, `${base}/warm`);

    const stop = new AbortController();
    const aborted = call(client, `${base}/hold`, { signal: stop.signal });
    await eventually(() => expect(held).toHaveLength(1));
    stop.abort();
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });
    await eventually(() => expect(server.closed).toBe(1));

    expect(await call(client, `${base}/after-abort`)).toEqual({ status: 200, body: 'small /after-abort' });
    expect(server.connections).toBe(2);
  });

  it('a server silent in the middle of a body: the call fails, its connection closes, the next is answered', async () => {
    const server = await origin();
    zone.set(API_HOST, FIRST);
    const client = outboundClient({ idleTimeoutSeconds: 1 });
    const base = `http://${API_HOST}:${server.port}`;

    await expect(call(client, `${base}/trickle`)).rejects.toMatchObject({ name: 'RemoteIdleError' });
    await eventually(() => expect(server.closed).toBe(1));
    expect(await call(client, `${base}/after-silence`)).toEqual({ status: 200, body: 'small /after-silence' });
    expect(server.connections).toBe(2);
  });
});

/**
 * An HTTP/1.1 server on a raw socket that answers the first request of every connection and resets
 * the connection on the second, before any answer: what a client sees when it sends a request on a
 * kept-alive connection the server closed a moment before.
 */
async function startResettingServer() {
  const seen = { connections: 0, requests: [] as string[] };
  const server = net.createServer((socket) => {
    seen.connections += 1;
    let requests = 0;
    socket.on('data', (data: Buffer) => {
      const method = /^(GET|POST|PUT) /.exec(data.toString('latin1'))?.[1];
      if (!method) return;
      seen.requests.push(method);
      requests += 1;
      if (requests === 1) {
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok');
      } else {
        socket.resetAndDestroy();
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((done) => server.listen(0, FIRST, done));
  return {
    seen,
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((done) => server.close(done)),
  };
}

describe('a kept-alive connection the server has just closed', () => {
  it('the server closed it while idle: the next call, a POST, goes on a new connection', async () => {
    const server = await origin();
    zone.set(API_HOST, FIRST);
    const client = outboundClient();
    const base = `http://${API_HOST}:${server.port}`;

    await call(client, `${base}/first`);
    server.closeIdleConnections();
    await eventually(() => expect(client.connectionCounts().idle).toBe(0));

    expect(await call(client, `${base}/publish`, { method: 'POST', body: 'once' })).toEqual({
      status: 200,
      body: 'published once',
    });
    expect(server.connections).toBe(2);
  });

  it('closed as a GET was sent on it: the GET is sent once more, on a new connection', async () => {
    const server = await startResettingServer();
    try {
      zone.set(API_HOST, FIRST);
      const client = outboundClient();
      const url = `http://${API_HOST}:${server.port}/status`;

      expect(await call(client, url)).toEqual({ status: 200, body: 'ok' });
      expect(await call(client, url)).toEqual({ status: 200, body: 'ok' });
      expect(server.seen).toEqual({ connections: 2, requests: ['GET', 'GET', 'GET'] });
    } finally {
      await server.close();
    }
  });

  it.each(['POST', 'PUT'])(
    'closed as a %s was sent on it: the call fails and nothing is sent again',
    async (method) => {
      const server = await startResettingServer();
      try {
        zone.set(API_HOST, FIRST);
        const client = outboundClient();
        const url = `http://${API_HOST}:${server.port}/publish`;

        await call(client, url, { method, body: 'first' });
        await expect(call(client, url, { method, body: 'second' })).rejects.toMatchObject({ code: 'ECONNRESET' });
        expect(server.seen).toEqual({ connections: 1, requests: [method, method] });
      } finally {
        await server.close();
      }
    },
  );
});

// Connections kept far longer than any wait of a test: only the pool's own decision closes them.
const LONG_KEPT = { ...DEFAULT_POOL_LIMITS, idleMs: 300_000 };

describe('the pool is bounded and closes', () => {
  it('past its number of destinations, the least recently used one is let go, its idle connection closed', async () => {
    const server = await origin({ keepAliveMs: 600_000 });
    const hosts = ['a.example.test', 'b.example.test', 'c.example.test'];
    for (const host of hosts) zone.set(host, FIRST);
    const client = outboundClient({ pool: { ...LONG_KEPT, maxDestinations: 2 } });
    const url = (host: string) => `http://${host}:${server.port}/`;

    for (const host of hosts) await call(client, url(host));
    expect(client.connectionCounts()).toEqual({ destinations: 2, busy: 0, idle: 2 });
    await eventually(() => expect(server.closed).toBe(1));

    await call(client, url('c.example.test'));
    expect(server.connections).toBe(3);
    await call(client, url('a.example.test'));
    expect(server.connections).toBe(4);
  });

  it('close(): idle connections close at once, a call in flight finishes, later calls get a connection each', async () => {
    const server = await origin({ keepAliveMs: 600_000 });
    zone.set(API_HOST, FIRST);
    const client = outboundClient({ pool: LONG_KEPT });
    const base = `http://${API_HOST}:${server.port}`;
    const inFlight = call(client, `${base}/hold`);
    await eventually(() => expect(held).toHaveLength(1));
    await call(client, `${base}/idle`);
    expect(client.connectionCounts()).toEqual({ destinations: 1, busy: 1, idle: 1 });

    client.close();
    await eventually(() => expect(server.closed).toBe(1));
    held.shift()?.end('held answer');
    expect(await inFlight).toEqual({ status: 200, body: 'held answer' });
    await eventually(() => expect(server.closed).toBe(2));

    await call(client, `${base}/later-1`);
    await call(client, `${base}/later-2`);
    expect(server.connections).toBe(4);
    await eventually(() => expect(server.closed).toBe(4));
    expect(client.connectionCounts()).toEqual({ destinations: 0, busy: 0, idle: 0 });
  });
});
