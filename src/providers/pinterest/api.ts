import type { Clock } from '../../core/clock.js';
import type { PinterestConfig } from '../../core/config.js';
import type { OutboundClient } from '../../net/outbound-client.js';
import { callNetwork, type NetworkAnswer } from '../network-call.js';
import {
  PermanentPublishError,
  ReconnectNeededError,
  retryAfterSeconds,
  TransientPublishError,
  type PublishError,
} from '../publishing-contract.js';

const TIMEOUT_SECONDS = 30;
/** A page of 250 boards or pins stays well below this. */
const MAX_ANSWER_BYTES = 2 * 1024 * 1024;

/** A request of Pinterest's API: JSON, a form (the token endpoint), or nothing. */
export type PinterestBody = { json: unknown } | { form: Record<string, string> };

export interface PinterestRequestOptions {
  method: 'GET' | 'POST';
  /** `Bearer <access token>` for the API, `Basic …` (the app) at the token endpoint. */
  authorization: string;
  body?: PinterestBody;
  signal?: AbortSignal;
  timeoutSeconds?: number;
}

/**
 * The one way this server calls Pinterest's API (api.pinterest.com/v5): a request with its credentials,
 * the answer as it came. Pinterest could not be reached: `TransientPublishError` without an answer.
 */
export class PinterestApi {
  constructor(
    private readonly config: PinterestConfig,
    private readonly outbound: OutboundClient,
  ) {}

  /** Sends a request to `path` (`/v5/…`) of Pinterest's API. */
  send(path: string, options: PinterestRequestOptions): Promise<NetworkAnswer> {
    return this.sendTo(`${this.config.apiUrl}${path}`, options);
  }

  /**
   * Sends a request to a URL Pinterest gave (a video's upload URL at S3): trusted like Pinterest's own
   * API, since it came in Pinterest's answer.
   */
  sendTo(
    url: string,
    options: Omit<PinterestRequestOptions, 'authorization' | 'body'> & {
      authorization?: string;
      body?: PinterestBody;
      raw?: { contentType: string; bytes: Buffer };
    },
  ): Promise<NetworkAnswer> {
    const encoded = options.raw
      ? { headers: { 'Content-Type': options.raw.contentType }, body: options.raw.bytes }
      : encode(options.body);
    return callNetwork(this.outbound, 'Pinterest', url, {
      method: options.method,
      headers: {
        Accept: 'application/json',
        ...(options.authorization ? { Authorization: options.authorization } : {}),
        ...encoded.headers,
      },
      ...(encoded.body !== undefined ? { body: encoded.body } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      timeoutSeconds: options.timeoutSeconds ?? TIMEOUT_SECONDS,
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
  }

  /** The HTTP Basic credentials of this server's Pinterest app, as its token endpoint takes them. */
  appAuthorization(): string {
    return `Basic ${Buffer.from(`${this.config.appId}:${this.config.appSecret}`).toString('base64')}`;
  }
}

function encode(body: PinterestBody | undefined): { headers: Record<string, string>; body?: string } {
  if (body === undefined) return { headers: {} };
  if ('json' in body) return { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body.json) };
  return {
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(body.form).toString(),
  };
}

/** An answer's JSON body, or `undefined` when it is not JSON (a proxy's page). */
export function jsonOf<T>(answer: NetworkAnswer): T | undefined {
  try {
    return JSON.parse(answer.body) as T;
  } catch {
    return undefined;
  }
}

/** What Pinterest says in an error answer (`{code, message}`), or its status when the body says nothing. */
export function pinterestMessage(answer: NetworkAnswer): string {
  const error = jsonOf<{ code?: number; message?: string }>(answer);
  if (error?.message) return error.code !== undefined ? `${error.message} (code ${error.code})` : error.message;
  return `Pinterest answered ${answer.status}`;
}

/**
 * How long to wait after Pinterest's 429: its `x-ratelimit-reset` (seconds until the window ends), a
 * second past it, else `Retry-After`, else nothing (the publisher's own wait).
 */
export function rateLimitWait(answer: NetworkAnswer, now: Date): number | undefined {
  const reset = answer.headers['x-ratelimit-reset'];
  if (typeof reset === 'string' && /^\d+$/.test(reset.trim())) return Number(reset) + 1;
  return retryAfterSeconds(answer.headers['retry-after'], now);
}

/**
 * Pinterest's error answer to a step of a publication, as the publisher takes it: 401 the account's
 * credentials (after the refresh already tried), 403 a scope the account did not grant, 429 a wait until
 * the window resets, 5xx a passing failure, anything else a refusal in Pinterest's words.
 * `answered: false` for a 5xx to a call that may have done its work all the same (creating a pin).
 */
export function publishError(
  answer: NetworkAnswer,
  what: string,
  clock: Clock,
  options: { mayHaveApplied?: boolean } = {},
): PublishError {
  const message = pinterestMessage(answer);
  if (answer.status === 401)
    return new ReconnectNeededError(`Pinterest refused the account's access token (${message})`);
  // Trial access (developers.pinterest.com, "Access tiers") creates pins in Pinterest's API Sandbox only:
  // no reconnecting helps, the operator changes the app's access or its API URL.
  if (answer.status === 403 && /trial access/i.test(message))
    return new PermanentPublishError(
      'rejected_by_network',
      `Pinterest refused the ${what}: ${message}. This server's Pinterest app has Trial access: ask the ` +
        'operator to get Standard access for it, or to set PINTEREST_API_URL to Pinterest’s API Sandbox.',
    );
  if (answer.status === 403)
    return new ReconnectNeededError(`the account did not grant this app what it needs (${message})`);
  if (answer.status === 429)
    return new TransientPublishError(`Pinterest's rate limit for the account is reached (${what})`, {
      answered: true,
      retryAfterSeconds: rateLimitWait(answer, clock.now()),
    });
  if (answer.status >= 500)
    return new TransientPublishError(`Pinterest failed (${answer.status}, ${what}: ${message})`, {
      answered: !options.mayHaveApplied,
      retryAfterSeconds: retryAfterSeconds(answer.headers['retry-after'], clock.now()),
    });
  return new PermanentPublishError('rejected_by_network', `Pinterest refused the ${what}: ${message}`);
}
