import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestPds } from './pds.js';

/** An error answer the proxy gives instead of passing a call on. */
export interface PdsRefusal {
  status: number;
  error: string;
  headers?: Record<string, string>;
}

/**
 * A loopback server in front of the test PDS and its PLC directory (test/support/pds.ts): XRPC calls
 * (`/xrpc/…`) go to the PDS, anything else (`/{did}`) to the directory. In every answer it passes back
 * it names itself where the PDS's address was, in sessions' DID documents as in the directory's, so
 * that a service that takes it as its entryway and its PLC directory reaches the accounts' PDS through
 * it alone, and a test can refuse, slow down and count what the service asks.
 */
export interface PdsProxy {
  url: string;
  /** The XRPC methods called, in order of arrival. */
  calls: string[];
  /** The JSON inputs of the calls of `method`, in order of arrival. */
  inputs(method: string): Record<string, unknown>[];
  /** Answers the next call of `method` with `refusal`, without passing it on. */
  refuseNext(method: string, refusal: PdsRefusal): void;
  /**
   * Holds the PDS's answers to `method` for `ms` before passing them back: the call is done at the
   * PDS at once, its answer late (0 passes them back at once again).
   */
  slow(method: string, ms: number): void;
  /** Calls of `method` that arrived and are not answered yet. */
  inFlight(method: string): number;
  close(): Promise<void>;
}

export async function startPdsProxy(pds: Pick<TestPds, 'url' | 'plcUrl'>): Promise<PdsProxy> {
  const refusals = new Map<string, PdsRefusal[]>();
  const delays = new Map<string, number>();
  const inFlight = new Map<string, number>();
  const calls: string[] = [];
  const inputs: { method: string; input: Record<string, unknown> }[] = [];
  // The PDS's address, and not the start of another one (`http://localhost:1234` in `…:12345`).
  const pdsAddress = new RegExp(`${pds.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![0-9])`, 'g');
  let url = '';

  const pass = async (request: http.IncomingMessage, body: Buffer, method: string | undefined) => {
    const target = method === undefined ? pds.plcUrl : pds.url;
    const headers: Record<string, string> = {};
    for (const name of ['authorization', 'content-type'])
      if (typeof request.headers[name] === 'string') headers[name] = request.headers[name];
    try {
      const answer = await fetch(`${target}${request.url}`, {
        method: request.method ?? 'GET',
        headers,
        ...(body.length > 0 ? { body } : {}),
      });
      return {
        status: answer.status,
        type: answer.headers.get('content-type') ?? 'application/json',
        body: (await answer.text()).replace(pdsAddress, url),
      };
    } catch (error) {
      const message = `the proxy did not reach ${target}: ${(error as Error).message}`;
      return { status: 502, type: 'application/json', body: JSON.stringify({ error: 'UpstreamFailure', message }) };
    }
  };

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const pathname = new URL(request.url ?? '/', 'http://proxy').pathname;
      const method = pathname.startsWith('/xrpc/') ? pathname.slice('/xrpc/'.length) : undefined;
      const body = Buffer.concat(chunks);
      if (method !== undefined) {
        calls.push(method);
        if (request.headers['content-type']?.startsWith('application/json'))
          inputs.push({ method, input: JSON.parse(body.toString('utf8')) as Record<string, unknown> });
        const refusal = refusals.get(method)?.shift();
        if (refusal) {
          response.writeHead(refusal.status, { 'Content-Type': 'application/json', ...refusal.headers });
          response.end(JSON.stringify({ error: refusal.error, message: `refused by the test (${refusal.error})` }));
          return;
        }
      }
      const key = method ?? '';
      inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
      void (async () => {
        try {
          const answer = await pass(request, body, method);
          const delay = delays.get(key) ?? 0;
          if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
          // The caller may be gone by now (a process killed while it waited): its answer goes nowhere.
          response.writeHead(answer.status, { 'Content-Type': answer.type });
          response.end(answer.body);
        } finally {
          inFlight.set(key, inFlight.get(key)! - 1);
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    calls,
    inputs: (method) => inputs.filter((call) => call.method === method).map((call) => call.input),
    refuseNext(method, refusal) {
      refusals.set(method, [...(refusals.get(method) ?? []), refusal]);
    },
    slow(method, ms) {
      delays.set(method, ms);
    },
    inFlight: (method) => inFlight.get(method) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
