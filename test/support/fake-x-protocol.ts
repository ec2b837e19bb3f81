import type { IncomingHttpHeaders } from 'node:http';

// What every part of the fake X shares: its answers and their error shapes, its ids, its rate limits and
// the `*.fields` parameters. The shapes are X's: the problem objects of API v2 (docs.x.com, "Response
// Codes & Errors"; `{title, detail, type, status}`, `type` `about:blank` for the plain ones) and the
// `errors` array of an invalid request; the limits are the per-user ones of docs.x.com's rate-limit tables.

/** X's names for the operations the fake serves (the API v2 OpenAPI document's operationIds), and OAuth's. */
export type FakeXOperation =
  | 'authorize'
  | 'token'
  | 'revoke'
  | 'getUsersMe'
  | 'createPosts'
  | 'deletePosts'
  | 'getPostsById'
  | 'getUsersPosts'
  | 'initializeMediaUpload'
  | 'appendMediaUpload'
  | 'finalizeMediaUpload'
  | 'getMediaUploadStatus'
  | 'mediaUpload'
  | 'createMediaMetadata';

/** The operations of API v2 proper, which take an access token and count against a rate limit. */
export type FakeXApiOperation = Exclude<FakeXOperation, 'authorize' | 'token' | 'revoke'>;

/** The account that signs in at the fake consent page and owns every post and media. */
export interface FakeXAccount {
  /** X's user id: up to 19 digits. */
  id: string;
  /** The handle, without `@`. */
  username: string;
  name: string;
  profileImageUrl: string;
  description: string;
  protected: boolean;
  verified: boolean;
  /** `none`, `blue`, `business` or `government`. */
  verifiedType: string;
  /** `None`, `Basic`, `Premium` or `PremiumPlus`. */
  subscriptionType: string;
  createdAt: string;
  followersCount: number;
  followingCount: number;
}

/** What the fake answers: a status, and a JSON body, an HTML page or nothing. */
export interface Answer {
  status: number;
  body?: unknown;
  html?: string;
  headers?: Record<string, string>;
}

/** A request as the handlers read it: its body already read. */
export interface XRequest {
  method: string;
  url: URL;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** What the parts of the fake share: its clock, its ids and the signed-in account. */
export interface FakeXContext {
  /** The fake's clock, in ms since the epoch: the machine's, moved by `advanceClock`. */
  now(): number;
  /** A new id for a post or a media. */
  newId(): string;
  account: FakeXAccount;
}

/** Thrown by a handler: the answer X gives instead. */
export class XError extends Error {
  constructor(readonly answer: Answer) {
    super(`X answers ${answer.status}`);
  }
}

const PROBLEMS = 'https://api.x.com/2/problems';

/** A plain problem: `type` is `about:blank` and `title` the status's reason, as X answers 401, 403 and 429. */
export function problem(status: number, title: string, detail: string): Answer {
  return { status, body: { title, detail, type: 'about:blank', status } };
}

export const unauthorized = (): Answer => problem(401, 'Unauthorized', 'Unauthorized');

/** X's 403, with what it says in `detail` (the duplicate post, the missing scope, the deleted post replied to). */
export const forbidden = (detail: string): XError => new XError(problem(403, 'Forbidden', detail));

/**
 * 400 for a request X's validation refuses: the `errors` array says what, with the parameters concerned,
 * under the generic `detail` of X's invalid-request problem.
 */
export function invalidRequest(message: string, parameters: Record<string, unknown[]> = {}): XError {
  return new XError({
    status: 400,
    body: {
      errors: [{ parameters, message }],
      title: 'Invalid Request',
      detail: 'One or more parameters to your request was invalid.',
      type: `${PROBLEMS}/invalid-request`,
    },
  });
}

/** A resource that does not exist: X answers 200 with the problem in `errors` (docs.x.com, "Partial errors"). */
export function notFound(resourceType: 'tweet' | 'user', id: string, parameter: string): Answer {
  return {
    status: 200,
    body: {
      errors: [
        {
          value: id,
          detail: `Could not find ${resourceType} with ${parameter}: [${id}].`,
          title: 'Not Found Error',
          resource_type: resourceType,
          parameter,
          resource_id: id,
          type: `${PROBLEMS}/resource-not-found`,
        },
      ],
    },
  };
}

/** X's plain problem for a server error (500, 502, 503, 504). */
export function serverError(status: number): Answer {
  const titles: Record<number, string> = {
    500: 'Internal Server Error',
    502: 'Bad Gateway',
    503: 'Service Unavailable',
    504: 'Gateway Timeout',
  };
  const title = titles[status] ?? 'Server Error';
  return problem(status, title, title);
}

// ---- ids ----

/** Twitter's epoch of its snowflake ids: 2010-11-04T01:42:54.657Z. */
const SNOWFLAKE_EPOCH = 1_288_834_974_657n;

/**
 * Ids as X makes them (snowflakes): the milliseconds since its epoch, shifted past 22 bits of machine and
 * sequence, so that a later id is a larger number, as `since_id` and `until_id` rely on.
 */
export function snowflakes(now: () => number): () => string {
  let lastMs = 0n;
  let sequence = 0n;
  return () => {
    let ms = BigInt(Math.floor(now()));
    if (ms <= lastMs) {
      ms = lastMs;
      sequence += 1n;
      // 12 bits of sequence per millisecond: past them, the next millisecond's.
      if (sequence > 4095n) {
        ms += 1n;
        sequence = 0n;
      }
    } else sequence = 0n;
    lastMs = ms;
    return String(((ms - SNOWFLAKE_EPOCH) << 22n) | (1n << 12n) | sequence);
  };
}

/** Compares two ids as the numbers they are. */
export const compareIds = (a: string, b: string): number => {
  const difference = BigInt(a) - BigInt(b);
  return difference === 0n ? 0 : difference > 0n ? 1 : -1;
};

export const ID_PATTERN = /^[0-9]{1,19}$/;

// ---- rate limits ----

/** The windows a limit counts in: X's 15 minutes per user, and its 24 hours per app and per user for posts. */
export type FakeXLimitWindow = '15min' | 'app-24hour' | 'user-24hour';

const QUARTER = 15 * 60;
const DAY = 24 * 3600;

/**
 * The per-user limits of docs.x.com's rate-limit tables, per 15 minutes; creating posts also counts in the
 * app's 10,000 a day (same tables) and the account's own daily cap (X's 2,400 posts a day).
 */
export const LIMITS: Record<FakeXApiOperation, Partial<Record<FakeXLimitWindow, number>>> = {
  getUsersMe: { '15min': 75 },
  createPosts: { '15min': 100, 'app-24hour': 10_000, 'user-24hour': 2_400 },
  deletePosts: { '15min': 50 },
  getPostsById: { '15min': 900 },
  getUsersPosts: { '15min': 900 },
  mediaUpload: { '15min': 500 },
  getMediaUploadStatus: { '15min': 1_000 },
  initializeMediaUpload: { '15min': 1_875 },
  appendMediaUpload: { '15min': 1_875 },
  finalizeMediaUpload: { '15min': 1_875 },
  createMediaMetadata: { '15min': 500 },
};

const HEADER_PREFIX: Record<FakeXLimitWindow, string> = {
  '15min': 'x-rate-limit',
  'app-24hour': 'x-app-limit-24hour',
  'user-24hour': 'x-user-limit-24hour',
};

interface Bucket {
  limit: number;
  windowSeconds: number;
  used: number;
  /** When the window ends (ms); 0 until the first call opens one. */
  resetAt: number;
}

/** Every limit of the one account and app the fake knows, counted on the fake's clock. */
export class RateLimits {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly now: () => number) {}

  private bucket(operation: FakeXApiOperation, window: FakeXLimitWindow): Bucket | undefined {
    const limit = LIMITS[operation][window];
    if (limit === undefined) return undefined;
    const key = `${operation} ${window}`;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { limit, windowSeconds: window === '15min' ? QUARTER : DAY, used: 0, resetAt: 0 };
      this.buckets.set(key, bucket);
    }
    // A window opens with the first call after the last one ended.
    if (bucket.resetAt <= this.now()) {
      bucket.used = 0;
      bucket.resetAt = this.now() + bucket.windowSeconds * 1000;
    }
    return bucket;
  }

  /**
   * Counts a call: its rate-limit headers, and whether a limit was used up before it (X then answers 429
   * and the call does nothing).
   */
  take(operation: FakeXApiOperation): { allowed: boolean; headers: Record<string, string> } {
    const windows = (Object.keys(LIMITS[operation]) as FakeXLimitWindow[]).map((window) => ({
      window,
      bucket: this.bucket(operation, window)!,
    }));
    const allowed = windows.every(({ bucket }) => bucket.used < bucket.limit);
    if (allowed) for (const { bucket } of windows) bucket.used += 1;
    const headers: Record<string, string> = {};
    for (const { window, bucket } of windows) {
      const prefix = HEADER_PREFIX[window];
      headers[`${prefix}-limit`] = String(bucket.limit);
      headers[`${prefix}-remaining`] = String(Math.max(0, bucket.limit - bucket.used));
      // Epoch seconds, as X gives them.
      headers[`${prefix}-reset`] = String(Math.ceil(bucket.resetAt / 1000));
    }
    return { allowed, headers };
  }

  /** The limit is used up until `resetInSeconds` from now, as if the calls had been made. */
  exhaust(operation: FakeXApiOperation, window: FakeXLimitWindow, resetInSeconds: number): void {
    const bucket = this.bucket(operation, window);
    if (!bucket) throw new Error(`X has no ${window} limit on ${operation}`);
    bucket.used = bucket.limit;
    bucket.resetAt = this.now() + resetInSeconds * 1000;
  }
}

// ---- fields ----

/**
 * The values of a `*.fields` or `expansions` parameter, each checked against X's list; X refuses an unknown
 * one with the list of those it knows.
 */
export function listParameter(query: URLSearchParams, names: string[], known: readonly string[]): string[] {
  const name = names.find((n) => query.has(n));
  if (name === undefined) return [];
  const values = query
    .get(name)!
    .split(',')
    .map((value) => value.trim());
  const unknown = values.find((value) => !known.includes(value));
  if (unknown !== undefined) {
    throw invalidRequest(`The \`${name}\` query parameter value [${unknown}] is not one of [${known.join(',')}]`, {
      [name]: [query.get(name)],
    });
  }
  return values;
}

/** The JSON object of a request's body, or X's 400 when the body is not JSON or not an object. */
export function jsonBody(request: XRequest): Record<string, unknown> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json')
    throw invalidRequest('Requests with bodies must have content-type of application/json.');
  let value: unknown;
  try {
    value = JSON.parse(request.body.toString('utf8'));
  } catch {
    throw invalidRequest('The request body is not valid JSON.');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw invalidRequest('The request body must be a JSON object.');
  return value as Record<string, unknown>;
}

/**
 * Refuses properties the OpenAPI document does not declare (its request schemas say
 * `additionalProperties: false`), and those it declares but the fake does not model, so that a request
 * the fake would misread fails loudly.
 */
export function onlyProperties(
  object: Record<string, unknown>,
  where: string,
  modeled: readonly string[],
  declared: readonly string[] = modeled,
): void {
  for (const key of Object.keys(object)) {
    const path = where === '' ? key : `${where}.${key}`;
    if (!declared.includes(key))
      throw invalidRequest(
        `$.${path}: is not defined in the schema and the schema does not allow additional properties`,
      );
    if (!modeled.includes(key)) throw invalidRequest(`The fake X does not model \`${path}\`.`);
  }
}

/** The bearer token of a request, if it has one. */
export const bearerToken = (request: XRequest): string | undefined =>
  /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
