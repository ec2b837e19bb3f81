import { createHash, randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The Google account that signs in at the fake consent page, with its YouTube channel. */
export interface FakeGoogleAccount {
  channelId: string;
  title: string;
  /** The channel's handle, `@name`; channels.list gives it as `snippet.customUrl`. */
  handle: string;
  thumbnailUrl: string;
}

/** A video that an upload session completed. */
export interface FakeGoogleVideo {
  /** 11 characters of [A-Za-z0-9_-], like YouTube's; the watch page is https://www.youtube.com/watch?v=ID. */
  id: string;
  sessionId: string;
  title: string;
  description: string;
  tags: string[];
  categoryId: string;
  privacyStatus: string;
  madeForKids: boolean;
  /** The media type announced in X-Upload-Content-Type. */
  contentType: string;
  bytes: number;
  channelId: string;
}

/** A resumable upload session, as the fake keeps it. */
export interface FakeGoogleSession {
  id: string;
  /** X-Upload-Content-Length: the size of the whole video. */
  total: number;
  /** Bytes that arrived in chunk PUTs, whether stored or not: what was sent more than once counts again. */
  received: number;
  /** Bytes the session holds: the Range it reports. */
  stored: number;
  completed: boolean;
}

/** A request the fake saw: its path with the query, and what the Authorization header carried. */
export interface FakeGoogleRequest {
  method: string;
  path: string;
  auth: 'bearer' | 'basic' | 'none';
}

/**
 * A stand-in for Google on a loopback port: the OAuth 2.0 server for web server apps (consent
 * page, token endpoint, revocation) and the two YouTube Data API v3 calls a publisher needs,
 * `channels.list?mine=true` for the channel's identity and `videos.insert` as a resumable upload,
 * plus `videos.list` to ask about a video afterwards.
 *
 * It is strict where Google is strict, so that a client that works against it works against
 * Google: authorization codes are single use, bound to the client, the redirect URI and the PKCE
 * challenge, and expire after ten minutes; refresh tokens are not rotated; an upload session takes
 * chunks only from the byte it holds and only in multiples of 256 KiB but for the last, and says how
 * far it got with `308` and `Range`; the session URI is its own credential, and a token sent with it
 * must be good (`401` otherwise); a session expires (`404`). Errors have Google's
 * shapes: `{error, error_description}` from the token endpoint, `{error: {code, message, errors:
 * [{domain, reason, message}]}}` from YouTube.
 *
 * Every answer of the upload server carries `X-GUploader-UploadID`, Google's id of the upload, which
 * its support asks for: the session's id (the `upload_id` of its URI) once the session exists.
 *
 * Like Google, it keeps what it received when the caller went away: a chunk cut short keeps the
 * bytes that arrived, and a video completed by a final chunk whose answer was lost exists; asking the
 * session (`Content-Range: bytes *\/TOTAL`) finds it.
 */
export interface FakeGoogle {
  /**
   * Origin serving everything: /o/oauth2/v2/auth (browser consent), /token, /revoke,
   * /youtube/v3/channels, /youtube/v3/videos, /upload/youtube/v3/videos and the upload sessions.
   */
  url: string;
  /** The only client accepted. */
  clientId: string;
  clientSecret: string;
  /**
   * The Google account that "signs in" at the consent page; consent is given at once (302 to
   * redirect_uri with code, state, scope) unless deny() was called.
   */
  account: FakeGoogleAccount;
  /** Next consent answers error=access_denied (with state): the user clicked Cancel. */
  deny(): void;
  /**
   * Revokes every grant: refresh tokens then get invalid_grant, access tokens 401 (as when the
   * user removes the app in their Google account). Consent given afterwards makes a new grant.
   */
  revokeAll(): void;
  /** Access tokens issued from now expire after `seconds` (default 3600). */
  accessTokenLifetime(seconds: number): void;
  /** Moves the fake's clock forward: codes, access tokens and their expiry without waiting. */
  advanceClock(seconds: number): void;
  /**
   * The next `count` upload initiations are refused with `reason`: quotaExceeded (403, the
   * project's daily quota), uploadLimitExceeded (400, the channel's uploads for the day) or forbidden (403).
   */
  failNextUploads(count: number, reason: 'quotaExceeded' | 'uploadLimitExceeded' | 'forbidden'): void;
  /** The next chunk PUT answers this status (e.g. 503) without storing the bytes. */
  failNextChunk(status: number): void;
  /**
   * The access tokens issued so far expire while the next chunk goes up: Google checks the token
   * sent with the chunk once it arrived, answers `401` and stores nothing of it. A refreshed token works.
   */
  expireTokensDuringNextChunk(): void;
  /** Every upload session open now expires (Google keeps one about a week): its URI answers `404` from now on. */
  expireUploadSessions(): void;
  /**
   * Whether the signed-in Google account has no YouTube channel (an unlinked account): YouTube then
   * answers `401 youtubeSignupRequired` to channels.list?mine=true and to uploads.
   */
  withoutChannel(on: boolean): void;
  /**
   * The next chunk PUT stores only the first `bytes` bytes of what it received, then destroys the
   * connection (an interrupted upload); the session's Range then says how far it got.
   */
  cutNextChunkAfter(bytes: number): void;
  /**
   * The final chunk completes the video but the connection is destroyed before the answer (the
   * caller never hears back); a status query on the session then answers 200 with the video.
   */
  cutAfterFinalChunk(): void;
  /**
   * The final chunk completes the video but no answer is sent, ever (the caller waits until it gives
   * up or dies, as a worker killed right after the last chunk went out).
   */
  holdAfterFinalChunk(): void;
  /** Videos created, in order, with their metadata and byte count. */
  videos: FakeGoogleVideo[];
  /** The bytes of a video, to check that what arrived is the file that was sent. */
  videoBytes(videoId: string): Buffer | undefined;
  /** Per upload session: total bytes received over all PUTs (counts re-sent bytes), and bytes stored. */
  sessions(): FakeGoogleSession[];
  /** Requests seen, for assertions: method, path (without origin), and the Authorization header's token kind. */
  requests: FakeGoogleRequest[];
  close(): Promise<void>;
}

/** Chunks of a resumable upload are multiples of this, but for the last. */
const CHUNK_UNIT = 256 * 1024;
const CODE_LIFETIME_SECONDS = 10 * 60;
const TITLE_MAX_CHARACTERS = 100;
const DESCRIPTION_MAX_BYTES = 5000;
const TAGS_MAX_CHARACTERS = 500;
const PRIVACY_STATUSES = ['public', 'private', 'unlisted'];
const VIDEO_PARTS = [
  'contentDetails',
  'fileDetails',
  'id',
  'liveStreamingDetails',
  'localizations',
  'paidProductPlacementDetails',
  'player',
  'processingDetails',
  'recordingDetails',
  'snippet',
  'statistics',
  'status',
  'suggestions',
  'topicDetails',
];
const SCOPE = 'https://www.googleapis.com/auth/';
/** Scopes that let a token read the channel and its videos. */
const READ_SCOPES = [
  `${SCOPE}youtube.readonly`,
  `${SCOPE}youtube`,
  `${SCOPE}youtube.force-ssl`,
  `${SCOPE}youtubepartner`,
];
/** Scopes that let a token upload a video. */
const UPLOAD_SCOPES = [
  `${SCOPE}youtube.upload`,
  `${SCOPE}youtube`,
  `${SCOPE}youtube.force-ssl`,
  `${SCOPE}youtubepartner`,
];

/** Consent given by the account to the client: what refresh tokens and access tokens stand for. */
interface Grant {
  scopes: string[];
  refreshToken: string | null;
  revoked: boolean;
}

interface AuthorizationCode {
  redirectUri: string;
  challenge: { value: string; method: 'S256' | 'plain' } | null;
  scopes: string[];
  withRefreshToken: boolean;
  expiresAt: number;
  used: boolean;
  /** Codes not yet exchanged when the user removed the app are dead too. */
  revoked: boolean;
}

interface IssuedAccessToken {
  grant: Grant;
  expiresAt: number;
}

interface UploadSession extends FakeGoogleSession {
  /** Expired: its URI answers 404, as one Google no longer knows. */
  expired: boolean;
  parts: string[];
  contentType: string;
  metadata: Omit<FakeGoogleVideo, 'id' | 'sessionId' | 'bytes' | 'contentType'>;
  data: Buffer[];
  video: FakeGoogleVideo | null;
}

/** The YouTube error envelope. */
interface YouTubeError {
  status: number;
  reason: string;
  domain: string;
  message: string;
  /** The RPC status some answers carry (401 UNAUTHENTICATED, 403 PERMISSION_DENIED). */
  rpcStatus?: string;
  headers?: Record<string, string>;
}

const token = (prefix: string, bytes = 32) => `${prefix}${randomBytes(bytes).toString('base64url')}`;

/** An id like YouTube's: 11 characters of the URL-safe base64 alphabet. */
const videoId = () => randomBytes(9).toString('base64url').slice(0, 11);

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export async function startFakeGoogle(
  options: { account?: Partial<FakeGoogleAccount>; clientId?: string; clientSecret?: string } = {},
): Promise<FakeGoogle> {
  const clientId = options.clientId ?? 'fake-client.apps.googleusercontent.com';
  const clientSecret = options.clientSecret ?? 'fake-client-secret';
  const channelId = options.account?.channelId ?? 'UC_fake_google_channel_1';
  const handle = options.account?.handle ?? '@fakechannel';
  const account: FakeGoogleAccount = {
    channelId,
    title: options.account?.title ?? 'Fake Channel',
    handle: handle.startsWith('@') ? handle : `@${handle}`,
    thumbnailUrl: options.account?.thumbnailUrl ?? `https://yt3.ggpht.example/${channelId}/default.jpg`,
  };

  const grants: Grant[] = [];
  const codes = new Map<string, AuthorizationCode>();
  const refreshTokens = new Map<string, Grant>();
  const accessTokens = new Map<string, IssuedAccessToken>();
  const uploads = new Map<string, UploadSession>();
  const videos: FakeGoogleVideo[] = [];
  const videoData = new Map<string, Buffer>();
  const requests: FakeGoogleRequest[] = [];
  let clockOffsetMs = 0;
  let accessLifetimeSeconds = 3600;
  let denyNext = false;
  const uploadFailures: ('quotaExceeded' | 'uploadLimitExceeded' | 'forbidden')[] = [];
  let chunkFailure: number | undefined;
  let expireTokensDuringChunk = false;
  let unlinked = false;
  let chunkCut: number | undefined;
  let cutFinal = false;
  let holdFinal = false;
  let origin = '';

  const now = () => Date.now() + clockOffsetMs;

  const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'Content-Type': 'application/json; charset=UTF-8', ...headers });
    res.end(JSON.stringify(body));
  };

  // ---- OAuth 2.0 ----

  /** Google shows the user an error page, and sends nothing back to the app, when the request itself is wrong. */
  const errorPage = (res: ServerResponse, error: string, detail: string) => {
    res.writeHead(400, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(
      `<!doctype html><html><head><title>Error 400: ${escapeHtml(error)}</title></head><body>` +
        `<h1>Access blocked: this request is invalid</h1><p>Error 400: ${escapeHtml(error)}</p><p>${escapeHtml(detail)}</p></body></html>`,
    );
  };

  /** Grants the user gave the client and has not taken back. */
  const liveGrants = () => grants.filter((g) => !g.revoked);

  const authorize = (res: ServerResponse, query: URLSearchParams) => {
    const single = (name: string) => (query.getAll(name).length > 1 ? undefined : (query.get(name) ?? undefined));
    const client = single('client_id');
    if (!client) return errorPage(res, 'invalid_request', 'Missing required parameter: client_id');
    if (client !== clientId) return errorPage(res, 'invalid_client', 'The OAuth client was not found.');
    const redirectUri = single('redirect_uri');
    if (!redirectUri) return errorPage(res, 'invalid_request', 'Missing required parameter: redirect_uri');
    let target: URL;
    try {
      target = new URL(redirectUri);
    } catch {
      return errorPage(res, 'redirect_uri_mismatch', 'The redirect URI is not an absolute URI.');
    }
    if ((target.protocol !== 'http:' && target.protocol !== 'https:') || target.hash) {
      return errorPage(res, 'redirect_uri_mismatch', 'The redirect URI must be http(s) and have no fragment.');
    }
    // From here on the redirect URI is known good, but Google still shows the page for a bad request.
    if (single('response_type') !== 'code')
      return errorPage(res, 'unsupported_response_type', 'A web server app asks for response_type=code.');
    const scopes = (single('scope') ?? '').split(' ').filter((s) => s !== '');
    if (scopes.length === 0) return errorPage(res, 'invalid_request', 'Missing required parameter: scope');
    const accessType = single('access_type') ?? 'online';
    if (accessType !== 'online' && accessType !== 'offline')
      return errorPage(res, 'invalid_request', `Invalid access_type: ${accessType}`);
    const prompts = (single('prompt') ?? '').split(' ').filter((p) => p !== '');
    if (
      prompts.some((p) => !['none', 'consent', 'select_account'].includes(p)) ||
      (prompts.includes('none') && prompts.length > 1)
    ) {
      return errorPage(res, 'invalid_request', 'Invalid prompt value.');
    }
    const challengeValue = single('code_challenge');
    const challengeMethod = single('code_challenge_method') ?? (challengeValue ? 'plain' : undefined);
    if (challengeMethod && !challengeValue)
      return errorPage(res, 'invalid_request', 'code_challenge_method without code_challenge.');
    if (challengeMethod && challengeMethod !== 'S256' && challengeMethod !== 'plain') {
      return errorPage(res, 'invalid_request', 'Unsupported code_challenge_method.');
    }
    if (challengeValue && !/^[A-Za-z0-9._~-]{43,128}$/.test(challengeValue))
      return errorPage(res, 'invalid_request', 'Invalid code_challenge.');
    const state = query.get('state');

    const back = (params: Record<string, string>) => {
      for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
      if (state !== null) target.searchParams.set('state', state);
      res.writeHead(302, { Location: target.toString(), 'Cache-Control': 'no-store' });
      res.end();
    };

    if (denyNext) {
      denyNext = false;
      return back({ error: 'access_denied' });
    }
    const earlier = liveGrants();
    // prompt=none may not show a page: it works only when the user already consented to this app.
    if (prompts.includes('none') && earlier.length === 0) return back({ error: 'consent_required' });
    const granted = new Set(scopes);
    if (single('include_granted_scopes') === 'true')
      for (const grant of earlier) for (const s of grant.scopes) granted.add(s);
    // Google hands out a refresh token on the first offline consent; asking again without
    // prompt=consent gives only an access token, since the app already holds one.
    const withRefreshToken =
      accessType === 'offline' && (prompts.includes('consent') || !earlier.some((g) => g.refreshToken !== null));
    const code = token('4/0A', 40);
    codes.set(code, {
      redirectUri,
      challenge: challengeValue ? { value: challengeValue, method: challengeMethod as 'S256' | 'plain' } : null,
      scopes: [...granted],
      withRefreshToken,
      expiresAt: now() + CODE_LIFETIME_SECONDS * 1000,
      used: false,
      revoked: false,
    });
    back({ code, scope: [...granted].join(' ') });
  };

  const tokenError = (
    res: ServerResponse,
    status: number,
    error: string,
    description: string,
    headers: Record<string, string> = {},
  ) =>
    sendJson(
      res,
      status,
      { error, error_description: description },
      { 'Cache-Control': 'no-store', Pragma: 'no-cache', ...headers },
    );

  const issueAccessToken = (grant: Grant) => {
    const accessToken = token('ya29.', 48);
    accessTokens.set(accessToken, { grant, expiresAt: now() + accessLifetimeSeconds * 1000 });
    return {
      access_token: accessToken,
      expires_in: accessLifetimeSeconds,
      scope: grant.scopes.join(' '),
      token_type: 'Bearer',
    };
  };

  /** The client's credentials, from the body or HTTP Basic (never both): the error to answer if they are wrong. */
  const authenticateClient = (
    req: IncomingMessage,
    form: URLSearchParams,
  ): { status: number; error: string; description: string } | null => {
    const authorization = req.headers.authorization;
    let id = form.get('client_id');
    let secret = form.get('client_secret');
    if (authorization?.toLowerCase().startsWith('basic ')) {
      const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0) return { status: 401, error: 'invalid_client', description: 'Unauthorized' };
      const decode = (part: string) => decodeURIComponent(part.replace(/\+/g, ' '));
      let basicId: string;
      try {
        basicId = decode(decoded.slice(0, colon));
        secret = secret === null ? decode(decoded.slice(colon + 1)) : null;
      } catch {
        return { status: 401, error: 'invalid_client', description: 'Unauthorized' };
      }
      if (form.has('client_secret') || (id !== null && id !== basicId)) {
        return {
          status: 400,
          error: 'invalid_request',
          description: 'Client credentials were given in more than one way.',
        };
      }
      id = basicId;
    }
    if (!id)
      return { status: 400, error: 'invalid_request', description: 'Could not determine client ID from request.' };
    if (id !== clientId)
      return { status: 401, error: 'invalid_client', description: 'The OAuth client was not found.' };
    if (secret !== clientSecret) return { status: 401, error: 'invalid_client', description: 'Unauthorized' };
    return null;
  };

  const exchangeToken = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/x-www-form-urlencoded') {
      return tokenError(res, 400, 'invalid_request', 'The request body must be application/x-www-form-urlencoded.');
    }
    const form = new URLSearchParams(body.toString('utf8'));
    const refused = authenticateClient(req, form);
    if (refused) return tokenError(res, refused.status, refused.error, refused.description);
    const grantType = form.get('grant_type');
    if (!grantType) return tokenError(res, 400, 'invalid_request', 'Required parameter is missing: grant_type');

    if (grantType === 'authorization_code') {
      const codeValue = form.get('code');
      if (!codeValue) return tokenError(res, 400, 'invalid_request', 'Missing required parameter: code');
      const code = codes.get(codeValue);
      if (!code || code.used || code.revoked || now() >= code.expiresAt)
        return tokenError(res, 400, 'invalid_grant', 'Bad Request');
      // Single use: a code that was presented is spent, even when the exchange then fails.
      code.used = true;
      if (form.get('redirect_uri') !== code.redirectUri) return tokenError(res, 400, 'invalid_grant', 'Bad Request');
      if (code.challenge) {
        const verifier = form.get('code_verifier');
        if (!verifier) return tokenError(res, 400, 'invalid_grant', 'Missing code verifier.');
        const derived =
          code.challenge.method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
        if (derived !== code.challenge.value) return tokenError(res, 400, 'invalid_grant', 'Invalid code verifier.');
      }
      const grant: Grant = {
        scopes: code.scopes,
        refreshToken: code.withRefreshToken ? token('1//0', 64) : null,
        revoked: false,
      };
      grants.push(grant);
      if (grant.refreshToken) refreshTokens.set(grant.refreshToken, grant);
      const answer = issueAccessToken(grant);
      const body = grant.refreshToken ? { ...answer, refresh_token: grant.refreshToken } : answer;
      return sendJson(res, 200, body, { 'Cache-Control': 'no-store', Pragma: 'no-cache' });
    }

    if (grantType === 'refresh_token') {
      const refreshToken = form.get('refresh_token');
      if (!refreshToken) return tokenError(res, 400, 'invalid_request', 'Missing required parameter: refresh_token');
      const grant = refreshTokens.get(refreshToken);
      if (!grant || grant.revoked) return tokenError(res, 400, 'invalid_grant', 'Token has been expired or revoked.');
      // Google does not rotate refresh tokens: the answer has no refresh_token, the old one stays good.
      return sendJson(res, 200, issueAccessToken(grant), { 'Cache-Control': 'no-store', Pragma: 'no-cache' });
    }

    return tokenError(res, 400, 'unsupported_grant_type', `Invalid grant_type: ${grantType}`);
  };

  /** Revoking either token of a grant ends the whole grant, as Google does. */
  const revoke = (req: IncomingMessage, res: ServerResponse, query: URLSearchParams, body: Buffer) => {
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const form =
      contentType === 'application/x-www-form-urlencoded'
        ? new URLSearchParams(body.toString('utf8'))
        : new URLSearchParams();
    const value = form.get('token') ?? query.get('token');
    if (!value) return tokenError(res, 400, 'invalid_request', 'Missing required parameter: token');
    const access = accessTokens.get(value);
    const grant = refreshTokens.get(value) ?? (access && now() < access.expiresAt ? access.grant : undefined);
    if (!grant || grant.revoked) return tokenError(res, 400, 'invalid_token', 'Token expired or revoked');
    grant.revoked = true;
    sendJson(res, 200, {}, { 'Cache-Control': 'no-store' });
  };

  // ---- YouTube Data API ----

  const youtubeError = (res: ServerResponse, error: YouTubeError) =>
    sendJson(
      res,
      error.status,
      {
        error: {
          code: error.status,
          message: error.message,
          errors: [{ message: error.message, domain: error.domain, reason: error.reason }],
          ...(error.rpcStatus ? { status: error.rpcStatus } : {}),
        },
      },
      error.headers,
    );

  /** The grant behind the request's bearer token, or the 401/403 Google answers instead. */
  const authorizeCall = (
    req: IncomingMessage,
    acceptedScopes: string[],
  ): { grant: Grant } | { error: YouTubeError } => {
    const realm = 'Bearer realm="https://accounts.google.com/"';
    const authorization = req.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(authorization);
    if (!match) {
      return {
        error: {
          status: 401,
          reason: 'required',
          domain: 'global',
          message: 'Request is missing required authentication credential.',
          rpcStatus: 'UNAUTHENTICATED',
          headers: { 'WWW-Authenticate': realm },
        },
      };
    }
    const issued = accessTokens.get(match[1]!);
    if (!issued || issued.grant.revoked || now() >= issued.expiresAt) {
      return {
        error: {
          status: 401,
          reason: 'authError',
          domain: 'global',
          message: 'Request had invalid authentication credentials.',
          rpcStatus: 'UNAUTHENTICATED',
          headers: { 'WWW-Authenticate': `${realm}, error="invalid_token"` },
        },
      };
    }
    if (!issued.grant.scopes.some((s) => acceptedScopes.includes(s))) {
      return {
        error: {
          status: 403,
          reason: 'insufficientPermissions',
          domain: 'global',
          message: 'Request had insufficient authentication scopes.',
          rpcStatus: 'PERMISSION_DENIED',
          headers: { 'WWW-Authenticate': `${realm}, error="insufficient_scope", scope="${acceptedScopes[0]}"` },
        },
      };
    }
    return { grant: issued.grant };
  };

  const badParameter = (reason: string, message: string): YouTubeError => ({
    status: 400,
    reason,
    domain: 'youtube.parameter',
    message,
  });

  /** `part`, split; the error when it is missing. */
  const partsOf = (query: URLSearchParams): string[] | YouTubeError => {
    const parts = (query.get('part') ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '');
    if (parts.length === 0)
      return badParameter('missingRequiredParameter', 'No filter selected. Expected one of: part');
    return parts;
  };

  /** YouTube's answer to a call that needs a channel, from an account without one. */
  const signupRequired: YouTubeError = {
    status: 401,
    reason: 'youtubeSignupRequired',
    domain: 'youtube.header',
    message: 'Unauthorized',
  };

  const listChannels = (req: IncomingMessage, res: ServerResponse, query: URLSearchParams) => {
    const auth = authorizeCall(req, READ_SCOPES);
    if ('error' in auth) return youtubeError(res, auth.error);
    if (unlinked && query.get('mine') === 'true') return youtubeError(res, signupRequired);
    const parts = partsOf(query);
    if (!Array.isArray(parts)) return youtubeError(res, parts);
    const ids = query.get('id')?.split(',');
    if (query.get('mine') !== 'true' && !ids) {
      return youtubeError(
        res,
        badParameter('missingRequiredParameter', 'No filter selected. Expected one of: mine, id'),
      );
    }
    const items = query.get('mine') === 'true' || ids?.includes(account.channelId) ? [channelResource(parts)] : [];
    sendJson(res, 200, {
      kind: 'youtube#channelListResponse',
      etag: etag(`channels:${items.length}`),
      pageInfo: { totalResults: items.length, resultsPerPage: 5 },
      items,
    });
  };

  const channelResource = (parts: string[]) => ({
    kind: 'youtube#channel',
    etag: etag(account.channelId),
    id: account.channelId,
    ...(parts.includes('snippet')
      ? {
          snippet: {
            title: account.title,
            description: '',
            customUrl: account.handle,
            publishedAt: '2020-01-01T00:00:00Z',
            thumbnails: {
              default: { url: account.thumbnailUrl, width: 88, height: 88 },
              medium: { url: account.thumbnailUrl, width: 240, height: 240 },
              high: { url: account.thumbnailUrl, width: 800, height: 800 },
            },
            localized: { title: account.title, description: '' },
          },
        }
      : {}),
  });

  const videoResource = (video: FakeGoogleVideo, parts: string[]) => ({
    kind: 'youtube#video',
    etag: etag(video.id),
    id: video.id,
    ...(parts.includes('snippet')
      ? {
          snippet: {
            publishedAt: new Date(now()).toISOString(),
            channelId: video.channelId,
            title: video.title,
            description: video.description,
            thumbnails: {
              default: { url: `https://i.ytimg.example/vi/${video.id}/default.jpg`, width: 120, height: 90 },
            },
            channelTitle: account.title,
            ...(video.tags.length > 0 ? { tags: video.tags } : {}),
            categoryId: video.categoryId,
            liveBroadcastContent: 'none',
            localized: { title: video.title, description: video.description },
          },
        }
      : {}),
    ...(parts.includes('status')
      ? {
          status: {
            uploadStatus: 'uploaded',
            privacyStatus: video.privacyStatus,
            license: 'youtube',
            embeddable: true,
            publicStatsViewable: true,
            madeForKids: video.madeForKids,
            selfDeclaredMadeForKids: video.madeForKids,
          },
        }
      : {}),
  });

  const listVideos = (req: IncomingMessage, res: ServerResponse, query: URLSearchParams) => {
    const auth = authorizeCall(req, READ_SCOPES);
    if ('error' in auth) return youtubeError(res, auth.error);
    const parts = partsOf(query);
    if (!Array.isArray(parts)) return youtubeError(res, parts);
    const ids = query
      .get('id')
      ?.split(',')
      .filter((id) => id !== '');
    if (!ids || ids.length === 0)
      return youtubeError(res, badParameter('missingRequiredParameter', 'No filter selected. Expected one of: id'));
    const items = ids.flatMap((id) => videos.filter((v) => v.id === id)).map((v) => videoResource(v, parts));
    sendJson(res, 200, {
      kind: 'youtube#videoListResponse',
      etag: etag(`videos:${ids.join(',')}`),
      pageInfo: { totalResults: items.length, resultsPerPage: items.length },
      items,
    });
  };

  const metadataError = (reason: string, message: string): YouTubeError => ({
    status: 400,
    reason,
    domain: 'youtube.video',
    message,
  });

  /** The video's metadata from the initiation body, or why YouTube refuses it. */
  const readMetadata = (body: Buffer, parts: string[]): UploadSession['metadata'] | YouTubeError => {
    let resource: { snippet?: Record<string, unknown>; status?: Record<string, unknown> };
    try {
      resource = JSON.parse(body.toString('utf8')) as typeof resource;
      if (typeof resource !== 'object' || resource === null || Array.isArray(resource))
        throw new Error('not an object');
    } catch {
      return {
        status: 400,
        reason: 'parseError',
        domain: 'global',
        message: 'The request body is not a JSON video resource.',
      };
    }
    // Only the parts named in `part` are written; the rest of the body is ignored, as by YouTube.
    const snippet = parts.includes('snippet') ? (resource.snippet ?? {}) : {};
    const status = parts.includes('status') ? (resource.status ?? {}) : {};
    const title = snippet.title;
    if (
      typeof title !== 'string' ||
      title.trim() === '' ||
      [...title].length > TITLE_MAX_CHARACTERS ||
      /[<>]/.test(title)
    ) {
      return metadataError(
        'invalidTitle',
        'The video title is missing, longer than 100 characters, or contains < or >.',
      );
    }
    const description = snippet.description ?? '';
    if (
      typeof description !== 'string' ||
      Buffer.byteLength(description) > DESCRIPTION_MAX_BYTES ||
      /[<>]/.test(description)
    ) {
      return metadataError('invalidDescription', 'The video description is longer than 5000 bytes or contains < or >.');
    }
    const tags = snippet.tags ?? [];
    if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string'))
      return metadataError('invalidTags', 'The tags must be a list of strings.');
    // Tags with a space count with the quotes around them, and the commas between tags count too.
    const tagCharacters =
      (tags as string[]).reduce((sum, t) => sum + [...t].length + (t.includes(' ') ? 2 : 0), 0) +
      Math.max(tags.length - 1, 0);
    if (tagCharacters > TAGS_MAX_CHARACTERS)
      return metadataError('invalidTags', 'The tags are longer than 500 characters together.');
    const categoryId = snippet.categoryId ?? '22';
    if (typeof categoryId !== 'string' || !/^\d+$/.test(categoryId))
      return metadataError('invalidCategoryId', 'The category id is not a video category.');
    const privacyStatus = status.privacyStatus ?? 'public';
    if (typeof privacyStatus !== 'string' || !PRIVACY_STATUSES.includes(privacyStatus)) {
      return metadataError('invalidVideoMetadata', 'status.privacyStatus must be public, private or unlisted.');
    }
    const madeForKids = status.selfDeclaredMadeForKids ?? false;
    if (typeof madeForKids !== 'boolean')
      return metadataError('invalidVideoMetadata', 'status.selfDeclaredMadeForKids must be a boolean.');
    return {
      title,
      description,
      tags: tags as string[],
      categoryId,
      privacyStatus,
      madeForKids,
      channelId: account.channelId,
    };
  };

  /** Opens an upload session named `id` (the X-GUploader-UploadID of this answer), or answers why not. */
  const startUpload = (req: IncomingMessage, res: ServerResponse, query: URLSearchParams, body: Buffer, id: string) => {
    const auth = authorizeCall(req, UPLOAD_SCOPES);
    if ('error' in auth) return youtubeError(res, auth.error);
    if (unlinked) return youtubeError(res, signupRequired);
    const failure = uploadFailures.shift();
    if (failure === 'quotaExceeded') {
      return youtubeError(res, {
        status: 403,
        reason: 'quotaExceeded',
        domain: 'youtube.quota',
        // Google's own words, HTML included.
        message:
          'The request cannot be completed because you have exceeded your <a href="/youtube/v3/getting-started#quota">quota</a>.',
      });
    }
    if (failure === 'uploadLimitExceeded') {
      const message = 'The channel has uploaded as many videos as it may for now.';
      return youtubeError(res, { status: 400, reason: 'uploadLimitExceeded', domain: 'youtube.video', message });
    }
    if (failure === 'forbidden')
      return youtubeError(res, {
        status: 403,
        reason: 'forbidden',
        domain: 'global',
        message: 'The request is not allowed.',
      });
    if (query.get('uploadType') !== 'resumable') {
      return youtubeError(
        res,
        badParameter(
          'invalidParameter',
          'This endpoint takes uploadType=resumable only (the other upload types are not faked).',
        ),
      );
    }
    const parts = partsOf(query);
    if (!Array.isArray(parts)) return youtubeError(res, parts);
    const unknown = parts.find((p) => !VIDEO_PARTS.includes(p));
    if (unknown)
      return youtubeError(res, {
        status: 400,
        reason: 'unknownPart',
        domain: 'youtube.part',
        message: `Unknown part: ${unknown}`,
      });
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/json') {
      return youtubeError(res, {
        status: 400,
        reason: 'badContent',
        domain: 'global',
        message: 'The video resource must be sent as application/json.',
      });
    }
    const total = Number(req.headers['x-upload-content-length']);
    if (!/^\d+$/.test(String(req.headers['x-upload-content-length'] ?? '')) || total < 1) {
      const message = 'X-Upload-Content-Length must be the size of the video in bytes.';
      return youtubeError(res, { status: 400, reason: 'invalidValue', domain: 'global', message });
    }
    const mediaType = String(req.headers['x-upload-content-type'] ?? '').toLowerCase();
    if (!/^video\/[\w.+-]+$/.test(mediaType) && mediaType !== 'application/octet-stream') {
      const message = 'X-Upload-Content-Type must be video/* or application/octet-stream.';
      return youtubeError(res, { status: 400, reason: 'badContent', domain: 'global', message });
    }
    const metadata = readMetadata(body, parts);
    if ('reason' in metadata) return youtubeError(res, metadata);
    uploads.set(id, {
      id,
      total,
      received: 0,
      stored: 0,
      completed: false,
      expired: false,
      parts,
      contentType: mediaType,
      metadata,
      data: [],
      video: null,
    });
    const location = `${origin}/upload/youtube/v3/videos?uploadType=resumable&upload_id=${id}`;
    res.writeHead(200, { Location: location, 'Content-Length': '0' });
    res.end();
  };

  /** 308 with how much the session holds: `Range: bytes=0-LAST`, no Range at all before the first byte. */
  const incomplete = (res: ServerResponse, session: UploadSession) => {
    res.writeHead(308, {
      ...(session.stored > 0 ? { Range: `bytes=0-${session.stored - 1}` } : {}),
      'Content-Length': '0',
    });
    res.end();
  };

  const complete = (session: UploadSession): FakeGoogleVideo => {
    const video: FakeGoogleVideo = {
      id: videoId(),
      sessionId: session.id,
      ...session.metadata,
      contentType: session.contentType,
      bytes: session.stored,
    };
    session.completed = true;
    session.video = video;
    videos.push(video);
    videoData.set(video.id, Buffer.concat(session.data));
    session.data = [];
    return video;
  };

  const rangeError = (message: string): YouTubeError => ({
    status: 400,
    reason: 'badRequest',
    domain: 'global',
    message,
  });

  /**
   * A PUT on the session URI: a status query, a chunk, or the whole file at once. It needs no token
   * (the URI is its own credential), but one sent with it is checked.
   */
  const putChunk = (req: IncomingMessage, res: ServerResponse, session: UploadSession, body: Buffer) => {
    session.received += body.length;
    if (expireTokensDuringChunk && body.length > 0) {
      expireTokensDuringChunk = false;
      for (const issued of accessTokens.values()) issued.expiresAt = Math.min(issued.expiresAt, now());
    }
    if (req.headers.authorization !== undefined) {
      const auth = authorizeCall(req, UPLOAD_SCOPES);
      if ('error' in auth) return youtubeError(res, auth.error);
    }
    const header = req.headers['content-range'];
    // Once complete, the session answers every PUT with the video, and stores nothing more.
    if (session.video) return sendJson(res, 200, videoResource(session.video, session.parts));

    let start: number;
    let end: number;
    if (header === undefined) {
      // No Content-Range: the body is the whole file, sent in one request.
      if (body.length === 0) return incomplete(res, session);
      start = 0;
      end = body.length - 1;
      if (session.stored > 0 || body.length !== session.total)
        return youtubeError(res, rangeError('Without Content-Range the body must be the whole file.'));
    } else {
      const query = /^bytes \*\/(\d+|\*)$/.exec(header);
      if (query) {
        if (body.length > 0) return youtubeError(res, rangeError('A status query has no body.'));
        if (query[1] !== '*' && Number(query[1]) !== session.total)
          return youtubeError(res, rangeError('The total does not match X-Upload-Content-Length.'));
        return incomplete(res, session);
      }
      const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(header);
      if (!range)
        return youtubeError(res, rangeError('Content-Range must be "bytes START-END/TOTAL" or "bytes */TOTAL".'));
      start = Number(range[1]);
      end = Number(range[2]);
      if (range[3] !== '*' && Number(range[3]) !== session.total)
        return youtubeError(res, rangeError('The total does not match X-Upload-Content-Length.'));
      if (end < start || end >= session.total)
        return youtubeError(res, rangeError('The byte range is outside the file.'));
      if (body.length !== end - start + 1)
        return youtubeError(res, rangeError('The body is not as long as Content-Range says.'));
    }

    if (chunkFailure !== undefined) {
      const status = chunkFailure;
      chunkFailure = undefined;
      const reason = status >= 500 ? 'backendError' : 'badRequest';
      return youtubeError(res, { status, reason, domain: 'global', message: `The upload server answered ${status}.` });
    }
    // The upload goes on from the byte the session holds: no gap, no going back over stored bytes.
    if (start !== session.stored)
      return youtubeError(
        res,
        rangeError(`The chunk starts at ${start}, but the session holds ${session.stored} bytes.`),
      );
    const final = end + 1 === session.total;
    if (!final && body.length % CHUNK_UNIT !== 0)
      return youtubeError(res, rangeError('A chunk before the last must be a multiple of 256 KiB (262144 bytes).'));

    if (chunkCut !== undefined) {
      const kept = body.subarray(0, Math.min(chunkCut, body.length));
      chunkCut = undefined;
      session.data.push(Buffer.from(kept));
      session.stored += kept.length;
      if (session.stored === session.total) complete(session);
      req.socket.destroy();
      return;
    }
    session.data.push(Buffer.from(body));
    session.stored += body.length;
    if (!final) return incomplete(res, session);
    const video = complete(session);
    if (cutFinal) {
      cutFinal = false;
      req.socket.destroy();
      return;
    }
    if (holdFinal) {
      holdFinal = false;
      return;
    }
    sendJson(res, 201, videoResource(video, session.parts));
  };

  // ---- routing ----

  const route = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const url = new URL(req.url ?? '/', origin);
    const method = req.method ?? 'GET';
    const path = url.pathname;
    if (path === '/o/oauth2/v2/auth' && method === 'GET') return authorize(res, url.searchParams);
    if (path === '/token' && method === 'POST') return exchangeToken(req, res, body);
    if (path === '/revoke' && method === 'POST') return revoke(req, res, url.searchParams, body);
    if (path === '/youtube/v3/channels' && method === 'GET') return listChannels(req, res, url.searchParams);
    if (path === '/youtube/v3/videos' && method === 'GET') return listVideos(req, res, url.searchParams);
    if (path === '/upload/youtube/v3/videos') {
      const uploadId = url.searchParams.get('upload_id');
      // Google's upload server names the upload in every answer, refusals included: the session's id
      // on its URI, a new one for an initiation (the session's, once it is opened).
      const answerId = uploadId ?? token('ADPycd', 48);
      res.setHeader('X-GUploader-UploadID', answerId);
      if (uploadId === null && method === 'POST') return startUpload(req, res, url.searchParams, body, answerId);
      if (uploadId !== null && method === 'PUT') {
        const session = uploads.get(uploadId);
        if (!session || session.expired)
          return youtubeError(res, {
            status: 404,
            reason: 'notFound',
            domain: 'global',
            message: 'No upload session with this id.',
          });
        return putChunk(req, res, session, body);
      }
    }
    youtubeError(res, { status: 404, reason: 'notFound', domain: 'global', message: `Not found: ${method} ${path}` });
  };

  const server = http.createServer((req, res) => {
    const authorization = (req.headers.authorization ?? '').toLowerCase();
    requests.push({
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      auth: authorization.startsWith('bearer ') ? 'bearer' : authorization.startsWith('basic ') ? 'basic' : 'none',
    });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        route(req, res, Buffer.concat(chunks));
      } catch (error) {
        youtubeError(res, { status: 500, reason: 'backendError', domain: 'global', message: (error as Error).message });
      }
    });
    // A chunk whose sender went away mid-body still arrived in part: it counts as received, not stored.
    req.on('close', () => {
      if (req.complete || req.method !== 'PUT') return;
      const uploadId = new URL(req.url ?? '/', origin).searchParams.get('upload_id');
      const session = uploadId ? uploads.get(uploadId) : undefined;
      if (session) session.received += chunks.reduce((sum, c) => sum + c.length, 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: origin,
    clientId,
    clientSecret,
    account,
    deny: () => {
      denyNext = true;
    },
    revokeAll: () => {
      for (const grant of grants) grant.revoked = true;
      for (const code of codes.values()) code.revoked = true;
    },
    accessTokenLifetime: (seconds) => {
      accessLifetimeSeconds = seconds;
    },
    advanceClock: (seconds) => {
      clockOffsetMs += seconds * 1000;
    },
    failNextUploads: (count, reason) => {
      for (let i = 0; i < count; i++) uploadFailures.push(reason);
    },
    failNextChunk: (status) => {
      chunkFailure = status;
    },
    expireTokensDuringNextChunk: () => {
      expireTokensDuringChunk = true;
    },
    expireUploadSessions: () => {
      for (const session of uploads.values()) session.expired = true;
    },
    withoutChannel: (on) => {
      unlinked = on;
    },
    cutNextChunkAfter: (bytes) => {
      chunkCut = bytes;
    },
    cutAfterFinalChunk: () => {
      cutFinal = true;
    },
    holdAfterFinalChunk: () => {
      holdFinal = true;
    },
    videos,
    videoBytes: (id) => videoData.get(id),
    sessions: () =>
      [...uploads.values()].map(({ id, total, received, stored, completed }) => ({
        id,
        total,
        received,
        stored,
        completed,
      })),
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A stable entity tag for a resource, as YouTube puts on every resource and list. */
function etag(seed: string): string {
  return createHash('sha1').update(seed).digest('base64url').slice(0, 27);
}

/** The server's settings that make a Google app of `google`, as an operator's would be of Google's. */
export function youtubeEnv(google: FakeGoogle, uploadChunkBytes?: number): Record<string, string> {
  return {
    YOUTUBE_CLIENT_ID: google.clientId,
    YOUTUBE_CLIENT_SECRET: google.clientSecret,
    YOUTUBE_ACCOUNTS_URL: google.url,
    YOUTUBE_OAUTH_URL: google.url,
    YOUTUBE_API_URL: google.url,
    ...(uploadChunkBytes ? { YOUTUBE_UPLOAD_CHUNK_BYTES: String(uploadChunkBytes) } : {}),
  };
}

/**
 * Connects a YouTube channel as a signed-in browser does: Connect YouTube in Settings → Channels, the
 * fake's consent (given at once, unless told to deny), and the callback; the callback's answer.
 */
export async function connectYouTube(session: {
  submit(page: string, action: string, fields: Record<string, string>): Promise<Response>;
  get(path: string): Promise<Response>;
}): Promise<Response> {
  const started = await session.submit('/settings/channels', '/settings/channels/connect/youtube', {});
  const consent = await fetch(started.headers.get('location')!, { redirect: 'manual' });
  const back = new URL(consent.headers.get('location')!);
  return session.get(back.pathname + back.search);
}
