import dns from 'node:dns';
import http, { type Agent, type IncomingMessage } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { DomainError, UnprocessableError } from '../core/errors.js';
import type { AddressPolicy } from './address-policy.js';
import { pinnedLookup, type ConnectionPool } from './connection-pool.js';

export type Resolver = (hostname: string) => Promise<string[]>;

export interface RemoteFetchOptions {
  /** Which addresses may be connected to; `undefined` for a URL the operator configured (a network's API). */
  policy: AddressPolicy | undefined;
  /** Longest silence from the server: connecting, waiting for the headers, or between body chunks. */
  idleTimeoutMs: number;
  maxRedirects: number;
  /** Host name to addresses; the system resolver (hosts file, then DNS) by default. */
  resolve?: Resolver;
  /** Ends the whole download (the caller's overall time limit). */
  signal: AbortSignal;
  /** GET by default. */
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** Hand over every answer, not only 2xx (an API's errors are answers to read). */
  anyStatus?: boolean;
  /** Kept-alive connections to reuse; without it each request has a connection of its own. */
  connections?: ConnectionPool;
}

export interface RemoteResponse {
  /** The URL that answered, after redirects. */
  url: URL;
  body: IncomingMessage;
  /** The announced length, when the server sent one. */
  contentLength: number | undefined;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

// Failures of the remote side (refused, reset, unreachable, malformed HTTP, bad TLS certificate): the
// caller's URL is at fault, not this server.
const NETWORK_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
const NETWORK_ERROR_PREFIXES = /^(HPE_|ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/;

/** The server went silent for longer than the idle timeout. */
export class RemoteIdleError extends Error {
  override name = 'RemoteIdleError';
}

const systemResolver: Resolver = async (hostname) =>
  (await dns.promises.lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

const refused = (url: string, reason: string, message = `The URL cannot be downloaded: ${reason}.`) =>
  new UnprocessableError(message, [{ path: 'url', message: reason }]);

/**
 * Opens a GET of a caller-supplied URL without letting the caller reach this server's own network
 * (server-side request forgery): the host is resolved here, every address it resolves to is checked
 * against the policy, and the connection goes to the checked address, never through a second lookup
 * that a DNS-rebinding attacker could answer differently. Every redirect is checked the same way.
 */
export async function openRemote(rawUrl: string, options: RemoteFetchOptions): Promise<RemoteResponse> {
  let url = parseUrl(rawUrl);
  for (let redirects = 0; ; redirects += 1) {
    const address = await checkedAddress(url, options);
    const response = await send(url, address, options);
    const location = response.headers.location;
    if (options.maxRedirects > 0 && REDIRECTS.has(response.statusCode ?? 0) && location) {
      response.destroy();
      if (redirects >= options.maxRedirects) {
        throw refused(rawUrl, `more than ${options.maxRedirects} redirects`);
      }
      url = parseUrl(location, url);
      continue;
    }
    const status = response.statusCode ?? 0;
    if (!options.anyStatus && (status < 200 || status > 299)) {
      response.destroy();
      throw refused(
        url.href,
        `the server answered ${status}`,
        `The server at ${url.origin} answered ${status} for the file.`,
      );
    }
    const length = Number(response.headers['content-length']);
    return { url, body: response, contentLength: Number.isSafeInteger(length) && length >= 0 ? length : undefined };
  }
}

/**
 * Checks, without connecting, that a URL is one a request may be sent to under `policy`: http(s),
 * no credentials, and every address its host resolves to allowed. The reason when it is not.
 */
export async function destinationProblem(
  rawUrl: string,
  options: { policy: AddressPolicy; resolve?: Resolver },
): Promise<string | undefined> {
  try {
    await checkedAddress(parseUrl(rawUrl), options);
    return undefined;
  } catch (error) {
    if (error instanceof UnprocessableError) return error.details?.[0]?.message ?? error.message;
    throw error;
  }
}

function parseUrl(text: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(text, base);
  } catch {
    throw refused(text, `${text} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw refused(url.href, `the scheme ${url.protocol.replace(/:$/, '')} is not http or https`);
  }
  if (url.username || url.password) throw refused(url.href, 'URLs with credentials are not downloaded');
  return url;
}

async function checkedAddress(url: URL, options: Pick<RemoteFetchOptions, 'policy' | 'resolve'>): Promise<string> {
  // The URL parser has already turned every IPv4 spelling (0x7f.1, 2130706433 …) into dotted decimal.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const policy = options.policy;
  let addresses: string[];
  if (net.isIP(host)) {
    addresses = [host];
  } else {
    try {
      addresses = await (options.resolve ?? systemResolver)(host);
    } catch {
      throw refused(url.href, `the host ${host} could not be resolved`);
    }
    if (addresses.length === 0) throw refused(url.href, `the host ${host} could not be resolved`);
  }
  // Every address must pass: which one a connection would use is not ours to predict.
  for (const address of policy ? addresses : []) {
    const verdict = policy!.check(address);
    if (!verdict.allowed) {
      const where = net.isIP(host) ? '' : ` (${host})`;
      throw refused(
        url.href,
        `${verdict.reason}${where}`,
        `The URL points at an address this server does not download from: ${verdict.reason}${where}.`,
      );
    }
  }
  return addresses[0] as string;
}

// Methods a client may send again on its own when a connection fails before any answer (RFC 9110
// §9.2.1 safe methods; RFC 9112 §9.3.1 forbids repeating others automatically). PUT and DELETE are
// idempotent in HTTP's terms, but a network's last upload chunk is a publication's point of no
// return: whether anything is sent again is the publisher's decision, never this client's.
const REPEATABLE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

// A kept-alive connection the server closed while it waited in the pool (its close had not reached
// us yet): the request fails before any answer. The server most likely never read it, but nothing
// proves it, hence only the methods above are sent again.
const STALE_CONNECTION_ERRORS = new Set(['ECONNRESET', 'EPIPE']);

/** A request failed on a reused connection before any answer (see STALE_CONNECTION_ERRORS). */
class StaleConnectionError extends Error {
  override name = 'StaleConnectionError';

  constructor(readonly failure: NodeJS.ErrnoException) {
    super(failure.message);
  }
}

async function send(url: URL, address: string, options: RemoteFetchOptions): Promise<IncomingMessage> {
  const agent = options.connections?.agentFor(url, address);
  try {
    return await sendOnce(url, address, options, agent);
  } catch (error) {
    if (!(error instanceof StaleConnectionError)) throw error;
    const method = (options.method ?? 'GET').toUpperCase();
    if (!REPEATABLE_METHODS.has(method) || options.signal.aborted) throw error.failure;
    // Once, on a new connection of its own: the pool's other idle connections may be as stale.
    return sendOnce(url, address, options, undefined);
  }
}

function sendOnce(
  url: URL,
  address: string,
  options: RemoteFetchOptions,
  agent: Agent | undefined,
): Promise<IncomingMessage> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    let response: IncomingMessage | undefined;
    const request = client.request(url, {
      method: options.method ?? 'GET',
      // Hands the connection the address checked above instead of resolving the host name again (a
      // pooled agent has the same lookup in its own options, and only that address's connections).
      lookup: pinnedLookup(address),
      signal: options.signal,
      // Node sets it on a reused connection too, in place of the pool's idle time.
      timeout: options.idleTimeoutMs,
      headers: { 'User-Agent': 'post-scheduler', ...options.headers },
      // Without a pool, a connection of its own, closed after the exchange.
      agent: agent ?? false,
    });
    request.on('timeout', () => {
      const error = new RemoteIdleError(`silent for ${options.idleTimeoutMs} ms`);
      response?.destroy(error);
      request.destroy(error);
    });
    request.on('response', (answer) => {
      response = answer;
      resolve(answer);
    });
    request.on('error', (error: NodeJS.ErrnoException) => {
      const stale = request.reusedSocket && !response && STALE_CONNECTION_ERRORS.has(error.code ?? '');
      reject(stale ? new StaleConnectionError(error) : error);
    });
    request.end(options.body);
  });
}

export interface FetchLimits {
  /** The caller's overall deadline had passed when the download failed. */
  timedOut: boolean;
  idleTimeoutSeconds: number;
  maxDurationSeconds: number;
}

/**
 * A failed download as the caller's mistake (422 naming the URL) when the remote side is at fault:
 * refused by the address policy, too slow, unreachable or speaking broken HTTP or TLS. Anything else
 * is returned as it is, for the error handler to treat as this server's failure.
 */
export function explainFetchFailure(error: unknown, limits: FetchLimits): unknown {
  const { idleTimeoutSeconds, maxDurationSeconds } = limits;
  if (error instanceof DomainError) return error;
  if (limits.timedOut) {
    return new UnprocessableError(`The download took longer than ${maxDurationSeconds} seconds and was stopped.`, [
      { path: 'url', message: `not downloaded within ${maxDurationSeconds} seconds` },
    ]);
  }
  if (error instanceof RemoteIdleError) {
    return new UnprocessableError(
      `The server sent nothing for ${idleTimeoutSeconds} seconds; the download was stopped.`,
      [{ path: 'url', message: `the server was silent for ${idleTimeoutSeconds} seconds` }],
    );
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && (NETWORK_ERRORS.has(code) || NETWORK_ERROR_PREFIXES.test(code))) {
    return new UnprocessableError(`The file could not be downloaded: the connection failed (${code}).`, [
      { path: 'url', message: `connection failed (${code})` },
    ]);
  }
  return error;
}
