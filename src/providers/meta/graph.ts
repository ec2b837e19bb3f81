import type { IncomingHttpHeaders } from 'node:http';
import type { OutboundClient } from '../../net/outbound-client.js';
import { callNetwork, type NetworkAnswer } from '../network-call.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  TransientPublishError,
  type PublishError,
} from '../publishing-contract.js';

const TIMEOUT_SECONDS = 60;
const MAX_ANSWER_BYTES = 1024 * 1024;

/** Where one of Meta's Graph APIs answers: graph.facebook.com, graph.instagram.com, graph.threads.net. */
export interface GraphEndpoint {
  /** The network's name, as messages say it (`Facebook`, `Instagram`, `Threads`). */
  network: string;
  /** The API's origin. */
  url: string;
  /** The version every path names (`v23.0`). */
  version: string;
}

/** What Meta's error envelope says (`{"error": {message, type, code, error_subcode, fbtrace_id}}`). */
export interface GraphErrorBody {
  message: string;
  type: string | undefined;
  code: number | undefined;
  subcode: number | undefined;
  /** Meta's id of the exchange, which its support asks for; kept in the post's history as its `logId`. */
  fbtraceId: string | undefined;
}

/** An answer of the Graph API: its status, headers and body as JSON (`{}` when it is not JSON). */
export interface GraphAnswer<T> {
  status: number;
  headers: IncomingHttpHeaders;
  data: T;
}

export interface GraphRequest {
  method: 'GET' | 'POST' | 'DELETE';
  /** A user, Page or account access token; sent in the `Authorization` header, never in a URL. */
  accessToken?: string;
  /** How the header names the token: `Bearer`, or `OAuth` where Meta's guide says so (the Resumable Upload API). */
  scheme?: 'Bearer' | 'OAuth';
  /** Query parameters of a GET, form fields of a POST. */
  params?: Record<string, string>;
  /** A POST's body as bytes (an upload), with its content type and headers of its own. */
  bytes?: { body: Buffer; headers: Record<string, string> };
  signal?: AbortSignal;
  timeoutSeconds?: number;
}

/**
 * The one way this server calls one of Meta's Graph APIs: a request to `/{version}/{path}` with its
 * token, the answer as it came. Meta could not be reached: `TransientPublishError` without an answer.
 */
export class GraphApi {
  constructor(
    readonly endpoint: GraphEndpoint,
    private readonly outbound: OutboundClient,
  ) {}

  /** Sends a request to `path` (`me/accounts`, `{page-id}/feed`) or to an absolute URL of the API (`paging.next`). */
  async call<T = Record<string, unknown>>(path: string, request: GraphRequest): Promise<GraphAnswer<T>> {
    const { url, version, network } = this.endpoint;
    const target = /^https?:\/\//.test(path) ? new URL(path) : new URL(`${url}/${version}/${path.replace(/^\/+/, '')}`);
    // An address from an answer (a `paging.next`) gets the token only on the API's own origin.
    if (target.origin !== new URL(url).origin)
      throw new TransientPublishError(`${network} named a page elsewhere than its API (${target.origin})`, {
        answered: true,
      });
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (request.accessToken) headers.Authorization = `${request.scheme ?? 'Bearer'} ${request.accessToken}`;
    let body: Buffer | string | undefined;
    if (request.bytes) {
      Object.assign(headers, request.bytes.headers);
      body = request.bytes.body;
      for (const [name, value] of Object.entries(request.params ?? {})) target.searchParams.set(name, value);
    } else if (request.method === 'GET' || request.method === 'DELETE') {
      for (const [name, value] of Object.entries(request.params ?? {})) target.searchParams.set(name, value);
    } else if (request.params) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(request.params).toString();
    }
    const answer = await callNetwork(this.outbound, network, target.href, {
      method: request.method,
      headers,
      ...(body !== undefined ? { body } : {}),
      ...(request.signal ? { signal: request.signal } : {}),
      timeoutSeconds: request.timeoutSeconds ?? TIMEOUT_SECONDS,
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
    return { status: answer.status, headers: answer.headers, data: parsed(answer) as T };
  }
}

function parsed(answer: NetworkAnswer): unknown {
  try {
    return JSON.parse(answer.body) as unknown;
  } catch {
    return {};
  }
}

/** The error an answer carries, if it is one of Meta's envelope (or any answer that is not a success). */
export function graphErrorOf(answer: GraphAnswer<unknown>): GraphErrorBody | undefined {
  const error = (answer.data as { error?: Record<string, unknown> } | undefined)?.error;
  if (answer.status >= 200 && answer.status < 300 && !error) return undefined;
  const number = (value: unknown) => (typeof value === 'number' ? value : undefined);
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  return {
    message: text(error?.error_user_msg) ?? text(error?.message) ?? `HTTP ${answer.status}`,
    type: text(error?.type),
    code: number(error?.code),
    subcode: number(error?.error_subcode),
    fbtraceId: text(error?.fbtrace_id) ?? text(answer.headers['x-fb-trace-id']),
  };
}

/** The rate limits Meta answers with (Graph API, "Rate Limiting"): the app's, a user's, a Page's, a use case's. */
const RATE_LIMIT_CODES = new Set([4, 17, 32, 613, 80001, 80002, 80003, 80004, 80005, 80006, 80008, 80009, 80014]);
/** Meta's own passing failures: an unknown error, the service down for a moment. */
const PASSING_CODES = new Set([1, 2]);

/**
 * What a refusal of one of Meta's Graph APIs means for a publication: a token Meta no longer takes
 * (190) or a permission the account no longer grants (10, 200 to 299) needs the channel connected
 * again; a rate limit waits for the time Meta names in its usage headers (or a minute); Meta's
 * passing failures and 5xx are tried again; anything else refuses the post with Meta's words. Every
 * error keeps Meta's `fbtrace_id`.
 */
export function publishErrorOf(answer: GraphAnswer<unknown>, what: string, network: string): PublishError {
  const error = graphErrorOf(answer) ?? {
    message: `HTTP ${answer.status}`,
    type: undefined,
    code: undefined,
    subcode: undefined,
    fbtraceId: undefined,
  };
  const words = `${network} refused ${what}: ${error.message}`;
  const logId = error.fbtraceId;
  if (error.code === 190 || error.code === 102)
    return new ReconnectNeededError(`${network} no longer takes the account's token (${error.message})`, logId);
  if (error.code === 10 || (error.code !== undefined && error.code >= 200 && error.code <= 299))
    return new ReconnectNeededError(`${network} refused a permission of the account (${error.message})`, logId);
  if (error.code !== undefined && RATE_LIMIT_CODES.has(error.code))
    return new TransientPublishError(`${network}'s rate limit is reached: ${error.message}`, {
      answered: true,
      retryAfterSeconds: waitOfUsage(answer.headers) ?? 60,
      ...(logId ? { logId } : {}),
    });
  if ((error.code !== undefined && PASSING_CODES.has(error.code)) || answer.status >= 500)
    return new TransientPublishError(words, { answered: true, ...(logId ? { logId } : {}) });
  return new PermanentPublishError('rejected_by_network', words, logId);
}

/**
 * The wait Meta's usage headers name, in seconds: `X-Business-Use-Case-Usage`'s
 * `estimated_time_to_regain_access` (minutes), the largest of its use cases.
 */
function waitOfUsage(headers: IncomingHttpHeaders): number | undefined {
  const header = headers['x-business-use-case-usage'];
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  try {
    const usage = JSON.parse(value) as Record<string, { estimated_time_to_regain_access?: unknown }[]>;
    const minutes = Object.values(usage)
      .flat()
      .map((entry) => Number(entry.estimated_time_to_regain_access))
      .filter((n) => Number.isFinite(n) && n > 0);
    return minutes.length > 0 ? Math.max(...minutes) * 60 : undefined;
  } catch {
    return undefined;
  }
}
