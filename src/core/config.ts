import net from 'node:net';
import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { MEDIA_CONTENT_TYPES, type MediaContentType, type Provider } from './contract.js';

/**
 * The service's configuration, read from the environment once at start-up.
 * Nothing else in the code reads `process.env`.
 */
export interface Config {
  /** TCP port of the HTTP server. */
  port: number;
  /** Interface the HTTP server binds to. */
  host: string;
  /** Origin that users and integrators reach the service at; used in links, signed URLs and OAuth metadata. */
  publicUrl: string;
  /**
   * Which reverse proxies' `X-Forwarded-For` to believe when telling clients' addresses apart (the
   * address throttles): `false` for none (the connection's address counts), a number of proxy hops,
   * or proxy addresses and ranges, as Express's `trust proxy` setting takes them.
   */
  trustProxy: false | number | string[];
  /** Directory of the embedded database and locally stored files. */
  dataDir: string;
  /** PostgreSQL connection string; when absent the embedded PGlite database in `dataDir` is used. */
  databaseUrl: string | undefined;
  /** ENCRYPTION_KEY as given (read by src/crypto/key-source.ts); without it, a key file in `dataDir`. */
  encryptionKey: string | undefined;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** `production` logs contract violations of responses instead of failing them. */
  environment: 'development' | 'production' | 'test';
  /**
   * Which responses the contract validator checks: every one (`strict`, the default, and always in
   * tests), about one in a hundred (`sample`), or none (`off`), for operators who need the
   * throughput (docs/performance.md). Requests are always checked.
   */
  responseValidation: 'strict' | 'sample' | 'off';
  rateLimit: {
    /** Requests an organization may make per window, across all its API keys and OAuth tokens. */
    max: number;
    windowSeconds: number;
  };
  /** Posts a channel may publish per UTC day, by provider. */
  dailyPostLimits: Record<Provider, number>;
  /**
   * Failed client authentications at the OAuth token and revocation endpoints allowed per window,
   * per client id from one address and per address; past either, requests from that address are
   * refused with 429 until the window ends.
   */
  oauthClientAuthFailures: {
    /** For one client id from one address (OAUTH_AUTH_FAILURES_PER_CLIENT). */
    perClientAddress: number;
    perAddress: number;
    windowSeconds: number;
  };
  /**
   * Limits per client address on the web app's account forms, against password spraying across many
   * emails and floods of password hashing; past either, the form answers 429 until the window ends.
   */
  accountLimits: {
    /** Failed log-ins from one address per window, whatever the emails. */
    loginFailuresPerAddress: number;
    /** Sign-up attempts from one address per window (forms refused for invalid fields do not count). */
    signupsPerAddress: number;
    windowSeconds: number;
  };
  media: MediaConfig;
  /**
   * What this process runs: the HTTP API and pages (`api`), the publishing worker (`worker`), or both
   * (`all`). The embedded database belongs to one process, which therefore runs both.
   */
  role: 'api' | 'worker' | 'all';
  /** The operator's Google app, when YOUTUBE_CLIENT_ID and YOUTUBE_CLIENT_SECRET are set; without it YouTube is not offered. */
  youtube:
    | {
        clientId: string;
        clientSecret: string;
        accountsUrl: string;
        oauthUrl: string;
        apiUrl: string;
        uploadChunkBytes: number;
      }
    | undefined;
  /** The operator's TikTok app, when TIKTOK_CLIENT_KEY and TIKTOK_CLIENT_SECRET are set; without it TikTok is not offered. */
  tiktok: TikTokConfig | undefined;
  /** The sandbox network: where the sandbox adapter reaches it, and how long it takes to answer. */
  sandbox: {
    networkUrl: string;
    latencyMs: number;
    /** The limits the sandbox declares to the publisher, as a real network's adapter does. */
    limits: { concurrencyPerChannel: number; startsPerMinutePerChannel?: number };
  };
  publisher: {
    /** Publications a worker process runs at once. */
    concurrency: number;
    /** How often a worker looks for posts that fell due. */
    pollingIntervalSeconds: number;
    /** The first retry of a passing failure waits this long; later ones 6, 24, 120 and 360 times as long. */
    retryBaseMs: number;
    /** How long a worker holds a post it publishes without renewing its hold. */
    leaseMs: number;
  };
  webhooks: {
    /** Addresses or CIDR ranges webhook receivers may be at even though they are not public (receivers on the operator's network). */
    allowedRanges: string[];
    /** Waits before each retry of a failed delivery, in seconds; after the last, the delivery fails. */
    retrySchedule: number[];
  };
  /** On SIGTERM, how long requests in flight and running publications get to finish. */
  shutdownGraceSeconds: number;
}

export interface S3StorageConfig {
  bucket: string;
  /** Base URL of an S3-compatible service; `undefined` means AWS S3 itself (from the region). */
  endpoint: string | undefined;
  region: string;
  /** Both or neither; without them the AWS SDK's default credential chain is used (e.g. an instance role). */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  /** `bucket` in the path instead of the host name, as most self-hosted S3-compatible services need. */
  forcePathStyle: boolean;
}

export interface MediaConfig {
  /** Where media files are kept: `local` under `dataDir/media`, or an S3-compatible bucket. */
  storage: { kind: 'local' } | ({ kind: 's3' } & S3StorageConfig);
  /** Types accepted for new media; a subset of MEDIA_CONTENT_TYPES. */
  allowedTypes: MediaContentType[];
  maxBytes: { image: number; video: number };
  /** How long a signed upload URL accepts bytes. */
  uploadUrlTtlSeconds: number;
  /** How long a signed download URL works. */
  downloadUrlTtlSeconds: number;
  fetch: {
    /** Longest silence from a remote server (connecting, before the headers, between body chunks). */
    idleTimeoutSeconds: number;
    /** Longest a whole download from a URL may take. */
    maxDurationSeconds: number;
    /** Also download from loopback, private, link-local and unique-local addresses (tests, closed networks). */
    allowPrivateAddresses: boolean;
    /** Addresses or CIDR ranges downloaded from even though they are not public. */
    allowedRanges: string[];
  };
}

// Resumable uploads go in chunks of a multiple of 256 KiB: 8 MiB unless the operator says otherwise.
function chunkBytes(raw: string | undefined, problems: string[]): number {
  const unit = 256 * 1024;
  if (!raw) return 32 * unit;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < unit || value % unit !== 0 || value > 1024 * unit) {
    problems.push(`YOUTUBE_UPLOAD_CHUNK_BYTES must be a multiple of 262144 (256 KiB) up to 256 MiB, got "${raw}"`);
    return 32 * unit;
  }
  return value;
}

export interface TikTokConfig {
  clientKey: string;
  clientSecret: string;
  /** Where TikTok's consent page is (https://www.tiktok.com). */
  authUrl: string;
  /** Where TikTok's API answers, tokens included (https://open.tiktokapis.com). */
  apiUrl: string;
  /** Size of each chunk of a video upload, 5 to 64 MB as TikTok requires (a video under 5 MB goes in one chunk). */
  uploadChunkBytes: number;
  /**
   * Hosts of media URLs that the operator verified with TikTok (e.g. the S3 bucket's domain): a video
   * stored there is pulled by TikTok (PULL_FROM_URL) instead of being uploaded by the worker.
   */
  verifiedMediaHosts: string[];
}

const MB = 1024 * 1024;

function readTikTok(env: Env, problems: string[]): Config['tiktok'] {
  const clientKey = env.TIKTOK_CLIENT_KEY || undefined;
  const clientSecret = env.TIKTOK_CLIENT_SECRET || undefined;
  if (!clientKey && !clientSecret) return undefined;
  if (!clientKey || !clientSecret) {
    problems.push(
      'TIKTOK_CLIENT_KEY and TIKTOK_CLIENT_SECRET go together: set both (the TikTok app of this server) or neither',
    );
    return undefined;
  }
  const origin = (name: string, fallback: string) => {
    const value = (env[name] || fallback).replace(/\/+$/, '');
    if (!/^https?:\/\/[^/]+$/.test(value)) problems.push(`${name} must be an http(s) origin, got "${value}"`);
    return value;
  };
  const chunk = env.TIKTOK_UPLOAD_CHUNK_BYTES || String(10 * MB);
  const uploadChunkBytes = /^\d+$/.test(chunk) ? Number(chunk) : NaN;
  if (!(uploadChunkBytes >= 5 * MB && uploadChunkBytes <= 64 * MB)) {
    problems.push(
      `TIKTOK_UPLOAD_CHUNK_BYTES must be between 5242880 (5 MB) and 67108864 (64 MB), as TikTok requires, got "${chunk}"`,
    );
  }
  const hosts = (env.TIKTOK_VERIFIED_MEDIA_HOSTS ?? '')
    .split(',')
    .map((host) => host.trim().toLowerCase())
    .filter(Boolean);
  for (const host of hosts) {
    if (!/^[a-z0-9.-]+(:\d+)?$/.test(host))
      problems.push(`TIKTOK_VERIFIED_MEDIA_HOSTS takes host names separated by commas, got "${host}"`);
  }
  return {
    clientKey,
    clientSecret,
    authUrl: origin('TIKTOK_AUTH_URL', 'https://www.tiktok.com'),
    apiUrl: origin('TIKTOK_API_URL', 'https://open.tiktokapis.com'),
    uploadChunkBytes,
    verifiedMediaHosts: hosts,
  };
}

function readYouTube(env: Env, problems: string[]): Config['youtube'] {
  const clientId = env.YOUTUBE_CLIENT_ID || undefined;
  const clientSecret = env.YOUTUBE_CLIENT_SECRET || undefined;
  if (!clientId && !clientSecret) return undefined;
  if (!clientId || !clientSecret) {
    problems.push(
      'YOUTUBE_CLIENT_ID and YOUTUBE_CLIENT_SECRET go together: set both (the Google app of this server) or neither',
    );
    return undefined;
  }
  const origin = (name: string, fallback: string) => {
    const value = (env[name] || fallback).replace(/\/+$/, '');
    if (!/^https?:\/\/[^/]+$/.test(value)) problems.push(`${name} must be an http(s) origin, got "${value}"`);
    return value;
  };
  return {
    clientId,
    clientSecret,
    accountsUrl: origin('YOUTUBE_ACCOUNTS_URL', 'https://accounts.google.com'),
    oauthUrl: origin('YOUTUBE_OAUTH_URL', 'https://oauth2.googleapis.com'),
    apiUrl: origin('YOUTUBE_API_URL', 'https://www.googleapis.com'),
    uploadChunkBytes: chunkBytes(env.YOUTUBE_UPLOAD_CHUNK_BYTES, problems),
  };
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];

  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
      return fallback;
    }
    return value;
  };

  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (!(allowed as readonly string[]).includes(raw)) {
      problems.push(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
      return fallback;
    }
    return raw as T;
  };

  const boolean = (name: string, fallback: boolean): boolean => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    problems.push(`${name} must be true or false, got "${raw}"`);
    return fallback;
  };

  const port = integer('PORT', 3000, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const environment = oneOf('NODE_ENV', ['development', 'production', 'test'] as const, 'development');

  const responseValidation = oneOf('RESPONSE_VALIDATION', ['strict', 'sample', 'off'] as const, 'strict');
  if (environment === 'test' && responseValidation !== 'strict') {
    problems.push(
      `RESPONSE_VALIDATION must be strict when NODE_ENV=test: tests check every response against the contract, got "${responseValidation}"`,
    );
  }

  const publicUrl = (env.PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, '');
  try {
    const url = new URL(publicUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error();
    if (url.pathname !== '/' || url.search || url.hash) {
      problems.push(`PUBLIC_URL must be an origin without a path, got "${publicUrl}"`);
    }
  } catch {
    problems.push(`PUBLIC_URL must be an http(s) URL, got "${publicUrl}"`);
  }

  const trustProxy = readTrustProxy(env.TRUST_PROXY, problems);
  const role = oneOf('ROLE', ['api', 'worker', 'all'] as const, 'all');
  if (role !== 'all' && !(env.DATABASE_URL || undefined)) {
    problems.push(
      `ROLE=${role} needs DATABASE_URL: the embedded database belongs to one process, which runs the API and the worker together (ROLE=all)`,
    );
  }
  const sandboxUrl = (env.SANDBOX_NETWORK_URL || publicUrl).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+$/.test(sandboxUrl))
    problems.push(`SANDBOX_NETWORK_URL must be an http(s) origin, got "${sandboxUrl}"`);

  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must be a postgres:// or postgresql:// connection string');
  }

  const config: Config = {
    port,
    host,
    publicUrl,
    trustProxy,
    dataDir: path.resolve(env.DATA_DIR || './data'),
    databaseUrl,
    encryptionKey: env.ENCRYPTION_KEY || undefined,
    logLevel: oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    environment,
    responseValidation,
    rateLimit: {
      max: integer('RATE_LIMIT_MAX', 300, 1, 1_000_000),
      windowSeconds: integer('RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400),
    },
    dailyPostLimits: {
      youtube: integer('DAILY_POST_LIMIT_YOUTUBE', 6, 1, 10_000),
      tiktok: integer('DAILY_POST_LIMIT_TIKTOK', 15, 1, 10_000),
      sandbox: integer('DAILY_POST_LIMIT_SANDBOX', 100, 1, 10_000),
    },
    oauthClientAuthFailures: {
      perClientAddress: integer('OAUTH_AUTH_FAILURES_PER_CLIENT', 10, 1, 1_000_000),
      perAddress: integer('OAUTH_AUTH_FAILURES_PER_ADDRESS', 50, 1, 1_000_000),
      windowSeconds: integer('OAUTH_AUTH_FAILURES_WINDOW_SECONDS', 300, 1, 86_400),
    },
    accountLimits: {
      loginFailuresPerAddress: integer('LOGIN_FAILURES_PER_ADDRESS', 50, 1, 1_000_000),
      signupsPerAddress: integer('SIGNUPS_PER_ADDRESS', 10, 1, 1_000_000),
      windowSeconds: integer('ACCOUNT_LIMITS_WINDOW_SECONDS', 900, 1, 86_400),
    },
    media: loadMediaConfig(env, problems, { integer, oneOf, boolean }),
    role,
    youtube: readYouTube(env, problems),
    tiktok: readTikTok(env, problems),
    sandbox: {
      networkUrl: sandboxUrl,
      latencyMs: integer('SANDBOX_LATENCY_MS', 0, 0, 600_000),
      limits: {
        concurrencyPerChannel: integer('SANDBOX_CONCURRENCY_PER_CHANNEL', 20, 1, 1000),
        ...(env.SANDBOX_STARTS_PER_MINUTE
          ? { startsPerMinutePerChannel: integer('SANDBOX_STARTS_PER_MINUTE', 0, 1, 10_000) }
          : {}),
      },
    },
    publisher: {
      concurrency: integer('PUBLISH_CONCURRENCY', 100, 1, 1000),
      pollingIntervalSeconds: integer('PUBLISH_POLL_MS', 500, 500, 60_000) / 1000,
      retryBaseMs: integer('PUBLISH_RETRY_BASE_MS', 5000, 100, 3_600_000),
      leaseMs: integer('PUBLISH_LEASE_SECONDS', 30, 5, 3600) * 1000,
    },
    webhooks: readWebhooks(env, problems),
    shutdownGraceSeconds: integer('SHUTDOWN_GRACE_SECONDS', 10, 0, 3600),
  };

  if (problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  }
  return config;
}

/** About a day of retries: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
const WEBHOOK_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];

function readWebhooks(env: Record<string, string | undefined>, problems: string[]): Config['webhooks'] {
  const allowedRanges = (env.WEBHOOK_ALLOW_RANGES ?? '')
    .split(',')
    .map((range) => range.trim())
    .filter(Boolean);
  for (const range of allowedRanges) {
    if (!ipaddr.isValidCIDR(range) && !ipaddr.isValid(range))
      problems.push(`WEBHOOK_ALLOW_RANGES must list IP addresses or CIDR ranges, got "${range}"`);
  }
  const raw = env.WEBHOOK_RETRY_SCHEDULE?.trim();
  const retrySchedule = raw ? raw.split(',').map((entry) => Number(entry.trim())) : WEBHOOK_RETRY_SCHEDULE;
  if (
    retrySchedule.length > 20 ||
    retrySchedule.some((seconds) => !Number.isFinite(seconds) || seconds < 0.1 || seconds > 86_400)
  ) {
    problems.push(`WEBHOOK_RETRY_SCHEDULE must list up to 20 waits in seconds (0.1 to 86400), got "${raw}"`);
  }
  return { allowedRanges, retrySchedule };
}

// Express's names for ranges of proxy addresses.
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function readTrustProxy(raw: string | undefined, problems: string[]): Config['trustProxy'] {
  if (raw === undefined || raw.trim() === '' || raw === 'false') return false;
  const hops = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : undefined;
  if (hops !== undefined && hops >= 1 && hops <= 10) return hops;
  const entries = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  // Written-out addresses only (ipaddr.js alone would take `0` for 0.0.0.0). `true` (believe any
  // X-Forwarded-For) is refused: a client could then name any address it likes.
  const isAddress = (entry: string) =>
    net.isIP(entry.split('/')[0]!) !== 0 && (entry.includes('/') ? ipaddr.isValidCIDR(entry) : true);
  const valid =
    hops === undefined &&
    entries.length > 0 &&
    entries.every((entry) => PROXY_RANGE_NAMES.includes(entry) || isAddress(entry));
  if (!valid) {
    problems.push(
      `TRUST_PROXY must be a number of proxy hops (1-10) or proxy addresses, CIDR ranges, loopback, linklocal or uniquelocal; got "${raw}"`,
    );
    return false;
  }
  return entries;
}

interface Readers {
  integer(name: string, fallback: number, min: number, max: number): number;
  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T;
  boolean(name: string, fallback: boolean): boolean;
}

// S3 takes a single PUT (and a single server-side copy) of at most 5 GiB; larger files would need multipart.
const MAX_MEDIA_BYTES = 5 * 1024 ** 3;
// S3 refuses presigned URLs valid for more than 7 days.
const MAX_SIGNED_URL_SECONDS = 7 * 86_400;

function loadMediaConfig(env: Env, problems: string[], read: Readers): MediaConfig {
  const kind = read.oneOf('MEDIA_STORAGE', ['local', 's3'] as const, 'local');
  let storage: MediaConfig['storage'] = { kind: 'local' };
  if (kind === 's3') {
    const bucket = env.S3_BUCKET || '';
    if (!bucket) problems.push('S3_BUCKET is required when MEDIA_STORAGE is s3');
    const endpoint = env.S3_ENDPOINT || undefined;
    if (endpoint && !/^https?:\/\/[^/]+\/?$/.test(endpoint)) {
      problems.push(`S3_ENDPOINT must be an http(s) origin such as https://s3.example.net, got "${endpoint}"`);
    }
    const accessKeyId = env.S3_ACCESS_KEY_ID || '';
    const secretAccessKey = env.S3_SECRET_ACCESS_KEY || '';
    if (Boolean(accessKeyId) !== Boolean(secretAccessKey)) {
      problems.push('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together');
    }
    storage = {
      kind: 's3',
      bucket,
      endpoint,
      region: env.S3_REGION || 'us-east-1',
      credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
      forcePathStyle: read.boolean('S3_FORCE_PATH_STYLE', false),
    };
  }

  let allowedTypes: MediaContentType[] = [...MEDIA_CONTENT_TYPES];
  if (env.MEDIA_ALLOWED_TYPES) {
    const listed = env.MEDIA_ALLOWED_TYPES.split(',')
      .map((type) => type.trim().toLowerCase())
      .filter(Boolean);
    const unknown = listed.filter((type) => !(MEDIA_CONTENT_TYPES as readonly string[]).includes(type));
    if (unknown.length > 0 || listed.length === 0) {
      problems.push(
        `MEDIA_ALLOWED_TYPES may list only ${MEDIA_CONTENT_TYPES.join(', ')}; got "${env.MEDIA_ALLOWED_TYPES}"`,
      );
    } else {
      allowedTypes = MEDIA_CONTENT_TYPES.filter((type) => listed.includes(type));
    }
  }

  const allowedRanges = (env.MEDIA_FETCH_ALLOW_RANGES ?? '')
    .split(',')
    .map((range) => range.trim())
    .filter(Boolean);
  for (const range of allowedRanges) {
    if (!ipaddr.isValidCIDR(range) && !ipaddr.isValid(range)) {
      problems.push(`MEDIA_FETCH_ALLOW_RANGES must list IP addresses or CIDR ranges, got "${range}"`);
    }
  }

  return {
    storage,
    allowedTypes,
    maxBytes: {
      image: read.integer('MEDIA_MAX_IMAGE_BYTES', 10 * 1024 ** 2, 1, MAX_MEDIA_BYTES),
      video: read.integer('MEDIA_MAX_VIDEO_BYTES', 1024 ** 3, 1, MAX_MEDIA_BYTES),
    },
    uploadUrlTtlSeconds: read.integer('MEDIA_UPLOAD_URL_TTL_SECONDS', 3600, 60, MAX_SIGNED_URL_SECONDS),
    downloadUrlTtlSeconds: read.integer('MEDIA_DOWNLOAD_URL_TTL_SECONDS', 3600, 60, MAX_SIGNED_URL_SECONDS),
    fetch: {
      idleTimeoutSeconds: read.integer('MEDIA_FETCH_TIMEOUT_SECONDS', 15, 1, 600),
      maxDurationSeconds: read.integer('MEDIA_FETCH_MAX_DURATION_SECONDS', 300, 1, 86_400),
      allowPrivateAddresses: read.boolean('MEDIA_FETCH_ALLOW_PRIVATE', false),
      allowedRanges,
    },
  };
}
