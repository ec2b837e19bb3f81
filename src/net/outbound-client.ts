import type { IncomingHttpHeaders } from 'node:http';
import { markFailed, SpanKind, traced, type Span } from '../core/tracing.js';
import { AddressPolicy } from './address-policy.js';
import {
  ConnectionPool,
  DEFAULT_POOL_LIMITS,
  type ConnectionCounts,
  type ConnectionPoolLimits,
} from './connection-pool.js';
import {
  destinationProblem,
  explainFetchFailure,
  openRemote,
  type RemoteResponse,
  type Resolver,
} from './remote-fetch.js';

export interface OutboundLimits {
  /** Also connect to loopback, private, link-local and unique-local addresses (tests, closed networks). */
  allowPrivateAddresses: boolean;
  /** Addresses or CIDR ranges connected to even though they are not public. */
  allowedRanges: readonly string[];
  /** Longest silence from the server: connecting, before the headers, between body chunks. */
  idleTimeoutSeconds: number;
  /** Longest a whole exchange may take. */
  maxDurationSeconds: number;
}

/** Redirects followed (each checked like the first URL) before a URL is given up on. */
export const MAX_REDIRECTS = 5;

/**
 * The one way this server sends a request to a URL someone gave it (media to download, an app's
 * picture): addresses are checked after resolution and on every redirect, the connection goes to the
 * checked address, and silence and the whole exchange are timed. A failure that is the remote side's
 * (refused address, unreachable, too slow, broken HTTP or TLS) becomes a 422 naming the URL.
 *
 * Connections are kept alive for the next request to the same origin at the same checked address
 * (ConnectionPool); `close()` lets them go when the service stops.
 */
export class OutboundClient {
  private readonly addresses: AddressPolicy;
  private readonly connections: ConnectionPool;

  /**
   * One request to an API (a network's, a webhook receiver's): no redirect is followed, silence and
   * the whole exchange are timed, and the answer, whatever its status, is read up to a cap. Failures
   * to connect or to hear back are thrown as they are, for the caller to judge.
   */
  call(url: string, options: CallOptions): Promise<CallResponse> {
    return traced(options.method, clientSpan(options.method, url), async (span) => {
      const response = await this.exchange(url, options);
      answered(span, response.status);
      return response;
    });
  }

  private async exchange(url: string, options: CallOptions): Promise<CallResponse> {
    const timeout = AbortSignal.timeout(options.timeoutSeconds * 1000);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const remote = await openRemote(url, {
      policy: options.trusted ? undefined : this.addresses,
      idleTimeoutMs: this.limits.idleTimeoutSeconds * 1000,
      maxRedirects: 0,
      signal,
      method: options.method,
      headers: options.headers ?? {},
      anyStatus: true,
      ...(options.body !== undefined ? { body: options.body } : {}),
      ...(this.resolve ? { resolve: this.resolve } : {}),
      connections: this.connections,
    });
    try {
      const chunks: Buffer[] = [];
      let received = 0;
      for await (const chunk of remote.body) {
        if (received >= options.maxResponseBytes) break;
        const part = (chunk as Buffer).subarray(0, options.maxResponseBytes - received);
        chunks.push(part);
        received += part.length;
      }
      return { status: remote.body.statusCode ?? 0, headers: remote.body.headers, body: Buffer.concat(chunks) };
    } finally {
      // A body read to its end has already handed its connection back to the pool; one cut off at
      // the cap (or by an error) still holds unread bytes, so its connection is closed, never reused.
      remote.body.destroy();
    }
  }

  constructor(
    private readonly limits: OutboundLimits,
    /** Host name to addresses; the system resolver by default (tests give their own). */
    private readonly resolve?: Resolver,
    poolLimits: ConnectionPoolLimits = DEFAULT_POOL_LIMITS,
  ) {
    this.addresses = new AddressPolicy({
      allowPrivate: limits.allowPrivateAddresses,
      allowedRanges: limits.allowedRanges,
    });
    this.connections = new ConnectionPool(poolLimits);
  }

  /**
   * Stops keeping connections alive: idle ones are closed now, those in use when their exchange ends.
   * Requests still in flight finish, and later ones get a connection of their own.
   */
  close(): void {
    this.connections.close();
  }

  /** The connections kept alive now (destinations, busy, idle), for diagnostics and tests. */
  connectionCounts(): ConnectionCounts {
    return this.connections.counts();
  }

  /**
   * Why a request to `url` would be refused (not http or https, credentials, an address the policy
   * refuses), found as a request would find it but without connecting; `undefined` when it would go.
   */
  destinationProblem(url: string): Promise<string | undefined> {
    return destinationProblem(url, { policy: this.addresses, ...(this.resolve ? { resolve: this.resolve } : {}) });
  }

  /**
   * GETs `url` and hands the response to `use`, within the time limits (`maxDurationSeconds` may
   * shorten the configured one); the response is closed when `use` settles.
   */
  get<T>(
    url: string,
    use: (response: RemoteResponse) => Promise<T>,
    options: { maxDurationSeconds?: number; accept?: string } = {},
  ): Promise<T> {
    return traced('GET', clientSpan('GET', url), (span) =>
      this.download(
        url,
        (response) => {
          answered(span, response.body.statusCode ?? 0);
          return use(response);
        },
        options,
      ),
    );
  }

  private async download<T>(
    url: string,
    use: (response: RemoteResponse) => Promise<T>,
    options: { maxDurationSeconds?: number; accept?: string },
  ): Promise<T> {
    const { idleTimeoutSeconds } = this.limits;
    const maxDurationSeconds = Math.min(options.maxDurationSeconds ?? Infinity, this.limits.maxDurationSeconds);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), maxDurationSeconds * 1000);
    let remote: RemoteResponse | undefined;
    try {
      remote = await openRemote(url, {
        policy: this.addresses,
        idleTimeoutMs: idleTimeoutSeconds * 1000,
        maxRedirects: MAX_REDIRECTS,
        signal: deadline.signal,
        headers: { 'User-Agent': 'post-scheduler-media-fetcher', Accept: options.accept ?? '*/*' },
        ...(this.resolve ? { resolve: this.resolve } : {}),
        connections: this.connections,
      });
      return await use(remote);
    } catch (error) {
      throw explainFetchFailure(error, { timedOut: deadline.signal.aborted, idleTimeoutSeconds, maxDurationSeconds });
    } finally {
      clearTimeout(timer);
      // Closes the connection too when `use` left bytes unread (see call()).
      remote?.body.destroy();
    }
  }
}

/**
 * The span of a request to another server (inside a trace only): its method, host and port, as
 * OpenTelemetry's HTTP conventions name them. Never its path or query, which may carry a token (a
 * receiver's secret path, a signed URL), nor its headers.
 */
function clientSpan(method: string, url: string) {
  const attributes: Record<string, string | number> = { 'http.request.method': method };
  try {
    const { hostname, port, protocol } = new URL(url);
    attributes['server.address'] = hostname;
    attributes['server.port'] = port ? Number(port) : protocol === 'https:' ? 443 : 80;
  } catch {
    // Not a URL: the request fails, and its span says how.
  }
  return { kind: SpanKind.CLIENT, attributes };
}

/** The answer's status on the span; 4xx and 5xx mark it failed, as the conventions have it for clients. */
function answered(span: Span, status: number): void {
  span.setAttribute('http.response.status_code', status);
  if (status >= 400) markFailed(span, String(status));
}

export interface CallOptions {
  method: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /**
   * The URL is one the operator configured (a network's API, a fake of it in tests): it is connected
   * to wherever it resolves. Otherwise the address policy applies, as for every URL a user gives.
   */
  trusted: boolean;
  /** Ends the exchange (a stopping worker); the whole exchange is also limited to `timeoutSeconds`. */
  signal?: AbortSignal;
  timeoutSeconds: number;
  /** The answer's body is read up to this many bytes; the rest is dropped. */
  maxResponseBytes: number;
}

export interface CallResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * The whole body, or `undefined` as soon as it is longer than `maxBytes` (announced or received): an
 * oversized body is cut off, never read to its end.
 */
export async function readBody(response: RemoteResponse, maxBytes: number): Promise<Buffer | undefined> {
  if (response.contentLength !== undefined && response.contentLength > maxBytes) return undefined;
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of response.body) {
    received += (chunk as Buffer).length;
    if (received > maxBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
