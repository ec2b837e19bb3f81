import { randomBytes } from 'node:crypto';
import type { Clock } from '../../core/clock.js';
import type { XConfig } from '../../core/config.js';
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
/** An account's timeline page of 100 posts with their entities stays well below this. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** A request of X's API: JSON, a form, a multipart form (the media upload), or nothing. */
export type XBody =
  | { json: unknown }
  | { form: Record<string, string> }
  | { multipart: { fields: Record<string, string>; file: { name: string; contentType: string; bytes: Buffer } } };

export interface XRequestOptions {
  method: 'GET' | 'POST' | 'DELETE';
  /** `Bearer <access token>` for API v2, `Basic …` (the app) at the OAuth endpoints. */
  authorization: string;
  body?: XBody;
  signal?: AbortSignal;
  timeoutSeconds?: number;
}

/**
 * The one way this server calls X's API (api.x.com): a request with its credentials, the answer as
 * it came. X could not be reached: `TransientPublishError` without an answer (see `callNetwork`).
 */
export class XApi {
  constructor(
    private readonly config: XConfig,
    private readonly outbound: OutboundClient,
  ) {}

  /** Sends a request to `path` (`/2/…`) of X's API. */
  send(path: string, options: XRequestOptions): Promise<NetworkAnswer> {
    const { headers, body } = encode(options.body);
    return callNetwork(this.outbound, 'X', `${this.config.apiUrl}${path}`, {
      method: options.method,
      headers: { Accept: 'application/json', Authorization: options.authorization, ...headers },
      ...(body !== undefined ? { body } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      timeoutSeconds: options.timeoutSeconds ?? TIMEOUT_SECONDS,
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
  }

  /** The HTTP Basic credentials of this server's X app, as its OAuth endpoints take them (RFC 6749 §2.3.1). */
  appAuthorization(): string {
    const id = encodeURIComponent(this.config.clientId);
    const secret = encodeURIComponent(this.config.clientSecret);
    return `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
  }
}

function encode(body: XBody | undefined): { headers: Record<string, string>; body?: Buffer | string } {
  if (body === undefined) return { headers: {} };
  if ('json' in body)
    return { headers: { 'Content-Type': 'application/json; charset=UTF-8' }, body: JSON.stringify(body.json) };
  if ('form' in body)
    return {
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(body.form).toString(),
    };
  // RFC 7578: each field a part; the boundary is random, so no byte of the file can end a part early.
  const boundary = `----x-upload-${randomBytes(16).toString('hex')}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(body.multipart.fields))
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  const { file } = body.multipart;
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="media"; filename="${file.name.replace(/["\r\n\\]/g, '_')}"` +
        `\r\nContent-Type: ${file.contentType}\r\n\r\n`,
    ),
    file.bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  );
  return { headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}` }, body: Buffer.concat(parts) };
}

/** An answer's JSON body, or `undefined` when it is not JSON (a proxy's page). */
export function jsonOf<T>(answer: NetworkAnswer): T | undefined {
  try {
    return JSON.parse(answer.body) as T;
  } catch {
    return undefined;
  }
}

interface Problem {
  title?: string;
  detail?: string;
  errors?: { message?: string; detail?: string }[];
  error?: string;
  error_description?: string;
}

/**
 * What X says in an error answer, in its words: the messages of an invalid request's `errors` (its
 * `detail` is only "One or more parameters to your request was invalid."), or the problem's `detail`,
 * or OAuth's `error_description`; the status when the body says nothing.
 */
export function xMessage(answer: NetworkAnswer): string {
  const problem = jsonOf<Problem>(answer);
  const messages = (problem?.errors ?? []).map((e) => e.message ?? e.detail).filter((m): m is string => !!m);
  if (messages.length > 0) return messages.join(' ');
  return problem?.detail || problem?.error_description || problem?.title || `X answered ${answer.status}`;
}

/**
 * The three windows X counts calls in, each reported in headers of its own: the endpoint's 15 minutes
 * per user (`x-rate-limit-*`), and for posting the account's and the app's day (`x-user-limit-24hour-*`,
 * `x-app-limit-24hour-*`). Their `-reset` is in epoch seconds.
 */
const WINDOWS = ['x-rate-limit', 'x-user-limit-24hour', 'x-app-limit-24hour'];

/**
 * How long to wait after X's 429: until the window that is used up resets (the latest, if more than
 * one is), a second past it. A 429 while the 15-minute window has calls left is a daily cap, reported
 * in the day's headers. Without any of them, `Retry-After`, else nothing (the publisher's own wait).
 */
export function rateLimitWait(answer: NetworkAnswer, now: Date): number | undefined {
  const header = (name: string) => {
    const value = answer.headers[name];
    return typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : undefined;
  };
  const resets = WINDOWS.filter((window) => header(`${window}-remaining`) === 0)
    .map((window) => header(`${window}-reset`))
    .filter((reset): reset is number => reset !== undefined);
  const reset = resets.length > 0 ? Math.max(...resets) : header('x-rate-limit-reset');
  if (reset === undefined) return retryAfterSeconds(answer.headers['retry-after'], now);
  return Math.max(1, reset - Math.floor(now.getTime() / 1000) + 1);
}

/**
 * X's error answer to a step of a publication, as the publisher takes it: 401 the account's
 * credentials (after the refresh already tried), 429 a wait until the limit resets, 5xx a passing
 * failure, anything else a refusal in X's words. `answered: false` for a 5xx to a call that may have
 * done its work all the same (creating a post): the publisher then asks X before anything else.
 */
export function publishError(
  answer: NetworkAnswer,
  what: string,
  clock: Clock,
  options: { mayHaveApplied?: boolean } = {},
): PublishError {
  const message = xMessage(answer);
  if (answer.status === 401) return new ReconnectNeededError(`X refused the account's access token (${message})`);
  if (answer.status === 429)
    return new TransientPublishError(`X's rate limit for the account is reached (${what})`, {
      answered: true,
      retryAfterSeconds: rateLimitWait(answer, clock.now()),
    });
  if (answer.status >= 500)
    return new TransientPublishError(`X failed (${answer.status}, ${what}: ${message})`, {
      answered: !options.mayHaveApplied,
      retryAfterSeconds: retryAfterSeconds(answer.headers['retry-after'], clock.now()),
    });
  return new PermanentPublishError('rejected_by_network', `X refused the ${what}: ${message}`);
}
