import { randomBytes } from 'node:crypto';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// What the fake Threads and the fake Instagram (with Instagram Login) share: both are Meta's Graph API on
// their own hosts (graph.threads.net, graph.instagram.com) and publish the same way: an authorization window
// that redirects back with a code (Meta appends `#_`), short-lived tokens exchanged for 60-day ones that are
// refreshed, media containers that Meta fills by downloading the media from the URL it is given, whose status
// is polled until FINISHED, then published once; a rolling 24-hour publishing quota; errors in the Graph
// envelope `{"error": {message, type, code, error_subcode, fbtrace_id}}`.
//
// This part: the requests and answers of a Graph host, its errors, ids and fields, its failure switches and
// the server; fake-graph-login.ts has the authorization window and the tokens, fake-graph-publishing.ts the
// containers and the publishing quota.

/** The fields of a Graph error, as Meta puts them in `error` (the fake adds `fbtrace_id`). */
export interface GraphErrorFields {
  message: string;
  type: string;
  code: number;
  error_subcode?: number;
  is_transient?: boolean;
  error_user_title?: string;
  error_user_msg?: string;
}

/** An error the fake answered, kept as Meta's support would be told of it: with its `fbtrace_id`. */
export interface FakeGraphErrorRecord extends GraphErrorFields {
  status: number;
  method: string;
  path: string;
  fbtrace_id: string;
}

/** Thrown by a handler: the error Meta answers instead, with its HTTP status. */
export class GraphError extends Error {
  constructor(
    readonly status: number,
    readonly fields: GraphErrorFields,
    readonly headers: Record<string, string> = {},
  ) {
    super(fields.message);
  }
}

/**
 * What a handler answers: a JSON body, an HTML page or a redirect; `lose` cuts the connection instead, `hold`
 * keeps the answer back.
 */
export interface Answer {
  status: number;
  body?: unknown;
  /** A body written as is: JSON whose ids are numbers too large for a double, as Meta sends some. */
  rawJson?: string;
  html?: string;
  headers?: Record<string, string>;
  lose?: boolean;
  hold?: AnswerHold;
}

/**
 * An answer held back once its work is done (the post published, the media made): sent `ms` later, or, without
 * `ms`, never; either way it is dropped when the caller goes away first, as Meta's answer to a caller that died
 * meanwhile is.
 */
export interface AnswerHold {
  ms?: number;
}

/** A request as the handlers read it: the Graph version taken off the path, every parameter in one place. */
export interface GraphRequest {
  method: string;
  /** The path without the version, e.g. `/me` or `/17841400000000001/threads`. */
  path: string;
  /** `v1.0`, `v23.0`…, or null for an unversioned path. */
  version: string | null;
  /** Query string, form body and JSON body together, as the Graph API reads them. */
  params: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The access token: `access_token` or `Authorization: Bearer`. */
  accessToken: string | undefined;
}

// ---- errors ----

/** The Graph API's answer to an id it does not know or the token may not see (code 100, subcode 33). */
export function unsupportedRequest(method: string, id: string): GraphError {
  return new GraphError(400, {
    message: `Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api`,
    type: 'GraphMethodException',
    code: 100,
    error_subcode: 33,
  });
}

/** A parameter missing or wrong (code 100), with the exception type of the host. */
export function invalidParameter(type: string, message: string, subcode?: number): GraphError {
  return new GraphError(400, {
    message,
    type,
    code: 100,
    ...(subcode === undefined ? {} : { error_subcode: subcode }),
  });
}

/** A permission the token was not granted (code 10). */
export function permissionMissing(permission: string): GraphError {
  return new GraphError(403, {
    message: `(#10) Application does not have permission for this action (${permission})`,
    type: 'OAuthException',
    code: 10,
  });
}

/** The rate-limit codes of the Graph API's error reference, and what Meta says with each. */
export type GraphRateLimitCode = 4 | 17 | 32 | 613;
const RATE_LIMITS: Record<GraphRateLimitCode, string> = {
  4: '(#4) Application request limit reached',
  17: '(#17) User request limit reached',
  32: '(#32) Page request limit reached',
  613: '(#613) Calls to this api have exceeded the rate limit.',
};

/** The app's limit also shows in `X-App-Usage`: percentages of the hour's allowance, 100 when it is used up. */
export function rateLimited(code: GraphRateLimitCode): GraphError {
  return new GraphError(
    400,
    { message: RATE_LIMITS[code], type: 'OAuthException', code, is_transient: true },
    code === 4 ? { 'X-App-Usage': JSON.stringify({ call_count: 100, total_cputime: 12, total_time: 15 }) } : {},
  );
}
/** The Graph API's passing failure (code 2): retry later. */
export function serverError(status: number): GraphError {
  return new GraphError(status, {
    message: 'An unexpected error has occurred. Please retry your request later.',
    type: 'OAuthException',
    code: 2,
    is_transient: true,
  });
}
// ---- switches ----

/** The failure switches both fakes have, each for an operation of the host or for any. */
export class Switches<Operation extends string> {
  private readonly rateLimits: { operation: Operation | undefined; code: GraphRateLimitCode }[] = [];
  private readonly failures: { operation: Operation | undefined; status: number }[] = [];
  private readonly lost: Operation[] = [];
  private readonly holds: { operation: Operation; skip: number; hold: AnswerHold }[] = [];

  rateLimitNext(code: GraphRateLimitCode, operation?: Operation, count = 1): void {
    for (let i = 0; i < count; i++) this.rateLimits.push({ operation, code });
  }

  failNext(status: number, operation?: Operation): void {
    this.failures.push({ operation, status });
  }

  loseNextAnswer(operation: Operation): void {
    this.lost.push(operation);
  }

  /** The call of `operation` after the next `skip` ones that are done holds its answer back, as `hold` says. */
  holdNextAnswer(operation: Operation, hold: AnswerHold, skip = 0): void {
    this.holds.push({ operation, skip, hold });
  }

  /** The error this call is answered instead of being done, if a switch says so. */
  refusal(operation: Operation): GraphError | undefined {
    const limited = take(this.rateLimits, operation);
    if (limited) return rateLimited(limited.code);
    const failure = take(this.failures, operation);
    if (failure) return serverError(failure.status);
    return undefined;
  }

  /** Whether this call, once done, loses its answer. */
  loses(operation: Operation): boolean {
    const at = this.lost.indexOf(operation);
    if (at < 0) return false;
    this.lost.splice(at, 1);
    return true;
  }

  /** How this call, once done, holds its answer back, if a switch says so (a call that is skipped counts). */
  heldAs(operation: Operation): AnswerHold | undefined {
    const at = this.holds.findIndex((entry) => entry.operation === operation);
    if (at < 0) return undefined;
    const entry = this.holds[at]!;
    if (entry.skip > 0) {
      entry.skip -= 1;
      return undefined;
    }
    this.holds.splice(at, 1);
    return entry.hold;
  }
}

/**
 * Writes an answer held back (`AnswerHold`): after its `ms`, or never, unless the caller went away before; the
 * answers still held are counted in `held`.
 */
export function sendHeld(res: ServerResponse, hold: AnswerHold, held: { count: number }, write: () => void): void {
  held.count += 1;
  let timer: NodeJS.Timeout | undefined;
  let released = false;
  const release = () => {
    if (released) return false;
    released = true;
    held.count -= 1;
    clearTimeout(timer);
    return true;
  };
  // The connection closed with the answer unsent: the caller went away (or the fake closed).
  res.on('close', release);
  if (hold.ms !== undefined)
    timer = setTimeout(() => {
      if (release()) write();
    }, hold.ms);
}

function take<T extends { operation: unknown }>(list: T[], operation: unknown): T | undefined {
  const at = list.findIndex((entry) => entry.operation === undefined || entry.operation === operation);
  return at < 0 ? undefined : list.splice(at, 1)[0];
}
// ---- ids and fields ----

/** Ids as Meta's are: decimal strings of 17 digits, later ones larger. */
export function graphIds(start: bigint): () => string {
  let next = start;
  return () => {
    next += BigInt(1 + (randomBytes(1)[0]! % 7));
    return String(next);
  };
}

/** A shortcode as the public URL of a post carries it. */
export function shortcode(): string {
  return randomBytes(8).toString('base64url').slice(0, 11);
}

/** The fields a read asked for (`fields=a,b,c`), or the default ones. */
export function fieldsOf(params: URLSearchParams, defaults: string[]): string[] {
  const asked = params.get('fields');
  if (asked === null || asked.trim() === '') return defaults;
  return asked
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '');
}

/** An object with the fields asked for; `id` always, as the Graph API adds it; unknown fields are refused. */
export function pick(
  type: string,
  all: Record<string, unknown>,
  fields: string[],
  what: string,
): Record<string, unknown> {
  const shaped: Record<string, unknown> = {};
  for (const field of fields) {
    if (!(field in all))
      throw invalidParameter(type, `(#100) Tried accessing nonexisting field (${field}) on node type (${what})`);
    if (all[field] !== undefined) shaped[field] = all[field];
  }
  if (all.id !== undefined) shaped.id = all.id;
  return shaped;
}

/**
 * A page of a Graph list in the order given: `limit` (25 unless asked, at most 100) from the `after` cursor,
 * with `paging.cursors` and, when more follow, `paging.next`: the same request for the next page, token included,
 * as Meta gives it.
 */
export function pageOf<T>(
  request: GraphRequest,
  origin: string,
  type: string,
  items: T[],
  shape: (item: T, fields: string[]) => unknown,
): Answer {
  const params = request.params;
  const limit = params.has('limit') ? Number(params.get('limit')) : 25;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw invalidParameter(type, '(#100) Param limit must be a number from 1 to 100');
  const cursor = (index: number) => Buffer.from(String(index)).toString('base64url');
  const after = params.has('after') ? Number(Buffer.from(params.get('after')!, 'base64url').toString('utf8')) : 0;
  if (!Number.isInteger(after) || after < 0) throw invalidParameter(type, '(#100) Param after is not a valid cursor');
  const page = items.slice(after, after + limit);
  const fields = fieldsOf(params, ['id']);
  const paging: Record<string, unknown> = { cursors: { before: cursor(after), after: cursor(after + page.length) } };
  if (items.length > after + page.length) {
    const next = new URLSearchParams(params);
    next.set('after', cursor(after + page.length));
    if (request.accessToken !== undefined) next.set('access_token', request.accessToken);
    paging.next = `${origin}${request.version === null ? '' : `/${request.version}`}${request.path}?${next.toString()}`;
  }
  return {
    status: 200,
    body: { data: page.map((item) => shape(item, fields)), ...(page.length > 0 ? { paging } : {}) },
  };
}

/** The Graph API's timestamp: ISO 8601 to the second with a `+0000` offset. */
export const graphTime = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+0000');
// ---- the server ----

/** A request the fake saw: method, path with the query (the token left out) and its operation. */
export interface FakeGraphRequestRecord {
  method: string;
  path: string;
  operation: string | null;
}

/**
 * Serves a Graph host on loopback: reads every request into a `GraphRequest`, asks `handle` for the answer
 * and writes it; a GraphError becomes Meta's envelope with a new `fbtrace_id` kept in `errors`; an answer with
 * `lose` is not written, the connection is destroyed instead; one with `hold` is written as it says, and is
 * counted by `heldAnswers` until then.
 */
export async function serveGraph(
  handle: (request: GraphRequest, record: FakeGraphRequestRecord) => Promise<Answer>,
  errors: FakeGraphErrorRecord[],
  requests: FakeGraphRequestRecord[],
): Promise<{ url: string; heldAnswers(): number; close(): Promise<void> }> {
  const held = { count: 0 };
  const send = (res: ServerResponse, answer: Answer) => {
    const headers: Record<string, string> = { ...answer.headers };
    let payload = '';
    if (answer.html !== undefined) {
      headers['Content-Type'] = 'text/html; charset=utf-8';
      payload = answer.html;
    } else if (answer.rawJson !== undefined || answer.body !== undefined) {
      headers['Content-Type'] = 'application/json; charset=UTF-8';
      payload = answer.rawJson ?? JSON.stringify(answer.body);
    }
    res.writeHead(answer.status, headers);
    res.end(payload);
  };

  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://graph');
      const method = req.method ?? 'GET';
      const params = new URLSearchParams(url.searchParams);
      const body = Buffer.concat(chunks).toString('utf8');
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type === 'application/x-www-form-urlencoded')
        for (const [name, value] of new URLSearchParams(body)) params.set(name, value);
      else if (type === 'application/json' && body.trim() !== '') {
        try {
          const json = JSON.parse(body) as Record<string, unknown>;
          for (const [name, value] of Object.entries(json))
            params.set(name, typeof value === 'string' ? value : JSON.stringify(value));
        } catch {
          // Left to the handler, which finds its parameters missing.
        }
      }
      const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
      const accessToken = params.get('access_token') ?? bearer;
      params.delete('access_token');
      const versioned = /^\/(v\d+\.\d+)(\/.*)$/.exec(url.pathname);
      const request: GraphRequest = {
        method,
        path: versioned ? versioned[2]! : url.pathname,
        version: versioned ? versioned[1]! : null,
        params,
        headers: req.headers,
        accessToken,
      };
      const shown = new URLSearchParams(url.searchParams);
      shown.delete('access_token');
      const record: FakeGraphRequestRecord = {
        method,
        path: url.pathname + (shown.size > 0 ? `?${shown.toString()}` : ''),
        operation: null,
      };
      requests.push(record);
      handle(request, record)
        .catch((error: unknown) => {
          if (error instanceof GraphError) return errorAnswer(error);
          return errorAnswer(serverError(500));
        })
        .then((answer) => {
          if (answer.lose) req.socket.destroy();
          else if (answer.hold) sendHeld(res, answer.hold, held, () => send(res, answer));
          else send(res, answer);
        })
        .catch(() => res.destroy());

      function errorAnswer(error: GraphError): Answer {
        const fbtraceId = randomBytes(8).toString('base64url').slice(0, 11);
        errors.push({ ...error.fields, fbtrace_id: fbtraceId, status: error.status, method, path: record.path });
        return {
          status: error.status,
          body: { error: { ...error.fields, fbtrace_id: fbtraceId } },
          headers: error.headers,
        };
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    heldAnswers: () => held.count,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
