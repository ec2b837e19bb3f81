import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileTypeFromBuffer } from 'file-type';
import { type AnswerHold, sendHeld, Switches } from './fake-graph-protocol.js';
import { InstagramStore, type FakeMetaContainer, type FakeMetaMedia } from './fake-meta-instagram.js';
import {
  type FakeMetaAuthorization,
  type FakeMetaGrant,
  type FakeMetaInstagramAccount,
  type FakeMetaPage,
  type FakeMetaToken,
  type FakeMetaUser,
  LoginStore,
} from './fake-meta-login.js';
import {
  type FakeMetaComment,
  type FakeMetaPhoto,
  type FakeMetaPost,
  type FakeMetaUploadSession,
  type FakeMetaVideo,
  PageStore,
} from './fake-meta-pages.js';
import {
  type Answer,
  type FakeMetaOperation,
  type FakeMetaRateLimitCode,
  type FakeMetaTokenEnd,
  fieldsOf,
  GraphError,
  type GraphErrorBody,
  type GraphRequest,
  graphError,
  numericIds,
  pick,
  rateLimited,
  readParameters,
  tokenOf,
  traceId,
  unsupported,
} from './fake-meta-protocol.js';

export type { FakeMetaContainer, FakeMetaContainerStatus, FakeMetaMedia } from './fake-meta-instagram.js';
export type {
  FakeMetaAuthorization,
  FakeMetaGrant,
  FakeMetaInstagramAccount,
  FakeMetaPage,
  FakeMetaToken,
  FakeMetaUser,
} from './fake-meta-login.js';
export type {
  FakeMetaComment,
  FakeMetaPhoto,
  FakeMetaPost,
  FakeMetaUploadSession,
  FakeMetaVideo,
} from './fake-meta-pages.js';
export type {
  FakeMetaOperation,
  FakeMetaRateLimitCode,
  FakeMetaTokenEnd,
  GraphErrorBody,
} from './fake-meta-protocol.js';

/** A request the fake saw. */
export interface FakeMetaRequest {
  method: string;
  /** The path with the query, version included. */
  path: string;
  /** `v23.0`, or null for an unversioned path. */
  version: string | null;
  operation: FakeMetaOperation | null;
  /** The kind of token it carried. */
  token: 'user' | 'page' | 'app' | 'unknown' | 'none';
  /** How its Authorization header named the token (`Bearer`, Meta's own `OAuth`), or null without one. */
  scheme: string | null;
}

/** An error the fake answered, with its `fbtrace_id`, as a support request would quote it. */
export interface FakeMetaAnsweredError extends GraphErrorBody {
  status: number;
  fbtrace_id: string;
  operation: FakeMetaOperation | null;
}

/** A download of media the fake made from a URL it was given, as Meta's servers fetch `image_url` and the like. */
export interface FakeMetaFetch {
  url: string;
  /** The HTTP status, or null when the fetch failed (refused, timed out, not a URL). */
  status: number | null;
}

/**
 * A stand-in for Meta's Graph API on loopback ports (graph.facebook.com, and www.facebook.com for the login
 * dialog), following developers.facebook.com: Facebook Login for Business (dialog, code exchange, long-lived
 * tokens, `/debug_token`, `/me`, `/me/accounts` with Page tokens, `/me/permissions` and its revocation), Page
 * publishing (feed posts with a link or attached unpublished photos, photos, videos through the Resumable
 * Upload API, permalinks, comments, the Page's posts) and Instagram content publishing (containers, their
 * status, `media_publish`, the publishing limit, media, comments). The version is in the path (`/v23.0/…`,
 * any `vNN.N`; an unversioned path is served too, as Meta serves it at its oldest version). Parameters are
 * read from the query string and the body alike (form, multipart or JSON), the token from `access_token` or
 * the Authorization header (`Bearer` or `OAuth`).
 *
 * Errors are Meta's envelope, `{error: {message, type, code, error_subcode, fbtrace_id}}`, each kept in
 * `errors`. Answers carry the usage headers of "Rate Limits": `X-App-Usage` for user-token calls and
 * `X-Business-Use-Case-Usage` for Page-token and Instagram calls (percentages of the fake's budget of 200
 * calls an hour).
 *
 * Like Meta, it keeps what it did when the caller went away: `loseNextAnswer` does the work (a post made, a
 * container published), then destroys the connection before the answer; `holdNextAnswer` does the work, then
 * keeps the answer back (for a while, or until the caller gives up or dies).
 */
export interface FakeMeta {
  /** graph.facebook.com (and graph-video.facebook.com): `${url}/v23.0/me`. */
  url: string;
  /** www.facebook.com: the login dialog at `${wwwUrl}/v23.0/dialog/oauth`. */
  wwwUrl: string;
  appId: string;
  appSecret: string;
  /** The user who logs in at the dialog. */
  user: FakeMetaUser;
  /** The user's Pages; by default two, the first linked to an Instagram professional account. */
  pages: FakeMetaPage[];
  /** The Instagram professional accounts linked to the Pages. */
  instagramAccounts: FakeMetaInstagramAccount[];
  /** Login for Business configurations: `config_id` → the permissions it asks for. */
  configurations: Record<string, string[]>;

  authorizations: FakeMetaAuthorization[];
  grants: FakeMetaGrant[];
  tokens: FakeMetaToken[];
  posts: FakeMetaPost[];
  photos: FakeMetaPhoto[];
  videos: FakeMetaVideo[];
  uploads: FakeMetaUploadSession[];
  /** The bytes received for an upload session. */
  uploadedBytes(sessionId: string): Buffer | undefined;
  containers: FakeMetaContainer[];
  /** Published Instagram media, a carousel's items included, in order of publication. */
  instagramMedia: FakeMetaMedia[];
  /** Comments made on Page objects and on Instagram media, in order. */
  comments: FakeMetaComment[];
  /** Every download of media from a URL the fake was given. */
  fetches: FakeMetaFetch[];
  requests: FakeMetaRequest[];
  errors: FakeMetaAnsweredError[];

  /** The fake's clock, in ms since the epoch. */
  now(): number;
  /** Moves the fake's clock: codes, tokens, containers' 24 hours, the publishing limit's moving day. */
  advanceClock(seconds: number): void;
  /** The next login answers `error=access_denied`: the user cancelled. */
  deny(): void;
  /** The next login grants only these of the permissions asked for; the others are declined. */
  grantOnly(permissions: string[]): void;
  /** The next login gives the app only these Pages (Login for Business lets the user choose). */
  choosePages(pageIds: string[]): void;
  /** User tokens issued from now live this long (seconds): short-lived 3,600, long-lived 5,184,000. */
  tokenLifetimes(lifetimes: { shortLived?: number; longLived?: number }): void;
  /**
   * Every token issued so far ends: `expired` (190/463), `password-changed` (190/460), `logged-out` (190/467), or
   * `app-removed` (the user removed the app in their settings: 190/458).
   */
  endTokens(end: FakeMetaTokenEnd): void;
  /**
   * The next `count` calls (of `operation`, or any API call) are refused with a rate-limit code: 4 (app), 17
   * (user), 32 (Page), 613; the usage headers then say 100 and `estimated_time_to_regain_access` minutes.
   */
  rateLimitNext(code: FakeMetaRateLimitCode, options?: { count?: number; operation?: FakeMetaOperation }): void;
  /**
   * The next call of `operation` is answered with this error in Meta's envelope (a missing permission: code 10 or
   * 200; a server error: code 1 or 2 with status 500), having done nothing; with `applied`, having done its work.
   */
  failNext(
    operation: FakeMetaOperation,
    error: Partial<GraphErrorBody> & { status?: number },
    options?: { applied?: boolean },
  ): void;
  /** The next call of `operation` does its work, then the connection is destroyed before Meta answers. */
  loseNextAnswer(operation: FakeMetaOperation): void;
  /**
   * The next call of `operation` that does its work, after `skip` others, holds its answer back: it is sent `ms`
   * later, or, without `ms`, never; a caller that goes away meanwhile gets none (what was made stays made).
   */
  holdNextAnswer(operation: FakeMetaOperation, options?: { ms?: number; skip?: number }): void;
  /** Answers held back now: their work done, not sent yet, their callers still waiting. */
  heldAnswers(): number;
  /** The next upload transfer keeps its first `bytes` bytes, then the connection is cut. */
  cutUploadAfter(bytes: number): void;
  /** Status reads a container answers `IN_PROGRESS` before it settles (default 1). */
  processingPolls(count: number): void;
  /**
   * The next container settles `ERROR` (with `status`, default Meta's "Error: Media upload has failed with error
   * code 2207026") or `EXPIRED`, instead of `FINISHED`.
   */
  failNextContainer(outcome: { statusCode: 'ERROR' | 'EXPIRED'; status?: string }): void;
  /** The accounts' publishing limit per moving 24 hours (`quota_total`, Meta's 50). */
  publishingLimit(total: number): void;
  /** `count` publications of an account counted now, as if published elsewhere: they free up 24 hours on. */
  usePublishingQuota(igUserId: string, count: number): void;
  close(): Promise<void>;
}

const ROUTES: { method: string; path: RegExp; operation: FakeMetaOperation }[] = [
  { method: 'GET', path: /^\/oauth\/access_token$/, operation: 'accessToken' },
  { method: 'GET', path: /^\/debug_token$/, operation: 'debugToken' },
  { method: 'GET', path: /^\/me$/, operation: 'me' },
  { method: 'GET', path: /^\/(?:me|\d+)\/accounts$/, operation: 'accounts' },
  { method: 'GET', path: /^\/(?:me|\d+)\/permissions$/, operation: 'permissions' },
  { method: 'DELETE', path: /^\/(?:me|\d+)\/permissions(?:\/([a-z_]+))?$/, operation: 'revokePermissions' },
  { method: 'POST', path: /^\/(\d+)\/uploads$/, operation: 'uploadStart' },
  { method: 'POST', path: /^\/(upload:[^/]+)$/, operation: 'uploadTransfer' },
  { method: 'GET', path: /^\/(upload:[^/]+)$/, operation: 'uploadStatus' },
  { method: 'POST', path: /^\/(\d+)\/feed$/, operation: 'pageFeed' },
  { method: 'GET', path: /^\/(\d+)\/(?:feed|posts|published_posts)$/, operation: 'pagePosts' },
  { method: 'POST', path: /^\/(\d+)\/photos$/, operation: 'pagePhotos' },
  { method: 'POST', path: /^\/(\d+)\/videos$/, operation: 'pageVideos' },
  { method: 'POST', path: /^\/([\d_]+)\/comments$/, operation: 'comments' },
  { method: 'GET', path: /^\/([\d_]+)\/comments$/, operation: 'objectComments' },
  { method: 'POST', path: /^\/(\d+)\/media$/, operation: 'igMedia' },
  { method: 'GET', path: /^\/(\d+)\/media$/, operation: 'igMediaList' },
  { method: 'GET', path: /^\/(\d+)\/stories$/, operation: 'igStories' },
  { method: 'POST', path: /^\/(\d+)\/media_publish$/, operation: 'igMediaPublish' },
  { method: 'GET', path: /^\/(\d+)\/content_publishing_limit$/, operation: 'igPublishingLimit' },
  { method: 'GET', path: /^\/([\d_]+)$/, operation: 'node' },
];

/** The operations that need no user or Page token of their own. */
const OWN_AUTH: FakeMetaOperation[] = ['dialog', 'accessToken', 'debugToken'];
/** The budget the usage headers count against, per hour. */
const CALLS_PER_HOUR = 200;

export async function startFakeMeta(
  options: {
    user?: Partial<FakeMetaUser>;
    pages?: FakeMetaPage[];
    appId?: string;
    appSecret?: string;
    /** The app's Valid OAuth Redirect URIs; empty (the default): any http(s) URL. */
    redirectUris?: string[];
    configurations?: Record<string, string[]>;
  } = {},
): Promise<FakeMeta> {
  const user: FakeMetaUser = { id: '10160000000000001', name: 'Ada Owner', email: 'ada@example.com', ...options.user };
  const pages: FakeMetaPage[] = options.pages ?? [
    {
      id: '110000000000001',
      name: 'Acme Bakery',
      username: 'acmebakery',
      category: 'Bakery',
      tasks: ['ADVERTISE', 'ANALYZE', 'CREATE_CONTENT', 'MESSAGING', 'MODERATE', 'MANAGE'],
      pictureUrl: 'https://scontent.xx.fbcdn.net/v/t39.30808-1/acme-bakery.jpg',
      instagram: {
        id: '17841400000000001',
        username: 'acme.bakery',
        name: 'Acme Bakery',
        profilePictureUrl: 'https://scontent.cdninstagram.com/v/t51.2885-19/acme-bakery.jpg',
        followersCount: 1_250,
      },
    },
    {
      id: '110000000000002',
      name: 'Acme Catering',
      username: 'acmecatering',
      category: 'Caterer',
      tasks: ['ANALYZE', 'CREATE_CONTENT', 'MODERATE'],
      pictureUrl: 'https://scontent.xx.fbcdn.net/v/t39.30808-1/acme-catering.jpg',
      instagram: null,
    },
  ];
  const appId = options.appId ?? '1234567890123456';
  const appSecret = options.appSecret ?? 'f4k3m3t4app5ecret0123456789abcdef';
  const configurations = options.configurations ?? {
    '987654321098765': [
      'pages_show_list',
      'pages_read_engagement',
      'pages_manage_posts',
      'pages_manage_engagement',
      'business_management',
      'instagram_basic',
      'instagram_content_publish',
      'instagram_manage_comments',
    ],
  };
  let clockOffsetMs = 0;
  const now = () => Date.now() + clockOffsetMs;
  const newId = numericIds(122_000_000_000_000n);
  const requests: FakeMetaRequest[] = [];
  const errors: FakeMetaAnsweredError[] = [];
  const fetches: FakeMetaFetch[] = [];
  const comments: FakeMetaComment[] = [];
  const failures: {
    operation: FakeMetaOperation;
    status: number;
    error: GraphErrorBody;
    applied: boolean;
  }[] = [];
  const limits: { code: FakeMetaRateLimitCode; operation: FakeMetaOperation | undefined }[] = [];
  const lost = new Set<FakeMetaOperation>();
  const holds = new Switches<FakeMetaOperation>();
  const held = { count: 0 };
  const calls: number[] = [];
  let uploadCut: number | null = null;
  let graphOrigin = '';

  const sniff = async (bytes: Buffer) => (await fileTypeFromBuffer(bytes))?.mime;
  /** Meta's servers download what they are pointed at: the fake fetches whatever URL it is given. */
  const fetchMedia = async (url: string) => {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(15_000) });
      fetches.push({ url, status: response.status });
      if (!response.ok) return null;
      const bytes = Buffer.from(await response.arrayBuffer());
      return { bytes, type: await sniff(bytes) };
    } catch {
      fetches.push({ url, status: null });
      return null;
    }
  };

  const login = new LoginStore({
    now,
    appId,
    appSecret,
    redirectUris: options.redirectUris ?? [],
    configurations,
    user,
    pages,
  });
  const scopesOf = (token: FakeMetaToken) => login.scopesOf(token);
  const pagesOf = (token: FakeMetaToken) => login.pagesOf(token);
  const pageStore = new PageStore({ now, newId, appId, pages, scopesOf, fetchMedia, sniff });
  const instagram = new InstagramStore({ now, newId, pages, scopesOf, pagesOf, fetchMedia });

  // ---- usage headers ----

  /** The usage headers of "Rate Limits": X-App-Usage for user tokens, X-Business-Use-Case-Usage for the rest. */
  const usageHeaders = (
    request: GraphRequest,
    token: FakeMetaToken | undefined,
    limited: boolean,
  ): Record<string, string> => {
    const hourAgo = now() - 3_600_000;
    while (calls.length > 0 && calls[0]! <= hourAgo) calls.shift();
    const percent = limited ? 100 : Math.min(99, Math.floor((calls.length * 100) / CALLS_PER_HOUR));
    const usage = { call_count: percent, total_cputime: Math.floor(percent / 2), total_time: Math.floor(percent / 2) };
    const igUser = /^\/(\d+)\//.exec(request.path)?.[1];
    const business = igUser && instagram.account(igUser) ? { id: igUser, type: 'instagram' } : undefined;
    if (!business && token?.kind !== 'page') return { 'X-App-Usage': JSON.stringify(usage) };
    const id = business?.id ?? token!.pageId!;
    return {
      'X-Business-Use-Case-Usage': JSON.stringify({
        [id]: [{ type: business?.type ?? 'pages', ...usage, estimated_time_to_regain_access: limited ? 5 : 0 }],
      }),
    };
  };

  // ---- routing ----

  const handle = async (
    operation: FakeMetaOperation,
    request: GraphRequest,
    id: string,
    token: FakeMetaToken | undefined,
  ): Promise<Answer> => {
    const t = token!;
    switch (operation) {
      case 'dialog':
        return login.dialog(request.url.searchParams);
      case 'accessToken':
        return login.accessToken(request);
      case 'debugToken':
        return login.debugToken(request);
      case 'me':
        return login.me(request, t);
      case 'accounts':
        return login.accounts(request, t);
      case 'permissions':
        return login.permissions(t);
      case 'revokePermissions':
        return login.revoke(t, id === '' ? undefined : id);
      case 'uploadStart':
        return pageStore.startUpload(request, t, id);
      case 'uploadTransfer':
        return pageStore.transfer(request, t, id);
      case 'uploadStatus':
        return pageStore.uploadStatus(id);
      case 'pageFeed': {
        const answer = pageStore.feed(request, t, id);
        if (lost.has(operation)) pageStore.posts.at(-1)!.answerLost = true;
        return answer;
      }
      case 'pagePosts':
        return pageStore.list(request, id, graphOrigin);
      case 'pagePhotos':
      case 'pageVideos': {
        const before = pageStore.posts.length;
        const answer = await (operation === 'pagePhotos'
          ? pageStore.photo(request, t, id)
          : pageStore.video(request, t, id));
        if (lost.has(operation) && pageStore.posts.length > before) pageStore.posts.at(-1)!.answerLost = true;
        return answer;
      }
      case 'comments': {
        let made;
        if (pageStore.ownerOf(id)) made = pageStore.comment(request, t, id);
        else if (instagram.media.some((m) => m.id === id)) made = instagram.comment(request, t, id);
        else throw unsupported('post', id);
        comments.push(made.comment);
        if (lost.has(operation)) made.comment.answerLost = true;
        return made.answer;
      }
      case 'objectComments':
        if (pageStore.ownerOf(id)) return pageStore.listComments(request, t, id, graphOrigin);
        if (instagram.media.some((m) => m.id === id)) return instagram.listComments(request, t, id, graphOrigin);
        throw unsupported('get', id);
      case 'igMedia':
        return instagram.create(request, t, id);
      case 'igMediaList':
        return instagram.list(request, t, id, false, graphOrigin);
      case 'igStories':
        return instagram.list(request, t, id, true, graphOrigin);
      case 'igMediaPublish': {
        const media = instagram.publish(request, t, id);
        if (lost.has(operation)) media.answerLost = true;
        return { status: 200, body: { id: media.id } };
      }
      case 'igPublishingLimit':
        return instagram.limit(request, t, id);
      case 'node':
        return node(request, t, id);
    }
  };

  /** `GET /{id}`: a Page, a Page's post, photo or video, an Instagram account, container or media, the user. */
  const node = (request: GraphRequest, token: FakeMetaToken, id: string): Answer => {
    const page = pages.find((p) => p.id === id);
    if (page) {
      if (!login.pagesOf(token).some((p) => p.id === id)) throw unsupported('get', id);
      const fields = fieldsOf(request.params, ['name', 'id']);
      // `GET /{page-id}?fields=access_token` with a user token is the other way to a Page token.
      const pageToken =
        token.kind === 'page'
          ? token.value
          : fields.includes('access_token') && login.scopesOf(token).includes('pages_show_list')
            ? login.pageToken(token, page).value
            : undefined;
      return { status: 200, body: pick(login.pageObject(page, pageToken), fields) };
    }
    const owner = pageStore.ownerOf(id);
    if (owner) {
      if (!login.pagesOf(token).some((p) => p.id === owner)) throw unsupported('get', id);
      const fields = request.params.fields === undefined ? undefined : fieldsOf(request.params, []);
      return { status: 200, body: pageStore.node(id, fields) };
    }
    const found = instagram.node(id, request, token);
    if (found) return found;
    if (id === user.id) return login.me(request, token);
    throw unsupported('get', id);
  };

  /** The answer to a request, and whether Meta answers at all (a lost answer), or holds it back. */
  const answer = async (
    operation: FakeMetaOperation,
    request: GraphRequest,
    id: string,
  ): Promise<{ answer: Answer; lose: boolean; hold?: AnswerHold | undefined }> => {
    let token: FakeMetaToken | undefined;
    let headers: Record<string, string> = {};
    try {
      if (!OWN_AUTH.includes(operation)) {
        token = login.authenticate(request);
        calls.push(now());
        const limitAt = limits.findIndex((l) => l.operation === undefined || l.operation === operation);
        if (limitAt >= 0) {
          const [limit] = limits.splice(limitAt, 1);
          headers = usageHeaders(request, token, true);
          throw rateLimited(limit!.code);
        }
        headers = usageHeaders(request, token, false);
      }
      const failureAt = failures.findIndex((f) => f.operation === operation);
      const failure = failureAt >= 0 ? failures.splice(failureAt, 1)[0] : undefined;
      if (failure && !failure.applied) throw new GraphError(failure.status, failure.error);
      const result = await handle(operation, request, id, token);
      if (failure) throw new GraphError(failure.status, failure.error);
      const lose = lost.delete(operation);
      return {
        answer: { ...result, headers: { ...headers, ...result.headers } },
        lose,
        hold: lose || result.status >= 400 ? undefined : holds.heldAs(operation),
      };
    } catch (error) {
      if (!(error instanceof GraphError)) throw error;
      const trace = traceId();
      errors.push({ ...error.error, status: error.status, fbtrace_id: trace, operation });
      // A lost answer stays armed until a call of its operation succeeds.
      return {
        answer: {
          status: error.status,
          body: { error: { ...error.error, fbtrace_id: trace } },
          headers: { ...headers, 'x-fb-trace-id': trace },
        },
        lose: false,
      };
    }
  };

  const send = (res: ServerResponse, reply: Answer) => {
    const headers: Record<string, string> = { ...reply.headers };
    let payload = '';
    if (reply.html !== undefined) {
      headers['Content-Type'] = 'text/html; charset=utf-8';
      payload = reply.html;
    } else if (reply.body !== undefined) {
      headers['Content-Type'] = 'application/json; charset=UTF-8';
      payload = JSON.stringify(reply.body);
    }
    res.writeHead(reply.status, headers);
    res.end(payload);
  };

  const tokenKind = (value: string | undefined): FakeMetaRequest['token'] => {
    if (value === undefined) return 'none';
    if (value === `${appId}|${appSecret}`) return 'app';
    return login.tokens.find((t) => t.value === value)?.kind ?? 'unknown';
  };

  const serve = (www: boolean) => (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake-meta.invalid');
    const versioned = /^\/(v\d+\.\d+)(\/.*)$/.exec(url.pathname);
    const version = versioned?.[1] ?? null;
    const path = versioned?.[2] ?? url.pathname;
    const method = req.method ?? 'GET';
    const scheme = /^(Bearer|OAuth)\s/i.exec(req.headers.authorization ?? '')?.[1] ?? null;
    const route = www
      ? path === '/dialog/oauth' && method === 'GET'
        ? { operation: 'dialog' as const, path: /^\/dialog\/oauth$/ }
        : undefined
      : ROUTES.find((r) => r.method === method && r.path.test(path));
    const id = route ? decodeURIComponent(route.path.exec(path)?.[1] ?? '') : '';
    // A transfer to cut keeps the bytes that arrived up to the cut, as Meta keeps what reached it.
    const cutAt = route?.operation === 'uploadTransfer' ? uploadCut : null;
    if (cutAt !== null) uploadCut = null;
    let cut = false;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => {
      if (cut) return;
      chunks.push(chunk);
      const arrived = Buffer.concat(chunks);
      if (cutAt === null || arrived.length < cutAt) return;
      cut = true;
      requests.push({
        method,
        path: url.pathname + url.search,
        version,
        operation: 'uploadTransfer',
        token: 'user',
        scheme,
      });
      try {
        pageStore.receive(id, Number(req.headers.file_offset), arrived.subarray(0, cutAt));
      } catch {
        // An upload session Meta does not know: nothing to keep.
      }
      req.socket.destroy();
    });
    req.on('end', () => {
      if (cut) return;
      const body = Buffer.concat(chunks);
      const raw = route?.operation === 'uploadTransfer';
      readParameters(url, raw ? {} : req.headers, raw ? Buffer.alloc(0) : body)
        .then(async ({ params, files }) => {
          const request: GraphRequest = {
            method,
            url,
            version,
            path,
            headers: req.headers,
            body,
            params,
            files,
            token: tokenOf(params, req.headers),
          };
          requests.push({
            method,
            path: url.pathname + url.search,
            version,
            operation: route?.operation ?? null,
            token: tokenKind(request.token),
            scheme,
          });
          if (!route) {
            const error = graphError(400, {
              message: `Unknown path components: ${path}`,
              code: 2500,
            });
            return {
              answer: { status: error.status, body: { error: { ...error.error, fbtrace_id: traceId() } } },
              lose: false,
            };
          }
          return answer(route.operation, request, id);
        })
        .then((answered: { answer: Answer; lose: boolean; hold?: AnswerHold | undefined }) => {
          const { answer: reply, lose, hold } = answered;
          if (lose) req.socket.destroy();
          else if (hold) sendHeld(res, hold, held, () => send(res, reply));
          else send(res, reply);
        })
        .catch((error: unknown) =>
          send(res, {
            status: error instanceof GraphError ? error.status : 500,
            body: {
              error:
                error instanceof GraphError
                  ? { ...error.error, fbtrace_id: traceId() }
                  : { message: String(error), type: 'OAuthException', code: 1, fbtrace_id: traceId() },
            },
          }),
        );
    });
  };

  const graphServer = http.createServer(serve(false));
  const wwwServer = http.createServer(serve(true));
  const listen = async (server: http.Server) => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  graphOrigin = await listen(graphServer);
  const wwwOrigin = await listen(wwwServer);

  return {
    url: graphOrigin,
    wwwUrl: wwwOrigin,
    appId,
    appSecret,
    user,
    pages,
    instagramAccounts: pages.flatMap((p) => (p.instagram ? [p.instagram] : [])),
    configurations,
    authorizations: login.authorizations,
    grants: login.grants,
    tokens: login.tokens,
    posts: pageStore.posts,
    photos: pageStore.photos,
    videos: pageStore.videos,
    uploads: pageStore.uploads,
    uploadedBytes: (sessionId) => pageStore.uploadedBytes(sessionId),
    containers: instagram.containers,
    instagramMedia: instagram.media,
    comments,
    fetches,
    requests,
    errors,
    now,
    advanceClock: (seconds) => {
      clockOffsetMs += seconds * 1000;
    },
    deny: () => login.deny(),
    grantOnly: (permissions) => login.grantOnly(permissions),
    choosePages: (pageIds) => login.choosePages(pageIds),
    tokenLifetimes: (lifetimes) => login.lifetimes(lifetimes),
    endTokens: (end) => login.endTokens(end),
    rateLimitNext: (code, { count = 1, operation } = {}) => {
      for (let i = 0; i < count; i++) limits.push({ code, operation });
    },
    failNext: (operation, { status = 400, ...error }, { applied = false } = {}) => {
      failures.push({
        operation,
        status,
        error: { message: 'An unknown error has occurred.', type: 'OAuthException', code: 1, ...error },
        applied,
      });
    },
    loseNextAnswer: (operation) => {
      lost.add(operation);
    },
    holdNextAnswer: (operation, { ms, skip } = {}) =>
      holds.holdNextAnswer(operation, ms === undefined ? {} : { ms }, skip),
    heldAnswers: () => held.count,
    cutUploadAfter: (bytes) => {
      uploadCut = bytes;
    },
    processingPolls: (count) => instagram.processingPolls(count),
    failNextContainer: ({ statusCode, status }) =>
      instagram.settleNext({
        statusCode,
        status:
          status ??
          (statusCode === 'ERROR'
            ? 'Error: Media upload has failed with error code 2207026'
            : 'Expired: Media was not published within 24 hours.'),
      }),
    publishingLimit: (total) => {
      instagram.quotaTotal = total;
    },
    usePublishingQuota: (igUserId, count) => instagram.usePublishingQuota(igUserId, count),
    close: async () => {
      for (const server of [graphServer, wwwServer]) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}
