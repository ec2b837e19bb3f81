import { randomBytes } from 'node:crypto';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// What the fake Threads and the fake Instagram (with Instagram Login) share: both are Meta's Graph API on
// their own hosts (graph.threads.net, graph.instagram.com) and publish the same way: an authorization window
// that redirects back with a code (Meta appends `#_`), short-lived tokens exchanged for 60-day ones that are
// refreshed, media containers that Meta fills by downloading the media from the URL it is given, whose status
// is polled until FINISHED, then published once; a rolling 24-hour publishing quota; errors in the Graph
// envelope `{"error": {message, type, code, error_subcode, fbtrace_id}}`.

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

/** What a handler answers: a JSON body, an HTML page or a redirect; `lose` cuts the connection instead. */
export interface Answer {
  status: number;
  body?: unknown;
  /** A body written as is: JSON whose ids are numbers too large for a double, as Meta sends some. */
  rawJson?: string;
  html?: string;
  headers?: Record<string, string>;
  lose?: boolean;
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

/** Images are at most 8 MiB on both hosts (Instagram's error reference, code 36000, subcode 2207004). */
export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;

export function imageTooLarge(type: string): GraphError {
  return new GraphError(400, {
    message: 'The image size is too large.',
    type,
    code: 36000,
    error_subcode: 2207004,
    is_transient: false,
    error_user_title: 'Image size too large',
    error_user_msg: 'The image is too large to download. It should be less than 8 MiB.',
  });
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

// ---- tokens ----

/** An access token the fake issued: short-lived (an hour) from the code, long-lived (60 days) from an exchange. */
export interface FakeGraphToken {
  value: string;
  kind: 'short' | 'long';
  scopes: string[];
  /** ms on the fake's clock. */
  issuedAt: number;
  expiresAt: number;
  /** The user removed the app, or Meta invalidated the session. */
  revoked: boolean;
}

export const SHORT_LIVED_SECONDS = 3600;
export const LONG_LIVED_SECONDS = 60 * 86_400;
/** A long-lived token can be refreshed once it is a day old (both hosts' long-lived token pages). */
export const REFRESHABLE_AFTER_SECONDS = 86_400;

/** Tokens of one app and its one user, checked as the Graph API checks them (code 190 when they are no good). */
export class TokenStore {
  readonly tokens: FakeGraphToken[] = [];

  constructor(
    private readonly now: () => number,
    /** How the host's tokens begin: `THAA` for Threads, `IGAA` for Instagram. */
    private readonly prefix: string,
    private readonly appId: string,
  ) {}

  issue(kind: FakeGraphToken['kind'], scopes: string[], lifetimeSeconds: number): FakeGraphToken {
    const token: FakeGraphToken = {
      value: `${this.prefix}${randomBytes(96)
        .toString('base64')
        .replace(/[^A-Za-z0-9]/g, '')}`,
      kind,
      scopes,
      issuedAt: this.now(),
      expiresAt: this.now() + lifetimeSeconds * 1000,
      revoked: false,
    };
    this.tokens.push(token);
    return token;
  }

  /** The token if it is good now, or the 190 Meta answers: unknown, revoked (subcode 458) or expired (463). */
  check(value: string | undefined): FakeGraphToken {
    const token = this.tokens.find((t) => t.value === value);
    if (!token)
      throw new GraphError(400, {
        message: 'Invalid OAuth access token - Cannot parse access token',
        type: 'OAuthException',
        code: 190,
      });
    if (token.revoked)
      throw new GraphError(400, {
        message: `Error validating access token: The user has not authorized application ${this.appId}.`,
        type: 'OAuthException',
        code: 190,
        error_subcode: 458,
      });
    if (token.expiresAt <= this.now())
      throw new GraphError(400, {
        message: `Error validating access token: Session has expired on ${new Date(token.expiresAt).toUTCString()}. The current time is ${new Date(this.now()).toUTCString()}.`,
        type: 'OAuthException',
        code: 190,
        error_subcode: 463,
      });
    return token;
  }

  /** Every token issued so far has expired (the clock does not move). */
  expireAll(): void {
    for (const token of this.tokens) token.expiresAt = Math.min(token.expiresAt, this.now() - 1000);
  }

  revokeAll(): void {
    for (const token of this.tokens) token.revoked = true;
  }
}

// ---- the authorization window and the code ----

/** A visit to the authorization window, as the fake recorded it. */
export interface FakeGraphConsent {
  clientId: string;
  redirectUri: string;
  /** The permissions asked for, in order. */
  scopes: string[];
  state: string | null;
  outcome: 'granted' | 'denied';
  /** What the user granted (all that was asked unless `grantOnly`). */
  granted: string[];
}

interface Code {
  value: string;
  redirectUri: string;
  scopes: string[];
  expiresAt: number;
  used: boolean;
}

/** The app registered with Meta, and what its authorization window asks. */
export interface GraphApp {
  appId: string;
  appSecret: string;
  /** Valid OAuth redirect URIs; empty: any http(s) URL, for a test that does not care. */
  redirectUris: string[];
  /** Every permission the host knows. */
  knownScopes: string[];
  /** The one permission every request must include (`threads_basic`, `instagram_business_basic`). */
  basicScope: string;
}

const CODE_LIFETIME_SECONDS = 3600;

/**
 * The authorization window and the code it gives, the same on both hosts: the window takes `client_id`,
 * `redirect_uri` (one of the app's, exactly), `scope` (comma- or space-separated), `response_type=code` and
 * an optional `state`, and consents at once (or, told to, denies); Meta appends `#_` to the redirect. A code
 * is good for an hour, once, with the same redirect URI.
 */
export class Authorization {
  readonly consents: FakeGraphConsent[] = [];
  private readonly codes: Code[] = [];
  denyNext = false;
  onlyScopes: string[] | undefined;

  constructor(
    private readonly app: GraphApp,
    private readonly now: () => number,
  ) {}

  window(query: URLSearchParams): Answer {
    const page = (problem: string): Answer => ({
      status: 400,
      html: `<!doctype html><title>Error</title><p>Invalid Request: ${problem.replace(/[<>&"]/g, '')}</p>`,
    });
    if (query.get('client_id') !== this.app.appId) return page('Invalid platform app');
    const redirectUri = query.get('redirect_uri') ?? '';
    let target: URL;
    try {
      target = new URL(redirectUri);
    } catch {
      return page('Invalid redirect_uri');
    }
    const registered =
      this.app.redirectUris.length === 0
        ? target.protocol === 'https:' || target.protocol === 'http:'
        : this.app.redirectUris.includes(redirectUri);
    if (!registered || target.hash) return page('Invalid redirect_uri');
    if (query.get('response_type') !== 'code') return page('Invalid response_type');
    const scopes = (query.get('scope') ?? '').split(/[\s,]+/).filter((s) => s !== '');
    const unknown = scopes.find((s) => !this.app.knownScopes.includes(s));
    if (unknown !== undefined) return page(`Invalid Scopes: ${unknown}`);
    if (!scopes.includes(this.app.basicScope)) return page(`Invalid Scopes: ${this.app.basicScope} is required`);
    const state = query.get('state');
    const back = (params: Record<string, string>): Answer => {
      for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
      if (state !== null) target.searchParams.set('state', state);
      return { status: 302, headers: { Location: `${target.toString()}#_` } };
    };
    if (this.denyNext) {
      this.denyNext = false;
      this.consents.push({ clientId: this.app.appId, redirectUri, scopes, state, outcome: 'denied', granted: [] });
      return back({ error: 'access_denied', error_reason: 'user_denied', error_description: 'Permissions error' });
    }
    const granted = this.onlyScopes
      ? scopes.filter((s) => s === this.app.basicScope || this.onlyScopes!.includes(s))
      : scopes;
    this.onlyScopes = undefined;
    this.consents.push({ clientId: this.app.appId, redirectUri, scopes, state, outcome: 'granted', granted });
    const code: Code = {
      value: randomBytes(96).toString('base64url'),
      redirectUri,
      scopes: granted,
      expiresAt: this.now() + CODE_LIFETIME_SECONDS * 1000,
      used: false,
    };
    this.codes.push(code);
    return back({ code: code.value });
  }

  /**
   * `POST /oauth/access_token`: the granted scopes for a good code, or the token endpoint's own error shape,
   * `{error_type, code, error_message}` (not the Graph envelope).
   */
  exchange(form: URLSearchParams): string[] | Answer {
    const refuse = (message: string): Answer => ({
      status: 400,
      body: { error_type: 'OAuthException', code: 400, error_message: message },
    });
    for (const name of ['client_id', 'client_secret', 'grant_type', 'redirect_uri', 'code'])
      if (!form.get(name)) return refuse(`Missing required field '${name}'`);
    if (form.get('client_id') !== this.app.appId) return refuse('Invalid platform app');
    if (form.get('client_secret') !== this.app.appSecret) return refuse('Error validating client secret.');
    if (form.get('grant_type') !== 'authorization_code') return refuse('Unsupported grant_type');
    const code = this.codes.find((c) => c.value === form.get('code'));
    if (!code || code.expiresAt <= this.now()) return refuse('Invalid authorization code');
    if (code.used) return refuse('This authorization code has been used.');
    code.used = true;
    if (form.get('redirect_uri') !== code.redirectUri)
      return refuse(
        'Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request',
      );
    return code.scopes;
  }
}

/**
 * The long-lived token endpoints, the same on both hosts but for the grant types' names: `GET /access_token`
 * exchanges a good short-lived token for a 60-day one (with the app secret), `GET /refresh_access_token`
 * gives a new 60-day token for a long-lived one at least a day old and not expired.
 */
export function longLivedTokens(tokens: TokenStore, app: GraphApp, grantTypes: { exchange: string; refresh: string }) {
  const answer = (token: FakeGraphToken): Answer => ({
    status: 200,
    body: {
      access_token: token.value,
      token_type: 'bearer',
      expires_in: Math.round((token.expiresAt - token.issuedAt) / 1000),
    },
  });
  const oauth = (message: string, code = 100) => new GraphError(400, { message, type: 'OAuthException', code });
  return {
    exchange(request: GraphRequest): Answer {
      if (request.params.get('grant_type') !== grantTypes.exchange)
        throw oauth(`Unsupported grant_type, expected ${grantTypes.exchange}`);
      if (request.params.get('client_secret') !== app.appSecret) throw oauth('Error validating client secret.', 1);
      const short = tokens.check(request.accessToken);
      if (short.kind !== 'short') throw oauth('The access token is already a long-lived token.');
      return answer(tokens.issue('long', short.scopes, LONG_LIVED_SECONDS));
    },
    refresh(request: GraphRequest, now: number): Answer {
      if (request.params.get('grant_type') !== grantTypes.refresh)
        throw oauth(`Unsupported grant_type, expected ${grantTypes.refresh}`);
      const current = tokens.check(request.accessToken);
      if (current.kind !== 'long') throw oauth('Only a long-lived access token can be refreshed.');
      // Meta documents the rule, not its wording: the fake's message is its own.
      if (now - current.issuedAt < REFRESHABLE_AFTER_SECONDS * 1000)
        throw oauth('A long-lived access token can be refreshed once it is at least 24 hours old.');
      return answer(tokens.issue('long', current.scopes, LONG_LIVED_SECONDS));
    },
  };
}

// ---- containers ----

export type FakeGraphContainerStatus = 'IN_PROGRESS' | 'FINISHED' | 'ERROR' | 'EXPIRED' | 'PUBLISHED';

/** What the fake did when it fetched a container's media from the URL it was given. */
export interface FakeGraphDownload {
  url: string;
  /** The HTTP status, or null when nothing answered. */
  status: number | null;
  /** `image/jpeg`, `image/png`, `video/mp4` or `video/quicktime` from the bytes; null when they are none of them. */
  sniffed: string | null;
  bytes: number;
}

/** A media container: what was asked, how far Meta got with it, and the media it became. */
export interface FakeGraphContainer {
  id: string;
  /** As sent (`TEXT`, `IMAGE`, `VIDEO`, `CAROUSEL`, `REELS`, `STORIES`), `IMAGE` when Instagram's was left out. */
  mediaType: string;
  /** Every parameter the request carried but the token. */
  params: Record<string, string>;
  isCarouselItem: boolean;
  /** The item containers of a carousel, in order. */
  children: string[];
  /** ms on the fake's clock. */
  createdAt: number;
  status: FakeGraphContainerStatus;
  /** Why it ended in ERROR (Threads' `error_message`, Instagram's error code). */
  errorMessage: string | null;
  /** Status reads that still answer IN_PROGRESS. */
  pollsLeft: number;
  /** Status reads the container had. */
  polls: number;
  /** How it ends once the polls are done: FINISHED, or ERROR or EXPIRED by a switch. */
  ending: { status: 'FINISHED' | 'ERROR' | 'EXPIRED'; errorMessage: string | null };
  download: FakeGraphDownload | null;
  /** The media it was published as. */
  mediaId: string | null;
}

/** Containers live a day: one not published by then is EXPIRED (both hosts' publishing pages). */
export const CONTAINER_LIFETIME_SECONDS = 86_400;

/**
 * Containers as both hosts keep them. A container is settled on each status read: it answers IN_PROGRESS for
 * its polls, then what it ends as; one not published within a day is EXPIRED.
 */
export class ContainerStore {
  readonly containers: FakeGraphContainer[] = [];
  private nextEnding: FakeGraphContainer['ending'][] = [];
  /** Polls a container answers IN_PROGRESS from now on, or the host's default for its kind when undefined. */
  polls: number | undefined;

  constructor(
    private readonly now: () => number,
    private readonly newId: () => string,
  ) {}

  /** The next container created ends so once its polls are done. */
  endNext(status: 'ERROR' | 'EXPIRED', errorMessage: string | null): void {
    this.nextEnding.push({ status, errorMessage });
  }

  create(init: {
    mediaType: string;
    params: Record<string, string>;
    isCarouselItem: boolean;
    children: string[];
    defaultPolls: number;
    download: FakeGraphDownload | null;
    /** The download failed in a way Meta finds out while processing: the container ends ERROR so. */
    failure?: string;
  }): FakeGraphContainer {
    const ending = this.nextEnding.shift() ?? {
      status: init.failure === undefined ? 'FINISHED' : 'ERROR',
      errorMessage: init.failure ?? null,
    };
    const container: FakeGraphContainer = {
      id: this.newId(),
      mediaType: init.mediaType,
      params: init.params,
      isCarouselItem: init.isCarouselItem,
      children: init.children,
      createdAt: this.now(),
      status: 'IN_PROGRESS',
      errorMessage: null,
      pollsLeft: this.polls ?? init.defaultPolls,
      polls: 0,
      ending,
      download: init.download,
      mediaId: null,
    };
    this.containers.push(container);
    this.advance(container);
    return container;
  }

  find(id: string): FakeGraphContainer | undefined {
    const container = this.containers.find((c) => c.id === id);
    if (container) this.advance(container);
    return container;
  }

  /** A status read: IN_PROGRESS while polls are left, what the container ended as after. */
  poll(container: FakeGraphContainer): void {
    container.polls += 1;
    if (container.pollsLeft > 0) container.pollsLeft -= 1;
    else this.advance(container);
  }

  private advance(container: FakeGraphContainer): void {
    this.expire(container);
    if (container.status === 'IN_PROGRESS' && container.pollsLeft === 0) {
      container.status = container.ending.status;
      container.errorMessage = container.ending.errorMessage;
    }
  }

  private expire(container: FakeGraphContainer): void {
    if (container.status === 'PUBLISHED' || container.status === 'ERROR') return;
    if (this.now() - container.createdAt >= CONTAINER_LIFETIME_SECONDS * 1000) container.status = 'EXPIRED';
  }
}

/** Sniffs what media the bytes are, as Meta decides by the bytes rather than the declared type. */
export function sniffMedia(bytes: Buffer): string | null {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return 'image/png';
  if (bytes.length >= 12 && bytes.subarray(4, 8).toString('latin1') === 'ftyp')
    return bytes.subarray(8, 12).toString('latin1') === 'qt  ' ? 'video/quicktime' : 'video/mp4';
  return null;
}

/**
 * Fetches a container's media from the URL given, as Meta's crawler does ("we cURL media used in publishing
 * attempts so the media must be hosted on a publicly accessible server at the time of the attempt"). Every
 * download is recorded; a URL nothing answers at is a download with a null status.
 */
export async function downloadMedia(url: string, downloads: FakeGraphDownload[]): Promise<FakeGraphDownload> {
  let download: FakeGraphDownload;
  try {
    const response = await fetch(url, { redirect: 'follow', signal: AbortSignal.timeout(10_000) });
    const bytes = Buffer.from(await response.arrayBuffer());
    download = { url, status: response.status, sniffed: response.ok ? sniffMedia(bytes) : null, bytes: bytes.length };
  } catch {
    download = { url, status: null, sniffed: null, bytes: 0 };
  }
  downloads.push(download);
  return download;
}

// ---- the publishing quota ----

export const QUOTA_DURATION_SECONDS = 86_400;

/** A rolling 24-hour publishing quota: what was published within the last day counts against it. */
export class PublishingQuota {
  private readonly uses: number[] = [];

  constructor(
    private readonly now: () => number,
    public total: number,
  ) {}

  usage(): number {
    const since = this.now() - QUOTA_DURATION_SECONDS * 1000;
    return this.uses.filter((at) => at > since).length;
  }

  full(): boolean {
    return this.usage() >= this.total;
  }

  take(): void {
    this.uses.push(this.now());
  }

  /** `count` publications counted now, as if they had been made. */
  fill(count: number): void {
    for (let i = 0; i < count; i++) this.uses.push(this.now());
  }
}

// ---- switches ----

/** The failure switches both fakes have, each for an operation of the host or for any. */
export class Switches<Operation extends string> {
  private readonly rateLimits: { operation: Operation | undefined; code: GraphRateLimitCode }[] = [];
  private readonly failures: { operation: Operation | undefined; status: number }[] = [];
  private readonly lost: Operation[] = [];

  rateLimitNext(code: GraphRateLimitCode, operation?: Operation, count = 1): void {
    for (let i = 0; i < count; i++) this.rateLimits.push({ operation, code });
  }

  failNext(status: number, operation?: Operation): void {
    this.failures.push({ operation, status });
  }

  loseNextAnswer(operation: Operation): void {
    this.lost.push(operation);
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
 * `lose` is not written, the connection is destroyed instead.
 */
export async function serveGraph(
  handle: (request: GraphRequest, record: FakeGraphRequestRecord) => Promise<Answer>,
  errors: FakeGraphErrorRecord[],
  requests: FakeGraphRequestRecord[],
): Promise<{ url: string; close(): Promise<void> }> {
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
        .then((answer) => (answer.lose ? req.socket.destroy() : send(res, answer)))
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
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
