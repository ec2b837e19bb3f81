import { createHash, randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MediaStore, type FakeXMedia } from './fake-x-media.js';
import { PostStore, USER_FIELDS, userObject, type FakeXTweet } from './fake-x-posts.js';
import {
  type Answer,
  bearerToken,
  type FakeXAccount,
  type FakeXApiOperation,
  type FakeXContext,
  type FakeXLimitWindow,
  type FakeXOperation,
  forbidden,
  listParameter,
  RateLimits,
  serverError,
  snowflakes,
  unauthorized,
  XError,
  type XRequest,
} from './fake-x-protocol.js';

export type { FakeXAccount, FakeXApiOperation, FakeXLimitWindow, FakeXOperation } from './fake-x-protocol.js';
export type { FakeXMedia, FakeXMediaCategory, FakeXProcessingState } from './fake-x-media.js';
export type { FakeXTweet } from './fake-x-posts.js';

/** An app registered with X: the default one is a confidential client (a web app), as the service's is. */
export interface FakeXClient {
  clientId: string;
  /** Null for a public client (a native or single-page app), which names itself with `client_id` alone. */
  clientSecret: string | null;
  /**
   * The app's callback URLs: X takes a `redirect_uri` only if it is one of them, exactly. Empty: the fake
   * takes any http(s) URL, for a test that does not care.
   */
  callbackUrls: string[];
}

/** An access or refresh token the fake issued. */
export interface FakeXToken {
  value: string;
  /** ms on the fake's clock. */
  issuedAt: number;
  /** ms on the fake's clock; null for a refresh token, which X does not say expires. */
  expiresAt: number | null;
  revoked: boolean;
  /** A refresh token that was used: X rotates them, and one used before is refused. */
  used: boolean;
}

/** What the account granted an app at the consent page, and every token issued for it since. */
export interface FakeXGrant {
  clientId: string;
  scopes: string[];
  /** Ended: the user removed the app, or the app revoked a refresh token of the grant. */
  revoked: boolean;
  accessTokens: FakeXToken[];
  /** In order of issue: the last one is the current one, each earlier one was used to get the next. */
  refreshTokens: FakeXToken[];
}

/** A request the fake saw. */
export interface FakeXRequest {
  method: string;
  /** The path with the query. */
  path: string;
  operation: FakeXOperation | null;
  /** What the Authorization header carried. */
  auth: 'bearer' | 'basic' | 'none';
}

/**
 * A stand-in for X on a loopback port, following X API v2 as docs.x.com documents it (its pages and its
 * OpenAPI document; where they are silent, what X is seen answering): OAuth 2.0 authorization code with PKCE
 * (the consent page X serves at https://x.com/i/oauth2/authorize, `POST /2/oauth2/token` and
 * `POST /2/oauth2/revoke`), the signed-in user (`GET /2/users/me`), posts (`POST /2/tweets`,
 * `DELETE /2/tweets/:id`, `GET /2/tweets/:id`, the account's timeline `GET /2/users/:id/tweets`) and the media
 * upload of 2025 (initialize, append, finalize and STATUS; the one-shot upload of an image; alt text).
 *
 * Strict where X is: a code lives 30 seconds, once, for its app, redirect URI and PKCE challenge; a
 * confidential client authenticates with HTTP Basic at the token endpoint; access tokens live two hours;
 * refresh tokens (only with `offline.access`) rotate, and one used before is refused with
 * `invalid_request` "Value passed for the token was invalid."; each endpoint asks for its scopes; every
 * answer of the API carries `x-rate-limit-limit`, `-remaining` and `-reset` (epoch seconds) for the endpoint's
 * 15-minute window per user, and creating a post also `x-app-limit-24hour-*` and `x-user-limit-24hour-*`
 * (X's daily caps; the fake always sends them, X does not on every tier); a used-up limit is 429
 * "Too Many Requests" until its reset. Errors are X's problem objects (`{title, detail, type, status}`) or
 * its invalid-request `errors` array; OAuth's are `{error, error_description}`.
 *
 * Like X, it keeps what it did when the caller went away: `loseNextAnswer` does the work, then destroys the
 * connection before the answer (a post created, a refresh token rotated, with no one told).
 */
export interface FakeX {
  /** The API's origin: `${url}/2/tweets`, `${url}/2/oauth2/token`, … (X's https://api.x.com). */
  url: string;
  /** The consent page, X's https://x.com/i/oauth2/authorize: consent is given at once unless `deny()`. */
  authorizeUrl: string;
  /** The default app (confidential). */
  clientId: string;
  clientSecret: string;
  /** Every app registered; the default one first. */
  clients: FakeXClient[];
  /** Registers another app (a public client has no secret). */
  addClient(client: { clientId: string; clientSecret: string | null; callbackUrls?: string[] }): FakeXClient;
  /** The account that signs in at the consent page and owns the posts and media. */
  account: FakeXAccount;
  grants: FakeXGrant[];
  /** Refreshes granted, and refused (a used, revoked or unknown refresh token). */
  refreshes: { granted: number; refused: number };
  /** The account's posts, deleted ones included, in order of creation. */
  tweets: FakeXTweet[];
  /** The account's uploads, in order. */
  media: FakeXMedia[];
  /** The bytes of an upload, its segments in order. */
  mediaBytes(id: string): Buffer | undefined;
  requests: FakeXRequest[];

  /** The next consent answers `error=access_denied`: the user clicked Cancel. */
  deny(): void;
  /** The user removed the app in X's settings: every grant ends (API 401, refresh refused). */
  revokeAll(): void;
  /** Access tokens issued from now live `seconds` (X's: 7,200). */
  accessTokenLifetime(seconds: number): void;
  /** Moves the fake's clock forward: codes, tokens, rate-limit windows, media expiry, posts' times. */
  advanceClock(seconds: number): void;
  /** The fake's clock, in ms since the epoch. */
  now(): number;
  /**
   * A rate limit is used up until `resetInSeconds` from now, as if the calls had been made: the endpoint's
   * 15-minute window (`15min`, reported in `x-rate-limit-*`), or, for `createPosts`, the app's daily cap
   * (`app-24hour`, `x-app-limit-24hour-*`) or the account's (`user-24hour`, `x-user-limit-24hour-*`, while
   * `x-rate-limit-remaining` still says calls are left).
   */
  exhaustLimit(operation: FakeXApiOperation, window: FakeXLimitWindow, resetInSeconds: number): void;
  /** The next post is refused as a duplicate (403), whatever its text. Identical text is refused anyway. */
  refuseNextAsDuplicate(): void;
  /**
   * The next call of `operation` does its work (the post is created, the segment stored, the token rotated),
   * then the connection is destroyed before X answers.
   */
  loseNextAnswer(operation: FakeXOperation): void;
  /**
   * The next call of `operation` is answered `status` (a 5xx), having done nothing; with `applied`, having
   * done its work first (the post exists though X answered an error).
   */
  failNext(operation: FakeXOperation, status?: number, options?: { applied?: boolean }): void;
  /** STATUS answers a video or GIF gets as `in_progress` before its processing settles (default 1). */
  processingChecks(count: number): void;
  /** The next video or GIF to settle fails its processing (`state: failed`). */
  failNextProcessing(): void;
  /** A post shows in the account's timeline `seconds` after its creation (default 0), as X's may lag. */
  timelineDelay(seconds: number): void;
  /**
   * From now on a post is created `ms` after its request arrived (0: at once), the request open meanwhile:
   * a caller that goes away while it waits leaves the post created all the same.
   */
  slowPosts(ms: number): void;
  /** Post creations that arrived and are not answered yet. */
  postsInFlight(): number;
  close(): Promise<void>;
}

const CODE_LIFETIME_SECONDS = 30;
const ACCESS_LIFETIME_SECONDS = 7_200;
/** The scopes of docs.x.com's OAuth 2.0 page. */
const SCOPES = [
  'tweet.read',
  'tweet.write',
  'tweet.moderate.write',
  'users.email',
  'users.read',
  'follows.read',
  'follows.write',
  'offline.access',
  'space.read',
  'mute.read',
  'mute.write',
  'like.read',
  'like.write',
  'list.read',
  'list.write',
  'block.read',
  'block.write',
  'bookmark.read',
  'bookmark.write',
  'dm.read',
  'dm.write',
  'media.write',
];
/** The scopes each endpoint needs (the OpenAPI document's `security`). */
const NEEDS: Record<FakeXApiOperation, string[]> = {
  getUsersMe: ['tweet.read', 'users.read'],
  createPosts: ['tweet.read', 'tweet.write', 'users.read'],
  deletePosts: ['tweet.read', 'tweet.write', 'users.read'],
  getPostsById: ['tweet.read', 'users.read'],
  getUsersPosts: ['tweet.read', 'users.read'],
  initializeMediaUpload: ['media.write'],
  appendMediaUpload: ['media.write'],
  finalizeMediaUpload: ['media.write'],
  getMediaUploadStatus: ['media.write'],
  mediaUpload: ['media.write'],
  createMediaMetadata: ['media.write'],
};
const USER_EXPANSIONS = [
  'affiliation',
  'affiliation.user_id',
  'most_recent_post_id',
  'most_recent_tweet_id',
  'pinned_post_id',
  'pinned_tweet_id',
];
/** What X says when an access token lacks a scope the endpoint needs, or the account may not do it. */
const NOT_PERMITTED = 'You are not permitted to perform this action.';
const INVALID_TOKEN = 'Value passed for the token was invalid.';

const ROUTES: { method: string; path: RegExp; operation: FakeXOperation }[] = [
  { method: 'GET', path: /^\/i\/oauth2\/authorize$/, operation: 'authorize' },
  { method: 'POST', path: /^\/2\/oauth2\/token$/, operation: 'token' },
  { method: 'POST', path: /^\/2\/oauth2\/revoke$/, operation: 'revoke' },
  { method: 'GET', path: /^\/2\/users\/me$/, operation: 'getUsersMe' },
  { method: 'POST', path: /^\/2\/tweets$/, operation: 'createPosts' },
  { method: 'DELETE', path: /^\/2\/tweets\/([^/]+)$/, operation: 'deletePosts' },
  { method: 'GET', path: /^\/2\/tweets\/([^/]+)$/, operation: 'getPostsById' },
  { method: 'GET', path: /^\/2\/users\/([^/]+)\/tweets$/, operation: 'getUsersPosts' },
  { method: 'POST', path: /^\/2\/media\/upload\/initialize$/, operation: 'initializeMediaUpload' },
  { method: 'POST', path: /^\/2\/media\/upload\/([^/]+)\/append$/, operation: 'appendMediaUpload' },
  { method: 'POST', path: /^\/2\/media\/upload\/([^/]+)\/finalize$/, operation: 'finalizeMediaUpload' },
  { method: 'GET', path: /^\/2\/media\/upload$/, operation: 'getMediaUploadStatus' },
  { method: 'POST', path: /^\/2\/media\/upload$/, operation: 'mediaUpload' },
  { method: 'POST', path: /^\/2\/media\/metadata$/, operation: 'createMediaMetadata' },
];

interface AuthorizationCode {
  clientId: string;
  redirectUri: string;
  challenge: string;
  method: 'S256' | 'plain';
  scopes: string[];
  expiresAt: number;
  used: boolean;
}

/** A token as X writes them: base64 of a random part, the time and its kind (`ac` code, `at` access, `rt` refresh). */
const tokenValue = (kind: 'ac' | 'at' | 'rt', now: number) =>
  Buffer.from(`${randomBytes(30).toString('base64url')}:${now}:1:1:${kind}:1`).toString('base64url');

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export async function startFakeX(
  options: {
    account?: Partial<FakeXAccount>;
    clientId?: string;
    clientSecret?: string;
    callbackUrls?: string[];
  } = {},
): Promise<FakeX> {
  const account: FakeXAccount = {
    id: '1849000000000000001',
    username: 'fakeposter',
    name: 'Fake Poster',
    profileImageUrl: 'https://pbs.twimg.com/profile_images/1849000000000000001/fake_normal.jpg',
    description: '',
    protected: false,
    verified: false,
    verifiedType: 'none',
    subscriptionType: 'None',
    createdAt: '2020-01-01T00:00:00.000Z',
    followersCount: 120,
    followingCount: 80,
    ...options.account,
  };
  const defaultClient: FakeXClient = {
    clientId: options.clientId ?? Buffer.from('fake-x-app:1:ci').toString('base64url'),
    clientSecret: options.clientSecret ?? 'fake-x-client-secret-0123456789abcdefghijklmnopqrstu',
    callbackUrls: options.callbackUrls ?? [],
  };
  const clients: FakeXClient[] = [defaultClient];
  const grants: FakeXGrant[] = [];
  const codes = new Map<string, AuthorizationCode>();
  const refreshes = { granted: 0, refused: 0 };
  const requests: FakeXRequest[] = [];
  const failures: { operation: FakeXOperation; status: number; applied: boolean }[] = [];
  const lost = new Set<FakeXOperation>();
  let clockOffsetMs = 0;
  let accessLifetimeSeconds = ACCESS_LIFETIME_SECONDS;
  let denyNext = false;
  let postDelayMs = 0;
  let postsInFlight = 0;
  let origin = '';

  const now = () => Date.now() + clockOffsetMs;
  const context: FakeXContext = { now, newId: snowflakes(now), account };
  const media = new MediaStore(context);
  const posts = new PostStore(context, media);
  const limits = new RateLimits(now);

  // ---- OAuth 2.0 ----

  /**
   * X shows an error page, and sends nothing back to the app, when the authorization request is wrong; the
   * reason is in a comment, for whoever reads the test's failure.
   */
  const errorPage = (reason: string): Answer => ({
    status: 400,
    html:
      '<!doctype html><html><head><title>X</title></head><body><h1>Something went wrong</h1>' +
      '<p>You weren’t able to give access to the App. Go back and try logging in again.</p>' +
      `<!-- ${escapeHtml(reason)} --></body></html>`,
  });

  const authorize = (query: URLSearchParams): Answer => {
    const single = (name: string) => (query.getAll(name).length > 1 ? undefined : (query.get(name) ?? undefined));
    const client = clients.find((c) => c.clientId === single('client_id'));
    if (!client) return errorPage('client_id is not an app of X');
    const redirectUri = single('redirect_uri');
    let target: URL;
    try {
      target = new URL(redirectUri ?? '');
    } catch {
      return errorPage('redirect_uri is not an absolute URL');
    }
    if ((target.protocol !== 'https:' && target.protocol !== 'http:') || target.hash)
      return errorPage('redirect_uri must be http(s) without a fragment');
    if (client.callbackUrls.length > 0 && !client.callbackUrls.includes(redirectUri!))
      return errorPage('redirect_uri is not one of the callback URLs of the app');
    if (single('response_type') !== 'code') return errorPage('response_type must be code');
    const scopes = (single('scope') ?? '').split(' ').filter((s) => s !== '');
    if (scopes.length === 0 || scopes.some((s) => !SCOPES.includes(s))) return errorPage('scope is missing or unknown');
    const state = single('state');
    if (state === undefined || state.length > 500) return errorPage('state is required, up to 500 characters');
    const challenge = single('code_challenge');
    const method = single('code_challenge_method') ?? 'plain';
    if (!challenge) return errorPage('code_challenge is required (PKCE)');
    if (method !== 'S256' && method !== 'plain') return errorPage('code_challenge_method must be S256 or plain');

    const back = (params: Record<string, string>): Answer => {
      target.searchParams.set('state', state);
      for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
      return { status: 302, headers: { Location: target.toString() } };
    };
    if (denyNext) {
      denyNext = false;
      return back({ error: 'access_denied' });
    }
    const code = tokenValue('ac', now());
    codes.set(code, {
      clientId: client.clientId,
      redirectUri: redirectUri!,
      challenge,
      method,
      scopes,
      expiresAt: now() + CODE_LIFETIME_SECONDS * 1000,
      used: false,
    });
    return back({ code });
  };

  const oauthError = (status: number, error: string, description: string): Answer => ({
    status,
    body: { error, error_description: description },
  });

  /** The app calling the token or revocation endpoint, or X's refusal. */
  const authenticateClient = (request: XRequest, form: URLSearchParams): FakeXClient | Answer => {
    const basic = /^Basic\s+(\S+)$/i.exec(request.headers.authorization ?? '');
    const bodyId = form.get('client_id');
    if (basic) {
      const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const id = decodeURIComponent(decoded.slice(0, Math.max(colon, 0)));
      const secret = decodeURIComponent(decoded.slice(colon + 1));
      const client = clients.find((c) => c.clientId === id);
      if (colon < 0 || !client) return oauthError(401, 'invalid_client', 'Client authentication failed.');
      if (bodyId !== null && bodyId !== id)
        return oauthError(400, 'invalid_request', 'client_id does not match the Authorization header.');
      if (client.clientSecret !== null && client.clientSecret !== secret)
        return oauthError(401, 'unauthorized_client', 'Missing valid authorization header');
      return client;
    }
    if (bodyId === null) return oauthError(400, 'invalid_request', 'Missing required parameter [client_id].');
    const client = clients.find((c) => c.clientId === bodyId);
    if (!client) return oauthError(401, 'invalid_client', 'Client authentication failed.');
    // A confidential client must authenticate, and only with HTTP Basic (not client_secret in the body).
    if (client.clientSecret !== null)
      return oauthError(401, 'unauthorized_client', 'Missing valid authorization header');
    return client;
  };

  const formOf = (request: XRequest): URLSearchParams | Answer => {
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/x-www-form-urlencoded')
      return oauthError(400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded.');
    return new URLSearchParams(request.body.toString('utf8'));
  };

  const issue = (grant: FakeXGrant): Answer => {
    const access: FakeXToken = {
      value: tokenValue('at', now()),
      issuedAt: now(),
      expiresAt: now() + accessLifetimeSeconds * 1000,
      revoked: false,
      used: false,
    };
    grant.accessTokens.push(access);
    const body: Record<string, unknown> = {
      token_type: 'bearer',
      expires_in: accessLifetimeSeconds,
      access_token: access.value,
      scope: grant.scopes.join(' '),
    };
    // A refresh token only with offline.access (docs.x.com, OAuth 2.0 refresh tokens).
    if (grant.scopes.includes('offline.access')) {
      const refresh: FakeXToken = {
        value: tokenValue('rt', now()),
        issuedAt: now(),
        expiresAt: null,
        revoked: false,
        used: false,
      };
      grant.refreshTokens.push(refresh);
      body.refresh_token = refresh.value;
    }
    return { status: 200, body, headers: { 'Cache-Control': 'no-store', Pragma: 'no-cache' } };
  };

  const token = (request: XRequest): Answer => {
    const form = formOf(request);
    if (!(form instanceof URLSearchParams)) return form;
    const client = authenticateClient(request, form);
    if ('status' in client) return client;
    const missing = (name: string) => oauthError(400, 'invalid_request', `Missing required parameter [${name}].`);
    const grantType = form.get('grant_type');
    if (grantType === null) return missing('grant_type');

    if (grantType === 'authorization_code') {
      for (const name of ['code', 'redirect_uri', 'code_verifier']) if (!form.get(name)) return missing(name);
      const code = codes.get(form.get('code')!);
      if (!code || code.clientId !== client.clientId || code.used || code.expiresAt <= now())
        return oauthError(400, 'invalid_request', INVALID_TOKEN);
      // Spent once presented by its app, whether the exchange then succeeds or not.
      code.used = true;
      const verifier = form.get('code_verifier')!;
      const derived = code.method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
      if (form.get('redirect_uri') !== code.redirectUri || derived !== code.challenge)
        return oauthError(400, 'invalid_request', INVALID_TOKEN);
      const grant: FakeXGrant = {
        clientId: client.clientId,
        scopes: code.scopes,
        revoked: false,
        accessTokens: [],
        refreshTokens: [],
      };
      grants.push(grant);
      return issue(grant);
    }

    if (grantType === 'refresh_token') {
      const value = form.get('refresh_token');
      if (!value) return missing('refresh_token');
      const grant = grants.find(
        (g) => g.clientId === client.clientId && g.refreshTokens.some((t) => t.value === value),
      );
      const refresh = grant?.refreshTokens.find((t) => t.value === value);
      // Refresh tokens rotate: the one used to get a new pair is dead from then on.
      if (!grant || !refresh || grant.revoked || refresh.revoked || refresh.used) {
        refreshes.refused += 1;
        return oauthError(400, 'invalid_request', INVALID_TOKEN);
      }
      refresh.used = true;
      refreshes.granted += 1;
      return issue(grant);
    }

    return oauthError(400, 'unsupported_grant_type', `grant_type ${grantType} is not supported.`);
  };

  /**
   * RFC 7009, which X's page leaves at that: revoking a refresh token ends its grant (every token of it),
   * revoking an access token ends that token. An unknown token is answered as revoked.
   */
  const revoke = (request: XRequest): Answer => {
    const form = formOf(request);
    if (!(form instanceof URLSearchParams)) return form;
    const client = authenticateClient(request, form);
    if ('status' in client) return client;
    const value = form.get('token');
    if (!value) return oauthError(400, 'invalid_request', 'Missing required parameter [token].');
    for (const grant of grants.filter((g) => g.clientId === client.clientId)) {
      if (grant.refreshTokens.some((t) => t.value === value)) grant.revoked = true;
      const access = grant.accessTokens.find((t) => t.value === value);
      if (access) access.revoked = true;
    }
    return { status: 200, body: { revoked: true } };
  };

  // ---- API v2 ----

  /** The grant behind a request's access token, if the token is good now. */
  const grantOf = (request: XRequest): FakeXGrant | undefined => {
    const value = bearerToken(request);
    const grant = grants.find((g) => g.accessTokens.some((t) => t.value === value));
    const access = grant?.accessTokens.find((t) => t.value === value);
    if (!grant || !access || grant.revoked || access.revoked || access.expiresAt! <= now()) return undefined;
    return grant;
  };

  const usersMe = (query: URLSearchParams): Answer => {
    const fields = listParameter(query, ['user.fields'], USER_FIELDS);
    listParameter(query, ['expansions'], USER_EXPANSIONS);
    return { status: 200, body: { data: userObject(account, fields, posts.tweets) } };
  };

  const handle = async (operation: FakeXOperation, request: XRequest, id: string): Promise<Answer> => {
    const query = request.url.searchParams;
    switch (operation) {
      case 'authorize':
        return authorize(query);
      case 'token':
        return token(request);
      case 'revoke':
        return revoke(request);
      case 'getUsersMe':
        return usersMe(query);
      case 'createPosts':
        return posts.create(request);
      case 'deletePosts':
        return posts.delete(id);
      case 'getPostsById':
        return posts.get(id, query);
      case 'getUsersPosts':
        return posts.timeline(id, query);
      case 'initializeMediaUpload':
        return media.initialize(request);
      case 'appendMediaUpload':
        return media.append(request, id);
      case 'finalizeMediaUpload':
        return media.finalize(id);
      case 'getMediaUploadStatus':
        return media.status(query);
      case 'mediaUpload':
        return media.uploadWhole(request);
      case 'createMediaMetadata':
        return media.metadata(request);
    }
  };

  /** The answer to a request, and whether X answers at all (a lost answer). */
  const answer = async (
    operation: FakeXOperation,
    request: XRequest,
    id: string,
  ): Promise<{ answer: Answer; lose: boolean }> => {
    const api = operation !== 'authorize' && operation !== 'token' && operation !== 'revoke';
    let rateHeaders: Record<string, string> = {};
    if (api) {
      const grant = grantOf(request);
      if (!grant) return { answer: unauthorized(), lose: false };
      if (!NEEDS[operation].every((scope) => grant.scopes.includes(scope)))
        return { answer: forbidden(NOT_PERMITTED).answer, lose: false };
    }
    const failureAt = failures.findIndex((f) => f.operation === operation);
    const failure = failureAt >= 0 ? failures.splice(failureAt, 1)[0] : undefined;
    if (failure && !failure.applied) return { answer: serverError(failure.status), lose: false };
    if (api) {
      const taken = limits.take(operation);
      rateHeaders = taken.headers;
      if (!taken.allowed)
        return {
          answer: {
            status: 429,
            body: { title: 'Too Many Requests', detail: 'Too Many Requests', type: 'about:blank', status: 429 },
            headers: rateHeaders,
          },
          lose: false,
        };
    }
    let result: Answer;
    try {
      result = await handle(operation, request, id);
    } catch (error) {
      if (!(error instanceof XError)) throw error;
      result = error.answer;
    }
    if (operation === 'createPosts' && result.status === 201 && lost.has(operation)) {
      const created = (result.body as { data: { id: string } }).data.id;
      posts.tweets.find((t) => t.id === created)!.answerLost = true;
    }
    if (failure) result = serverError(failure.status);
    result = { ...result, headers: { ...rateHeaders, ...result.headers } };
    const lose = lost.delete(operation);
    return { answer: result, lose };
  };

  const send = (res: ServerResponse, reply: Answer) => {
    const headers: Record<string, string> = { ...reply.headers };
    let payload = '';
    if (reply.html !== undefined) {
      headers['Content-Type'] = 'text/html; charset=utf-8';
      payload = reply.html;
    } else if (reply.body !== undefined) {
      headers['Content-Type'] = 'application/json; charset=utf-8';
      payload = JSON.stringify(reply.body);
    }
    res.writeHead(reply.status, headers);
    res.end(payload);
  };

  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', origin);
      const method = req.method ?? 'GET';
      const route = ROUTES.find((r) => r.method === method && r.path.test(url.pathname));
      const authorization = (req.headers.authorization ?? '').toLowerCase();
      requests.push({
        method,
        path: url.pathname + url.search,
        operation: route?.operation ?? null,
        auth: authorization.startsWith('bearer ') ? 'bearer' : authorization.startsWith('basic ') ? 'basic' : 'none',
      });
      if (!route)
        return send(res, {
          status: 404,
          body: { title: 'Not Found', detail: 'Not Found', type: 'about:blank', status: 404 },
        });
      const id = decodeURIComponent(route.path.exec(url.pathname)?.[1] ?? '');
      const request: XRequest = { method, url, headers: req.headers, body: Buffer.concat(chunks) };
      const creating = route.operation === 'createPosts';
      if (creating) postsInFlight += 1;
      const slow =
        creating && postDelayMs > 0 ? new Promise((resolve) => setTimeout(resolve, postDelayMs)) : Promise.resolve();
      slow
        .then(() => answer(route.operation, request, id))
        .finally(() => {
          if (creating) postsInFlight -= 1;
        })
        .then(({ answer: reply, lose }) => (lose ? req.socket.destroy() : send(res, reply)))
        .catch((error: unknown) =>
          send(res, {
            ...serverError(500),
            body: { title: 'Internal Server Error', detail: String(error), type: 'about:blank', status: 500 },
          }),
        );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: origin,
    authorizeUrl: `${origin}/i/oauth2/authorize`,
    clientId: defaultClient.clientId,
    clientSecret: defaultClient.clientSecret!,
    clients,
    addClient: (client) => {
      const added: FakeXClient = { callbackUrls: [], ...client };
      clients.push(added);
      return added;
    },
    account,
    grants,
    refreshes,
    tweets: posts.tweets,
    media: media.media,
    mediaBytes: (id) => media.bytes(id),
    requests,
    deny: () => {
      denyNext = true;
    },
    revokeAll: () => {
      for (const grant of grants) grant.revoked = true;
      for (const code of codes.values()) code.used = true;
    },
    accessTokenLifetime: (seconds) => {
      accessLifetimeSeconds = seconds;
    },
    advanceClock: (seconds) => {
      clockOffsetMs += seconds * 1000;
    },
    now,
    exhaustLimit: (operation, window, resetInSeconds) => limits.exhaust(operation, window, resetInSeconds),
    refuseNextAsDuplicate: () => posts.refuseNextAsDuplicate(),
    loseNextAnswer: (operation) => {
      lost.add(operation);
    },
    failNext: (operation, status = 503, { applied = false } = {}) => {
      failures.push({ operation, status, applied });
    },
    processingChecks: (count) => media.processingChecks(count),
    failNextProcessing: () => media.failNextProcessing(),
    timelineDelay: (seconds) => posts.timelineDelay(seconds),
    slowPosts: (ms) => {
      postDelayMs = ms;
    },
    postsInFlight: () => postsInFlight,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
