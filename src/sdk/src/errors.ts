import type { ErrorBody, ErrorDetail } from './types.js';

/** The request a {@link ServiceError} answers, safe to log: credentials and URL signatures are redacted. */
export interface FailedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
}

/** What {@link ServiceError} is built from; see {@link createServiceError}. */
export interface ServiceErrorInit {
  status: number;
  code: string;
  message: string;
  details: ErrorDetail[];
  requestId: string | undefined;
  retryAfter: number | undefined;
  headers: Record<string, string>;
  request: FailedRequest;
  cause?: unknown;
}

/**
 * The error every failed call throws: an error answer of the API, a response that could not be
 * read, or a network failure (`status` 0).
 *
 * Branch on `status` and `code`, never on `message`; quote `requestId` when reporting a problem.
 *
 * @example
 * ```ts
 * try {
 *   await service.getPost(id);
 * } catch (error) {
 *   if (error instanceof ServiceError && error.status === 404) return undefined;
 *   throw error;
 * }
 * ```
 */
export class ServiceError extends Error {
  /** The HTTP status, or 0 when no response arrived (network failure). */
  readonly status: number;
  /**
   * The API's machine-readable reason (`not_found`, `rate_limited`, …). `network_error` when no
   * response arrived, `http_<status>` when the response was not the API's error body (a proxy's
   * error page, for example), `invalid_response` when a success response could not be read.
   */
  readonly code: string;
  /** One entry per problem, naming the field (`posts[1].settings.privacyLevel`); empty when the API gave none. */
  readonly details: ErrorDetail[];
  /** The server's id of the request (`req_…`), from the body or the `X-Request-Id` header. */
  readonly requestId: string | undefined;
  /** Seconds to wait before retrying, from `Retry-After` (seconds or an HTTP date) or the body's `retryAfter`. */
  readonly retryAfter: number | undefined;
  /** The response headers, names in lower case; empty for a network failure. */
  readonly headers: Record<string, string>;
  /** The request that failed, with its credential and any URL signature redacted. */
  readonly request: FailedRequest;

  constructor(init: ServiceErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'ServiceError';
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.headers = init.headers;
    this.request = init.request;
  }
}

const REDACTED = '[redacted]';
// Authorization carries the API key or OAuth token; the others are how signed or proxied requests
// carry credentials.
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'x-amz-security-token']);
// Signed upload URLs (this server's own, or S3's presigned `X-Amz-Signature`/`X-Amz-Credential`)
// are credentials in themselves until they expire.
const SECRET_QUERY = /signature|credential|token|secret|key/i;

/** The request as it may appear in an error or a log line. */
export function describeRequest(request: Request): FailedRequest {
  const url = new URL(request.url);
  for (const name of [...url.searchParams.keys()]) {
    if (SECRET_QUERY.test(name)) url.searchParams.set(name, REDACTED);
  }
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = SECRET_HEADERS.has(name) ? REDACTED : value;
  });
  return { method: request.method, url: url.toString(), headers };
}

/**
 * Seconds to wait from a `Retry-After` header, which is either a number of seconds or an HTTP date
 * (RFC 9110 §10.2.3); `undefined` when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  // An HTTP date names its day and month; without letters, Date.parse would read "-5" as a year.
  if (!/[a-z]/i.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - now) / 1000));
}

/** A body's fields named as in the contract, their values not checked yet. */
type Unchecked<Schema> = { [Field in keyof Schema]?: unknown };

/**
 * The `error` object of the API's error body with only its `code` checked: the other fields are
 * checked where they are read, so a body that is only partly the API's still gives what it has.
 */
type ReceivedError = Unchecked<ErrorBody['error']> & Pick<ErrorBody['error'], 'code'>;

/** The `error` object of the API's error body, when `body` is one. */
function errorOf(body: unknown): ReceivedError | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { error } = body as Unchecked<ErrorBody>;
  if (typeof error !== 'object' || error === null) return undefined;
  const fields = error as Unchecked<ErrorBody['error']>;
  return typeof fields.code === 'string' ? (fields as ReceivedError) : undefined;
}

function detailsOf(value: unknown): ErrorDetail[] {
  if (!Array.isArray(value)) return [];
  return (value as unknown[]).filter(
    (detail): detail is ErrorDetail =>
      typeof detail === 'object' &&
      detail !== null &&
      'path' in detail &&
      typeof detail.path === 'string' &&
      'message' in detail &&
      typeof detail.message === 'string',
  );
}

/** What failed: a response (with its body, already read) or an exception before any response. */
export type Failure = { response: Response; body: string; code?: string; message?: string } | { networkError: unknown };

/**
 * The one factory of {@link ServiceError}: reads status, code, details, request id and retry delay
 * from the response (the API's error body when there is one, its headers otherwise), and redacts
 * the request.
 */
export function createServiceError(request: Request, failure: Failure, now = Date.now()): ServiceError {
  const described = describeRequest(request);
  if ('networkError' in failure) {
    const reason = failure.networkError instanceof Error ? failure.networkError.message : String(failure.networkError);
    return new ServiceError({
      status: 0,
      code: 'network_error',
      message: `${described.method} ${described.url} failed before a response arrived: ${reason}`,
      details: [],
      requestId: undefined,
      retryAfter: undefined,
      headers: {},
      request: described,
      cause: failure.networkError,
    });
  }

  const { response } = failure;
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  let parsed: unknown;
  try {
    parsed = JSON.parse(failure.body);
  } catch {
    parsed = undefined;
  }
  const error = errorOf(parsed);
  const bodyRetryAfter = typeof error?.retryAfter === 'number' ? error.retryAfter : undefined;
  const requestId =
    typeof error?.requestId === 'string' ? error.requestId : (response.headers.get('x-request-id') ?? undefined);
  const statusLine = `${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
  return new ServiceError({
    status: response.status,
    code: failure.code ?? error?.code ?? `http_${response.status}`,
    message:
      failure.message ??
      (typeof error?.message === 'string'
        ? error.message
        : `${described.method} ${described.url} answered ${statusLine} without the API's error body.`),
    details: detailsOf(error?.details),
    requestId,
    retryAfter: parseRetryAfter(response.headers.get('retry-after'), now) ?? bodyRetryAfter,
    headers,
    request: described,
  });
}
