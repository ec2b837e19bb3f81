import type { IncomingHttpHeaders } from 'node:http';
import { DomainError } from '../../core/errors.js';
import type { OutboundClient } from '../../net/outbound-client.js';
import { plainText } from '../network-text.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  TransientPublishError,
  retryAfterSeconds,
  type PublishError,
} from '../publishing-contract.js';

const TIMEOUT_SECONDS = 30;
const MAX_ANSWER_BYTES = 1024 * 1024;

/** An instance answered with an error status: Mastodon's `{"error": "..."}` (RFC 6749's shape on `/oauth/`). */
export class MastodonError extends Error {
  override name = 'MastodonError';

  constructor(
    readonly status: number,
    message: string,
    readonly headers: IncomingHttpHeaders,
  ) {
    super(message);
  }
}

/**
 * No answer came from the instance. `sent` is false when the request never left this server (the
 * host could not be resolved, or the address policy refused its address): then nothing happened there.
 */
export class MastodonUnreachableError extends Error {
  override name = 'MastodonUnreachableError';

  constructor(
    message: string,
    readonly sent: boolean,
  ) {
    super(message);
  }
}

/** A request to an instance's API: JSON, a form or a multipart body; the account's token when it acts for one. */
export interface MastodonRequest {
  method: 'GET' | 'POST' | 'PUT';
  accessToken?: string;
  json?: unknown;
  form?: Record<string, string>;
  multipart?: FormData;
  /** Mastodon's `Idempotency-Key`: the same key from the same account within an hour answers the first status. */
  idempotencyKey?: string;
  signal?: AbortSignal;
  timeoutSeconds?: number;
}

/** An answer of an instance, whatever its status. */
export interface MastodonAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * The one way this server calls a Mastodon instance. The instance is one a user named, so every
 * request goes through the outbound client's address policy (never `trusted`): no loopback, private
 * or metadata address unless the operator allowed its range, checked again on every request (the
 * name may resolve elsewhere since the account was connected).
 */
export class MastodonApi {
  constructor(private readonly outbound: OutboundClient) {}

  /** Calls `path` of the instance at `site` (its origin); the answer's JSON, or `MastodonError` for an error status. */
  async call<T>(site: string, path: string, request: MastodonRequest): Promise<{ status: number; data: T }> {
    const answer = await this.send(site, path, request);
    if (answer.status < 200 || answer.status > 299)
      throw new MastodonError(answer.status, messageOf(answer), answer.headers);
    try {
      return { status: answer.status, data: JSON.parse(answer.body) as T };
    } catch {
      // A 2xx that is not JSON is no answer of Mastodon's (a captive portal, a proxy's page).
      throw new MastodonError(answer.status, `the instance answered ${answer.status} without JSON`, answer.headers);
    }
  }

  /** Sends a request and answers whatever came back; `MastodonUnreachableError` when nothing did. */
  async send(site: string, path: string, request: MastodonRequest): Promise<MastodonAnswer> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (request.accessToken) headers.Authorization = `Bearer ${request.accessToken}`;
    if (request.idempotencyKey) headers['Idempotency-Key'] = request.idempotencyKey;
    let body: string | Buffer | undefined;
    if (request.json !== undefined) {
      headers['Content-Type'] = 'application/json; charset=utf-8';
      body = JSON.stringify(request.json);
    } else if (request.form) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(request.form).toString();
    } else if (request.multipart) {
      // The platform's own multipart encoding of the form (boundary, escaping of names and file names).
      const encoded = new Request('http://multipart.invalid/', { method: 'POST', body: request.multipart });
      headers['Content-Type'] = encoded.headers.get('content-type')!;
      body = Buffer.from(await encoded.arrayBuffer());
    }
    try {
      const response = await this.outbound.call(`${site}${path}`, {
        method: request.method,
        trusted: false,
        headers,
        ...(body === undefined ? {} : { body }),
        ...(request.signal ? { signal: request.signal } : {}),
        timeoutSeconds: request.timeoutSeconds ?? TIMEOUT_SECONDS,
        maxResponseBytes: MAX_ANSWER_BYTES,
      });
      return { status: response.status, headers: response.headers, body: response.body.toString('utf8') };
    } catch (error) {
      if ((error as Error).name === 'AbortError' && request.signal?.aborted) throw error;
      // The outbound client refuses a destination (an address the policy refuses, a host that does
      // not resolve) before sending anything, with a DomainError saying why.
      if (error instanceof DomainError) {
        const reason = error.details?.[0]?.message ?? error.message;
        throw new MastodonUnreachableError(`the instance ${hostOf(site)} cannot be reached: ${reason}`, false);
      }
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new MastodonUnreachableError(`the instance ${hostOf(site)} could not be reached (${code})`, true);
    }
  }
}

/** The instance's words for an error answer, as text. */
function messageOf(answer: MastodonAnswer): string {
  try {
    const body = JSON.parse(answer.body) as { error?: unknown; error_description?: unknown };
    const words = typeof body.error_description === 'string' ? body.error_description : body.error;
    if (typeof words === 'string' && words.trim() !== '') return plainText(words);
  } catch {
    // Not Mastodon's JSON (a proxy's error page): the status says it.
  }
  return `the instance answered ${answer.status}`;
}

const hostOf = (site: string) => URL.parse(site)?.host ?? site;

/**
 * When an instance lets the account call again after a 429: `X-RateLimit-Reset` (an ISO 8601 time,
 * docs.joinmastodon.org/api/rate-limits), else `Retry-After`; at least a second.
 */
export function rateLimitWait(headers: IncomingHttpHeaders, now: Date): number | undefined {
  const reset = headers['x-ratelimit-reset'];
  const at = typeof reset === 'string' ? Date.parse(reset) : NaN;
  if (!Number.isNaN(at)) return Math.max(1, Math.ceil((at - now.getTime()) / 1000));
  const after = retryAfterSeconds(headers['retry-after'], now);
  return after === undefined ? undefined : Math.max(1, after);
}

/**
 * A failed call of a publication as the publisher's error. `what` names what was sent ("the
 * status", "an image") for the post's error.
 *
 * - no answer: passing; `answered` only when nothing left this server;
 * - 401 (the token revoked: Mastodon's tokens do not expire and it has no refresh) and 403 (outside
 *   the granted scopes): the account must be connected again;
 * - 429: passing, until X-RateLimit-Reset; 5xx: passing;
 * - 422 and the other refusals: for good, with Mastodon's words.
 */
export function publishErrorOf(error: unknown, what: string, now: Date): unknown {
  if (error instanceof MastodonUnreachableError)
    return new TransientPublishError(error.message, { answered: !error.sent });
  if (!(error instanceof MastodonError)) return error;
  const result: PublishError =
    error.status === 401 || error.status === 403
      ? new ReconnectNeededError(`Mastodon refused the account's access token (${error.message})`)
      : error.status === 429
        ? new TransientPublishError(`Mastodon's rate limit for the account is reached (${error.message})`, {
            answered: true,
            ...optional(rateLimitWait(error.headers, now)),
          })
        : error.status >= 500
          ? new TransientPublishError(`Mastodon failed (${error.status}: ${error.message})`, { answered: true })
          : new PermanentPublishError('rejected_by_network', `Mastodon refused ${what}: ${error.message}.`);
  return result;
}

const optional = (seconds: number | undefined) => (seconds === undefined ? {} : { retryAfterSeconds: seconds });
