import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

// What every part of the fake Meta shares: the request as the Graph API reads it (parameters from the query
// string and the body alike, the access token from either), its answers, and its errors in the envelope of
// developers.facebook.com's "Handling Errors" (`{error: {message, type, code, error_subcode, fbtrace_id}}`),
// with the codes that page and the Instagram Platform's "Error Codes" list.

/** The operations the fake serves: what its switches and its request log name. */
export type FakeMetaOperation =
  | 'dialog'
  | 'accessToken'
  | 'debugToken'
  | 'me'
  | 'accounts'
  | 'permissions'
  | 'revokePermissions'
  | 'node'
  | 'uploadStart'
  | 'uploadTransfer'
  | 'uploadStatus'
  | 'pageFeed'
  | 'pagePhotos'
  | 'pageVideos'
  | 'pagePosts'
  | 'comments'
  | 'objectComments'
  | 'igMedia'
  | 'igMediaList'
  | 'igStories'
  | 'igMediaPublish'
  | 'igPublishingLimit';

/** The error object of Meta's envelope, `fbtrace_id` aside. */
export interface GraphErrorBody {
  message: string;
  type: string;
  code: number;
  error_subcode?: number;
  is_transient?: boolean;
  error_user_title?: string;
  error_user_msg?: string;
}

/** What the fake answers: a status, and a JSON body, an HTML page or nothing. */
export interface Answer {
  status: number;
  body?: unknown;
  html?: string;
  headers?: Record<string, string>;
}

/** A file sent in a multipart body. */
export interface UploadedFile {
  bytes: Buffer;
  type: string;
  name: string;
}

/** A request as the handlers read it. */
export interface GraphRequest {
  method: string;
  url: URL;
  /** `v23.0` when the path named one; Meta serves an unversioned path at its oldest available version. */
  version: string | null;
  /** The path without the version: `/me/accounts`, `/17841400000000001/media`. */
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The query string's parameters, then the body's (form, multipart or JSON), which win. */
  params: Record<string, string>;
  files: Record<string, UploadedFile>;
  /** `access_token`, or the `Authorization: Bearer …` / `OAuth …` header. */
  token: string | undefined;
}

/** Thrown by a handler: Meta's error answer instead. */
export class GraphError extends Error {
  constructor(
    readonly status: number,
    readonly error: GraphErrorBody,
  ) {
    super(error.message);
  }
}

export const graphError = (status: number, error: Omit<GraphErrorBody, 'type'> & { type?: string }) =>
  new GraphError(status, { type: 'OAuthException', ...error });

/** `fbtrace_id`: an opaque support identifier, different on every answer. */
export const traceId = () => `A${randomBytes(16).toString('base64url').slice(0, 22)}`;

/** Numeric ids as Meta's look (15–17 digits), in increasing order. */
export function numericIds(start: bigint): () => string {
  let next = start;
  return () => {
    next += BigInt(1 + Math.floor(Math.random() * 50));
    return String(next);
  };
}

/** An access token as Meta's look: `EAA`, the app's mark, then base62. */
export function tokenValue(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(160);
  return `EAAG${Array.from(bytes, (b) => alphabet[b % 62]).join('')}`;
}

// ---- the errors the fake answers ----

/** No token at all. */
export const tokenRequired = () =>
  graphError(400, { message: 'An access token is required to request this resource.', code: 104 });

/** A token Meta never issued (or not one at all). */
export const tokenUnparsable = () =>
  graphError(400, { message: 'Invalid OAuth access token - Cannot parse access token', code: 190 });

/** Why a token Meta issued no longer works, with the subcodes of "Handling Errors". */
export type FakeMetaTokenEnd = 'expired' | 'password-changed' | 'logged-out' | 'app-removed';

const PDT = (ms: number) =>
  new Date(ms - 7 * 3600_000)
    .toUTCString()
    .replace(/^(\w+), (\d+) (\w+) \d\d(\d\d) ([\d:]+) GMT$/, '$1, $2-$3-$4 $5 PDT');

export function tokenEnded(end: FakeMetaTokenEnd, appId: string, expiredAt: number, now: number): GraphError {
  const validating = 'Error validating access token: ';
  switch (end) {
    case 'expired':
      return graphError(400, {
        message: `${validating}Session has expired on ${PDT(expiredAt)}. The current time is ${PDT(now)}.`,
        code: 190,
        error_subcode: 463,
      });
    case 'password-changed':
      return graphError(400, {
        message: `${validating}The session has been invalidated because the user changed their password or Facebook has changed the session for security reasons.`,
        code: 190,
        error_subcode: 460,
      });
    case 'logged-out':
      return graphError(400, {
        message: `${validating}The session is invalid because the user logged out.`,
        code: 190,
        error_subcode: 467,
      });
    case 'app-removed':
      return graphError(400, {
        message: `${validating}The user has not authorized application ${appId}.`,
        code: 190,
        error_subcode: 458,
      });
  }
}

/** An object that does not exist, or that this token may not see (Meta does not say which). */
export const unsupported = (method: string, id: string) =>
  graphError(400, {
    message: `Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api`,
    type: 'GraphMethodException',
    code: 100,
    error_subcode: 33,
  });

/** A parameter missing or wrong. */
export const invalidParameter = (message: string, userMessage?: string) =>
  graphError(400, {
    message: `(#100) ${message}`,
    code: 100,
    ...(userMessage ? { error_user_msg: userMessage } : {}),
  });

/** The app lacks a permission the call needs (code 10), as the Instagram endpoints answer it. */
export const noPermission = () =>
  graphError(403, { message: '(#10) Application does not have permission for this action', code: 10 });

/** The user did not grant what publishing to a Page needs (code 200). */
export const pagePostingNotAllowed = () =>
  graphError(403, {
    message:
      '(#200) If posting to a page, requires both pages_read_engagement and pages_manage_posts as an admin with sufficient administrative permission',
    code: 200,
  });

/** The rate-limit codes of "Handling Errors" and "Rate Limits". */
export type FakeMetaRateLimitCode = 4 | 17 | 32 | 613;

export function rateLimited(code: FakeMetaRateLimitCode): GraphError {
  const messages: Record<FakeMetaRateLimitCode, string> = {
    4: '(#4) Application request limit reached',
    17: '(#17) User request limit reached',
    32: '(#32) Page request limit reached',
    613: '(#613) Calls to this api have exceeded the rate limit.',
  };
  // Code 4 is seen answered with 403 (the SDKs log `HttpStatus: 403, errorCode: 4`), the others with 400.
  return graphError(code === 4 ? 403 : 400, { message: messages[code], code, is_transient: true });
}

/** The Instagram account's 24-hour publishing limit used up (Instagram "Error Codes": code 9, subcode 2207042). */
export const publishingLimitReached = () =>
  graphError(400, {
    message: 'Application request limit reached',
    code: 9,
    error_subcode: 2207042,
    is_transient: false,
    error_user_title: 'Reached publishing limit',
    error_user_msg: 'You reached maximum number of posts that is allowed to be published by Content Publishing API.',
  });

/** A container published before it is ready, or that cannot be published (code 9007, subcode 2207027). */
export const mediaNotAvailable = () =>
  graphError(400, {
    message: 'Media ID is not available',
    code: 9007,
    error_subcode: 2207027,
    is_transient: false,
    error_user_title: 'Media not ready for publishing',
    error_user_msg: 'The media is not ready for publishing, please wait for a moment',
  });

/** A container that was not published within 24 hours (code -2, subcode 2207020). */
export const containerExpired = () =>
  graphError(400, {
    message: 'The media you are trying to access has expired. Please try to upload again.',
    code: -2,
    error_subcode: 2207020,
    is_transient: false,
    error_user_title: 'Media expired',
    error_user_msg: 'The media you are trying to access has expired. Please try to upload again.',
  });

/** Media Instagram could not download from the URL it was given (code 9004, subcode 2207052). */
export const mediaNotFetched = (url: string) =>
  graphError(400, {
    message: 'Only photo or video can be accepted as media type.',
    code: 9004,
    error_subcode: 2207052,
    is_transient: false,
    error_user_title: 'Media download has failed.',
    error_user_msg: `The media could not be fetched from this URI: ${url}. Please check the following requirements: The media URI must be publicly accessible.`,
  });

// ---- parameters ----

/** The parameters of a request: the query string's, then the body's, which win, as the Graph API reads them. */
export async function readParameters(
  url: URL,
  headers: IncomingHttpHeaders,
  body: Buffer,
): Promise<{ params: Record<string, string>; files: Record<string, UploadedFile> }> {
  const params: Record<string, string> = Object.fromEntries(url.searchParams);
  const files: Record<string, UploadedFile> = {};
  const contentType = headers['content-type'] ?? '';
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (body.length === 0) return { params, files };
  if (type === 'application/x-www-form-urlencoded') {
    Object.assign(params, Object.fromEntries(new URLSearchParams(body.toString('utf8'))));
  } else if (type === 'multipart/form-data') {
    const form = await new Request('http://multipart.invalid/', {
      method: 'POST',
      headers: { 'content-type': contentType },
      body: new Uint8Array(body),
    }).formData();
    for (const [name, value] of form.entries()) {
      if (typeof value === 'string') params[name] = value;
      else files[name] = { bytes: Buffer.from(await value.arrayBuffer()), type: value.type, name: value.name };
    }
  } else if (type === 'application/json') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw invalidParameter('The request body is not valid JSON');
    }
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
      for (const [name, value] of Object.entries(parsed as Record<string, unknown>))
        params[name] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  return { params, files };
}

/** The token of a request: `access_token`, or the Authorization header (`Bearer` or Meta's own `OAuth`). */
export function tokenOf(params: Record<string, string>, headers: IncomingHttpHeaders): string | undefined {
  const header = /^(?:Bearer|OAuth)\s+(\S+)$/i.exec(headers.authorization ?? '')?.[1];
  return params.access_token ?? header;
}

/** `fields=a,b{c,d},e` → its top-level names (what the fake models of nested fields is the field itself). */
export function fieldsOf(params: Record<string, string>, defaults: string[]): string[] {
  const value = params.fields;
  if (value === undefined || value.trim() === '') return defaults;
  const names: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of value) {
    if (char === '{' || char === '(') depth += 1;
    if (char === '}' || char === ')') depth -= 1;
    if (char === ',' && depth === 0) {
      names.push(current.trim());
      current = '';
    } else if (depth === 0 && char !== '}' && char !== ')') current += char;
  }
  if (current.trim() !== '') names.push(current.trim());
  return names.map((name) => name.replace(/\..*$/, ''));
}

/** Picks the asked fields of an object; `id` always comes back, as Meta answers. */
export function pick(object: Record<string, unknown>, fields: string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const field of fields) if (object[field] !== undefined) picked[field] = object[field];
  if (object.id !== undefined) picked.id = object.id;
  return picked;
}

/** A list parameter, as Meta takes them: a JSON array, or values separated by commas. */
export function listParameter(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed.startsWith('[')) {
    try {
      const parsed = JSON.parse(trimmed) as unknown;
      if (Array.isArray(parsed)) return parsed.map((item) => (typeof item === 'string' ? item : JSON.stringify(item)));
    } catch {
      return undefined;
    }
  }
  return trimmed === '' ? [] : trimmed.split(',').map((item) => item.trim());
}

/** A page of a list, newest first, with Meta's cursor paging (`before`/`after` are positions, base64). */
export function pageOf<T>(items: T[], params: Record<string, string>, origin: string, path: string) {
  const limit = Math.max(1, Math.min(100, Number(params.limit ?? 25) || 25));
  const from = params.after ? Number(Buffer.from(params.after, 'base64url').toString('utf8')) + 1 : 0;
  const slice = items.slice(from, from + limit);
  const cursor = (index: number) => Buffer.from(String(index), 'utf8').toString('base64url');
  const paging: Record<string, unknown> = {};
  if (slice.length > 0) {
    paging.cursors = { before: cursor(from), after: cursor(from + slice.length - 1) };
    if (from + limit < items.length) {
      const next = new URL(`${origin}${path}`);
      for (const [name, value] of Object.entries(params)) if (name !== 'after') next.searchParams.set(name, value);
      next.searchParams.set('after', cursor(from + slice.length - 1));
      paging.next = next.toString();
    }
  }
  return { data: slice, ...(slice.length > 0 ? { paging } : {}) };
}
