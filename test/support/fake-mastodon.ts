import { createHash, randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { entitiesOf, mastodonLength } from './mastodon-text.js';

/** A status's audience, as Mastodon names it. */
export type FakeMastodonVisibility = 'public' | 'unlisted' | 'private' | 'direct';

/** An account of the instance. */
export interface FakeMastodonAccount {
  /** Mastodon's ids are strings (of digits, but clients must not count on it). */
  id: string;
  /** Without `@` or domain: the account is `@username@domain`. */
  username: string;
  displayName: string;
  /** The profile's note, as the user typed it. */
  note: string;
  locked: boolean;
  bot: boolean;
  createdAt: string;
  /** Preferences → Posting defaults: what a status gets when the request does not say. */
  defaultVisibility: FakeMastodonVisibility;
  defaultSensitive: boolean;
  defaultLanguage: string;
}

/** The limits `GET /api/v2/instance` announces in `configuration`, which the fake enforces; tests may change them. */
export interface FakeMastodonLimits {
  /** `statuses.max_characters`: 500 upstream; some instances raise it (5000, …). */
  maxCharacters: number;
  /** `statuses.max_media_attachments`: 4 upstream. */
  maxMediaAttachments: number;
  /** `statuses.characters_reserved_per_url`: every URL counts as this many characters. */
  charactersReservedPerUrl: number;
  /** `media_attachments.supported_mime_types`. */
  supportedMimeTypes: string[];
  /** `media_attachments.image_size_limit`, bytes. */
  imageSizeLimit: number;
  /** `media_attachments.image_matrix_limit`: width × height, pixels. */
  imageMatrixLimit: number;
  /** `media_attachments.video_size_limit`, bytes (audio too). */
  videoSizeLimit: number;
  videoFrameRateLimit: number;
  videoMatrixLimit: number;
  /** `media_attachments.description_limit`: characters of alt text. */
  descriptionLimit: number;
}

/** An app registered with `POST /api/v1/apps`. */
export interface FakeMastodonApp {
  id: string;
  name: string;
  website: string | null;
  scopes: string[];
  redirectUris: string[];
  clientId: string;
  clientSecret: string;
}

/** An authorization request that reached the consent page, and what became of it. */
export interface FakeMastodonAuthorization {
  clientId: string;
  redirectUri: string;
  scopes: string[];
  state: string | null;
  /** The PKCE challenge as sent, even by an instance too old to use it. */
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  accountId: string;
  outcome: 'approved' | 'denied' | 'refused';
}

/** An access token the instance issued. */
export interface FakeMastodonToken {
  accessToken: string;
  /** The app it was issued to; null for a token the user made under Preferences → Development. */
  appId: string | null;
  /** The account it acts for; null for an app token (`client_credentials`). */
  accountId: string | null;
  scopes: string[];
  grant: 'authorization_code' | 'client_credentials' | 'personal';
  /** Seconds since the epoch, as the token answer's `created_at`. */
  createdAt: number;
  revoked: boolean;
}

/** Mastodon's media types but `gifv`: the fake keeps a GIF an image, as Mastodon does a still one. */
export type FakeMastodonMediaType = 'image' | 'video' | 'audio';

/** A media attachment, from its upload on. */
export interface FakeMastodonMedia {
  id: string;
  accountId: string;
  type: FakeMastodonMediaType;
  /** The type Mastodon found, from the bytes where it can tell, else as the upload declared it. */
  mimeType: string;
  fileName: string;
  size: number;
  description: string | null;
  focus: { x: number; y: number } | null;
  width: number | null;
  height: number | null;
  /** Still being processed: `url` is null, `GET /api/v1/media/:id` answers 206, statuses refuse it. */
  processing: boolean;
  /** How many more polls answer 206 before the media is processed. */
  pollsLeft: number;
  /** The status it is attached to: from then on the media endpoints no longer find it. */
  statusId: string | null;
  deleted: boolean;
}

/** A status, with the fields as the instance stored them. */
export interface FakeMastodonStatus {
  id: string;
  accountId: string;
  appId: string | null;
  text: string;
  spoilerText: string;
  visibility: FakeMastodonVisibility;
  sensitive: boolean;
  language: string;
  inReplyToId: string | null;
  inReplyToAccountId: string | null;
  mediaIds: string[];
  /** The Idempotency-Key of the request that created it. */
  idempotencyKey: string | null;
  createdAt: string;
  deleted: boolean;
}

/** A status creation that carried an Idempotency-Key. */
export interface FakeMastodonIdempotencyUse {
  key: string;
  accountId: string;
  /** The status answered: created by this request, or the earlier one (`replayed`); null when refused. */
  statusId: string | null;
  replayed: boolean;
}

/** A request the fake saw: its method, path with the query, the kind of credential and the Idempotency-Key. */
export interface FakeMastodonRequest {
  method: string;
  path: string;
  auth: 'bearer' | 'basic' | 'none';
  idempotencyKey: string | null;
}

export interface FakeMastodonOptions {
  /** The account that signs in at the consent page. */
  account?: Partial<FakeMastodonAccount>;
  limits?: Partial<FakeMastodonLimits>;
  /**
   * Whether the instance is Mastodon 4.3 or later, which supports PKCE (S256), announces `api_versions`
   * and serves its OAuth metadata at `/.well-known/oauth-authorization-server` (default true). An older
   * instance ignores `code_challenge` and `code_verifier` and answers the metadata 404.
   */
  supportsPkce?: boolean;
  /** The version `/api/v2/instance` reports (4.4.0, or 4.2.10 without PKCE). */
  version?: string;
  /** Polls a video or audio stays processing after its upload (default 1); images are processed at once. */
  mediaProcessingPolls?: number;
}

/**
 * A stand-in for a Mastodon instance on a loopback port, following docs.joinmastodon.org (and Mastodon's
 * own code where the docs leave an answer out): app registration, the OAuth authorization code flow
 * with PKCE, the account, the instance's limits, media and statuses.
 *
 * - Errors are Mastodon's `{"error": "..."}` (the OAuth endpoints answer RFC 6749's `{error,
 *   error_description}`): 401 "The access token is invalid" (or "… was revoked"), 403 "This action is
 *   outside the authorized scopes", 404 "Record not found", 422 "Validation failed: …", 429 "Too many
 *   requests". Scopes are checked per endpoint, as Mastodon does (`write:statuses`, `write:media`, …):
 *   a token sent to read statuses needs `read:statuses` (or `read`), else 403, though the public ones
 *   are there without a token.
 * - Mastodon issues no refresh tokens and its access tokens do not expire: `grant_type=refresh_token`
 *   is `unsupported_grant_type`. Codes are single use, bound to the redirect URI and, from 4.3 on, to
 *   the PKCE challenge (S256 only), and expire after 10 minutes.
 * - Statuses are counted as Mastodon counts them (`mastodonLength`, `./mastodon-text.ts`): the content
 *   warning and the text in grapheme clusters, every URL as `charactersReservedPerUrl`, `@user@domain`
 *   as `@user`. Over the limit: 422 "Validation failed: Text character limit of 500 exceeded".
 * - Media: images are processed during the upload (200); videos and audio answer 202 with a null
 *   `url` and stay processing for some polls of `GET /api/v1/media/:id` (206), then 200. A status
 *   refuses media still processing, of another account, or already attached (422); at most
 *   `maxMediaAttachments`.
 * - `Idempotency-Key` on `POST /api/v1/statuses`: for an hour after a status was created with a key,
 *   the same key from the same account answers that status again (whatever else the request says),
 *   creating nothing; a refused request stores no key; a key whose status was deleted answers 404.
 * - Rate limits as documented, per account (per address without a token), with `X-RateLimit-Limit`,
 *   `-Remaining` and `-Reset` (ISO 8601) on every API answer: 300 calls in 5 minutes, 30 media
 *   uploads and 30 status deletions in 30 minutes, 300 statuses in 3 hours.
 *
 * Like Mastodon, it keeps what it did when the caller went away: a status whose answer was lost exists,
 * and the same Idempotency-Key finds it.
 */
export interface FakeMastodon {
  /** The instance's origin: the API, the consent page and the media files. */
  url: string;
  /** `host:port`, as `/api/v2/instance` names the domain. */
  domain: string;
  /** The account that signs in at the consent page (unless `signInAs` names another). */
  account: FakeMastodonAccount;
  /** What the instance enforces and announces; a test may change a value, which holds from the next request. */
  limits: FakeMastodonLimits;
  supportsPkce: boolean;
  apps: FakeMastodonApp[];
  authorizations: FakeMastodonAuthorization[];
  tokens: FakeMastodonToken[];
  media: FakeMastodonMedia[];
  statuses: FakeMastodonStatus[];
  idempotencyKeys: FakeMastodonIdempotencyUse[];
  requests: FakeMastodonRequest[];
  /** Another account of the instance (another user). */
  createAccount(account: Partial<FakeMastodonAccount> & { username: string }): FakeMastodonAccount;
  /** A token the user made under Preferences → Development, with these scopes. */
  personalToken(account: FakeMastodonAccount, scopes: string[]): string;
  /** The account signed in at the consent page from now on. */
  signInAs(account: FakeMastodonAccount): void;
  /**
   * Whether the consent page is shown (an HTML page with Mastodon's two forms: Authorize, a POST to
   * `/oauth/authorize`, and Deny, the same with `_method=delete`) or consent is given at once, the
   * browser sent straight back (the default, as when the user already clicked Authorize).
   */
  consentPage(shown: boolean): void;
  /** The next consent is refused: `error=access_denied`, as when the user clicks Deny. */
  deny(): void;
  /** The user revokes every token of the account (Preferences → Authorized apps): 401 from then on. */
  revokeAll(account?: FakeMastodonAccount): void;
  /**
   * The next status creation is refused with 422 and this message (default: the character limit's), and
   * nothing is created.
   */
  refuseNextStatus(message?: string): void;
  /**
   * The next `count` API calls answer 429 "Too many requests", with X-RateLimit-Reset `resetInSeconds`
   * from now (default: the end of the current 5-minute window).
   */
  rateLimitNext(count?: number, resetInSeconds?: number): void;
  /** The next media upload answers 202 and stays processing for `polls` polls (0: processed at once, 200). */
  processNextMedia(polls: number): void;
  /**
   * The next API or OAuth call (of `route`, `METHOD /path` prefix, when given) answers `status`: 500 as
   * Rails does, 503 as Mastodon does for a passing failure, 502 or 504 as its proxy does.
   */
  failNext(status: 500 | 502 | 503 | 504, route?: string): void;
  /** The next status is created, but the connection is destroyed before the answer. */
  loseNextStatusAnswer(): void;
  /**
   * From now on a status is created `ms` after its request arrived (0: at once), the request open
   * meanwhile: a caller that goes away while it waits leaves the status created all the same.
   */
  slowStatuses(ms: number): void;
  /** Status creations that arrived and are not answered yet. */
  statusesInFlight(): number;
  /** Moves the fake's clock: codes, idempotency keys and rate-limit windows, without waiting. */
  advanceClock(seconds: number): void;
  /** The bytes of an uploaded media, to check that what arrived is the file that was sent. */
  mediaBytes(mediaId: string): Buffer | undefined;
  close(): Promise<void>;
}

/** The scopes Mastodon defines (its OAuth server metadata lists them). */
const SCOPES = [
  'read',
  'write',
  'write:accounts',
  'write:blocks',
  'write:bookmarks',
  'write:conversations',
  'write:favourites',
  'write:filters',
  'write:follows',
  'write:lists',
  'write:media',
  'write:mutes',
  'write:notifications',
  'write:reports',
  'write:statuses',
  'read:accounts',
  'read:blocks',
  'read:bookmarks',
  'read:favourites',
  'read:filters',
  'read:follows',
  'read:lists',
  'read:mutes',
  'read:notifications',
  'read:search',
  'read:statuses',
  'follow',
  'push',
  'profile',
];
const OOB = 'urn:ietf:wg:oauth:2.0:oob';
const CODE_LIFETIME_SECONDS = 10 * 60;
const IDEMPOTENCY_SECONDS = 3600;
const VISIBILITIES: FakeMastodonVisibility[] = ['public', 'unlisted', 'private', 'direct'];
/** Mastodon's defaults (`configuration` of mastodon.social). */
const DEFAULT_LIMITS: FakeMastodonLimits = {
  maxCharacters: 500,
  maxMediaAttachments: 4,
  charactersReservedPerUrl: 23,
  supportedMimeTypes: [
    'image/jpeg',
    'image/png',
    'image/gif',
    'image/heic',
    'image/heif',
    'image/webp',
    'image/avif',
    'video/webm',
    'video/mp4',
    'video/quicktime',
    'video/ogg',
    'audio/wave',
    'audio/wav',
    'audio/x-wav',
    'audio/x-pn-wave',
    'audio/vnd.wave',
    'audio/ogg',
    'audio/vorbis',
    'audio/mpeg',
    'audio/mp3',
    'audio/webm',
    'audio/flac',
    'audio/aac',
    'audio/m4a',
    'audio/x-m4a',
    'audio/mp4',
    'audio/3gpp',
    'video/x-ms-asf',
  ],
  imageSizeLimit: 16_777_216,
  imageMatrixLimit: 33_177_600,
  videoSizeLimit: 103_809_024,
  videoFrameRateLimit: 120,
  videoMatrixLimit: 8_294_400,
  descriptionLimit: 1500,
};

/** The rate limits docs.joinmastodon.org/api/rate-limits lists: calls per period (seconds). */
type RateFamily = 'api' | 'media' | 'deletes' | 'statuses';
const RATE_LIMITS: Record<RateFamily, { limit: number; period: number }> = {
  api: { limit: 300, period: 300 },
  media: { limit: 30, period: 1800 },
  deletes: { limit: 30, period: 1800 },
  statuses: { limit: 300, period: 10_800 },
};

/** Doorkeeper's descriptions of the OAuth errors (RFC 6749 §5.2), as Mastodon answers them. */
const OAUTH_ERRORS: Record<string, string> = {
  invalid_client:
    'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.',
  invalid_grant:
    'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.',
  invalid_request:
    'The request is missing a required parameter, includes an unsupported parameter value, or is otherwise malformed.',
  invalid_scope: 'The requested scope is invalid, unknown, or malformed.',
  unsupported_grant_type: 'The authorization grant type is not supported by the authorization server.',
  unsupported_response_type: 'The authorization server does not support this response type.',
  access_denied: 'The resource owner or authorization server denied the request.',
  unauthorized_client: 'You are not authorized to revoke this token',
};

/** A refusal of the API, in Mastodon's shape. */
class MastodonError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

interface Grant {
  clientId: string;
  redirectUri: string;
  scopes: string[];
  challenge: string | null;
  accountId: string;
  expiresAt: number;
  used: boolean;
}

interface StoredKey {
  statusId: string;
  expiresAt: number;
}

/** A request's parameters, from the query and the body (JSON, a form or multipart), as Rails reads them. */
class Params {
  private readonly values = new Map<string, unknown[]>();

  add(name: string, value: unknown): void {
    const key = name.endsWith('[]') ? name.slice(0, -2) : name;
    const list = this.values.get(key) ?? [];
    if (Array.isArray(value)) list.push(...(value as unknown[]));
    else list.push(value);
    this.values.set(key, list);
  }

  /** Whether the request names the parameter, or a part of it (`poll[options][]`). */
  has(name: string): boolean {
    return [...this.values.keys()].some((key) => key === name || key.startsWith(`${name}[`));
  }

  string(name: string): string | undefined {
    const value = this.values.get(name)?.at(-1);
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    return undefined;
  }

  list(name: string): string[] {
    return (this.values.get(name) ?? [])
      .filter((v) => typeof v === 'string' || typeof v === 'number')
      .map((v) => String(v));
  }

  file(name: string): File | undefined {
    const value = this.values.get(name)?.at(-1);
    return value instanceof File ? value : undefined;
  }

  /** Rails' boolean: "0", "f", "false", "off" (any case) are false, a blank value is none, the rest true. */
  boolean(name: string): boolean | undefined {
    const value = this.values.get(name)?.at(-1);
    if (typeof value === 'boolean') return value;
    const text = this.string(name);
    if (text === undefined || text === '') return undefined;
    return !['0', 'f', 'false', 'off'].includes(text.toLowerCase());
  }
}

const random = (bytes = 32) => randomBytes(bytes).toString('base64url');
const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const blank = (text: string | undefined) => text === undefined || text.trim() === '';

/**
 * Mastodon's `X-RateLimit-Reset`: Ruby's `iso8601(6)`, microseconds included.
 */
const isoMicro = (ms: number) => new Date(ms).toISOString().replace(/Z$/, '000Z');

/** Rails' `number_to_human_size`, as Paperclip's size errors print a limit. */
function humanSize(bytes: number): string {
  const units = ['Bytes', 'KB', 'MB', 'GB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${Number(value.toPrecision(3))} ${units[unit]}`;
}

/** The media type the bytes say, for the formats Mastodon tells by their content. */
function sniff(bytes: Buffer): string | undefined {
  if (bytes.subarray(0, 8).equals(Buffer.from('89504e470d0a1a0a', 'hex'))) return 'image/png';
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (
    bytes
      .subarray(0, 6)
      .toString('latin1')
      .match(/^GIF8[79]a$/)
  )
    return 'image/gif';
  if (bytes.subarray(0, 4).toString('latin1') === 'RIFF' && bytes.subarray(8, 12).toString('latin1') === 'WEBP')
    return 'image/webp';
  if (bytes.subarray(4, 8).toString('latin1') === 'ftyp')
    return bytes.subarray(8, 12).toString('latin1') === 'qt  ' ? 'video/quicktime' : 'video/mp4';
  if (bytes.subarray(0, 4).equals(Buffer.from('1a45dfa3', 'hex'))) return 'video/webm';
  if (bytes.subarray(0, 5).toString('latin1') === '%PDF-') return 'application/pdf';
  return undefined;
}

/** A PNG's size from its IHDR chunk. */
function pngSize(bytes: Buffer): { width: number; height: number } | undefined {
  if (bytes.length < 24 || bytes.subarray(12, 16).toString('latin1') !== 'IHDR') return undefined;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

export async function startFakeMastodon(options: FakeMastodonOptions = {}): Promise<FakeMastodon> {
  const supportsPkce = options.supportsPkce ?? true;
  const version = options.version ?? (supportsPkce ? '4.4.0' : '4.2.10');
  const limits: FakeMastodonLimits = {
    ...DEFAULT_LIMITS,
    ...options.limits,
    supportedMimeTypes: [...(options.limits?.supportedMimeTypes ?? DEFAULT_LIMITS.supportedMimeTypes)],
  };
  const asyncPolls = options.mediaProcessingPolls ?? 1;

  const accounts: FakeMastodonAccount[] = [];
  const apps: FakeMastodonApp[] = [];
  const authorizations: FakeMastodonAuthorization[] = [];
  const tokens: FakeMastodonToken[] = [];
  const media: FakeMastodonMedia[] = [];
  const mediaData = new Map<string, Buffer>();
  const statuses: FakeMastodonStatus[] = [];
  const idempotencyKeys: FakeMastodonIdempotencyUse[] = [];
  const storedKeys = new Map<string, StoredKey>();
  const requests: FakeMastodonRequest[] = [];
  const grants = new Map<string, Grant>();
  const rateCounts = new Map<string, number>();
  const failures: { status: number; route: string | undefined }[] = [];
  let clockOffsetMs = 0;
  let lastId = 0n;
  let consentShown = false;
  let denyNext = false;
  let refuseNext: string | undefined;
  let forcedLimits = 0;
  let forcedResetIn: number | undefined;
  let nextMediaPolls: number | undefined;
  let loseStatusAnswer = false;
  let statusDelayMs = 0;
  let statusesInFlight = 0;
  let origin = '';
  let domain = '';

  const now = () => Date.now() + clockOffsetMs;
  /** Ids like Mastodon's: the time in milliseconds shifted left 16 bits, plus a sequence; they sort by age. */
  const nextId = () => {
    const byTime = BigInt(now()) << 16n;
    lastId = byTime > lastId ? byTime : lastId + 1n;
    return String(lastId);
  };
  const byId = (a: { id: string }, b: { id: string }) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1);

  const createAccount = (values: Partial<FakeMastodonAccount> & { username: string }): FakeMastodonAccount => {
    const account: FakeMastodonAccount = {
      id: String(100_000 + accounts.length + 1),
      displayName: values.username,
      note: '',
      locked: false,
      bot: false,
      createdAt: new Date(now()).toISOString().replace(/T.*/, 'T00:00:00.000Z'),
      defaultVisibility: 'public',
      defaultSensitive: false,
      defaultLanguage: 'en',
      ...values,
    };
    accounts.push(account);
    return account;
  };
  const account = createAccount({ username: 'fakeuser', displayName: 'Fake User', ...options.account });
  let signedIn = account;

  const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers });
    res.end(JSON.stringify(body));
  };
  const sendHtml = (res: ServerResponse, status: number, html: string) => {
    res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(html);
  };

  // ---- OAuth: apps, the consent page, the token and revocation endpoints ----

  const validationFailed = (messages: string[]) => new MastodonError(422, `Validation failed: ${messages.join(', ')}`);

  const registerApp = (res: ServerResponse, params: Params) => {
    const name = params.string('client_name');
    const rawUris = params.list('redirect_uris');
    const redirectUris = (rawUris.length === 1 ? rawUris[0]!.split(/\s+/) : rawUris).filter((u) => u !== '');
    const scopeText = params.string('scopes');
    const scopes = blank(scopeText) ? ['read'] : scopeText!.trim().split(/\s+/);
    const website = params.string('website');
    const problems: string[] = [];
    if (blank(name)) problems.push("Application name can't be blank");
    else if ([...name!].length > 60) problems.push('Application name is too long (maximum is 60 characters)');
    if (redirectUris.length === 0) problems.push("Redirect URI can't be blank");
    for (const uri of redirectUris) {
      if (uri === OOB) continue;
      let parsed: URL;
      try {
        parsed = new URL(uri);
      } catch {
        problems.push('Redirect URI must be an absolute URI.');
        continue;
      }
      if (['data:', 'vbscript:', 'javascript:'].includes(parsed.protocol))
        problems.push('Redirect URI is forbidden by the server.');
      else if (parsed.hash !== '' || uri.includes('#')) problems.push('Redirect URI cannot contain a fragment.');
    }
    // Doorkeeper's enforce_configured_scopes: only the scopes the server defines.
    if (scopes.some((scope) => !SCOPES.includes(scope)))
      problems.push("Scopes doesn't match configured on the server.");
    if (problems.length > 0) throw validationFailed([...new Set(problems)]);
    const app: FakeMastodonApp = {
      id: String(apps.length + 1),
      name: name!.trim(),
      website: blank(website) ? null : website!,
      scopes,
      redirectUris,
      clientId: random(32),
      clientSecret: random(32),
    };
    apps.push(app);
    sendJson(res, 200, {
      id: app.id,
      name: app.name,
      website: app.website,
      scopes: app.scopes,
      redirect_uri: app.redirectUris.join('\n'),
      redirect_uris: app.redirectUris,
      client_id: app.clientId,
      client_secret: app.clientSecret,
      client_secret_expires_at: 0,
    });
  };

  /** Doorkeeper shows an error page, and sends nothing back, when the client or its redirect URI is wrong. */
  const errorPage = (res: ServerResponse, error: string) =>
    sendHtml(
      res,
      400,
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>An error has occurred</title></head>` +
        `<body><h1>An error has occurred</h1><p>${escapeHtml(error)}</p></body></html>`,
    );

  /** The authorization request's parameters, checked as Doorkeeper checks them, or the answer to send instead. */
  const readAuthorization = (
    res: ServerResponse,
    params: URLSearchParams,
  ): {
    app: FakeMastodonApp;
    redirectUri: string;
    scopes: string[];
    back: (p: Record<string, string>) => void;
  } | null => {
    const app = apps.find((a) => a.clientId === params.get('client_id'));
    if (!app) {
      errorPage(res, OAUTH_ERRORS.invalid_client!);
      return null;
    }
    const redirectUri = params.get('redirect_uri') ?? '';
    if (!app.redirectUris.includes(redirectUri)) {
      errorPage(res, 'The redirect uri included is not valid.');
      return null;
    }
    const state = params.get('state');
    const back = (answer: Record<string, string>) => {
      if (redirectUri === OOB && answer.code) {
        res.writeHead(302, { Location: `${origin}/oauth/authorize/native?code=${encodeURIComponent(answer.code)}` });
        return res.end();
      }
      const target = new URL(redirectUri === OOB ? `${origin}/oauth/authorize/native` : redirectUri);
      for (const [name, value] of Object.entries(answer)) target.searchParams.set(name, value);
      if (state !== null) target.searchParams.set('state', state);
      res.writeHead(302, { Location: target.toString(), 'Cache-Control': 'no-store' });
      res.end();
    };
    const scopes = blank(params.get('scope') ?? undefined)
      ? ['read']
      : params
          .get('scope')!
          .trim()
          .split(/[\s+]+/);
    const refuse = (error: string, description = OAUTH_ERRORS[error]!) => {
      authorizations.push({
        clientId: app.clientId,
        redirectUri,
        scopes,
        state,
        codeChallenge: params.get('code_challenge'),
        codeChallengeMethod: params.get('code_challenge_method'),
        accountId: signedIn.id,
        outcome: 'refused',
      });
      back({ error, error_description: description });
      return null;
    };
    if (params.get('response_type') !== 'code') return refuse('unsupported_response_type');
    // The requested scopes must be among the app's: Mastodon's "common gotcha".
    if (scopes.some((scope) => !app.scopes.includes(scope))) return refuse('invalid_scope');
    if (supportsPkce && params.get('code_challenge') && params.get('code_challenge_method') !== 'S256')
      return refuse('invalid_request', 'The code challenge method must be S256.');
    return { app, redirectUri, scopes, back };
  };

  const decide = (res: ServerResponse, params: URLSearchParams, approved: boolean) => {
    const request = readAuthorization(res, params);
    if (!request) return;
    const codeChallenge = params.get('code_challenge');
    authorizations.push({
      clientId: request.app.clientId,
      redirectUri: request.redirectUri,
      scopes: request.scopes,
      state: params.get('state'),
      codeChallenge,
      codeChallengeMethod: params.get('code_challenge_method'),
      accountId: signedIn.id,
      outcome: approved ? 'approved' : 'denied',
    });
    if (!approved) return request.back({ error: 'access_denied', error_description: OAUTH_ERRORS.access_denied! });
    const code = random(32);
    grants.set(code, {
      clientId: request.app.clientId,
      redirectUri: request.redirectUri,
      scopes: request.scopes,
      // An instance before 4.3 knows nothing of PKCE: the challenge is dropped.
      challenge: supportsPkce ? codeChallenge : null,
      accountId: signedIn.id,
      expiresAt: now() + CODE_LIFETIME_SECONDS * 1000,
      used: false,
    });
    request.back({ code });
  };

  const authorizeGet = (res: ServerResponse, query: URLSearchParams) => {
    if (!consentShown) {
      const approved = !denyNext;
      denyNext = false;
      return decide(res, query, approved);
    }
    const request = readAuthorization(res, query);
    if (!request) return;
    const hidden = [
      'client_id',
      'redirect_uri',
      'state',
      'response_type',
      'scope',
      'code_challenge',
      'code_challenge_method',
    ]
      .filter((name) => query.has(name))
      .map((name) => `<input type="hidden" name="${name}" value="${escapeHtml(query.get(name)!)}">`)
      .join('');
    const scopes = request.scopes.map((scope) => `<li>${escapeHtml(scope)}</li>`).join('');
    sendHtml(
      res,
      200,
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Authorization required</title></head><body>` +
        `<h1>Authorization required</h1><p>${escapeHtml(request.app.name)} would like permission to access your ` +
        `account @${escapeHtml(signedIn.username)}. It will be able to:</p><ul>${scopes}</ul>` +
        `<form method="post" action="/oauth/authorize">${hidden}<button type="submit">Authorize</button></form>` +
        `<form method="post" action="/oauth/authorize"><input type="hidden" name="_method" value="delete">${hidden}` +
        `<button type="submit">Deny</button></form></body></html>`,
    );
  };

  const authorizePost = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const form = new URLSearchParams(body.toString('utf8'));
    decide(res, form, req.method !== 'DELETE' && form.get('_method') !== 'delete');
  };

  const nativeCode = (res: ServerResponse, query: URLSearchParams) =>
    sendHtml(
      res,
      200,
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Authorization code</title></head><body>` +
        `<h1>Authorization code</h1><p>Copy this authorization code and paste it to the application.</p>` +
        `<input type="text" readonly value="${escapeHtml(query.get('code') ?? '')}"></body></html>`,
    );

  const oauthError = (res: ServerResponse, status: number, error: string, description = OAUTH_ERRORS[error]!) =>
    sendJson(
      res,
      status,
      { error, error_description: description },
      { 'Cache-Control': 'no-store', Pragma: 'no-cache' },
    );

  /** The client, from HTTP Basic or the body (Doorkeeper tries Basic first). */
  const clientOf = (req: IncomingMessage, params: Params): FakeMastodonApp | undefined => {
    let id = params.string('client_id');
    let secret = params.string('client_secret');
    const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (basic) {
      const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon > 0) {
        id = decodeURIComponent(decoded.slice(0, colon));
        secret = decodeURIComponent(decoded.slice(colon + 1));
      }
    }
    return apps.find((app) => app.clientId === id && app.clientSecret === secret);
  };

  const issueToken = (res: ServerResponse, token: Omit<FakeMastodonToken, 'accessToken' | 'createdAt' | 'revoked'>) => {
    const issued: FakeMastodonToken = {
      ...token,
      accessToken: random(32),
      createdAt: Math.floor(now() / 1000),
      revoked: false,
    };
    tokens.push(issued);
    sendJson(
      res,
      200,
      {
        access_token: issued.accessToken,
        token_type: 'Bearer',
        scope: issued.scopes.join(' '),
        created_at: issued.createdAt,
      },
      { 'Cache-Control': 'no-store', Pragma: 'no-cache' },
    );
  };

  const token = (req: IncomingMessage, res: ServerResponse, params: Params) => {
    const app = clientOf(req, params);
    if (!app) return oauthError(res, 401, 'invalid_client');
    switch (params.string('grant_type')) {
      case 'authorization_code': {
        const grant = grants.get(params.string('code') ?? '');
        if (!grant || grant.used || grant.clientId !== app.clientId || now() >= grant.expiresAt)
          return oauthError(res, 400, 'invalid_grant');
        if (params.string('redirect_uri') !== grant.redirectUri) return oauthError(res, 400, 'invalid_grant');
        if (supportsPkce) {
          // Doorkeeper: without a challenge no verifier may come, and with one it must match (S256).
          const verifier = params.string('code_verifier');
          const matches =
            grant.challenge === null
              ? blank(verifier)
              : !blank(verifier) && createHash('sha256').update(verifier!).digest('base64url') === grant.challenge;
          if (!matches) return oauthError(res, 400, 'invalid_grant');
        }
        grant.used = true;
        return issueToken(res, {
          appId: app.id,
          accountId: grant.accountId,
          scopes: grant.scopes,
          grant: 'authorization_code',
        });
      }
      case 'client_credentials': {
        const scopeText = params.string('scope');
        const scopes = blank(scopeText) ? ['read'] : scopeText!.trim().split(/\s+/);
        if (scopes.some((scope) => !app.scopes.includes(scope))) return oauthError(res, 400, 'invalid_scope');
        return issueToken(res, { appId: app.id, accountId: null, scopes, grant: 'client_credentials' });
      }
      case undefined:
        return oauthError(res, 400, 'invalid_request');
      default:
        // Mastodon's Doorkeeper issues no refresh tokens: refresh_token is no grant it knows.
        return oauthError(res, 400, 'unsupported_grant_type');
    }
  };

  /** RFC 7009 as Mastodon documents it: an unknown token is fine (idempotent), another client's is 403. */
  const revoke = (req: IncomingMessage, res: ServerResponse, params: Params) => {
    const app = clientOf(req, params);
    if (!app) return oauthError(res, 401, 'invalid_client');
    const value = params.string('token');
    if (blank(value)) return oauthError(res, 403, 'unauthorized_client');
    const issued = tokens.find((t) => t.accessToken === value);
    if (issued && issued.appId !== app.id) return oauthError(res, 403, 'unauthorized_client');
    if (issued) issued.revoked = true;
    sendJson(res, 200, {});
  };

  const metadata = (res: ServerResponse) =>
    sendJson(res, 200, {
      issuer: `${origin}/`,
      service_documentation: 'https://docs.joinmastodon.org/',
      authorization_endpoint: `${origin}/oauth/authorize`,
      token_endpoint: `${origin}/oauth/token`,
      app_registration_endpoint: `${origin}/api/v1/apps`,
      revocation_endpoint: `${origin}/oauth/revoke`,
      scopes_supported: SCOPES,
      response_types_supported: ['code'],
      response_modes_supported: ['query', 'fragment', 'form_post'],
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    });

  // ---- the API's guards: credentials, scopes, rate limits ----

  const bearerOf = (req: IncomingMessage) => /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];

  /** Doorkeeper's answer to a bad token, with the description in WWW-Authenticate. */
  const tokenRefused = (description: string) =>
    new MastodonError(401, description, {
      'WWW-Authenticate': `Bearer realm="Doorkeeper", error="invalid_token", error_description="${description}"`,
    });

  /** The request's token, which must hold one of `scopes` (Mastodon's `doorkeeper_authorize!`). */
  const authorized = (req: IncomingMessage, scopes: string[]): FakeMastodonToken => {
    const value = bearerOf(req);
    const issued = value === undefined ? undefined : tokens.find((t) => t.accessToken === value);
    if (!issued) throw tokenRefused('The access token is invalid');
    if (issued.revoked) throw tokenRefused('The access token was revoked');
    if (!issued.scopes.some((scope) => scopes.includes(scope)))
      throw new MastodonError(403, 'This action is outside the authorized scopes', {
        'WWW-Authenticate': `Bearer realm="Doorkeeper", error="insufficient_scope", scope="${scopes.join(' ')}"`,
      });
    return issued;
  };

  /** The account behind a token: app tokens act for no one (Mastodon's `require_user!`). */
  const userOf = (issued: FakeMastodonToken): FakeMastodonAccount => {
    const owner = accounts.find((a) => a.id === issued.accountId);
    if (!owner) throw new MastodonError(422, 'This method requires an authenticated user');
    return owner;
  };

  /** A token when one is sent (then it must be good), for endpoints that are public without one. */
  const optionalViewer = (req: IncomingMessage, scopes: string[]): FakeMastodonAccount | undefined => {
    if (bearerOf(req) === undefined) return undefined;
    const issued = authorized(req, scopes);
    return accounts.find((a) => a.id === issued.accountId);
  };

  const rateHeaders = (limit: number, remaining: number, resetMs: number) => ({
    'X-RateLimit-Limit': String(limit),
    'X-RateLimit-Remaining': String(remaining),
    'X-RateLimit-Reset': isoMicro(resetMs),
  });

  /**
   * Counts the call in each of its families' windows (aligned on the epoch, as Mastodon's are) and sets
   * the headers of the one closest to its limit; a family already at its limit refuses with 429.
   */
  const throttle = (res: ServerResponse, who: string, families: RateFamily[]) => {
    let closest: { limit: number; remaining: number; resetMs: number } | undefined;
    for (const family of families) {
      const { limit, period } = RATE_LIMITS[family];
      const window = Math.floor(now() / 1000 / period);
      const key = `${family}:${who}:${window}`;
      const resetMs = (window + 1) * period * 1000;
      const used = rateCounts.get(key) ?? 0;
      if (used >= limit) throw new MastodonError(429, 'Too many requests', rateHeaders(limit, 0, resetMs));
      rateCounts.set(key, used + 1);
      if (!closest || limit - used - 1 < closest.remaining) closest = { limit, remaining: limit - used - 1, resetMs };
    }
    if (closest)
      for (const [name, value] of Object.entries(rateHeaders(closest.limit, closest.remaining, closest.resetMs)))
        res.setHeader(name, value);
  };

  /** Whom the limits count: the token's account (or app), else the caller's address. */
  const caller = (req: IncomingMessage) => {
    const issued = tokens.find((t) => t.accessToken === bearerOf(req) && !t.revoked);
    if (issued) return issued.accountId ? `account:${issued.accountId}` : `app:${issued.appId}`;
    return `ip:${req.socket.remoteAddress}`;
  };

  // ---- entities ----

  const accountJson = (owner: FakeMastodonAccount) => {
    const own = statuses.filter((s) => s.accountId === owner.id && !s.deleted);
    return {
      id: owner.id,
      username: owner.username,
      acct: owner.username,
      display_name: owner.displayName,
      locked: owner.locked,
      bot: owner.bot,
      discoverable: true,
      indexable: false,
      group: false,
      created_at: owner.createdAt,
      note: owner.note === '' ? '' : `<p>${escapeHtml(owner.note)}</p>`,
      url: `${origin}/@${owner.username}`,
      uri: `${origin}/users/${owner.username}`,
      avatar: `${origin}/avatars/original/missing.png`,
      avatar_static: `${origin}/avatars/original/missing.png`,
      header: `${origin}/headers/original/missing.png`,
      header_static: `${origin}/headers/original/missing.png`,
      followers_count: 0,
      following_count: 0,
      statuses_count: own.length,
      last_status_at: own.length === 0 ? null : own.at(-1)!.createdAt.slice(0, 10),
      hide_collections: false,
      noindex: false,
      emojis: [],
      roles: [],
      fields: [],
    };
  };

  const mediaJson = (item: FakeMastodonMedia) => {
    const base = `${origin}/system/media_attachments/files/${item.id}`;
    const original =
      item.width !== null && item.height !== null
        ? {
            original: {
              width: item.width,
              height: item.height,
              size: `${item.width}x${item.height}`,
              aspect: item.width / item.height,
            },
          }
        : {};
    return {
      id: item.id,
      type: item.type,
      url: item.processing ? null : `${base}/original/${encodeURIComponent(item.fileName)}`,
      preview_url: `${base}/small/${encodeURIComponent(item.fileName)}`,
      remote_url: null,
      preview_remote_url: null,
      text_url: null,
      meta: { ...(item.focus ? { focus: item.focus } : {}), ...original },
      description: item.description,
      blurhash: null,
    };
  };

  /** The status's text as Mastodon renders it: paragraphs, line breaks, links, hashtags, local mentions. */
  const contentOf = (text: string) => {
    const render = (line: string) => {
      let html = '';
      let at = 0;
      for (const entity of entitiesOf(line, ['url', 'mention', 'hashtag'])) {
        html += escapeHtml(line.slice(at, entity.start));
        at = entity.end;
        const local = accounts.find((a) => a.username.toLowerCase() === entity.name.toLowerCase());
        if (entity.kind === 'url')
          html +=
            `<a href="${escapeHtml(entity.text)}" target="_blank" rel="nofollow noopener" translate="no">` +
            `${escapeHtml(entity.text)}</a>`;
        else if (entity.kind === 'hashtag')
          html +=
            `<a href="${origin}/tags/${encodeURIComponent(entity.name.toLowerCase())}" class="mention hashtag" ` +
            `rel="tag">#<span>${escapeHtml(entity.name)}</span></a>`;
        else if (local && !entity.text.slice(1).includes('@'))
          html +=
            `<span class="h-card" translate="no"><a href="${origin}/@${local.username}" class="u-url mention">` +
            `@<span>${escapeHtml(local.username)}</span></a></span>`;
        else html += escapeHtml(entity.text);
      }
      return html + escapeHtml(line.slice(at));
    };
    return text
      .trim()
      .split(/\n{2,}/)
      .map((paragraph) => `<p>${paragraph.split('\n').map(render).join('<br />')}</p>`)
      .join('');
  };

  const statusJson = (status: FakeMastodonStatus, viewer: FakeMastodonAccount | undefined, withSource = false) => {
    const owner = accounts.find((a) => a.id === status.accountId)!;
    const app = apps.find((a) => a.id === status.appId);
    const entities = entitiesOf(status.text, ['mention', 'hashtag']);
    const mentions = entities.flatMap((entity) => {
      const local = accounts.find((a) => a.username.toLowerCase() === entity.name.toLowerCase());
      return entity.kind === 'mention' && local && !entity.text.slice(1).includes('@')
        ? [{ id: local.id, username: local.username, url: `${origin}/@${local.username}`, acct: local.username }]
        : [];
    });
    const tags = entities
      .filter((entity) => entity.kind === 'hashtag')
      .map((entity) => ({ name: entity.name.toLowerCase(), url: `${origin}/tags/${entity.name.toLowerCase()}` }));
    return {
      id: status.id,
      created_at: status.createdAt,
      in_reply_to_id: status.inReplyToId,
      in_reply_to_account_id: status.inReplyToAccountId,
      sensitive: status.sensitive,
      spoiler_text: status.spoilerText,
      visibility: status.visibility,
      language: status.language,
      uri: `${origin}/users/${owner.username}/statuses/${status.id}`,
      url: `${origin}/@${owner.username}/${status.id}`,
      replies_count: statuses.filter((s) => s.inReplyToId === status.id && !s.deleted).length,
      reblogs_count: 0,
      favourites_count: 0,
      quotes_count: 0,
      edited_at: null,
      ...(viewer ? { favourited: false, reblogged: false, muted: false, bookmarked: false, pinned: false } : {}),
      content: contentOf(status.text),
      filtered: [],
      reblog: null,
      ...(app ? { application: { name: app.name, website: app.website } } : {}),
      account: accountJson(owner),
      media_attachments: status.mediaIds.map((id) => mediaJson(media.find((m) => m.id === id)!)),
      mentions,
      tags,
      emojis: [],
      card: null,
      poll: null,
      ...(withSource ? { text: status.text } : {}),
    };
  };

  /** Whether `viewer` may see the status: public and unlisted ones for anyone, the others for their author. */
  const visibleTo = (status: FakeMastodonStatus, viewer: FakeMastodonAccount | undefined) =>
    !status.deleted &&
    (status.visibility === 'public' || status.visibility === 'unlisted' || status.accountId === viewer?.id);

  // ---- the API ----

  const credentials = (req: IncomingMessage, res: ServerResponse) => {
    const owner = userOf(authorized(req, ['profile', 'read', 'read:accounts']));
    sendJson(res, 200, {
      ...accountJson(owner),
      source: {
        privacy: owner.defaultVisibility,
        sensitive: owner.defaultSensitive,
        language: owner.defaultLanguage,
        note: owner.note,
        fields: [],
        follow_requests_count: 0,
        hide_collections: false,
        discoverable: true,
        indexable: false,
        attribution_domains: [],
      },
      role: { id: '-99', name: '', permissions: '65536', color: '', highlighted: false },
    });
  };

  const instance = (res: ServerResponse) =>
    sendJson(res, 200, {
      domain,
      title: 'Fake Mastodon',
      version,
      source_url: 'https://github.com/mastodon/mastodon',
      description: 'A Mastodon instance on loopback, for tests.',
      usage: { users: { active_month: accounts.length } },
      thumbnail: { url: `${origin}/packs/media/images/preview.png` },
      icon: [],
      languages: ['en'],
      configuration: {
        urls: { streaming: `ws://${domain}`, status: null, about: `${origin}/about`, privacy_policy: null },
        vapid: { public_key: 'BFakeVapidKeyForTests' },
        accounts: { max_featured_tags: 10, max_pinned_statuses: 5 },
        statuses: {
          max_characters: limits.maxCharacters,
          max_media_attachments: limits.maxMediaAttachments,
          characters_reserved_per_url: limits.charactersReservedPerUrl,
        },
        media_attachments: {
          description_limit: limits.descriptionLimit,
          image_matrix_limit: limits.imageMatrixLimit,
          image_size_limit: limits.imageSizeLimit,
          supported_mime_types: limits.supportedMimeTypes,
          video_frame_rate_limit: limits.videoFrameRateLimit,
          video_matrix_limit: limits.videoMatrixLimit,
          video_size_limit: limits.videoSizeLimit,
        },
        polls: { max_options: 4, max_characters_per_option: 50, min_expiration: 300, max_expiration: 2_629_746 },
        translation: { enabled: false },
        limited_federation: false,
      },
      registrations: { enabled: false, approval_required: false, message: null, url: null },
      // api_versions came with 4.3, as PKCE did.
      ...(supportsPkce ? { api_versions: { mastodon: 4 } } : {}),
      contact: { email: `admin@${domain}`, account: null },
      rules: [],
    });

  const ownMedia = (owner: FakeMastodonAccount, id: string) => {
    // Once attached to a status, a media is no longer found by the media endpoints.
    const item = media.find((m) => m.id === id && m.accountId === owner.id && m.statusId === null && !m.deleted);
    if (!item) throw new MastodonError(404, 'Record not found');
    return item;
  };

  /** Description and focus, as the upload and the update take them. */
  const describe = (item: FakeMastodonMedia, params: Params) => {
    const description = params.string('description');
    if (description !== undefined) {
      if ([...description].length > limits.descriptionLimit)
        throw validationFailed([`Description is too long (maximum is ${limits.descriptionLimit} characters)`]);
      item.description = description === '' ? null : description;
    }
    const focus = params.string('focus');
    if (focus !== undefined && focus !== '') {
      // Mastodon reads "x,y" as two floats, anything unreadable as 0.
      const [x, y] = focus.split(',').map((part) => Number.parseFloat(part) || 0);
      item.focus = { x: x ?? 0, y: y ?? 0 };
    }
  };

  const upload = async (req: IncomingMessage, res: ServerResponse, params: Params) => {
    const owner = userOf(authorized(req, ['write', 'write:media']));
    throttle(res, `account:${owner.id}`, ['media']);
    const file = params.file('file');
    if (!file) throw validationFailed(["File can't be blank"]);
    const bytes = Buffer.from(await file.arrayBuffer());
    const declared = file.type.split(';')[0]!.trim().toLowerCase();
    const mimeType = sniff(bytes) ?? declared;
    if (!limits.supportedMimeTypes.includes(mimeType))
      throw validationFailed(['File content type is invalid', 'File is invalid']);
    const type: FakeMastodonMediaType = mimeType.startsWith('image/')
      ? 'image'
      : mimeType.startsWith('audio/')
        ? 'audio'
        : 'video';
    const sizeLimit = type === 'image' ? limits.imageSizeLimit : limits.videoSizeLimit;
    if (bytes.length > sizeLimit) throw validationFailed([`File file size must be less than ${humanSize(sizeLimit)}`]);
    const size = mimeType === 'image/png' ? pngSize(bytes) : undefined;
    if (size && size.width * size.height > limits.imageMatrixLimit)
      throw new MastodonError(422, `${size.width}x${size.height} images are not supported`);
    const polls = nextMediaPolls ?? (type === 'image' ? 0 : asyncPolls);
    nextMediaPolls = undefined;
    const item: FakeMastodonMedia = {
      id: nextId(),
      accountId: owner.id,
      type,
      mimeType,
      fileName: file.name || 'file',
      size: bytes.length,
      description: null,
      focus: null,
      width: size?.width ?? null,
      height: size?.height ?? null,
      processing: polls > 0,
      pollsLeft: polls,
      statusId: null,
      deleted: false,
    };
    describe(item, params);
    media.push(item);
    mediaData.set(item.id, bytes);
    sendJson(res, item.processing ? 202 : 200, mediaJson(item));
  };

  /** A poll of the media: 206 while it is processing (each poll brings it nearer), 200 once done. */
  const showMedia = (req: IncomingMessage, res: ServerResponse, id: string) => {
    const item = ownMedia(userOf(authorized(req, ['write', 'write:media'])), id);
    if (item.pollsLeft > 0) item.pollsLeft--;
    else item.processing = false;
    sendJson(res, item.processing ? 206 : 200, mediaJson(item));
  };

  const updateMedia = (req: IncomingMessage, res: ServerResponse, id: string, params: Params) => {
    const item = ownMedia(userOf(authorized(req, ['write', 'write:media'])), id);
    describe(item, params);
    sendJson(res, item.processing ? 206 : 200, mediaJson(item));
  };

  const mediaFile = (res: ServerResponse, id: string) => {
    const item = media.find((m) => m.id === id && !m.deleted && !m.processing);
    const bytes = item && mediaData.get(item.id);
    if (!item || !bytes) return sendJson(res, 404, { error: 'Record not found' });
    res.writeHead(200, { 'Content-Type': item.mimeType, 'Content-Length': String(bytes.length) });
    res.end(bytes);
  };

  /** Mastodon's checks of `media_ids`, in its order: how many, whose, what mix, whether processed. */
  const attachable = (owner: FakeMastodonAccount, ids: string[]): FakeMastodonMedia[] => {
    if (ids.length === 0) return [];
    if (ids.length > limits.maxMediaAttachments)
      throw new MastodonError(422, `Cannot attach more than ${limits.maxMediaAttachments} files`);
    const found = [...new Set(ids)].flatMap((id) => {
      const item = media.find((m) => m.id === id && m.accountId === owner.id && m.statusId === null && !m.deleted);
      return item ? [item] : [];
    });
    const missing = ids.filter((id) => !found.some((m) => m.id === id));
    if (missing.length > 0)
      throw new MastodonError(422, `Media ${missing.join(', ')} not found or already attached to another post`);
    if (found.length > 1 && found.some((m) => m.type === 'video' || m.type === 'audio'))
      throw new MastodonError(422, 'Cannot attach a video to a post that already contains images');
    if (found.some((m) => m.processing))
      throw new MastodonError(422, 'Cannot attach files that have not finished processing. Try again in a moment!');
    return found;
  };

  const createStatus = (req: IncomingMessage, res: ServerResponse, params: Params) => {
    const issued = authorized(req, ['write', 'write:statuses']);
    const owner = userOf(issued);
    const replyTo = params.string('in_reply_to_id');
    let parent: FakeMastodonStatus | undefined;
    if (!blank(replyTo)) {
      parent = statuses.find((s) => s.id === replyTo && visibleTo(s, owner));
      if (!parent) throw new MastodonError(404, 'The post you are trying to reply to does not appear to exist.');
    }
    const key = req.headers['idempotency-key'];
    const idempotencyKey = typeof key === 'string' && key.trim() !== '' ? key : null;
    if (idempotencyKey !== null) {
      const stored = storedKeys.get(`${owner.id}:${idempotencyKey}`);
      if (stored && now() < stored.expiresAt) {
        idempotencyKeys.push({ key: idempotencyKey, accountId: owner.id, statusId: stored.statusId, replayed: true });
        const earlier = statuses.find((s) => s.id === stored.statusId && !s.deleted);
        if (!earlier) throw new MastodonError(404, 'Record not found');
        return sendJson(res, 200, statusJson(earlier, owner));
      }
    }
    const refuse = (error: MastodonError) => {
      if (idempotencyKey !== null)
        idempotencyKeys.push({ key: idempotencyKey, accountId: owner.id, statusId: null, replayed: false });
      return error;
    };
    if (refuseNext !== undefined) {
      const message = refuseNext;
      refuseNext = undefined;
      throw refuse(new MastodonError(422, message));
    }
    if (params.has('scheduled_at') || params.has('poll') || params.has('quoted_status_id'))
      throw refuse(new MastodonError(422, 'The fake Mastodon does not schedule statuses, make polls or quote.'));
    let attached: FakeMastodonMedia[];
    try {
      attached = attachable(owner, params.list('media_ids'));
    } catch (error) {
      throw error instanceof MastodonError ? refuse(error) : error;
    }
    // A content warning without text becomes the text (Mastodon's PostStatusService); either makes it sensitive.
    let text = params.string('status') ?? '';
    let spoilerText = params.string('spoiler_text') ?? '';
    const sensitive = (params.boolean('sensitive') ?? owner.defaultSensitive) || spoilerText.trim() !== '';
    if (blank(text) && spoilerText.trim() !== '') {
      text = spoilerText;
      spoilerText = '';
    }
    const visibility = params.string('visibility') ?? owner.defaultVisibility;
    // An unknown language is no error: Mastodon falls back to the user's posting language.
    const asked = params.string('language');
    const language = asked && /^[a-z]{2,3}(-[A-Za-z]{2,4})?$/.test(asked) ? asked : owner.defaultLanguage;
    const problems: string[] = [];
    if (blank(text) && attached.length === 0) problems.push("Text can't be blank");
    if (mastodonLength(text, spoilerText, limits.charactersReservedPerUrl) > limits.maxCharacters)
      problems.push(`Text character limit of ${limits.maxCharacters} exceeded`);
    if (!VISIBILITIES.includes(visibility as FakeMastodonVisibility))
      problems.push('Visibility is not included in the list');
    if (problems.length > 0) throw refuse(validationFailed(problems));
    // Mastodon counts a status against the limit of its family when it is created.
    try {
      throttle(res, `account:${owner.id}`, ['statuses']);
    } catch (error) {
      throw error instanceof MastodonError ? refuse(error) : error;
    }
    const status: FakeMastodonStatus = {
      id: nextId(),
      accountId: owner.id,
      appId: issued.appId,
      text,
      spoilerText,
      visibility: visibility as FakeMastodonVisibility,
      sensitive,
      language,
      inReplyToId: parent?.id ?? null,
      inReplyToAccountId: parent?.accountId ?? null,
      mediaIds: attached.map((m) => m.id),
      idempotencyKey,
      createdAt: new Date(now()).toISOString(),
      deleted: false,
    };
    statuses.push(status);
    for (const item of attached) item.statusId = status.id;
    if (idempotencyKey !== null) {
      storedKeys.set(`${owner.id}:${idempotencyKey}`, {
        statusId: status.id,
        expiresAt: now() + IDEMPOTENCY_SECONDS * 1000,
      });
      idempotencyKeys.push({ key: idempotencyKey, accountId: owner.id, statusId: status.id, replayed: false });
    }
    if (loseStatusAnswer) {
      loseStatusAnswer = false;
      req.socket.destroy();
      return;
    }
    sendJson(res, 200, statusJson(status, owner));
  };

  const showStatus = (req: IncomingMessage, res: ServerResponse, id: string) => {
    const viewer = optionalViewer(req, ['read', 'read:statuses']);
    const status = statuses.find((s) => s.id === id && visibleTo(s, viewer));
    if (!status) throw new MastodonError(404, 'Record not found');
    sendJson(res, 200, statusJson(status, viewer));
  };

  const deleteStatus = (req: IncomingMessage, res: ServerResponse, id: string, query: URLSearchParams) => {
    const owner = userOf(authorized(req, ['write', 'write:statuses']));
    throttle(res, `account:${owner.id}`, ['deletes']);
    const status = statuses.find((s) => s.id === id && s.accountId === owner.id && !s.deleted);
    if (!status) throw new MastodonError(404, 'Record not found');
    const answer = statusJson(status, owner, true);
    status.deleted = true;
    // The media stay about a day, to be attached again (delete and redraft), unless delete_media says otherwise.
    const deleteMedia = ['1', 'true'].includes((query.get('delete_media') ?? '').toLowerCase());
    for (const item of media.filter((m) => m.statusId === status.id)) {
      item.statusId = null;
      if (deleteMedia) item.deleted = true;
    }
    sendJson(res, 200, answer);
  };

  /** An account's statuses, newest first, paged by id (`max_id`, `since_id`, `min_id`) with a Link header. */
  const accountStatuses = (req: IncomingMessage, res: ServerResponse, id: string, query: URLSearchParams) => {
    const viewer = optionalViewer(req, ['read', 'read:statuses']);
    const owner = accounts.find((a) => a.id === id);
    if (!owner) throw new MastodonError(404, 'Record not found');
    const flag = (name: string) => ['1', 'true'].includes((query.get(name) ?? '').toLowerCase());
    const bound = (name: string) => {
      const value = query.get(name);
      return value && /^\d+$/.test(value) ? BigInt(value) : undefined;
    };
    const [maxId, sinceId, minId] = [bound('max_id'), bound('since_id'), bound('min_id')];
    const asked = query.get('limit');
    const limit = asked === null ? 20 : Math.min(Math.abs(Number.parseInt(asked, 10) || 0), 40);
    const tagged = query.get('tagged')?.toLowerCase();
    let list = statuses
      .filter((s) => s.accountId === owner.id && visibleTo(s, viewer))
      .filter((s) => !flag('exclude_replies') || s.inReplyToAccountId === null || s.inReplyToAccountId === owner.id)
      .filter((s) => !flag('only_media') || s.mediaIds.length > 0)
      .filter(() => !flag('pinned'))
      .filter((s) => !tagged || entitiesOf(s.text, ['hashtag']).some((e) => e.name.toLowerCase() === tagged))
      .filter((s) => (maxId === undefined || BigInt(s.id) < maxId) && (sinceId === undefined || BigInt(s.id) > sinceId))
      .filter((s) => minId === undefined || BigInt(s.id) > minId)
      .sort(byId);
    // min_id pages forward from the cursor (the oldest first), the others back from the newest.
    list = minId === undefined ? list.reverse().slice(0, limit) : list.slice(0, limit).reverse();
    const links: string[] = [];
    const page = (params: Record<string, string>) => {
      const next = new URL(`${origin}/api/v1/accounts/${owner.id}/statuses`);
      for (const [name, value] of query)
        if (!['max_id', 'since_id', 'min_id'].includes(name)) next.searchParams.set(name, value);
      for (const [name, value] of Object.entries(params)) next.searchParams.set(name, value);
      return next.toString();
    };
    if (list.length > 0) {
      links.push(`<${page({ max_id: list.at(-1)!.id })}>; rel="next"`);
      links.push(`<${page({ min_id: list[0]!.id })}>; rel="prev"`);
    }
    sendJson(
      res,
      200,
      list.map((s) => statusJson(s, viewer)),
      links.length > 0 ? { Link: links.join(', ') } : {},
    );
  };

  // ---- routing ----

  const readParams = async (req: IncomingMessage, url: URL, body: Buffer): Promise<Params> => {
    const params = new Params();
    for (const [name, value] of url.searchParams) params.add(name, value);
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    try {
      if (type === 'application/json' && body.length > 0) {
        const value: unknown = JSON.parse(body.toString('utf8'));
        if (value && typeof value === 'object' && !Array.isArray(value))
          for (const [name, entry] of Object.entries(value)) params.add(name, entry);
      } else if (type === 'application/x-www-form-urlencoded') {
        for (const [name, value] of new URLSearchParams(body.toString('utf8'))) params.add(name, value);
      } else if (type === 'multipart/form-data') {
        const form = await new Response(body, { headers: { 'content-type': req.headers['content-type']! } }).formData();
        for (const [name, value] of form) params.add(name, value);
      }
    } catch {
      throw new MastodonError(400, 'Error occurred while parsing request parameters');
    }
    return params;
  };

  /** The answers of `failNext`: Rails' 500, Mastodon's 503, its proxy's 502 and 504. */
  const failure = (res: ServerResponse, status: number) => {
    if (status === 500) return sendJson(res, 500, { error: 'Internal Server Error' });
    if (status === 503)
      return sendJson(res, 503, {
        error: 'There was a temporary problem serving your request, please try again',
      });
    const reason = status === 502 ? 'Bad Gateway' : 'Gateway Time-out';
    res.writeHead(status, { 'Content-Type': 'text/html' });
    res.end(
      `<html><head><title>${status} ${reason}</title></head><body><center><h1>${status} ${reason}</h1></center></body></html>`,
    );
  };

  const route = async (req: IncomingMessage, res: ServerResponse, url: URL, body: Buffer) => {
    const method = req.method ?? 'GET';
    const path = url.pathname;
    const call = `${method} ${path}`;
    const api = path.startsWith('/api/');
    if (api || path.startsWith('/oauth/')) {
      const index = failures.findIndex((f) => f.route === undefined || call.startsWith(f.route));
      if (index >= 0) return failure(res, failures.splice(index, 1)[0]!.status);
    }
    if (api) {
      if (forcedLimits > 0) {
        forcedLimits--;
        const { limit, period } = RATE_LIMITS.api;
        const resetMs =
          forcedResetIn === undefined
            ? (Math.floor(now() / 1000 / period) + 1) * period * 1000
            : now() + forcedResetIn * 1000;
        throw new MastodonError(429, 'Too many requests', rateHeaders(limit, 0, resetMs));
      }
      throttle(res, caller(req), ['api']);
    }
    const params = () => readParams(req, url, body);
    if (call === 'GET /oauth/authorize') return authorizeGet(res, url.searchParams);
    if (call === 'POST /oauth/authorize' || call === 'DELETE /oauth/authorize') return authorizePost(req, res, body);
    if (call === 'GET /oauth/authorize/native') return nativeCode(res, url.searchParams);
    if (call === 'POST /oauth/token') return token(req, res, await params());
    if (call === 'POST /oauth/revoke') return revoke(req, res, await params());
    if (call === 'GET /.well-known/oauth-authorization-server' && supportsPkce) return metadata(res);
    if (call === 'POST /api/v1/apps') return registerApp(res, await params());
    if (call === 'GET /api/v1/accounts/verify_credentials') return credentials(req, res);
    if (call === 'GET /api/v2/instance') return instance(res);
    if (call === 'POST /api/v2/media') return upload(req, res, await params());
    if (call === 'POST /api/v1/statuses') {
      const read = await params();
      statusesInFlight += 1;
      try {
        if (statusDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, statusDelayMs));
        return createStatus(req, res, read);
      } finally {
        statusesInFlight -= 1;
      }
    }
    const mediaId = /^\/api\/v1\/media\/(\d+)$/.exec(path)?.[1];
    if (mediaId && method === 'GET') return showMedia(req, res, mediaId);
    if (mediaId && method === 'PUT') return updateMedia(req, res, mediaId, await params());
    const statusId = /^\/api\/v1\/statuses\/(\d+)$/.exec(path)?.[1];
    if (statusId && method === 'GET') return showStatus(req, res, statusId);
    if (statusId && method === 'DELETE') return deleteStatus(req, res, statusId, url.searchParams);
    const listOf = /^\/api\/v1\/accounts\/(\d+)\/statuses$/.exec(path)?.[1];
    if (listOf && method === 'GET') return accountStatuses(req, res, listOf, url.searchParams);
    const file = /^\/system\/media_attachments\/files\/(\d+)\/(?:original|small)\/[^/]+$/.exec(path)?.[1];
    if (file && method === 'GET') return mediaFile(res, file);
    sendJson(res, 404, { error: 'Record not found' });
  };

  const server = http.createServer((req, res) => {
    const authorization = (req.headers.authorization ?? '').toLowerCase();
    const key = req.headers['idempotency-key'];
    requests.push({
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      auth: authorization.startsWith('bearer ') ? 'bearer' : authorization.startsWith('basic ') ? 'basic' : 'none',
      idempotencyKey: typeof key === 'string' ? key : null,
    });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', origin);
      route(req, res, url, Buffer.concat(chunks)).catch((error: unknown) => {
        if (res.headersSent || res.destroyed) return;
        if (error instanceof MastodonError) return sendJson(res, error.status, { error: error.message }, error.headers);
        sendJson(res, 500, { error: (error as Error).message });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  origin = `http://127.0.0.1:${port}`;
  domain = `127.0.0.1:${port}`;

  return {
    url: origin,
    domain,
    account,
    limits,
    supportsPkce,
    apps,
    authorizations,
    tokens,
    media,
    statuses,
    idempotencyKeys,
    requests,
    createAccount,
    personalToken: (owner, scopes) => {
      const issued: FakeMastodonToken = {
        accessToken: random(32),
        appId: null,
        accountId: owner.id,
        scopes,
        grant: 'personal',
        createdAt: Math.floor(now() / 1000),
        revoked: false,
      };
      tokens.push(issued);
      return issued.accessToken;
    },
    signInAs: (owner) => {
      signedIn = owner;
    },
    consentPage: (shown) => {
      consentShown = shown;
    },
    deny: () => {
      denyNext = true;
    },
    revokeAll: (owner = account) => {
      for (const issued of tokens) if (issued.accountId === owner.id) issued.revoked = true;
    },
    refuseNextStatus: (message) => {
      refuseNext = message ?? `Validation failed: Text character limit of ${limits.maxCharacters} exceeded`;
    },
    rateLimitNext: (count = 1, resetInSeconds) => {
      forcedLimits = count;
      forcedResetIn = resetInSeconds;
    },
    processNextMedia: (polls) => {
      nextMediaPolls = polls;
    },
    failNext: (status, failedRoute) => {
      failures.push({ status, route: failedRoute });
    },
    loseNextStatusAnswer: () => {
      loseStatusAnswer = true;
    },
    slowStatuses: (ms) => {
      statusDelayMs = ms;
    },
    statusesInFlight: () => statusesInFlight,
    advanceClock: (seconds) => {
      clockOffsetMs += seconds * 1000;
    },
    mediaBytes: (mediaId) => mediaData.get(mediaId),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
