import { MEDIA_CONTENT_TYPES, type MediaContentType } from '../contract.js';
import type { EnvReader } from './env-reader.js';

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
  maxBytes: { image: number; video: number; document: number };
  /** How long a signed upload URL accepts bytes. */
  uploadUrlTtlSeconds: number;
  /** How long a signed download URL works. */
  downloadUrlTtlSeconds: number;
  /**
   * Whether a network that fetches media by URL (Instagram, Threads) can reach the URLs this server
   * gives it, as the operator says (MEDIA_URLS_PUBLIC); `undefined`: judged from PUBLIC_URL and the storage.
   */
  urlsPublic: boolean | undefined;
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

// S3 takes a single PUT (and a single server-side copy) of at most 5 GiB; larger files would need multipart.
const MAX_MEDIA_BYTES = 5 * 1024 ** 3;
// A document's pages are counted with the whole file in memory (see src/media/document-pages.ts).
const MAX_DOCUMENT_BYTES = 1024 ** 3;
// S3 refuses presigned URLs valid for more than 7 days.
const MAX_SIGNED_URL_SECONDS = 7 * 86_400;

export function readMedia(read: EnvReader): MediaConfig {
  return {
    storage: readStorage(read),
    allowedTypes: readAllowedTypes(read),
    maxBytes: {
      image: read.integer('MEDIA_MAX_IMAGE_BYTES', 10 * 1024 ** 2, 1, MAX_MEDIA_BYTES),
      video: read.integer('MEDIA_MAX_VIDEO_BYTES', 1024 ** 3, 1, MAX_MEDIA_BYTES),
      // LinkedIn's limit, the one network that takes documents; their pages are counted in memory.
      document: read.integer('MEDIA_MAX_DOCUMENT_BYTES', 100 * 1024 ** 2, 1, MAX_DOCUMENT_BYTES),
    },
    uploadUrlTtlSeconds: read.integer('MEDIA_UPLOAD_URL_TTL_SECONDS', 3600, 60, MAX_SIGNED_URL_SECONDS),
    downloadUrlTtlSeconds: read.integer('MEDIA_DOWNLOAD_URL_TTL_SECONDS', 3600, 60, MAX_SIGNED_URL_SECONDS),
    urlsPublic: read.text('MEDIA_URLS_PUBLIC') === undefined ? undefined : read.boolean('MEDIA_URLS_PUBLIC', false),
    fetch: {
      idleTimeoutSeconds: read.integer('MEDIA_FETCH_TIMEOUT_SECONDS', 15, 1, 600),
      maxDurationSeconds: read.integer('MEDIA_FETCH_MAX_DURATION_SECONDS', 300, 1, 86_400),
      allowPrivateAddresses: read.boolean('MEDIA_FETCH_ALLOW_PRIVATE', false),
      allowedRanges: read.addressRanges('MEDIA_FETCH_ALLOW_RANGES'),
    },
  };
}

function readStorage(read: EnvReader): MediaConfig['storage'] {
  if (read.oneOf('MEDIA_STORAGE', ['local', 's3'] as const, 'local') === 'local') return { kind: 'local' };
  const bucket = read.text('S3_BUCKET') || '';
  if (!bucket) read.problem('S3_BUCKET is required when MEDIA_STORAGE is s3');
  const endpoint = read.text('S3_ENDPOINT');
  if (endpoint && !/^https?:\/\/[^/]+\/?$/.test(endpoint)) {
    read.problem(`S3_ENDPOINT must be an http(s) origin such as https://s3.example.net, got "${endpoint}"`);
  }
  const accessKeyId = read.text('S3_ACCESS_KEY_ID') || '';
  const secretAccessKey = read.text('S3_SECRET_ACCESS_KEY') || '';
  if (Boolean(accessKeyId) !== Boolean(secretAccessKey)) {
    read.problem('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together');
  }
  return {
    kind: 's3',
    bucket,
    endpoint,
    region: read.text('S3_REGION') || 'us-east-1',
    credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined,
    forcePathStyle: read.boolean('S3_FORCE_PATH_STYLE', false),
  };
}

function readAllowedTypes(read: EnvReader): MediaContentType[] {
  const raw = read.text('MEDIA_ALLOWED_TYPES');
  if (!raw) return [...MEDIA_CONTENT_TYPES];
  const listed = read.list('MEDIA_ALLOWED_TYPES').map((type) => type.toLowerCase());
  const unknown = listed.filter((type) => !(MEDIA_CONTENT_TYPES as readonly string[]).includes(type));
  if (unknown.length > 0 || listed.length === 0) {
    read.problem(`MEDIA_ALLOWED_TYPES may list only ${MEDIA_CONTENT_TYPES.join(', ')}; got "${raw}"`);
    return [...MEDIA_CONTENT_TYPES];
  }
  return MEDIA_CONTENT_TYPES.filter((type) => listed.includes(type));
}
