import { randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The TikTok account that signs in at the fake consent page. */
export interface FakeTikTokAccount {
  openId: string;
  displayName: string;
  /** The handle, without `@`. */
  username: string;
  avatarUrl: string;
  followerCount: number;
  followingCount: number;
  likesCount: number;
  videoCount: number;
}

/** What `creator_info/query` answers for the account; tests change it. */
export interface FakeTikTokCreator {
  privacyLevelOptions: string[];
  commentDisabled: boolean;
  duetDisabled: boolean;
  stitchDisabled: boolean;
  maxVideoPostDurationSec: number;
}

export type FakeTikTokStatus =
  'PROCESSING_UPLOAD' | 'PROCESSING_DOWNLOAD' | 'SEND_TO_USER_INBOX' | 'PUBLISH_COMPLETE' | 'FAILED';

/** A publication TikTok started with `video/init` or `inbox/video/init`. */
export interface FakeTikTokPublication {
  publishId: string;
  mode: 'direct' | 'inbox';
  source: 'FILE_UPLOAD' | 'PULL_FROM_URL';
  /** `post_info` of a direct post, as sent. */
  postInfo: Record<string, unknown> | null;
  videoSize: number;
  chunkSize: number;
  totalChunkCount: number;
  /** The Content-Range of every chunk TikTok accepted, in order. */
  chunks: string[];
  /** Bytes that arrived in chunk PUTs, accepted or not: what was sent twice counts twice. */
  received: number;
  /** Bytes TikTok holds. */
  stored: number;
  status: FakeTikTokStatus;
  failReason: string | null;
  /** The public post's id, once published and public. */
  postId: string | null;
}

/** A video of the account, as `video/list` gives it. */
export interface FakeTikTokVideo {
  id: string;
  title: string;
  /** Seconds since the epoch. */
  createTime: number;
  duration: number;
  coverImageUrl: string;
  shareUrl: string;
  viewCount: number;
  likeCount: number;
  commentCount: number;
  shareCount: number;
}

/** The calls whose per-token rate limits the fake enforces, and a switch can refuse. */
export type FakeTikTokLimited = 'init' | 'creator_info' | 'status' | 'display';

/**
 * A stand-in for TikTok on a loopback port: Login Kit for Web (the consent page at
 * `/v2/auth/authorize/`, `/v2/oauth/token/`, `/v2/oauth/revoke/`), the Content Posting API (creator
 * info, direct and inbox video init, the upload URL, status fetch) and the Display API (`user/info`,
 * `video/list`), following TikTok's documented requests, answers and limits:
 *
 * - every API answer is TikTok's envelope, `{data, error: {code, message, log_id}}`, `code: "ok"`
 *   when it went well; the token endpoint answers `{error, error_description, log_id}`;
 * - authorization codes are single use and bound to the redirect URI; refresh tokens rotate, and a
 *   refresh token that was used once is refused (`invalid_grant`);
 * - scopes are checked per endpoint (`scope_not_authorized`), tokens per call (`access_token_invalid`);
 * - per access token and minute: 6 video inits (each init endpoint), 20 creator-info queries, 30
 *   status fetches, 600 Display API calls; over it, `429 rate_limit_exceeded`;
 * - chunks as TikTok's media transfer guide says: `total_chunk_count = floor(video_size /
 *   chunk_size)`, chunks of 5 to 64 MB, the final one taking the rest up to 128 MB, a video under
 *   5 MB in one chunk, sent in order with `Content-Range`, answered `206` until the last (`201`);
 *   a chunk out of order (one sent again) is refused with `416` and `Content-Range: bytes *\/TOTAL`
 *   (RFC 9110), the upload URL expires after an hour (`403`), and `status/fetch` says how far the
 *   upload got (`uploaded_bytes`);
 * - a direct post's privacy level must be one the creator allows, and an unaudited app may only post
 *   `SELF_ONLY`; a `PULL_FROM_URL` video must be under a URL prefix verified for the app;
 * - status goes `PROCESSING_UPLOAD` (or `PROCESSING_DOWNLOAD`) → `PUBLISH_COMPLETE` (direct) or
 *   `SEND_TO_USER_INBOX` (inbox), or `FAILED` with a `fail_reason`.
 */
export interface FakeTikTok {
  /** Origin of everything: the consent page, the API and the upload URLs. */
  url: string;
  clientKey: string;
  clientSecret: string;
  account: FakeTikTokAccount;
  creator: FakeTikTokCreator;
  /** Next consent answers `error=access_denied`: the user cancelled. */
  deny(): void;
  /** Next consent grants only these scopes (the user unticked the others). */
  grantOnly(scopes: string[]): void;
  /** The user removed the app: every token and code is dead. */
  revokeAll(): void;
  /** Access tokens issued from now expire after `seconds` (TikTok's: 86,400). */
  accessTokenLifetime(seconds: number): void;
  advanceClock(seconds: number): void;
  /** Creator info and inits refuse with this code (`spam_risk_too_many_posts`, …), or not (null). */
  cannotPost(code: string | null): void;
  /** The app is not audited: direct posts may only be `SELF_ONLY`, which creator info then offers alone. */
  unaudited(on: boolean): void;
  /** The next publication to finish processing fails with this `fail_reason`. */
  failNextPublication(reason: string): void;
  /**
   * The next `count` calls of `kind` are refused with `429 rate_limit_exceeded`, as if the minute's
   * budget were used.
   */
  rateLimitNext(kind: FakeTikTokLimited, count: number): void;
  /** Status fetches a publication answers `PROCESSING_*` after its video arrived, before it settles (default 1). */
  processingChecks(count: number): void;
  /** The final chunk completes the upload, but no answer is ever sent. */
  holdAfterFinalChunk(): void;
  /** The next chunk is stored, but its answer is lost: the connection closes before TikTok answers. */
  loseNextChunkAnswer(): void;
  /** URL prefixes verified for `PULL_FROM_URL`. */
  verifiedUrlPrefixes: string[];
  /** The account's videos for `video/list` (TikTok's own come from publications too). */
  addVideos(videos: FakeTikTokVideo[]): void;
  publications: FakeTikTokPublication[];
  videoBytes(publishId: string): Buffer | undefined;
  /** Successful refreshes, and refused ones. */
  refreshes: { granted: number; refused: number };
  /** Every `log_id` the fake answered, in order: what TikTok's support would be told. */
  logIds: string[];
  /** Requests seen: method and path with the query. */
  requests: { method: string; path: string }[];
  close(): Promise<void>;
}

const MB = 1024 * 1024;
const CODE_LIFETIME_SECONDS = 10 * 60;
const REFRESH_LIFETIME_SECONDS = 365 * 86_400;
const UPLOAD_URL_LIFETIME_SECONDS = 3600;
const TITLE_MAX_UTF16 = 2200;
const PENDING_INBOX_SHARES = 5;
const SCOPES = [
  'user.info.basic',
  'user.info.profile',
  'user.info.stats',
  'video.list',
  'video.publish',
  'video.upload',
];
const PRIVACY_LEVELS = ['PUBLIC_TO_EVERYONE', 'MUTUAL_FOLLOW_FRIENDS', 'FOLLOWER_OF_CREATOR', 'SELF_ONLY'];
const VIDEO_TYPES = ['video/mp4', 'video/quicktime', 'video/webm'];
const LIMITS: Record<FakeTikTokLimited, number> = { init: 6, creator_info: 20, status: 30, display: 600 };
/** The scope each field of `user/info` needs. */
const USER_FIELDS: Record<string, string> = {
  open_id: 'user.info.basic',
  union_id: 'user.info.basic',
  avatar_url: 'user.info.basic',
  avatar_url_100: 'user.info.basic',
  avatar_large_url: 'user.info.basic',
  display_name: 'user.info.basic',
  bio_description: 'user.info.profile',
  profile_deep_link: 'user.info.profile',
  is_verified: 'user.info.profile',
  username: 'user.info.profile',
  follower_count: 'user.info.stats',
  following_count: 'user.info.stats',
  likes_count: 'user.info.stats',
  video_count: 'user.info.stats',
};
const VIDEO_FIELDS = [
  'id',
  'create_time',
  'cover_image_url',
  'share_url',
  'video_description',
  'duration',
  'height',
  'width',
  'title',
  'embed_html',
  'embed_link',
  'like_count',
  'comment_count',
  'share_count',
  'view_count',
];

interface Grant {
  scopes: string[];
  revoked: boolean;
}

interface Upload extends FakeTikTokPublication {
  openId: string;
  uploadToken: string;
  uploadExpiresAt: number;
  data: Buffer[];
  /** Status fetches left that answer `PROCESSING_*` once the video arrived. */
  checksLeft: number;
  arrived: boolean;
  pendingInbox: boolean;
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const random = (bytes: number) => randomBytes(bytes).toString('base64url');
const digits = (count: number) => Array.from(randomBytes(count), (b) => String(b % 10)).join('');

export async function startFakeTikTok(
  options: { account?: Partial<FakeTikTokAccount>; clientKey?: string; clientSecret?: string } = {},
): Promise<FakeTikTok> {
  const clientKey = options.clientKey ?? 'awfaketiktokclientkey';
  const clientSecret = options.clientSecret ?? 'fake-tiktok-client-secret';
  const account: FakeTikTokAccount = {
    openId: '-000fakeOpenId0001',
    displayName: 'Fake Creator',
    username: 'fakecreator',
    avatarUrl: 'https://p16-sign.tiktokcdn.example/avatar/fake.jpeg',
    followerCount: 1200,
    followingCount: 80,
    likesCount: 45_000,
    videoCount: 0,
    ...options.account,
  };
  const creator: FakeTikTokCreator = {
    privacyLevelOptions: ['PUBLIC_TO_EVERYONE', 'MUTUAL_FOLLOW_FRIENDS', 'SELF_ONLY'],
    commentDisabled: false,
    duetDisabled: false,
    stitchDisabled: false,
    maxVideoPostDurationSec: 600,
  };

  const codes = new Map<string, { redirectUri: string; grant: Grant; expiresAt: number; used: boolean }>();
  const refreshTokens = new Map<string, { grant: Grant; expiresAt: number; used: boolean }>();
  const accessTokens = new Map<string, { grant: Grant; expiresAt: number }>();
  const grants: Grant[] = [];
  const uploads = new Map<string, Upload>();
  const publications: Upload[] = [];
  const videos: FakeTikTokVideo[] = [];
  const calls = new Map<string, number[]>();
  const forcedLimits: Record<FakeTikTokLimited, number> = { init: 0, creator_info: 0, status: 0, display: 0 };
  const requests: { method: string; path: string }[] = [];
  const refreshes = { granted: 0, refused: 0 };
  const logIds: string[] = [];
  const verifiedUrlPrefixes: string[] = [];
  let clockOffsetMs = 0;
  let accessLifetimeSeconds = 86_400;
  let denyNext = false;
  let onlyScopes: string[] | undefined;
  let cannotPostCode: string | null = null;
  let isUnaudited = false;
  let failNext: string | undefined;
  let checksAfterArrival = 1;
  let holdFinal = false;
  let loseAnswer = false;
  let origin = '';
  const held = new Set<ServerResponse>();

  const now = () => Date.now() + clockOffsetMs;
  const logId = () => {
    const at = new Date(now());
    const stamp = at.toISOString().replace(/\D/g, '').slice(0, 14);
    const id = `${stamp}${randomBytes(9).toString('hex').toUpperCase()}`;
    logIds.push(id);
    return id;
  };

  const sendJson = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'Content-Type': 'application/json; charset=UTF-8' });
    res.end(JSON.stringify(body));
  };
  const ok = (res: ServerResponse, data: unknown) =>
    sendJson(res, 200, { data, error: { code: 'ok', message: '', log_id: logId() } });
  const apiError = (res: ServerResponse, error: ApiError) =>
    sendJson(res, error.status, { data: {}, error: { code: error.code, message: error.message, log_id: logId() } });

  // ---- Login Kit ----

  const authorize = (res: ServerResponse, query: URLSearchParams) => {
    const page = (message: string) => {
      res.writeHead(400, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>TikTok</title><p>Something went wrong: ${message.replace(/[<>&"]/g, '')}</p>`);
    };
    if (query.get('client_key') !== clientKey) return page('client_key');
    const redirectUri = query.get('redirect_uri');
    let target: URL;
    try {
      target = new URL(redirectUri ?? '');
    } catch {
      return page('redirect_uri');
    }
    if ((target.protocol !== 'https:' && target.protocol !== 'http:') || target.hash) return page('redirect_uri');
    if (query.get('response_type') !== 'code') return page('response_type');
    const asked = (query.get('scope') ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    if (asked.length === 0 || asked.some((scope) => !SCOPES.includes(scope))) return page('scope');
    const state = query.get('state');
    const back = (params: Record<string, string>) => {
      for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
      if (state !== null) target.searchParams.set('state', state);
      res.writeHead(302, { Location: target.toString() });
      res.end();
    };
    if (denyNext) {
      denyNext = false;
      return back({ error: 'access_denied', error_description: 'The user denied the authorization request' });
    }
    const scopes = onlyScopes ? asked.filter((scope) => onlyScopes!.includes(scope)) : asked;
    onlyScopes = undefined;
    const grant: Grant = { scopes, revoked: false };
    grants.push(grant);
    const code = `${random(30)}*0!${digits(4)}`;
    codes.set(code, { redirectUri: redirectUri!, grant, expiresAt: now() + CODE_LIFETIME_SECONDS * 1000, used: false });
    back({ code, scopes: scopes.join(',') });
  };

  const tokenError = (res: ServerResponse, error: string, description: string) =>
    sendJson(res, 400, { error, error_description: description, log_id: logId() });

  const issue = (res: ServerResponse, grant: Grant) => {
    const accessToken = `act.${random(40)}!${digits(4)}.va`;
    const refreshToken = `rft.${random(40)}!${digits(4)}.va`;
    accessTokens.set(accessToken, { grant, expiresAt: now() + accessLifetimeSeconds * 1000 });
    refreshTokens.set(refreshToken, { grant, expiresAt: now() + REFRESH_LIFETIME_SECONDS * 1000, used: false });
    sendJson(res, 200, {
      access_token: accessToken,
      expires_in: accessLifetimeSeconds,
      open_id: account.openId,
      refresh_expires_in: REFRESH_LIFETIME_SECONDS,
      refresh_token: refreshToken,
      scope: grant.scopes.join(','),
      token_type: 'Bearer',
    });
  };

  const token = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    if (!(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded'))
      return tokenError(res, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
    const form = new URLSearchParams(body.toString('utf8'));
    if (form.get('client_key') !== clientKey || form.get('client_secret') !== clientSecret)
      return tokenError(res, 'invalid_client', 'Client key or secret is incorrect.');
    switch (form.get('grant_type')) {
      case 'authorization_code': {
        const code = codes.get(form.get('code') ?? '');
        if (!code || code.used || code.expiresAt < now() || code.grant.revoked)
          return tokenError(res, 'invalid_grant', 'Authorization code is expired or invalid.');
        if (form.get('redirect_uri') !== code.redirectUri)
          return tokenError(res, 'invalid_request', 'redirect_uri does not match the authorization request.');
        code.used = true;
        return issue(res, code.grant);
      }
      case 'refresh_token': {
        const refresh = refreshTokens.get(form.get('refresh_token') ?? '');
        // TikTok rotates refresh tokens: one used before is dead.
        if (!refresh || refresh.used || refresh.expiresAt < now() || refresh.grant.revoked) {
          refreshes.refused++;
          return tokenError(res, 'invalid_grant', 'Refresh token is invalid or expired.');
        }
        refresh.used = true;
        refreshes.granted++;
        return issue(res, refresh.grant);
      }
      default:
        return tokenError(res, 'unsupported_grant_type', 'grant_type is not supported.');
    }
  };

  const revoke = (res: ServerResponse, body: Buffer) => {
    const form = new URLSearchParams(body.toString('utf8'));
    if (form.get('client_key') !== clientKey || form.get('client_secret') !== clientSecret)
      return tokenError(res, 'invalid_client', 'Client key or secret is incorrect.');
    const access = accessTokens.get(form.get('token') ?? '');
    if (!access || access.grant.revoked || access.expiresAt < now())
      return tokenError(res, 'invalid_request', 'The access token is invalid or not found.');
    access.grant.revoked = true;
    sendJson(res, 200, {});
  };

  // ---- API ----

  const authorized = (req: IncomingMessage, scopes: string[]) => {
    const match = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    const access = match ? accessTokens.get(match[1]!) : undefined;
    if (!access || access.grant.revoked || access.expiresAt < now())
      throw new ApiError(401, 'access_token_invalid', 'The access token is invalid or not found in the request.');
    if (!scopes.some((scope) => access.grant.scopes.includes(scope))) {
      throw new ApiError(
        401,
        'scope_not_authorized',
        `The user did not authorize the scope required for completing this request (${scopes.join(' or ')}).`,
      );
    }
    return match![1]!;
  };

  const limit = (accessToken: string, kind: FakeTikTokLimited, endpoint: string) => {
    if (forcedLimits[kind] > 0) {
      forcedLimits[kind]--;
      throw new ApiError(
        429,
        'rate_limit_exceeded',
        'API rate limit was exceeded, only 6 requests are allowed per minute.',
      );
    }
    const key = `${endpoint} ${accessToken}`;
    const recent = (calls.get(key) ?? []).filter((at) => at > now() - 60_000);
    if (recent.length >= LIMITS[kind])
      throw new ApiError(
        429,
        'rate_limit_exceeded',
        `API rate limit was exceeded, only ${LIMITS[kind]} requests are allowed per minute.`,
      );
    recent.push(now());
    calls.set(key, recent);
  };

  const json = (body: Buffer): Record<string, unknown> => {
    try {
      const value: unknown = JSON.parse(body.toString('utf8'));
      if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // answered below
    }
    throw new ApiError(400, 'invalid_params', 'The request body is not valid JSON.');
  };

  const fields = (query: URLSearchParams, known: string[]) => {
    const asked = (query.get('fields') ?? '')
      .split(',')
      .map((f) => f.trim())
      .filter((f) => f !== '');
    if (asked.length === 0) throw new ApiError(400, 'invalid_params', 'fields is required.');
    const unknown = asked.find((field) => !known.includes(field));
    if (unknown) throw new ApiError(400, 'invalid_params', `Invalid field: ${unknown}.`);
    return asked;
  };

  const userInfo = (req: IncomingMessage, res: ServerResponse, query: URLSearchParams) => {
    const asked = fields(query, Object.keys(USER_FIELDS));
    const accessToken = authorized(req, ['user.info.basic', 'user.info.profile', 'user.info.stats']);
    const grant = accessTokens.get(accessToken)!.grant;
    const missing = asked.find((field) => !grant.scopes.includes(USER_FIELDS[field]!));
    if (missing)
      throw new ApiError(401, 'scope_not_authorized', `The user did not authorize the scope required for ${missing}.`);
    limit(accessToken, 'display', 'user/info');
    const all: Record<string, unknown> = {
      open_id: account.openId,
      union_id: `union-${account.openId}`,
      avatar_url: account.avatarUrl,
      avatar_url_100: account.avatarUrl,
      avatar_large_url: account.avatarUrl,
      display_name: account.displayName,
      bio_description: '',
      profile_deep_link: `https://vm.tiktok.example/${account.username}`,
      is_verified: false,
      username: account.username,
      follower_count: account.followerCount,
      following_count: account.followingCount,
      likes_count: account.likesCount,
      video_count: account.videoCount + videos.length,
    };
    ok(res, { user: Object.fromEntries(asked.map((field) => [field, all[field]])) });
  };

  const privacyOptions = () => (isUnaudited ? ['SELF_ONLY'] : creator.privacyLevelOptions);

  const creatorInfo = (req: IncomingMessage, res: ServerResponse) => {
    const accessToken = authorized(req, ['video.publish']);
    limit(accessToken, 'creator_info', 'creator_info');
    if (cannotPostCode) throw new ApiError(403, cannotPostCode, 'The user cannot make more posts right now.');
    ok(res, {
      creator_avatar_url: account.avatarUrl,
      creator_username: account.username,
      creator_nickname: account.displayName,
      privacy_level_options: privacyOptions(),
      comment_disabled: creator.commentDisabled,
      duet_disabled: creator.duetDisabled,
      stitch_disabled: creator.stitchDisabled,
      max_video_post_duration_sec: creator.maxVideoPostDurationSec,
    });
  };

  const init = (req: IncomingMessage, res: ServerResponse, body: Buffer, mode: 'direct' | 'inbox') => {
    const accessToken = authorized(req, [mode === 'direct' ? 'video.publish' : 'video.upload']);
    limit(accessToken, 'init', mode === 'direct' ? 'video/init' : 'inbox/video/init');
    const request = json(body);
    const source = request.source_info as Record<string, unknown> | undefined;
    if (!source || typeof source !== 'object') throw new ApiError(400, 'invalid_params', 'source_info is required.');
    let postInfo: Record<string, unknown> | null = null;
    if (mode === 'direct') {
      postInfo = request.post_info as Record<string, unknown>;
      if (!postInfo || typeof postInfo !== 'object')
        throw new ApiError(400, 'invalid_params', 'post_info is required.');
      const privacy = postInfo.privacy_level;
      if (typeof privacy !== 'string' || !PRIVACY_LEVELS.includes(privacy))
        throw new ApiError(400, 'invalid_params', 'post_info.privacy_level is invalid.');
      if (
        postInfo.title !== undefined &&
        (typeof postInfo.title !== 'string' || postInfo.title.length > TITLE_MAX_UTF16)
      ) {
        throw new ApiError(
          400,
          'invalid_params',
          `post_info.title must be a string of at most ${TITLE_MAX_UTF16} UTF-16 runes.`,
        );
      }
      for (const flag of [
        'disable_duet',
        'disable_stitch',
        'disable_comment',
        'brand_content_toggle',
        'brand_organic_toggle',
        'is_aigc',
      ]) {
        if (postInfo[flag] !== undefined && typeof postInfo[flag] !== 'boolean')
          throw new ApiError(400, 'invalid_params', `post_info.${flag} must be a boolean.`);
      }
      if (cannotPostCode) throw new ApiError(403, cannotPostCode, 'The user cannot make more posts right now.');
      if (isUnaudited && privacy !== 'SELF_ONLY')
        throw new ApiError(
          403,
          'unaudited_client_can_only_post_to_private_accounts',
          'Unaudited clients can only post to a private account.',
        );
      if (!privacyOptions().includes(privacy))
        throw new ApiError(
          403,
          'privacy_level_option_mismatch',
          'privacy_level is not one of the privacy_level_options of the creator.',
        );
    } else {
      const pending = publications.filter((p) => p.openId === account.openId && p.pendingInbox).length;
      if (pending >= PENDING_INBOX_SHARES)
        throw new ApiError(
          403,
          'spam_risk_too_many_pending_share',
          'The user has too many pending shares in the inbox.',
        );
    }
    const publishId = `v_${mode === 'direct' ? 'pub' : 'inbox'}_file~v2.${digits(19)}`;
    const base = {
      publishId,
      mode,
      postInfo,
      chunks: [],
      received: 0,
      stored: 0,
      status: 'PROCESSING_UPLOAD' as FakeTikTokStatus,
      failReason: null,
      postId: null,
      openId: account.openId,
      uploadToken: random(24),
      uploadExpiresAt: now() + UPLOAD_URL_LIFETIME_SECONDS * 1000,
      data: [],
      checksLeft: checksAfterArrival,
      arrived: false,
      pendingInbox: false,
    };
    if (source.source === 'PULL_FROM_URL') {
      const url = source.video_url;
      if (typeof url !== 'string' || !/^https?:\/\//.test(url))
        throw new ApiError(400, 'invalid_params', 'source_info.video_url is invalid.');
      if (!verifiedUrlPrefixes.some((prefix) => url.startsWith(prefix)))
        throw new ApiError(
          403,
          'url_ownership_unverified',
          'The domain or URL prefix of video_url is not verified for this app.',
        );
      const upload: Upload = {
        ...base,
        source: 'PULL_FROM_URL',
        status: 'PROCESSING_DOWNLOAD',
        videoSize: 0,
        chunkSize: 0,
        totalChunkCount: 0,
      };
      publications.push(upload);
      void pull(upload, url);
      return ok(res, { publish_id: publishId });
    }
    if (source.source !== 'FILE_UPLOAD')
      throw new ApiError(400, 'invalid_params', 'source_info.source must be FILE_UPLOAD or PULL_FROM_URL.');
    const { video_size: size, chunk_size: chunkSize, total_chunk_count: count } = source;
    if (![size, chunkSize, count].every((n) => Number.isSafeInteger(n) && (n as number) > 0)) {
      throw new ApiError(
        400,
        'invalid_params',
        'video_size, chunk_size and total_chunk_count are required positive integers.',
      );
    }
    const problem = chunkProblem(size as number, chunkSize as number, count as number);
    if (problem) throw new ApiError(400, 'invalid_params', problem);
    const upload: Upload = {
      ...base,
      source: 'FILE_UPLOAD',
      videoSize: size as number,
      chunkSize: chunkSize as number,
      totalChunkCount: count as number,
    };
    publications.push(upload);
    uploads.set(upload.uploadToken, upload);
    ok(res, {
      publish_id: publishId,
      upload_url: `${origin}/upload/video/?upload_id=${digits(16)}&upload_token=${upload.uploadToken}`,
    });
  };

  const pull = async (upload: Upload, url: string) => {
    try {
      const response = await fetch(url, { redirect: 'error' });
      if (!response.ok) throw new Error(String(response.status));
      const bytes = Buffer.from(await response.arrayBuffer());
      upload.data = [bytes];
      upload.videoSize = bytes.length;
      upload.stored = bytes.length;
      upload.arrived = true;
    } catch {
      upload.status = 'FAILED';
      upload.failReason = 'video_pull_failed';
    }
  };

  const chunk = (req: IncomingMessage, res: ServerResponse, query: URLSearchParams, body: Buffer) => {
    const upload = uploads.get(query.get('upload_token') ?? '');
    if (!upload)
      return sendJson(res, 404, { error: { code: 'upload_not_found', message: 'The upload URL is not valid.' } });
    upload.received += body.length;
    if (upload.uploadExpiresAt < now())
      return sendJson(res, 403, { error: { code: 'upload_url_expired', message: 'The upload URL expired.' } });
    if (upload.arrived)
      return sendJson(res, 400, {
        error: { code: 'upload_completed', message: 'All chunks of the video were received.' },
      });
    if (!VIDEO_TYPES.includes((req.headers['content-type'] ?? '').split(';')[0]!.trim())) {
      return sendJson(res, 400, {
        error: {
          code: 'invalid_content_type',
          message: 'Content-Type must be video/mp4, video/quicktime or video/webm.',
        },
      });
    }
    const range = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(req.headers['content-range'] ?? '');
    if (!range)
      return sendJson(res, 400, {
        error: { code: 'invalid_content_range', message: 'Content-Range is required: bytes FIRST-LAST/TOTAL.' },
      });
    const [first, last, total] = [Number(range[1]), Number(range[2]), Number(range[3])];
    const index = upload.chunks.length;
    const final = index === upload.totalChunkCount - 1;
    const expectedLast = final ? upload.videoSize - 1 : first + upload.chunkSize - 1;
    // Chunks go in order, each of chunk_size bytes but the last, which takes the rest.
    if (
      total !== upload.videoSize ||
      first !== upload.stored ||
      last !== expectedLast ||
      body.length !== last - first + 1 ||
      Number(req.headers['content-length']) !== body.length
    ) {
      res.writeHead(416, {
        'Content-Type': 'application/json; charset=UTF-8',
        'Content-Range': `bytes */${upload.videoSize}`,
      });
      return res.end(
        JSON.stringify({
          error: {
            code: 'range_not_satisfiable',
            message: `Expected bytes ${upload.stored}-${expectedLast}/${upload.videoSize}.`,
          },
        }),
      );
    }
    upload.data.push(body);
    upload.stored += body.length;
    upload.chunks.push(req.headers['content-range']!);
    if (final) upload.arrived = true;
    if (loseAnswer) {
      loseAnswer = false;
      req.socket.destroy();
      return;
    }
    if (!final) {
      res.writeHead(206, { 'Content-Range': `bytes 0-${upload.stored - 1}/${upload.videoSize}` });
      return res.end();
    }
    if (holdFinal) {
      holdFinal = false;
      held.add(res);
      return;
    }
    res.writeHead(201);
    res.end();
  };

  /** Moves a publication on, as TikTok's processing would by the time it is asked again. */
  const settle = (upload: Upload) => {
    if (
      !upload.arrived ||
      upload.status === 'FAILED' ||
      upload.status === 'PUBLISH_COMPLETE' ||
      upload.status === 'SEND_TO_USER_INBOX'
    )
      return;
    if (upload.checksLeft > 0) {
      upload.checksLeft--;
      return;
    }
    if (failNext !== undefined) {
      upload.status = 'FAILED';
      upload.failReason = failNext;
      failNext = undefined;
      return;
    }
    if (upload.mode === 'inbox') {
      upload.status = 'SEND_TO_USER_INBOX';
      upload.pendingInbox = true;
      return;
    }
    upload.status = 'PUBLISH_COMPLETE';
    // Only a public post has a public id.
    if (upload.postInfo?.privacy_level === 'PUBLIC_TO_EVERYONE') {
      upload.postId = `7${digits(18)}`;
      videos.push({
        id: upload.postId,
        title: typeof upload.postInfo.title === 'string' ? upload.postInfo.title : '',
        createTime: Math.floor(now() / 1000),
        duration: 12,
        coverImageUrl: `https://p16-sign.tiktokcdn.example/cover/${upload.postId}.jpeg`,
        shareUrl: `https://www.tiktok.com/@${account.username}/video/${upload.postId}`,
        viewCount: 0,
        likeCount: 0,
        commentCount: 0,
        shareCount: 0,
      });
    }
  };

  const status = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const accessToken = authorized(req, ['video.upload', 'video.publish']);
    limit(accessToken, 'status', 'status/fetch');
    const request = json(body);
    const upload = publications.find((p) => p.publishId === request.publish_id && p.openId === account.openId);
    if (!upload) throw new ApiError(400, 'invalid_publish_id', 'publish_id does not exist.');
    settle(upload);
    const data = {
      status: upload.status,
      ...(upload.failReason ? { fail_reason: upload.failReason } : {}),
      publicaly_available_post_id: upload.postId ? ['POST_ID'] : [],
      ...(upload.source === 'FILE_UPLOAD' ? { uploaded_bytes: upload.stored } : { downloaded_bytes: upload.stored }),
    };
    // The post id is an int64 in JSON, beyond what a double holds exactly.
    res.writeHead(200, { 'Content-Type': 'application/json; charset=UTF-8' });
    res.end(
      JSON.stringify({ data, error: { code: 'ok', message: '', log_id: logId() } }).replace(
        '"POST_ID"',
        upload.postId ?? '',
      ),
    );
  };

  const videoList = (req: IncomingMessage, res: ServerResponse, query: URLSearchParams, body: Buffer) => {
    const asked = fields(query, VIDEO_FIELDS);
    const accessToken = authorized(req, ['video.list']);
    limit(accessToken, 'display', 'video/list');
    const request = json(body);
    const max = request.max_count === undefined ? 10 : request.max_count;
    if (!Number.isInteger(max) || (max as number) < 1 || (max as number) > 20)
      throw new ApiError(400, 'invalid_params', 'max_count must be an integer from 1 to 20.');
    const cursor = request.cursor === undefined ? Infinity : request.cursor;
    if (typeof cursor !== 'number') throw new ApiError(400, 'invalid_params', 'cursor must be a number.');
    const older = videos
      .filter((video) => video.createTime * 1000 < cursor)
      .sort((a, b) => b.createTime - a.createTime);
    const page = older.slice(0, max as number);
    const shaped = page.map((video) => {
      const all: Record<string, unknown> = {
        id: video.id,
        create_time: video.createTime,
        cover_image_url: video.coverImageUrl,
        share_url: video.shareUrl,
        video_description: video.title,
        duration: video.duration,
        height: 1920,
        width: 1080,
        title: video.title,
        embed_html: '',
        embed_link: video.shareUrl,
        like_count: video.likeCount,
        comment_count: video.commentCount,
        share_count: video.shareCount,
        view_count: video.viewCount,
      };
      return Object.fromEntries(asked.map((field) => [field, all[field]]));
    });
    const lastTime = page.at(-1)?.createTime;
    ok(res, {
      videos: shaped,
      cursor: lastTime === undefined ? 0 : lastTime * 1000,
      has_more: older.length > page.length,
    });
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const body = Buffer.concat(chunks);
      requests.push({ method: req.method ?? 'GET', path: url.pathname + url.search });
      const route = `${req.method} ${url.pathname}`;
      const handle = () => {
        switch (route) {
          case 'GET /v2/auth/authorize/':
            return authorize(res, url.searchParams);
          case 'POST /v2/oauth/token/':
            return token(req, res, body);
          case 'POST /v2/oauth/revoke/':
            return revoke(res, body);
          case 'GET /v2/user/info/':
            return userInfo(req, res, url.searchParams);
          case 'POST /v2/post/publish/creator_info/query/':
            return creatorInfo(req, res);
          case 'POST /v2/post/publish/video/init/':
            return init(req, res, body, 'direct');
          case 'POST /v2/post/publish/inbox/video/init/':
            return init(req, res, body, 'inbox');
          case 'POST /v2/post/publish/status/fetch/':
            return status(req, res, body);
          case 'POST /v2/video/list/':
            return videoList(req, res, url.searchParams, body);
          case 'PUT /upload/video/':
            return chunk(req, res, url.searchParams, body);
          default:
            return apiError(res, new ApiError(404, 'not_found', `No route ${route}.`));
        }
      };
      // A route throws (or rejects with) the ApiError TikTok would answer.
      Promise.resolve()
        .then(handle)
        .catch((error: unknown) => {
          if (error instanceof ApiError) return apiError(res, error);
          apiError(res, new ApiError(500, 'internal_error', (error as Error).message));
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: origin,
    clientKey,
    clientSecret,
    account,
    creator,
    deny: () => {
      denyNext = true;
    },
    grantOnly: (scopes) => {
      onlyScopes = scopes;
    },
    revokeAll: () => {
      for (const grant of grants) grant.revoked = true;
    },
    accessTokenLifetime: (seconds) => {
      accessLifetimeSeconds = seconds;
    },
    advanceClock: (seconds) => {
      clockOffsetMs += seconds * 1000;
    },
    cannotPost: (code) => {
      cannotPostCode = code;
    },
    unaudited: (on) => {
      isUnaudited = on;
    },
    failNextPublication: (reason) => {
      failNext = reason;
    },
    rateLimitNext: (kind, count) => {
      forcedLimits[kind] = count;
    },
    processingChecks: (count) => {
      checksAfterArrival = count;
    },
    holdAfterFinalChunk: () => {
      holdFinal = true;
    },
    loseNextChunkAnswer: () => {
      loseAnswer = true;
    },
    verifiedUrlPrefixes,
    addVideos: (added) => {
      videos.push(...added);
    },
    publications,
    videoBytes: (publishId) => {
      const upload = publications.find((p) => p.publishId === publishId);
      return upload ? Buffer.concat(upload.data) : undefined;
    },
    refreshes,
    logIds,
    requests,
    close: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** What is wrong with a FILE_UPLOAD's sizes under TikTok's chunk rules, if anything. */
export function chunkProblem(size: number, chunkSize: number, count: number): string | undefined {
  if (size > 4096 * MB) return 'video_size must be at most 4 GB.';
  if (size < 5 * MB)
    return chunkSize === size && count === 1
      ? undefined
      : 'A video under 5 MB is uploaded whole: chunk_size equals video_size, total_chunk_count is 1.';
  if (chunkSize < 5 * MB || chunkSize > 64 * MB) return 'chunk_size must be from 5 MB to 64 MB.';
  if (chunkSize > size) return 'chunk_size must not exceed video_size.';
  if (count !== Math.floor(size / chunkSize))
    return 'total_chunk_count must be video_size divided by chunk_size, rounded down.';
  if (count > 1000) return 'A video is uploaded in at most 1000 chunks.';
  if (size - (count - 1) * chunkSize > 128 * MB) return 'The final chunk may be at most 128 MB.';
  return undefined;
}

/** The server's settings that make a TikTok app of `tiktok`, as an operator's would be of TikTok's. */
export function tiktokEnv(tiktok: FakeTikTok, uploadChunkBytes?: number): Record<string, string> {
  return {
    TIKTOK_CLIENT_KEY: tiktok.clientKey,
    TIKTOK_CLIENT_SECRET: tiktok.clientSecret,
    TIKTOK_AUTH_URL: tiktok.url,
    TIKTOK_API_URL: tiktok.url,
    ...(uploadChunkBytes ? { TIKTOK_UPLOAD_CHUNK_BYTES: String(uploadChunkBytes) } : {}),
  };
}

/**
 * Connects a TikTok account as a signed-in browser does: Connect TikTok in Settings → Channels, the
 * fake's consent (given at once, unless told to deny), and the callback; the callback's answer.
 */
export async function connectTikTok(session: {
  submit(page: string, action: string, fields: Record<string, string>): Promise<Response>;
  get(path: string): Promise<Response>;
}): Promise<Response> {
  const started = await session.submit('/settings/channels', '/settings/channels/connect/tiktok', {});
  const consent = await fetch(started.headers.get('location')!, { redirect: 'manual' });
  const back = new URL(consent.headers.get('location')!);
  return session.get(back.pathname + back.search);
}
