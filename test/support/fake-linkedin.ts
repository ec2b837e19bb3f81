import { randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendHeld, type AnswerHold } from './fake-graph-protocol.js';

/** A member who signs in at the fake's consent page. */
export interface FakeLinkedInMember {
  /** OpenID's `sub`: the member is `urn:li:person:{sub}`. */
  sub: string;
  givenName: string;
  familyName: string;
  picture: string | null;
}

/** A company page, and the member's role on it (`organizationAcls`). */
export interface FakeLinkedInOrganization {
  id: number;
  localizedName: string;
  vanityName: string;
  /** ADMINISTRATOR may publish for it; others (ANALYST, CURATOR…) are listed by LinkedIn, not here. */
  role: 'ADMINISTRATOR' | 'ANALYST' | 'CURATOR' | 'CONTENT_ADMINISTRATOR';
}

export interface FakeLinkedInToken {
  value: string;
  kind: 'access' | 'refresh';
  scopes: string[];
  /** ms on the fake's clock. */
  expiresAt: number;
  revoked: boolean;
}

export interface FakeLinkedInImage {
  urn: string;
  owner: string;
  bytes: Buffer | null;
}

export type FakeLinkedInVideoStatus = 'WAITING_UPLOAD' | 'PROCESSING' | 'AVAILABLE' | 'PROCESSING_FAILED';

export interface FakeLinkedInVideo {
  urn: string;
  owner: string;
  fileSizeBytes: number;
  parts: { firstByte: number; lastByte: number; etag: string | null; bytes: Buffer | null }[];
  status: FakeLinkedInVideoStatus;
  /** Status reads left before a finalized video's processing settles. */
  checksLeft: number;
  fails: boolean;
}

/** A document (Documents API): its bytes once PUT, then processed like a video. */
export interface FakeLinkedInDocument {
  urn: string;
  owner: string;
  bytes: Buffer | null;
  status: FakeLinkedInVideoStatus;
  /** Status reads left before an uploaded document's processing settles. */
  checksLeft: number;
  fails: boolean;
}

export interface FakeLinkedInPost {
  id: string;
  author: string;
  /** As sent: little text. */
  commentary: string;
  visibility: string;
  lifecycleState: string;
  isReshareDisabledByAuthor: boolean;
  content: {
    media?: { id: string; altText?: string; title?: string };
    multiImage?: { images: { id: string; altText?: string }[] };
  };
  createdAt: number;
}

export interface FakeLinkedInComment {
  id: string;
  commentUrn: string;
  /** The post commented on. */
  object: string;
  actor: string;
  text: string;
  createdAt: number;
}

export type FakeLinkedInOperation =
  | 'authorize'
  | 'accessToken'
  | 'userinfo'
  | 'organizationAcls'
  | 'organization'
  | 'initializeImage'
  | 'uploadImage'
  | 'initializeVideo'
  | 'uploadVideoPart'
  | 'finalizeVideo'
  | 'getVideo'
  | 'initializeDocument'
  | 'uploadDocument'
  | 'getDocument'
  | 'createPost'
  | 'findPosts'
  | 'createComment'
  | 'getComments';

export interface FakeLinkedInRequest {
  method: string;
  path: string;
  operation: FakeLinkedInOperation | null;
  /** The headers LinkedIn's versioned API reads, as sent. */
  version: string | undefined;
  restli: string | undefined;
}

/**
 * A stand-in for LinkedIn on a loopback port (both api.linkedin.com and www.linkedin.com), following
 * Microsoft's LinkedIn documentation (learn.microsoft.com/linkedin): the 3-legged OAuth flow (the consent
 * page at /oauth/v2/authorization, /oauth/v2/accessToken for a code or a refresh token; access tokens of 60
 * days, refresh tokens of a year, which only some apps get: `refreshTokens`), OpenID's /v2/userinfo, the
 * pages a member administers (`/rest/organizationAcls?q=roleAssignee`, `/rest/organizations/{id}`), the
 * Images API (initializeUpload, then a PUT of the bytes), the Videos API (initializeUpload answering parts
 * of 4 MB, each PUT answering its ETag, finalizeUpload with them, the status read PROCESSING then
 * AVAILABLE or PROCESSING_FAILED), the Documents API (initializeUpload, a PUT of the file, its status read
 * PROCESSING then AVAILABLE or PROCESSING_FAILED; up to 100 MB; a post of it needs its `title`), the Posts
 * API (create, answered 201 with `x-restli-id`; the author's posts
 * with `q=author`) and the comments of socialActions.
 *
 * Strict where LinkedIn is: every /rest call sends `Linkedin-Version` (YYYYMM; a retired one is answered
 * 426 with LinkedIn's NONEXISTENT_VERSION body) and `X-Restli-Protocol-Version: 2.0.0`; each call needs
 * its scopes (w_member_social to act as the member, w_organization_social as a page they administer,
 * r_member_social or r_organization_social to read posts and comments); an expired or revoked token is
 * 401; a used-up limit is 429. Errors are LinkedIn's `{status, serviceErrorCode, code, message}`.
 *
 * Commentary is little text: `shownText(post)` is what LinkedIn shows, escapes undone, and, as LinkedIn
 * does, the text cut at a reserved character that is not escaped.
 */
export interface FakeLinkedIn {
  /** Both origins: `${url}/rest/posts`, `${url}/oauth/v2/authorization`. */
  url: string;
  clientId: string;
  clientSecret: string;
  member: FakeLinkedInMember;
  organizations: FakeLinkedInOrganization[];
  tokens: FakeLinkedInToken[];
  images: FakeLinkedInImage[];
  videos: FakeLinkedInVideo[];
  documents: FakeLinkedInDocument[];
  posts: FakeLinkedInPost[];
  comments: FakeLinkedInComment[];
  requests: FakeLinkedInRequest[];
  /** What LinkedIn shows of a post's commentary. */
  shownText(post: FakeLinkedInPost): string;
  /** Whether the app gets refresh tokens (LinkedIn gives them to some apps only); default false. */
  refreshTokens(on: boolean): void;
  /**
   * The member cancels at the next consent page: LinkedIn sends them back with `user_cancelled_authorize`
   * (declined the permissions) or `user_cancelled_login` (did not sign in).
   */
  cancelNext(error: 'user_cancelled_authorize' | 'user_cancelled_login'): void;
  /** The scopes the member grants at the consent page from now on (default: every scope asked for). */
  grantOnly(scopes: string[] | null): void;
  /** LinkedIn answers 426 to this version from now on. */
  retireVersion(version: string): void;
  /** Every token issued so far is revoked (the member removed the app): 401 everywhere. */
  revokeAll(): void;
  /** The next call of `operation` is answered 429, having done nothing. */
  throttleNext(operation: FakeLinkedInOperation): void;
  /** The next call of `operation` does its work, then the connection is destroyed before LinkedIn answers. */
  loseNextAnswer(operation: FakeLinkedInOperation): void;
  /**
   * The next call of `operation` that does its work, after `skip` others, holds its answer back: it is sent `ms`
   * later, or, without `ms`, never; a caller that goes away meanwhile never gets it (a worker killed while
   * LinkedIn answers), the post or comment made all the same.
   */
  holdNextAnswer(operation: FakeLinkedInOperation, options?: { ms?: number; skip?: number }): void;
  /** Answers held back now: their work done, not sent yet, their callers still waiting. */
  heldAnswers(): number;
  /** Status reads a finalized video or an uploaded document answers PROCESSING before it settles (default 1). */
  processingChecks(count: number): void;
  /** The next video or document to settle fails its processing (PROCESSING_FAILED). */
  failNextProcessing(): void;
  /** The size of a video's upload parts (LinkedIn's: 4 MB). */
  partSize(bytes: number): void;
  advanceClock(seconds: number): void;
  now(): number;
  close(): Promise<void>;
}

const DAY = 24 * 60 * 60;
const ACCESS_LIFETIME_SECONDS = 60 * DAY;
const REFRESH_LIFETIME_SECONDS = 365 * DAY;
const CODE_LIFETIME_MS = 30 * 60_000;
const SCOPES = [
  'openid',
  'profile',
  'email',
  'w_member_social',
  'r_member_social',
  'r_organization_admin',
  'w_organization_social',
  'r_organization_social',
  'rw_organization_admin',
];
const VISIBILITIES = ['PUBLIC', 'CONNECTIONS', 'LOGGED_IN', 'CONTAINER'];
/** Little text's reserved characters (Posts API, "Little Text Format"). */
const RESERVED = '\\|{}@[]()<>#*_~';

const ROUTES: { method: string; path: RegExp; operation: FakeLinkedInOperation; versioned: boolean }[] = [
  { method: 'GET', path: /^\/oauth\/v2\/authorization$/, operation: 'authorize', versioned: false },
  { method: 'POST', path: /^\/oauth\/v2\/accessToken$/, operation: 'accessToken', versioned: false },
  { method: 'GET', path: /^\/v2\/userinfo$/, operation: 'userinfo', versioned: false },
  { method: 'GET', path: /^\/rest\/organizationAcls$/, operation: 'organizationAcls', versioned: true },
  { method: 'GET', path: /^\/rest\/organizations\/(\d+)$/, operation: 'organization', versioned: true },
  { method: 'POST', path: /^\/rest\/images$/, operation: 'initializeImage', versioned: true },
  { method: 'PUT', path: /^\/upload\/images\/([^/]+)$/, operation: 'uploadImage', versioned: false },
  { method: 'POST', path: /^\/rest\/videos$/, operation: 'initializeVideo', versioned: true },
  { method: 'PUT', path: /^\/upload\/videos\/([^/]+)\/(\d+)$/, operation: 'uploadVideoPart', versioned: false },
  { method: 'GET', path: /^\/rest\/videos\/([^/]+)$/, operation: 'getVideo', versioned: true },
  { method: 'POST', path: /^\/rest\/documents$/, operation: 'initializeDocument', versioned: true },
  { method: 'PUT', path: /^\/upload\/documents\/([^/]+)$/, operation: 'uploadDocument', versioned: false },
  { method: 'GET', path: /^\/rest\/documents\/([^/]+)$/, operation: 'getDocument', versioned: true },
  { method: 'POST', path: /^\/rest\/posts$/, operation: 'createPost', versioned: true },
  { method: 'GET', path: /^\/rest\/posts$/, operation: 'findPosts', versioned: true },
  { method: 'POST', path: /^\/rest\/socialActions\/([^/]+)\/comments$/, operation: 'createComment', versioned: true },
  { method: 'GET', path: /^\/rest\/socialActions\/([^/]+)\/comments$/, operation: 'getComments', versioned: true },
];

interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

class LinkedInError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly serviceErrorCode = 100,
  ) {
    super(message);
  }

  answer(): Answer {
    return {
      status: this.status,
      body: { status: this.status, serviceErrorCode: this.serviceErrorCode, code: this.code, message: this.message },
    };
  }
}

class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}

interface Code {
  redirectUri: string;
  scopes: string[];
  expiresAt: number;
  used: boolean;
}

/** What LinkedIn shows of little text: escapes undone, the text cut at an unescaped reserved character. */
export function shownLittleText(commentary: string): string {
  let shown = '';
  for (let i = 0; i < commentary.length; i += 1) {
    const character = commentary[i]!;
    if (character === '\\' && i + 1 < commentary.length && RESERVED.includes(commentary[i + 1]!)) {
      shown += commentary[i + 1];
      i += 1;
    } else if (RESERVED.includes(character)) return shown;
    else shown += character;
  }
  return shown;
}

export async function startFakeLinkedIn(
  options: { member?: Partial<FakeLinkedInMember>; organizations?: FakeLinkedInOrganization[] } = {},
): Promise<FakeLinkedIn> {
  const member: FakeLinkedInMember = {
    sub: 'yrZCpj2Z12',
    givenName: 'Ada',
    familyName: 'Lovelace',
    picture: 'https://media.licdn.com/dms/image/ada.jpg',
    ...options.member,
  };
  const memberUrn = `urn:li:person:${member.sub}`;
  const organizations = options.organizations ?? [];
  const clientId = '86xk3fq9zlkz1a';
  const clientSecret = randomBytes(12).toString('base64url');
  // The fake's time runs with the wall clock, moved on by `advanceClock`: a post's createdAt is when it
  // was made, however long the run took to get there.
  let clockOffset = 0;
  const clockNow = () => Date.now() + clockOffset;
  let withRefresh = false;
  let granted: string[] | null = null;
  let cancel: string | null = null;
  let videoChecks = 1;
  let failProcessing = false;
  let partBytes = 4 * 1024 * 1024;
  let sequence = 7_200_000_000_000_000_000n;
  const retired = new Set<string>();
  const throttled = new Set<FakeLinkedInOperation>();
  const losing = new Set<FakeLinkedInOperation>();
  const holds: { operation: FakeLinkedInOperation; skip: number; hold: AnswerHold }[] = [];
  const held = { count: 0 };
  const codes = new Map<string, Code>();
  const tokens: FakeLinkedInToken[] = [];
  const images: FakeLinkedInImage[] = [];
  const videos: FakeLinkedInVideo[] = [];
  const documents: FakeLinkedInDocument[] = [];
  const posts: FakeLinkedInPost[] = [];
  const comments: FakeLinkedInComment[] = [];
  const requests: FakeLinkedInRequest[] = [];
  let url = '';

  const nextId = () => String((sequence += 1n));
  const issue = (kind: 'access' | 'refresh', scopes: string[], lifetime: number): FakeLinkedInToken => {
    const token = {
      value: `AQ${kind === 'access' ? 'V' : 'X'}${randomBytes(40).toString('base64url')}`,
      kind,
      scopes,
      expiresAt: clockNow() + lifetime * 1000,
      revoked: false,
    };
    tokens.push(token);
    return token;
  };

  /** The scopes of the request's access token; 401 as LinkedIn answers an expired or revoked one. */
  function scopesOf(req: IncomingMessage): string[] {
    const header = req.headers.authorization ?? '';
    const value = header.startsWith('Bearer ') ? header.slice(7) : '';
    const token = tokens.find((t) => t.kind === 'access' && t.value === value);
    if (!token) throw new LinkedInError(401, 'INVALID_ACCESS_TOKEN', 'Invalid access token', 65600);
    if (token.revoked)
      throw new LinkedInError(
        401,
        'REVOKED_ACCESS_TOKEN',
        'The token used in the request has been revoked by the user',
        65601,
      );
    if (token.expiresAt <= clockNow())
      throw new LinkedInError(401, 'EXPIRED_ACCESS_TOKEN', 'The token used in the request has expired', 65602);
    return token.scopes;
  }

  function needs(scopes: string[], scope: string): void {
    if (!scopes.includes(scope))
      throw new LinkedInError(403, 'ACCESS_DENIED', `Not enough permissions to access this resource (${scope})`);
  }

  /** An author or owner the token may act as: the member, or a page where the member is ADMINISTRATOR. */
  function mayActAs(scopes: string[], urn: unknown, reading = false): string {
    if (urn === memberUrn) {
      needs(scopes, reading ? 'r_member_social' : 'w_member_social');
      return urn;
    }
    const id = /^urn:li:organization:(\d+)$/.exec(String(urn))?.[1];
    const organization = organizations.find((o) => String(o.id) === id);
    if (!organization) throw new LinkedInError(403, 'ACCESS_DENIED', `Not enough permissions to act as ${String(urn)}`);
    needs(scopes, reading ? 'r_organization_social' : 'w_organization_social');
    if (organization.role !== 'ADMINISTRATOR' && organization.role !== 'CONTENT_ADMINISTRATOR')
      throw new LinkedInError(403, 'ACCESS_DENIED', `The member's role on ${String(urn)} does not allow it`);
    return String(urn);
  }

  function checkVersion(req: IncomingMessage): void {
    const version = req.headers['linkedin-version'];
    if (typeof version !== 'string' || version === '')
      throw new LinkedInError(
        400,
        'VERSION_MISSING',
        'A version must be present. Please specify a version by adding the LinkedIn-Version header.',
      );
    if (!/^\d{6}(\.\d{2})?$/.test(version))
      throw new LinkedInError(400, 'INVALID_VERSION', `Invalid version format: ${version}`);
    if (retired.has(version))
      throw new LinkedInError(426, 'NONEXISTENT_VERSION', `Requested version ${version} is not active`);
    if (req.headers['x-restli-protocol-version'] !== '2.0.0')
      throw new LinkedInError(400, 'ILLEGAL_ARGUMENT', 'X-Restli-Protocol-Version 2.0.0 is required for this resource');
  }

  function authorize(query: URLSearchParams): Answer {
    const redirectUri = query.get('redirect_uri') ?? '';
    if (query.get('client_id') !== clientId || !/^https?:\/\//.test(redirectUri))
      return { status: 400, body: { error: 'invalid_request', error_description: 'Unknown client or redirect_uri' } };
    const back = new URL(redirectUri);
    const state = query.get('state');
    if (state) back.searchParams.set('state', state);
    const asked = (query.get('scope') ?? '').split(' ').filter(Boolean);
    const unknown = asked.filter((scope) => !SCOPES.includes(scope));
    if (query.get('response_type') !== 'code' || asked.length === 0 || unknown.length > 0) {
      back.searchParams.set('error', 'unauthorized_scope_error');
      back.searchParams.set('error_description', `Scope "${unknown.join(',')}" is not authorized for your application`);
      return { status: 302, headers: { location: back.toString() } };
    }
    if (cancel) {
      back.searchParams.set('error', cancel);
      back.searchParams.set('error_description', 'The user cancelled the authorization');
      cancel = null;
      return { status: 302, headers: { location: back.toString() } };
    }
    const code = `AQT${randomBytes(24).toString('base64url')}`;
    const scopes = granted ? asked.filter((scope) => granted!.includes(scope)) : asked;
    codes.set(code, { redirectUri, scopes, expiresAt: clockNow() + CODE_LIFETIME_MS, used: false });
    back.searchParams.set('code', code);
    return { status: 302, headers: { location: back.toString() } };
  }

  function accessToken(form: URLSearchParams): Answer {
    if (form.get('client_id') !== clientId || form.get('client_secret') !== clientSecret)
      throw new OAuthError('invalid_client', 'Client authentication failed', 401);
    let scopes: string[];
    let refresh: FakeLinkedInToken | undefined;
    if (form.get('grant_type') === 'authorization_code') {
      const code = codes.get(form.get('code') ?? '');
      if (!code || code.used || code.expiresAt <= clockNow() || code.redirectUri !== form.get('redirect_uri'))
        throw new OAuthError(
          'invalid_request',
          'Unable to retrieve access token: appid/redirect uri/code verifier does not match authorization code. Or authorization code expired.',
        );
      code.used = true;
      scopes = code.scopes;
      if (withRefresh) refresh = issue('refresh', scopes, REFRESH_LIFETIME_SECONDS);
    } else if (form.get('grant_type') === 'refresh_token') {
      refresh = tokens.find((t) => t.kind === 'refresh' && t.value === form.get('refresh_token'));
      if (!refresh || refresh.revoked || refresh.expiresAt <= clockNow())
        throw new OAuthError(
          'invalid_request',
          'The provided authorization grant or refresh token is invalid, expired or revoked.',
        );
      scopes = refresh.scopes;
    } else throw new OAuthError('unsupported_grant_type', 'The grant type is not supported');
    const access = issue('access', scopes, ACCESS_LIFETIME_SECONDS);
    return {
      status: 200,
      body: {
        access_token: access.value,
        expires_in: ACCESS_LIFETIME_SECONDS,
        scope: scopes.join(','),
        token_type: 'Bearer',
        // A refresh does not lengthen the refresh token's life: what is left of it is told again.
        ...(refresh
          ? {
              refresh_token: refresh.value,
              refresh_token_expires_in: Math.floor((refresh.expiresAt - clockNow()) / 1000),
            }
          : {}),
      },
    };
  }

  function userinfo(scopes: string[]): Answer {
    needs(scopes, 'openid');
    needs(scopes, 'profile');
    return {
      status: 200,
      body: {
        sub: member.sub,
        name: `${member.givenName} ${member.familyName}`,
        given_name: member.givenName,
        family_name: member.familyName,
        ...(member.picture ? { picture: member.picture } : {}),
        locale: { country: 'US', language: 'en' },
      },
    };
  }

  function organizationAcls(scopes: string[], query: URLSearchParams): Answer {
    needs(scopes, 'r_organization_admin');
    if (query.get('q') !== 'roleAssignee') throw new LinkedInError(400, 'ILLEGAL_ARGUMENT', 'Unsupported finder');
    const role = query.get('role');
    const listed = organizations
      .filter((o) => !role || o.role === role)
      .map((o) => ({
        roleAssignee: memberUrn,
        state: 'APPROVED',
        role: o.role,
        organization: `urn:li:organization:${o.id}`,
      }));
    const start = Number(query.get('start') ?? 0);
    const count = Number(query.get('count') ?? 10);
    return {
      status: 200,
      body: { elements: listed.slice(start, start + count), paging: { start, count, total: listed.length } },
    };
  }

  function organization(scopes: string[], id: string): Answer {
    needs(scopes, 'r_organization_admin');
    const found = organizations.find((o) => String(o.id) === id);
    if (!found) throw new LinkedInError(404, 'NOT_FOUND', `Organization ${id} not found`);
    return { status: 200, body: { id: found.id, localizedName: found.localizedName, vanityName: found.vanityName } };
  }

  function initialize(
    scopes: string[],
    query: URLSearchParams,
    body: Record<string, unknown>,
    kind: 'image' | 'video',
  ): Answer {
    if (query.get('action') !== 'initializeUpload')
      return kind === 'video' && query.get('action') === 'finalizeUpload'
        ? finalize(scopes, body)
        : { status: 400, body: { status: 400, message: 'Unknown action' } };
    const request = body.initializeUploadRequest as Record<string, unknown> | undefined;
    const owner = mayActAs(scopes, request?.owner);
    const id = `D${randomBytes(9).toString('hex').toUpperCase()}`;
    const expiresAt = clockNow() + DAY * 1000;
    if (kind === 'image') {
      const urn = `urn:li:image:${id}`;
      images.push({ urn, owner, bytes: null });
      return {
        status: 200,
        body: { value: { uploadUrlExpiresAt: expiresAt, uploadUrl: `${url}/upload/images/${id}`, image: urn } },
      };
    }
    const size = request?.fileSizeBytes;
    if (typeof size !== 'number' || !Number.isInteger(size) || size <= 0)
      throw new LinkedInError(400, 'ILLEGAL_ARGUMENT', 'fileSizeBytes is required');
    const parts: FakeLinkedInVideo['parts'] = [];
    for (let first = 0; first < size; first += partBytes)
      parts.push({ firstByte: first, lastByte: Math.min(first + partBytes, size) - 1, etag: null, bytes: null });
    const urn = `urn:li:video:${id}`;
    videos.push({ urn, owner, fileSizeBytes: size, parts, status: 'WAITING_UPLOAD', checksLeft: 0, fails: false });
    return {
      status: 200,
      body: {
        value: {
          uploadUrlsExpireAt: expiresAt,
          video: urn,
          uploadInstructions: parts.map((part, index) => ({
            uploadUrl: `${url}/upload/videos/${id}/${index}`,
            firstByte: part.firstByte,
            lastByte: part.lastByte,
          })),
          uploadToken: '',
        },
      },
    };
  }

  function finalize(scopes: string[], body: Record<string, unknown>): Answer {
    const request = body.finalizeUploadRequest as { video?: string; uploadedPartIds?: unknown[] } | undefined;
    const video = videos.find((v) => v.urn === request?.video);
    if (!video) throw new LinkedInError(404, 'NOT_FOUND', 'Video not found');
    mayActAs(scopes, video.owner);
    const etags = request?.uploadedPartIds ?? [];
    if (etags.length !== video.parts.length || video.parts.some((part, index) => part.etag !== etags[index]))
      throw new LinkedInError(400, 'ILLEGAL_ARGUMENT', 'uploadedPartIds do not match the parts uploaded');
    video.status = 'PROCESSING';
    video.checksLeft = videoChecks;
    video.fails = failProcessing;
    failProcessing = false;
    return { status: 200, body: {} };
  }

  function getVideo(scopes: string[], encoded: string): Answer {
    const video = videos.find((v) => v.urn === decodeURIComponent(encoded));
    if (!video) throw new LinkedInError(404, 'NOT_FOUND', 'Video not found');
    mayActAs(scopes, video.owner);
    if (video.status === 'PROCESSING') {
      if (video.checksLeft > 0) video.checksLeft -= 1;
      else video.status = video.fails ? 'PROCESSING_FAILED' : 'AVAILABLE';
    }
    return {
      status: 200,
      body: {
        id: video.urn,
        owner: video.owner,
        status: video.status,
        ...(video.status === 'PROCESSING_FAILED'
          ? { processingFailureReason: 'The video could not be transcoded' }
          : {}),
      },
    };
  }

  function initializeDocument(scopes: string[], query: URLSearchParams, body: Record<string, unknown>): Answer {
    if (query.get('action') !== 'initializeUpload')
      return { status: 400, body: { status: 400, message: 'Unknown action' } };
    const request = body.initializeUploadRequest as Record<string, unknown> | undefined;
    const owner = mayActAs(scopes, request?.owner);
    const id = `D${randomBytes(9).toString('hex').toUpperCase()}`;
    const urn = `urn:li:document:${id}`;
    documents.push({ urn, owner, bytes: null, status: 'WAITING_UPLOAD', checksLeft: 0, fails: false });
    return {
      status: 200,
      body: {
        value: {
          uploadUrlExpiresAt: clockNow() + DAY * 1000,
          uploadUrl: `${url}/upload/documents/${id}`,
          document: urn,
        },
      },
    };
  }

  /** The file of a document: processing starts at once; LinkedIn takes PDF, PPT(X) and DOC(X) of up to 100 MB. */
  function uploadDocument(req: IncomingMessage, bytes: Buffer, match: RegExpExecArray): Answer {
    scopesOf(req);
    const document = documents.find((d) => d.urn === `urn:li:document:${match[1]}`);
    if (!document || document.status !== 'WAITING_UPLOAD') return { status: 404 };
    if (bytes.length > 100 * 1024 * 1024) return { status: 413 };
    document.bytes = bytes;
    document.status = 'PROCESSING';
    document.checksLeft = videoChecks;
    document.fails = failProcessing || bytes.subarray(0, 5).toString('latin1') !== '%PDF-';
    failProcessing = false;
    return { status: 201 };
  }

  function getDocument(scopes: string[], encoded: string): Answer {
    const document = documents.find((d) => d.urn === decodeURIComponent(encoded));
    if (!document) throw new LinkedInError(404, 'NOT_FOUND', 'Document not found');
    mayActAs(scopes, document.owner);
    if (document.status === 'PROCESSING') {
      if (document.checksLeft > 0) document.checksLeft -= 1;
      else document.status = document.fails ? 'PROCESSING_FAILED' : 'AVAILABLE';
    }
    return {
      status: 200,
      body: {
        id: document.urn,
        owner: document.owner,
        status: document.status,
        ...(document.status === 'AVAILABLE'
          ? { downloadUrl: `${url}/download/documents/${document.urn}`, downloadUrlExpiresAt: clockNow() + DAY * 1000 }
          : {}),
      },
    };
  }

  function upload(req: IncomingMessage, bytes: Buffer, match: RegExpExecArray, kind: 'image' | 'video'): Answer {
    scopesOf(req);
    if (kind === 'image') {
      const image = images.find((i) => i.urn === `urn:li:image:${match[1]}`);
      if (!image) return { status: 404 };
      image.bytes = bytes;
      return { status: 201 };
    }
    const video = videos.find((v) => v.urn === `urn:li:video:${match[1]}`);
    const part = video?.parts[Number(match[2])];
    if (!part) return { status: 404 };
    if (bytes.length !== part.lastByte - part.firstByte + 1) return { status: 400 };
    part.bytes = bytes;
    part.etag = `/ETag${randomBytes(12).toString('hex')}`;
    return { status: 200, headers: { etag: part.etag } };
  }

  function mediaReady(author: string, id: unknown, isImage: boolean): void {
    const image = isImage ? images.find((i) => i.urn === id) : undefined;
    const video = isImage ? undefined : (videos.find((v) => v.urn === id) ?? documents.find((d) => d.urn === id));
    const found = image ?? video;
    if (!found || found.owner !== author)
      throw new LinkedInError(400, 'ILLEGAL_ARGUMENT', `Media ${String(id)} is not the author's`);
    if ((image && !image.bytes) || (video && video.status !== 'AVAILABLE'))
      throw new LinkedInError(400, 'ILLEGAL_ARGUMENT', `Media ${String(id)} is not available yet`);
  }

  function createPost(scopes: string[], body: Record<string, unknown>): Answer {
    const author = mayActAs(scopes, body.author);
    const commentary = body.commentary;
    if (typeof commentary !== 'string') throw new LinkedInError(422, 'FIELD_MISSING', '/commentary is required');
    if (commentary.length > 3000)
      throw new LinkedInError(422, 'INVALID_VALUE', `/commentary length ${commentary.length} exceeds 3000`);
    if (typeof body.visibility !== 'string' || !VISIBILITIES.includes(body.visibility))
      throw new LinkedInError(422, 'INVALID_VALUE', '/visibility is invalid');
    if (body.visibility === 'CONNECTIONS' && author !== memberUrn)
      throw new LinkedInError(422, 'INVALID_VALUE', 'CONNECTIONS visibility is only for members');
    if (body.lifecycleState !== 'PUBLISHED' || typeof body.distribution !== 'object')
      throw new LinkedInError(422, 'FIELD_MISSING', '/lifecycleState and /distribution are required');
    const content = (body.content ?? {}) as FakeLinkedInPost['content'];
    if (content.media) mediaReady(author, content.media.id, content.media.id.startsWith('urn:li:image:'));
    if (content.media?.id.startsWith('urn:li:document:') && !content.media.title)
      throw new LinkedInError(422, 'FIELD_MISSING', '/content/media/title is required for a document');
    if (content.multiImage) {
      const list = content.multiImage.images;
      if (!Array.isArray(list) || list.length < 2 || list.length > 20)
        throw new LinkedInError(422, 'INVALID_VALUE', 'A multiImage post has 2 to 20 images');
      for (const image of list) mediaReady(author, image.id, true);
    }
    const id = `urn:li:share:${nextId()}`;
    posts.push({
      id,
      author,
      commentary,
      visibility: body.visibility,
      lifecycleState: 'PUBLISHED',
      isReshareDisabledByAuthor: body.isReshareDisabledByAuthor === true,
      content,
      createdAt: clockNow(),
    });
    return { status: 201, headers: { 'x-restli-id': id } };
  }

  function findPosts(scopes: string[], query: URLSearchParams): Answer {
    if (query.get('q') !== 'author') throw new LinkedInError(400, 'ILLEGAL_ARGUMENT', 'Unsupported finder');
    const author = mayActAs(scopes, query.get('author'), true);
    const count = Math.min(Number(query.get('count') ?? 10), 100);
    const start = Number(query.get('start') ?? 0);
    const own = posts.filter((p) => p.author === author).toReversed();
    return {
      status: 200,
      body: {
        elements: own.slice(start, start + count).map((p) => ({ ...p, lastModifiedAt: p.createdAt })),
        paging: { start, count, total: own.length },
      },
    };
  }

  function createComment(scopes: string[], encoded: string, body: Record<string, unknown>): Answer {
    const actor = mayActAs(scopes, body.actor);
    const object = decodeURIComponent(encoded);
    const post = posts.find((p) => p.id === object);
    if (!post || body.object !== object) throw new LinkedInError(404, 'NOT_FOUND', `${object} not found`);
    const text = (body.message as { text?: unknown } | undefined)?.text;
    if (typeof text !== 'string' || text === '')
      throw new LinkedInError(422, 'FIELD_MISSING', '/message/text is required');
    const id = nextId();
    const comment: FakeLinkedInComment = {
      id,
      commentUrn: `urn:li:comment:(${object},${id})`,
      object,
      actor,
      text,
      createdAt: clockNow(),
    };
    comments.push(comment);
    return { status: 201, body: shownComment(comment), headers: { 'x-restli-id': comment.commentUrn } };
  }

  const shownComment = (comment: FakeLinkedInComment) => ({
    id: comment.id,
    commentUrn: comment.commentUrn,
    actor: comment.actor,
    object: comment.object,
    message: { text: comment.text },
    created: { actor: comment.actor, time: comment.createdAt },
  });

  function getComments(scopes: string[], encoded: string, query: URLSearchParams): Answer {
    const object = decodeURIComponent(encoded);
    const post = posts.find((p) => p.id === object);
    if (!post) throw new LinkedInError(404, 'NOT_FOUND', `${object} not found`);
    mayActAs(scopes, post.author, true);
    const listed = comments.filter((c) => c.object === object).toReversed();
    // Paged as the posts are: `start` and `count` (10 by default, 100 at most).
    const count = Math.min(Number(query.get('count') ?? 10), 100);
    const start = Number(query.get('start') ?? 0);
    return {
      status: 200,
      body: {
        elements: listed.slice(start, start + count).map(shownComment),
        paging: { start, count, total: listed.length },
      },
    };
  }

  function route(
    req: IncomingMessage,
    bytes: Buffer,
    operation: FakeLinkedInOperation,
    match: RegExpExecArray,
    query: URLSearchParams,
  ): Answer {
    const json = () => {
      try {
        return JSON.parse(bytes.toString('utf8') || '{}') as Record<string, unknown>;
      } catch {
        throw new LinkedInError(400, 'ILLEGAL_ARGUMENT', 'Malformed JSON');
      }
    };
    switch (operation) {
      case 'authorize':
        return authorize(query);
      case 'accessToken':
        return accessToken(new URLSearchParams(bytes.toString('utf8')));
      case 'uploadImage':
        return upload(req, bytes, match, 'image');
      case 'uploadVideoPart':
        return upload(req, bytes, match, 'video');
      case 'uploadDocument':
        return uploadDocument(req, bytes, match);
      default:
        break;
    }
    const scopes = scopesOf(req);
    switch (operation) {
      case 'userinfo':
        return userinfo(scopes);
      case 'organizationAcls':
        return organizationAcls(scopes, query);
      case 'organization':
        return organization(scopes, match[1]!);
      case 'initializeImage':
        return initialize(scopes, query, json(), 'image');
      case 'initializeVideo':
        return initialize(scopes, query, json(), 'video');
      case 'getVideo':
        return getVideo(scopes, match[1]!);
      case 'initializeDocument':
        return initializeDocument(scopes, query, json());
      case 'getDocument':
        return getDocument(scopes, match[1]!);
      case 'createPost':
        return createPost(scopes, json());
      case 'findPosts':
        return findPosts(scopes, query);
      case 'createComment':
        return createComment(scopes, match[1]!, json());
      case 'getComments':
        return getComments(scopes, match[1]!, query);
      default:
        return { status: 404 };
    }
  }

  /** How this call, done, holds its answer back, if a switch says so (a call skipped counts). */
  function heldAs(operation: FakeLinkedInOperation): AnswerHold | undefined {
    const at = holds.findIndex((entry) => entry.operation === operation);
    if (at < 0) return undefined;
    const entry = holds[at]!;
    if (entry.skip > 0) {
      entry.skip -= 1;
      return undefined;
    }
    holds.splice(at, 1);
    return entry.hold;
  }

  function send(res: ServerResponse, answer: Answer): void {
    const body = answer.body === undefined ? '' : JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      'x-li-uuid': randomBytes(12).toString('base64'),
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...answer.headers,
    });
    res.end(body);
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const target = new URL(req.url ?? '/', url);
      const found = ROUTES.map((r) => ({ r, match: r.path.exec(target.pathname) })).find(
        ({ r, match }) => match && r.method === req.method,
      );
      const version = req.headers['linkedin-version'];
      const restli = req.headers['x-restli-protocol-version'];
      requests.push({
        method: req.method ?? '',
        path: target.pathname + target.search,
        operation: found?.r.operation ?? null,
        version: typeof version === 'string' ? version : undefined,
        restli: typeof restli === 'string' ? restli : undefined,
      });
      if (!found) return send(res, { status: 404, body: { status: 404, message: 'Not Found' } });
      const { r, match } = found;
      const operation =
        r.operation === 'initializeVideo' && target.searchParams.get('action') === 'finalizeUpload'
          ? 'finalizeVideo'
          : r.operation;
      requests.at(-1)!.operation = operation;
      let answer: Answer;
      try {
        if (r.versioned) checkVersion(req);
        if (throttled.delete(operation))
          throw new LinkedInError(
            429,
            'TOO_MANY_REQUESTS',
            'Resource level throttle APPLICATION DAY limit for calls to this resource is reached.',
          );
        answer = route(req, Buffer.concat(chunks), r.operation, match!, target.searchParams);
      } catch (error) {
        if (error instanceof LinkedInError) answer = error.answer();
        else if (error instanceof OAuthError)
          answer = { status: error.status, body: { error: error.error, error_description: error.description } };
        else answer = { status: 500, body: { status: 500, message: (error as Error).message } };
      }
      if (losing.delete(operation)) return req.socket.destroy();
      const hold = answer.status < 400 ? heldAs(operation) : undefined;
      if (hold) return sendHeld(res, hold, held, () => send(res, answer));
      send(res, answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    clientId,
    clientSecret,
    member,
    organizations,
    tokens,
    images,
    videos,
    documents,
    posts,
    comments,
    requests,
    shownText: (post) => shownLittleText(post.commentary),
    refreshTokens: (on) => {
      withRefresh = on;
    },
    cancelNext: (error) => {
      cancel = error;
    },
    grantOnly: (scopes) => {
      granted = scopes;
    },
    retireVersion: (version) => retired.add(version),
    revokeAll: () => {
      for (const token of tokens) token.revoked = true;
    },
    throttleNext: (operation) => throttled.add(operation),
    loseNextAnswer: (operation) => losing.add(operation),
    holdNextAnswer: (operation, { ms, skip = 0 } = {}) => {
      holds.push({ operation, skip, hold: ms === undefined ? {} : { ms } });
    },
    heldAnswers: () => held.count,
    processingChecks: (count) => {
      videoChecks = count;
    },
    failNextProcessing: () => {
      failProcessing = true;
    },
    partSize: (bytes) => {
      partBytes = bytes;
    },
    advanceClock: (seconds) => {
      clockOffset += seconds * 1000;
    },
    now: clockNow,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
