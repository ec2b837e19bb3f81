import type { Response } from 'express';
import type { components } from '../../generated/oauth.js';

export type OAuthErrorCode = components['schemas']['OAuthError']['error'];

/**
 * An RFC 6749 §5.2 error of the token or revocation endpoint. These endpoints never answer in the
 * Public API's envelope: OAuth client libraries read `error` and `error_description` only.
 */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    description: string,
    /** 400 unless the client failed to authenticate (401) or used the wrong method (405). */
    readonly status: 400 | 401 | 404 | 405 = error === 'invalid_client' ? 401 : 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'OAuthError';
  }
}

/** Failed client authentication has been throttled for this client id from this address, or for this address. */
export class OAuthThrottledError extends Error {
  constructor(
    readonly retryAfter: number,
    what = 'failed client authentications',
  ) {
    super(`Too many ${what}; try again in ${retryAfter} seconds.`);
    this.name = 'OAuthThrottledError';
  }
}

/**
 * RFC 6749 §5.2 allows only %x20-21 / %x23-5B / %x5D-7E in `error_description`: printable ASCII
 * without `"` and `\`. Anything else (a quote from user input, a newline that could split a log line
 * or a header) becomes a space.
 */
export function safeDescription(text: string): string {
  return text
    .replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, ' ')
    .replace(/ {2,}/g, ' ')
    .trim();
}

/** Token responses and token errors must not be cached (RFC 6749 §5.1). */
export function noStore(res: Response): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
}

/** Writes the body without `res.json`, so the response validator never rewrites an error. */
export function sendOAuthError(res: Response, error: OAuthError): void {
  noStore(res);
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  const body: components['schemas']['OAuthError'] = {
    error: error.error,
    error_description: safeDescription(error.message),
  };
  res.status(error.status).type('application/json').send(JSON.stringify(body));
}

export function sendThrottled(res: Response, error: OAuthThrottledError): void {
  noStore(res);
  res.setHeader('Retry-After', String(error.retryAfter));
  const body: components['schemas']['OAuthRateLimited'] = {
    error: 'rate_limited',
    error_description: safeDescription(error.message),
  };
  res.status(429).type('application/json').send(JSON.stringify(body));
}

/**
 * The database out of reach: RFC 6749's `temporarily_unavailable` (§4.1.2.1), answered by the token
 * and revocation endpoints with 503 and `Retry-After`, as §8.5 lets a server add an error.
 */
export function sendTemporarilyUnavailable(res: Response, description: string, retryAfter: number): void {
  noStore(res);
  res.setHeader('Retry-After', String(retryAfter));
  const body: components['schemas']['OAuthTemporarilyUnavailable'] = {
    error: 'temporarily_unavailable',
    error_description: safeDescription(description),
  };
  res.status(503).type('application/json').send(JSON.stringify(body));
}
