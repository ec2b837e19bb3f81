import { createServiceError, parseRetryAfter } from './errors.js';

/** What one attempt ended with, as far as the decision to retry is concerned. */
export type AttemptOutcome =
  { kind: 'response'; status: number; retryAfter: number | undefined } | { kind: 'network-error' };

/** How persistent a call is. */
export interface RetryPolicy {
  /** Retries after the first attempt; 0 turns retrying off. */
  maxRetries: number;
  /** The longest `Retry-After` (seconds) worth waiting for; a longer one fails the call at once. */
  maxRetryAfter: number;
  /**
   * Whether sending the request twice does no harm. A request that may have reached the server
   * (a network failure, a 5xx) is repeated only when it is; a 429 was refused before any work,
   * so it is always safe to repeat.
   */
  replayable: boolean;
}

const BACKOFF_INITIAL_SECONDS = 0.5;
const BACKOFF_MAX_SECONDS = 5;

/**
 * Whether to send the request again after `retriesDone` retries.
 *
 * - 429: the rate limit refused the request before doing anything; retry after `Retry-After`.
 * - 5xx and network failures: usually passing (a restart, a provider hiccup); retry if replayable.
 *   Not 501, which no amount of retrying changes.
 * - Every other status, 409 included: the request or the record's state must change first, so
 *   sending the same request again would get the same answer.
 * - A `Retry-After` beyond the cap fails the call at once, so the caller can decide with
 *   `ServiceError.retryAfter` instead of the call hanging for minutes.
 */
export function shouldRetry(outcome: AttemptOutcome, retriesDone: number, policy: RetryPolicy): boolean {
  if (retriesDone >= policy.maxRetries) return false;
  if (outcome.kind === 'network-error') return policy.replayable;
  if (outcome.retryAfter !== undefined && outcome.retryAfter > policy.maxRetryAfter) return false;
  if (outcome.status === 429) return true;
  if (outcome.status >= 500 && outcome.status !== 501) return policy.replayable;
  return false;
}

/**
 * Seconds to wait before retry number `retry` (1 for the first): `min(0.5 · 2^(retry-1), 5)`, less
 * up to a quarter at random so that many clients failing together do not retry in lockstep.
 */
export function backoffSeconds(retry: number, random: () => number = Math.random): number {
  const full = Math.min(BACKOFF_INITIAL_SECONDS * 2 ** (retry - 1), BACKOFF_MAX_SECONDS);
  return full * (1 - 0.25 * random());
}

/** The server's `Retry-After` when it gave one (already capped by {@link shouldRetry}), the backoff otherwise. */
export function retryDelaySeconds(outcome: AttemptOutcome, retry: number, random: () => number = Math.random): number {
  if (outcome.kind === 'response' && outcome.retryAfter !== undefined) return outcome.retryAfter;
  return backoffSeconds(retry, random);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal.throwIfAborted();
    const onAbort = () => {
      clearTimeout(timer);
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the abort's reason, as in fetch
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Options of {@link sendWithRetries}. */
export interface SendOptions extends RetryPolicy {
  fetch: (request: Request) => Promise<Response>;
  /** Success responses must be JSON (or empty): API calls, as opposed to the bytes of an upload. */
  expectJson: boolean;
}

/**
 * Sends `request`, retrying as {@link shouldRetry} decides, and answers the first success. Every
 * failure is thrown as a `ServiceError`, except the caller's own abort, which is thrown as is.
 *
 * Retrying happens here, around `fetch`, rather than in a middleware: each attempt sends a fresh
 * clone, because a request body can be read only once. The same headers, `Idempotency-Key`
 * included, go with every attempt.
 */
export async function sendWithRetries(request: Request, options: SendOptions): Promise<Response> {
  for (let retriesDone = 0; ; retriesDone++) {
    let response: Response;
    try {
      response = await options.fetch(request.clone());
    } catch (error) {
      if (request.signal.aborted) throw request.signal.reason;
      const outcome: AttemptOutcome = { kind: 'network-error' };
      if (!shouldRetry(outcome, retriesDone, options)) throw createServiceError(request, { networkError: error });
      await sleep(retryDelaySeconds(outcome, retriesDone + 1) * 1000, request.signal);
      continue;
    }

    if (response.ok) return options.expectJson ? checkJson(request, response) : response;

    const outcome: AttemptOutcome = {
      kind: 'response',
      status: response.status,
      retryAfter: parseRetryAfter(response.headers.get('retry-after'), Date.now()),
    };
    if (!shouldRetry(outcome, retriesDone, options)) {
      throw createServiceError(request, { response, body: await readText(response) });
    }
    // Frees the connection for the next attempt.
    await response.body?.cancel();
    await sleep(retryDelaySeconds(outcome, retriesDone + 1) * 1000, request.signal);
  }
}

async function readText(response: Response): Promise<string> {
  try {
    return await response.text();
  } catch {
    return '';
  }
}

/**
 * Refuses a success that is not the API's JSON (for example a web page, when the origin points at
 * another server), which would otherwise surface as a bare `SyntaxError` from the JSON parser.
 */
async function checkJson(request: Request, response: Response): Promise<Response> {
  const type = response.headers.get('content-type') ?? '';
  if (response.status === 204 || /^application\/([\w.+-]*\+)?json\b/i.test(type)) return response;
  const body = await readText(response);
  if (body === '')
    return new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
  throw createServiceError(request, {
    response,
    body,
    code: 'invalid_response',
    message:
      `${request.method} ${new URL(request.url).pathname} answered ${response.status} ` +
      `with ${type || 'no content type'} instead of JSON; is the origin that of the service?`,
  });
}
