import { createHash, randomBytes } from 'node:crypto';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendHeld, type AnswerHold } from './fake-graph-protocol.js';

/** A board of the fake's account, with its sections. */
export interface FakePinterestBoard {
  id: string;
  name: string;
  description: string | null;
  privacy: 'PUBLIC' | 'PROTECTED' | 'SECRET';
  sections: { id: string; name: string }[];
}

/** A pin the fake created, with what it was made of. */
export interface FakePin {
  id: string;
  boardId: string;
  boardSectionId: string | null;
  title: string | null;
  description: string | null;
  link: string | null;
  altText: string | null;
  /** `image`, `video` or `multiple_images` (a carousel), as Pinterest's `media.media_type` says. */
  mediaType: 'image' | 'video' | 'multiple_images';
  /** The images' bytes, as fetched from their URLs or decoded from base64, in order. */
  images: { bytes: Buffer; contentType: string; via: 'url' | 'base64' }[];
  /** A video pin's media id and how its cover was given. */
  video: { mediaId: string; cover: { keyFrameTime: number } | { url: string } | { data: true } } | null;
  createdAt: number;
}

/** A video registered with `POST /v5/media`. */
export interface FakePinterestMedia {
  id: string;
  status: 'registered' | 'processing' | 'succeeded' | 'failed';
  /** The upload's S3 key, which the upload form must carry. */
  key: string;
  bytes: Buffer | null;
  /** Status reads left while processing before it settles. */
  checksLeft: number;
  /** Settles as `failed` instead of `succeeded`. */
  fails: boolean;
}

export type FakePinterestOperation =
  | 'authorize'
  | 'token'
  | 'userAccount'
  | 'listBoards'
  | 'listSections'
  | 'listBoardPins'
  | 'createPin'
  | 'getPin'
  | 'registerMedia'
  | 'getMedia'
  | 'upload';

export interface FakePinterestRequest {
  method: string;
  /** The path with the query. */
  path: string;
  operation: FakePinterestOperation | null;
}

/**
 * A stand-in for Pinterest on a loopback port, following API v5 as developers.pinterest.com documents it
 * (its reference, its OpenAPI description, and the guides on authentication and video pins):
 *
 * - OAuth: the consent page (www.pinterest.com/oauth/, scopes comma-separated), `POST /v5/oauth/token` with
 *   the app's HTTP Basic credentials, `authorization_code` and `refresh_token` grants. Access tokens live 30
 *   days; refresh tokens are continuous ones: 60 days, and every refresh answers a new refresh token with
 *   `refresh_token_expires_in` (the one used is refused from then on).
 * - `GET /v5/user_account`; `GET /v5/boards`, `GET /v5/boards/{id}/sections`, `GET /v5/boards/{id}/pins`
 *   paged by `bookmark` and `page_size` (at most 250, 25 by default), the board's pins newest first.
 * - `POST /v5/pins` with a `media_source` of `image_url` (which the fake downloads, as Pinterest does),
 *   `image_base64`, `multiple_image_urls` or `multiple_image_base64` (2 to 5 items), or `video_id` (a
 *   media that succeeded, with a cover: `cover_image_url`, `cover_image_data` or
 *   `cover_image_key_frame_time`); `GET /v5/pins/{id}`.
 * - `POST /v5/media` registers a video and answers an `upload_url` and `upload_parameters`: the upload is an
 *   S3-style POST form to that URL, the parameters as fields and the bytes as `file`. `GET /v5/media/{id}`
 *   answers `registered`, then `processing` (for a number of reads), then `succeeded` or `failed`.
 *
 * Each endpoint asks for the scopes its `security` lists. Errors are Pinterest's `{code, message}`; every
 * API answer carries `x-ratelimit-limit`, `x-ratelimit-remaining` and `x-ratelimit-reset` (seconds to the
 * window's end), and a used-up limit is 429 until then.
 */
export interface FakePinterest {
  /** The API's origin: `${url}/v5/…` (Pinterest's https://api.pinterest.com). */
  url: string;
  /** The consent page (Pinterest's https://www.pinterest.com/oauth/). */
  authorizeUrl: string;
  appId: string;
  appSecret: string;
  account: { id: string; username: string; businessName: string | null; profileImage: string };
  boards: FakePinterestBoard[];
  addBoard(board: Partial<Omit<FakePinterestBoard, 'id' | 'sections'>> & { sections?: string[] }): FakePinterestBoard;
  pins: FakePin[];
  media: FakePinterestMedia[];
  /** Refreshes granted, and refused (a used, expired or unknown refresh token). */
  refreshes: { granted: number; refused: number };
  /** The scopes the last consent granted. */
  grantedScopes(): string[];
  requests: FakePinterestRequest[];

  /** The next consent answers `error=access_denied`. */
  deny(): void;
  /** Every access token issued so far has expired (401 until the app refreshes). */
  expireAccessTokens(): void;
  /** The user removed the app: every token is refused, refreshes too. */
  revokeAll(): void;
  /** `operation` is rate limited (429) until `resetInSeconds` from now. */
  exhaustLimit(operation: FakePinterestOperation, resetInSeconds: number): void;
  /** Status reads a video answers `processing` before it settles (default 1). */
  processingChecks(count: number): void;
  /** The next video to settle fails its processing. */
  failNextProcessing(): void;
  /** The next call of `operation` does its work, then the connection is cut before the answer. */
  loseNextAnswer(operation: FakePinterestOperation): void;
  /**
   * The next call of `operation` that does its work, after `skip` others, holds its answer back: it is sent `ms`
   * later, or, without `ms`, never; a caller that goes away meanwhile never gets it (a worker killed while
   * Pinterest answers), the pin made all the same.
   */
  holdNextAnswer(operation: FakePinterestOperation, options?: { ms?: number; skip?: number }): void;
  /** Answers held back now: their work done, not sent yet, their callers still waiting. */
  heldAnswers(): number;
  /**
   * The app has Trial access (or not): pins are refused in production, as Pinterest refuses them
   * (403, code 29), and made only in its API Sandbox.
   */
  trialAccess(on: boolean): void;
  /** The next call of `operation` is answered `status` (a 5xx) having done nothing. */
  failNext(operation: FakePinterestOperation, status?: number): void;
  /** A new pin shows among its board's pins only this long after it was made (0, at once, by default). */
  pinsShowAfter(seconds: number): void;
  /** A board's pins are listed oldest first (Pinterest documents no order for them; newest first by default). */
  listPinsOldestFirst(on: boolean): void;
  advanceClock(seconds: number): void;
  close(): Promise<void>;
}

const ACCESS_LIFETIME_SECONDS = 30 * 86_400;
const REFRESH_LIFETIME_SECONDS = 60 * 86_400;
const CODE_LIFETIME_SECONDS = 600;
const WINDOW_LIMIT = 1000;
/** Pinterest's scopes (developers.pinterest.com, "Set up authentication and authorization"). */
const SCOPES = [
  'ads:read',
  'ads:write',
  'billing:read',
  'billing:write',
  'biz_access:read',
  'biz_access:write',
  'boards:read',
  'boards:read_secret',
  'boards:write',
  'boards:write_secret',
  'catalogs:read',
  'catalogs:write',
  'pins:read',
  'pins:read_secret',
  'pins:write',
  'pins:write_secret',
  'user_accounts:read',
];
/** The scopes each endpoint asks for, as its `security` in Pinterest's OpenAPI description lists them. */
const NEEDS: Partial<Record<FakePinterestOperation, string[]>> = {
  userAccount: ['user_accounts:read'],
  listBoards: ['boards:read'],
  listSections: ['boards:read'],
  listBoardPins: ['boards:read', 'pins:read'],
  createPin: ['boards:read', 'boards:write', 'pins:read', 'pins:write'],
  getPin: ['boards:read', 'pins:read'],
  registerMedia: ['pins:write'],
  getMedia: ['pins:read'],
};

const ROUTES: { method: string; path: RegExp; operation: FakePinterestOperation }[] = [
  { method: 'GET', path: /^\/oauth\/$/, operation: 'authorize' },
  { method: 'POST', path: /^\/v5\/oauth\/token$/, operation: 'token' },
  { method: 'GET', path: /^\/v5\/user_account$/, operation: 'userAccount' },
  { method: 'GET', path: /^\/v5\/boards$/, operation: 'listBoards' },
  { method: 'GET', path: /^\/v5\/boards\/([^/]+)\/sections$/, operation: 'listSections' },
  { method: 'GET', path: /^\/v5\/boards\/([^/]+)\/pins$/, operation: 'listBoardPins' },
  { method: 'POST', path: /^\/v5\/pins$/, operation: 'createPin' },
  { method: 'GET', path: /^\/v5\/pins\/([^/]+)$/, operation: 'getPin' },
  { method: 'POST', path: /^\/v5\/media$/, operation: 'registerMedia' },
  { method: 'GET', path: /^\/v5\/media\/([^/]+)$/, operation: 'getMedia' },
  { method: 'POST', path: /^\/media-upload\/$/, operation: 'upload' },
];

interface Answer {
  status: number;
  body?: unknown;
  html?: string;
  headers?: Record<string, string>;
}

interface Token {
  scopes: string[];
  expiresAt: number;
  revoked: boolean;
}

const error = (status: number, code: number, message: string): Answer => ({ status, body: { code, message } });
const AUTHENTICATION_FAILED = error(401, 2, 'Authentication failed.');

/** The value of a Pinterest id: digits, as its API's ids are. */
const digits = () => String(BigInt(`0x${randomBytes(7).toString('hex')}`) + 1_000_000_000_000_000n);

export async function startFakePinterest(
  options: { account?: Partial<FakePinterest['account']> } = {},
): Promise<FakePinterest> {
  const appId = '1500123';
  const appSecret = 'fake-pinterest-app-secret-0123456789abcdef';
  const account = {
    id: '2783136121146311751',
    username: 'acmestudio',
    businessName: 'Acme Studio' as string | null,
    profileImage: 'https://i.pinimg.com/600x600_R/fake/acmestudio.jpg',
    ...options.account,
  };
  const boards: FakePinterestBoard[] = [];
  const pins: FakePin[] = [];
  const media: FakePinterestMedia[] = [];
  const requests: FakePinterestRequest[] = [];
  const codes = new Map<string, { redirectUri: string; scopes: string[]; expiresAt: number; used: boolean }>();
  const accessTokens = new Map<string, Token>();
  const refreshTokens = new Map<string, Token & { used: boolean }>();
  const refreshes = { granted: 0, refused: 0 };
  const limited = new Map<FakePinterestOperation, number>();
  const lost = new Set<FakePinterestOperation>();
  const holds: { operation: FakePinterestOperation; skip: number; hold: AnswerHold }[] = [];
  const held = { count: 0 };
  /** How this call, done, holds its answer back, if a switch says so (a call skipped counts). */
  const heldAs = (operation: FakePinterestOperation): AnswerHold | undefined => {
    const at = holds.findIndex((entry) => entry.operation === operation);
    if (at < 0) return undefined;
    const entry = holds[at]!;
    if (entry.skip > 0) {
      entry.skip -= 1;
      return undefined;
    }
    holds.splice(at, 1);
    return entry.hold;
  };
  const failures: { operation: FakePinterestOperation; status: number }[] = [];
  let granted: string[] = [];
  let denyNext = false;
  let trial = false;
  let checksPerVideo = 1;
  let failNextVideo = false;
  let clockOffsetMs = 0;
  let showAfterMs = 0;
  let oldestFirst = false;
  let origin = '';
  const now = () => Date.now() + clockOffsetMs;

  const addBoard: FakePinterest['addBoard'] = (board) => {
    const added: FakePinterestBoard = {
      id: digits(),
      name: board.name ?? `Board ${boards.length + 1}`,
      description: board.description ?? null,
      privacy: board.privacy ?? 'PUBLIC',
      sections: (board.sections ?? []).map((name) => ({ id: digits(), name })),
    };
    boards.push(added);
    return added;
  };

  // ---- OAuth ----

  const authorize = (query: URLSearchParams): Answer => {
    const page = (reason: string): Answer => ({
      status: 400,
      html: `<!doctype html><title>Pinterest</title><p>Something went wrong.</p><!-- ${reason} -->`,
    });
    if (query.get('client_id') !== appId) return page('client_id is not an app of Pinterest');
    if (query.get('response_type') !== 'code') return page('response_type must be code');
    const redirectUri = query.get('redirect_uri') ?? '';
    const target = URL.parse(redirectUri);
    if (!target || !/^https?:$/.test(target.protocol)) return page('redirect_uri must be an http(s) URL');
    const scopes = (query.get('scope') ?? '').split(',').filter(Boolean);
    if (scopes.length === 0 || scopes.some((scope) => !SCOPES.includes(scope))) return page('unknown scope');
    const state = query.get('state');
    if (state !== null) target.searchParams.set('state', state);
    if (denyNext) {
      denyNext = false;
      target.searchParams.set('error', 'access_denied');
      return { status: 302, headers: { Location: target.toString() } };
    }
    const code = randomBytes(20).toString('hex');
    codes.set(code, { redirectUri, scopes, expiresAt: now() + CODE_LIFETIME_SECONDS * 1000, used: false });
    target.searchParams.set('code', code);
    return { status: 302, headers: { Location: target.toString() } };
  };

  const issue = (scopes: string[], responseType: 'authorization_code' | 'refresh_token'): Answer => {
    const access = `pina_${randomBytes(24).toString('base64url')}`;
    const refresh = `pinr_${randomBytes(24).toString('base64url')}`;
    accessTokens.set(access, { scopes, expiresAt: now() + ACCESS_LIFETIME_SECONDS * 1000, revoked: false });
    const refreshExpiresAt = now() + REFRESH_LIFETIME_SECONDS * 1000;
    refreshTokens.set(refresh, { scopes, expiresAt: refreshExpiresAt, revoked: false, used: false });
    return {
      status: 200,
      body: {
        access_token: access,
        refresh_token: refresh,
        response_type: responseType,
        token_type: 'bearer',
        expires_in: ACCESS_LIFETIME_SECONDS,
        refresh_token_expires_in: REFRESH_LIFETIME_SECONDS,
        refresh_token_expires_at: Math.floor(refreshExpiresAt / 1000),
        scope: scopes.join(','),
      },
    };
  };

  const token = (headers: IncomingHttpHeaders, body: Buffer): Answer => {
    const basic = /^Basic\s+(\S+)$/i.exec(headers.authorization ?? '');
    const [id, secret] = basic ? Buffer.from(basic[1]!, 'base64').toString('utf8').split(':') : [];
    if (id !== appId || secret !== appSecret) return AUTHENTICATION_FAILED;
    if (!(headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded'))
      return error(400, 1, 'Invalid request: expected a form.');
    const form = new URLSearchParams(body.toString('utf8'));
    const grant = form.get('grant_type');
    if (grant === 'authorization_code') {
      const code = codes.get(form.get('code') ?? '');
      if (!code || code.used || code.expiresAt < now() || code.redirectUri !== form.get('redirect_uri'))
        return error(400, 1, 'Invalid authorization code.');
      code.used = true;
      granted = code.scopes;
      return issue(code.scopes, 'authorization_code');
    }
    if (grant === 'refresh_token') {
      const refresh = refreshTokens.get(form.get('refresh_token') ?? '');
      if (!refresh || refresh.used || refresh.revoked || refresh.expiresAt < now()) {
        refreshes.refused += 1;
        return error(400, 1, 'Invalid refresh token.');
      }
      refresh.used = true;
      refreshes.granted += 1;
      return issue(refresh.scopes, 'refresh_token');
    }
    return error(400, 1, 'Invalid grant_type.');
  };

  // ---- The API ----

  /** The access token's scopes, or Pinterest's refusal. */
  const authenticate = (headers: IncomingHttpHeaders, operation: FakePinterestOperation): Answer | undefined => {
    const bearer = /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? '');
    const found = bearer && accessTokens.get(bearer[1]!);
    if (!found || found.revoked || found.expiresAt < now()) return AUTHENTICATION_FAILED;
    const missing = (NEEDS[operation] ?? []).filter((scope) => !found.scopes.includes(scope));
    if (missing.length > 0) return error(403, 29, 'You are not permitted to access that resource.');
    return undefined;
  };

  /** One page of `items` from `bookmark` (an offset, opaque to the caller). */
  const page = <T>(items: T[], query: URLSearchParams): Answer => {
    const size = Number(query.get('page_size') ?? '25');
    if (!Number.isInteger(size) || size < 1 || size > 250) return error(400, 1, 'Invalid page_size.');
    const bookmark = query.get('bookmark');
    const from = bookmark
      ? Number(
          Buffer.from(bookmark, 'base64url')
            .toString('utf8')
            .replace(/^offset:/, ''),
        )
      : 0;
    if (!Number.isInteger(from) || from < 0) return error(400, 1, 'Invalid bookmark.');
    const next = from + size < items.length ? Buffer.from(`offset:${from + size}`).toString('base64url') : null;
    return { status: 200, body: { items: items.slice(from, from + size), bookmark: next } };
  };

  const boardOf = (id: string) => boards.find((board) => board.id === id);

  const pinObject = (pin: FakePin) => ({
    id: pin.id,
    created_at: new Date(pin.createdAt).toISOString().replace(/\.\d{3}Z$/, ''),
    board_id: pin.boardId,
    board_section_id: pin.boardSectionId,
    board_owner: { username: account.username },
    title: pin.title,
    description: pin.description,
    link: pin.link,
    alt_text: pin.altText,
    is_owner: true,
    media: { media_type: pin.mediaType },
  });

  /** An image Pinterest downloads from its URL: a 200 with an image, or the reason it could not. */
  const download = async (url: unknown): Promise<FakePin['images'][number] | string> => {
    if (typeof url !== 'string' || !URL.canParse(url)) return 'Invalid image url.';
    try {
      const response = await fetch(url);
      const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
      if (!response.ok || !type.startsWith('image/'))
        return `Sorry, we could not fetch the image (${response.status}).`;
      return { bytes: Buffer.from(await response.arrayBuffer()), contentType: type, via: 'url' };
    } catch {
      return 'Sorry, we could not fetch the image.';
    }
  };

  const decode = (item: Record<string, unknown>): FakePin['images'][number] | string => {
    const type = item.content_type;
    if (type !== 'image/jpeg' && type !== 'image/png') return 'content_type must be image/jpeg or image/png.';
    if (typeof item.data !== 'string' || !/^[a-zA-Z0-9+/=]+$/.test(item.data)) return 'Invalid image data.';
    return { bytes: Buffer.from(item.data, 'base64'), contentType: type, via: 'base64' };
  };

  const text = (value: unknown, max: number): string | null | false =>
    value === undefined || value === null ? null : typeof value === 'string' && value.length <= max ? value : false;

  const createPin = async (body: Buffer): Promise<Answer> => {
    let input: Record<string, unknown>;
    try {
      input = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    } catch {
      return error(400, 1, 'Invalid request body.');
    }
    const board = typeof input.board_id === 'string' ? boardOf(input.board_id) : undefined;
    if (!board) return error(404, 404, 'Board not found.');
    const sectionId = input.board_section_id ?? null;
    if (sectionId !== null && !board.sections.some((section) => section.id === sectionId))
      return error(404, 404, 'Board section not found.');
    const title = text(input.title, 100);
    const description = text(input.description, 800);
    const link = text(input.link, 2048);
    const altText = text(input.alt_text, 500);
    if (title === false || description === false || link === false || altText === false)
      return error(400, 1, 'Invalid parameters: title, description, link or alt_text.');
    const source = (input.media_source ?? {}) as Record<string, unknown>;
    const images: FakePin['images'] = [];
    let video: FakePin['video'] = null;
    let mediaType: FakePin['mediaType'] = 'image';
    switch (source.source_type) {
      case 'image_url':
      case 'image_base64': {
        const image = source.source_type === 'image_url' ? await download(source.url) : decode(source);
        if (typeof image === 'string') return error(400, 1, image);
        images.push(image);
        break;
      }
      case 'multiple_image_urls':
      case 'multiple_image_base64': {
        const items = source.items;
        if (!Array.isArray(items) || items.length < 2 || items.length > 5)
          return error(400, 1, 'A carousel takes 2 to 5 images.');
        for (const item of items as Record<string, unknown>[]) {
          const image = source.source_type === 'multiple_image_urls' ? await download(item.url) : decode(item);
          if (typeof image === 'string') return error(400, 1, image);
          images.push(image);
        }
        mediaType = 'multiple_images';
        break;
      }
      case 'video_id': {
        const registered = media.find((one) => one.id === source.media_id);
        if (!registered) return error(404, 404, 'Media not found.');
        if (registered.status !== 'succeeded') return error(400, 1, 'Media upload not processed yet.');
        const keyFrame = source.cover_image_key_frame_time;
        let cover: NonNullable<FakePin['video']>['cover'];
        if (typeof source.cover_image_url === 'string') cover = { url: source.cover_image_url };
        else if (typeof source.cover_image_data === 'string') cover = { data: true };
        else if (typeof keyFrame === 'number' && Number.isInteger(keyFrame) && keyFrame >= 0)
          cover = { keyFrameTime: keyFrame };
        else return error(400, 1, 'A video pin needs cover_image_url, cover_image_data or cover_image_key_frame_time.');
        video = { mediaId: registered.id, cover };
        mediaType = 'video';
        break;
      }
      default:
        return error(400, 1, 'Invalid media_source.');
    }
    const pin: FakePin = {
      id: digits(),
      boardId: board.id,
      boardSectionId: sectionId as string | null,
      title,
      description,
      link,
      altText,
      mediaType,
      images,
      video,
      createdAt: now(),
    };
    pins.push(pin);
    return { status: 201, body: pinObject(pin) };
  };

  const registerMedia = (body: Buffer): Answer => {
    let input: { media_type?: unknown };
    try {
      input = JSON.parse(body.toString('utf8')) as { media_type?: unknown };
    } catch {
      return error(400, 1, 'Invalid request body.');
    }
    if (input.media_type !== 'video') return error(400, 1, 'media_type must be video.');
    const id = digits();
    const key = `uploads/${randomBytes(3).toString('hex')}/${account.id}:video:${id}`;
    media.push({ id, status: 'registered', key, bytes: null, checksLeft: checksPerVideo, fails: false });
    return {
      status: 201,
      body: {
        media_id: id,
        media_type: 'video',
        upload_url: `${origin}/media-upload/`,
        upload_parameters: {
          'x-amz-date': '20261127T120000Z',
          'x-amz-signature': signature(key),
          'x-amz-security-token': 'fake-security-token',
          'x-amz-algorithm': 'AWS4-HMAC-SHA256',
          key,
          policy: Buffer.from(JSON.stringify({ key })).toString('base64'),
          'x-amz-credential': 'FAKECREDENTIAL/20261127/us-east-1/s3/aws4_request',
          'Content-Type': 'multipart/form-data',
        },
      },
    };
  };

  const signature = (key: string) => createHash('sha256').update(`${appSecret}:${key}`).digest('hex');

  const getMedia = (id: string): Answer => {
    const found = media.find((one) => one.id === id);
    if (!found) return error(404, 404, 'Media not found.');
    if (found.status === 'processing') {
      if (found.checksLeft > 0) found.checksLeft -= 1;
      else found.status = found.fails ? 'failed' : 'succeeded';
    }
    return { status: 200, body: { media_id: found.id, media_type: 'video', status: found.status } };
  };

  /** The S3 POST form: every upload parameter as a field, the file last. S3 answers 204 with no body. */
  const upload = (headers: IncomingHttpHeaders, body: Buffer): Answer => {
    const fields = multipart(headers['content-type'] ?? '', body);
    if (!fields) return { status: 400, html: '<Error><Code>MalformedPOSTRequest</Code></Error>' };
    const key = fields.get('key')?.toString('utf8') ?? '';
    const found = media.find((one) => one.key === key);
    const signed = fields.get('x-amz-signature')?.toString('utf8');
    const file = fields.get('file');
    // S3 reads the fields before the file, and ignores any after it: `file` must come last.
    const last = [...fields.keys()].at(-1);
    if (!found || signed !== signature(key) || !fields.has('policy') || !file || last !== 'file')
      return { status: 403, html: '<Error><Code>AccessDenied</Code></Error>' };
    found.bytes = file;
    found.status = 'processing';
    found.fails = failNextVideo;
    failNextVideo = false;
    return { status: 204 };
  };

  const answer = async (
    operation: FakePinterestOperation,
    id: string,
    url: URL,
    headers: IncomingHttpHeaders,
    body: Buffer,
  ): Promise<Answer> => {
    if (operation === 'authorize') return authorize(url.searchParams);
    if (operation === 'token') return token(headers, body);
    if (operation === 'upload') return upload(headers, body);
    const refused = authenticate(headers, operation);
    if (refused) return refused;
    switch (operation) {
      case 'userAccount':
        return {
          status: 200,
          body: {
            id: account.id,
            username: account.username,
            account_type: account.businessName ? 'BUSINESS' : 'PINNER',
            business_name: account.businessName,
            profile_image: account.profileImage,
            website_url: '',
            board_count: boards.length,
          },
        };
      case 'listBoards':
        return page(
          boards.map(({ id: boardId, name, description, privacy }) => ({
            id: boardId,
            name,
            description,
            privacy,
            owner: { username: account.username },
          })),
          url.searchParams,
        );
      case 'listSections': {
        const board = boardOf(id);
        if (!board) return error(404, 404, 'Board not found.');
        return page(board.sections, url.searchParams);
      }
      case 'listBoardPins': {
        if (!boardOf(id)) return error(404, 404, 'Board not found.');
        const onBoard = pins.filter((pin) => pin.boardId === id && pin.createdAt <= now() - showAfterMs);
        if (!oldestFirst) onBoard.reverse();
        return page(onBoard.map(pinObject), url.searchParams);
      }
      case 'createPin':
        if (trial)
          return error(
            403,
            29,
            'Apps with Trial access may not create Pins in production https://api.pinterest.com - ' +
              'use API Sandbox https://api-sandbox.pinterest.com instead.',
          );
        return createPin(body);
      case 'getPin': {
        const pin = pins.find((candidate) => candidate.id === id);
        return pin ? { status: 200, body: pinObject(pin) } : error(404, 404, 'Pin not found.');
      }
      case 'registerMedia':
        return registerMedia(body);
      case 'getMedia':
        return getMedia(id);
      default:
        return error(404, 404, 'Not found.');
    }
  };

  const send = (res: ServerResponse, reply: Answer, rateHeaders: Record<string, string>) => {
    const headers: Record<string, string> = { ...rateHeaders, ...reply.headers };
    let payload: string | undefined;
    if (reply.html !== undefined) {
      headers['Content-Type'] = 'text/html; charset=utf-8';
      payload = reply.html;
    } else if (reply.body !== undefined) {
      headers['Content-Type'] = 'application/json';
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
      requests.push({ method, path: url.pathname + url.search, operation: route?.operation ?? null });
      if (!route) return send(res, error(404, 404, 'Not found.'), {});
      const operation = route.operation;
      const id = decodeURIComponent(route.path.exec(url.pathname)?.[1] ?? '');
      const api = url.pathname.startsWith('/v5/');
      const resetAt = limited.get(operation);
      const reset = resetAt !== undefined && resetAt > now() ? Math.ceil((resetAt - now()) / 1000) : 0;
      const rateHeaders: Record<string, string> = api
        ? {
            'x-ratelimit-limit': String(WINDOW_LIMIT),
            'x-ratelimit-remaining': reset > 0 ? '0' : String(WINDOW_LIMIT - 1),
            'x-ratelimit-reset': String(reset > 0 ? reset : 60),
          }
        : {};
      if (reset > 0)
        return send(res, error(429, 8, 'You have exceeded your rate limit. Try again later.'), rateHeaders);
      const failure = failures.findIndex((f) => f.operation === operation);
      if (failure >= 0) {
        const { status } = failures.splice(failure, 1)[0]!;
        return send(res, error(status, 1, 'Something went wrong on our end.'), rateHeaders);
      }
      answer(operation, id, url, req.headers, Buffer.concat(chunks))
        .then((reply) => {
          if (lost.delete(operation)) return req.socket.destroy();
          const hold = reply.status < 400 ? heldAs(operation) : undefined;
          if (hold) return sendHeld(res, hold, held, () => send(res, reply, rateHeaders));
          send(res, reply, rateHeaders);
        })
        .catch((cause: unknown) => send(res, error(500, 1, String(cause)), rateHeaders));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: origin,
    authorizeUrl: `${origin}/oauth/`,
    appId,
    appSecret,
    account,
    boards,
    addBoard,
    pins,
    media,
    refreshes,
    grantedScopes: () => granted,
    requests,
    deny: () => {
      denyNext = true;
    },
    expireAccessTokens: () => {
      for (const one of accessTokens.values()) one.expiresAt = Math.min(one.expiresAt, now() - 1);
    },
    revokeAll: () => {
      for (const one of accessTokens.values()) one.revoked = true;
      for (const one of refreshTokens.values()) one.revoked = true;
    },
    exhaustLimit: (operation, resetInSeconds) => {
      limited.set(operation, now() + resetInSeconds * 1000);
    },
    processingChecks: (count) => {
      checksPerVideo = count;
    },
    failNextProcessing: () => {
      failNextVideo = true;
    },
    loseNextAnswer: (operation) => {
      lost.add(operation);
    },
    holdNextAnswer: (operation, { ms, skip = 0 } = {}) => {
      holds.push({ operation, skip, hold: ms === undefined ? {} : { ms } });
    },
    heldAnswers: () => held.count,
    trialAccess: (on) => {
      trial = on;
    },
    failNext: (operation, status = 503) => {
      failures.push({ operation, status });
    },
    pinsShowAfter: (seconds) => {
      showAfterMs = seconds * 1000;
    },
    listPinsOldestFirst: (on) => {
      oldestFirst = on;
    },
    advanceClock: (seconds) => {
      clockOffsetMs += seconds * 1000;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The fields of a multipart/form-data body (RFC 7578) by name, or `undefined` when it is not one. */
function multipart(contentType: string, body: Buffer): Map<string, Buffer> | undefined {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  if (!contentType.toLowerCase().startsWith('multipart/form-data') || !boundary) return undefined;
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  const fields = new Map<string, Buffer>();
  let at = body.indexOf(delimiter);
  while (at >= 0) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') return fields;
    const headerEnd = body.indexOf('\r\n\r\n', start);
    const next = body.indexOf(delimiter, headerEnd);
    if (headerEnd < 0 || next < 0) return undefined;
    const name = /name="([^"]*)"/.exec(body.subarray(start, headerEnd).toString('utf8'))?.[1];
    if (name !== undefined) fields.set(name, body.subarray(headerEnd + 4, next - 2));
    at = next;
  }
  return undefined;
}

/** The server's configuration of a Pinterest app at the fake. */
export function pinterestEnv(pinterest: FakePinterest): Record<string, string> {
  return {
    PINTEREST_APP_ID: pinterest.appId,
    PINTEREST_APP_SECRET: pinterest.appSecret,
    PINTEREST_API_URL: pinterest.url,
    PINTEREST_AUTHORIZE_URL: pinterest.authorizeUrl,
  };
}
