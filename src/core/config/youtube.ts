import type { EnvReader } from './env-reader.js';

/** The operator's Google app, through which channels connect YouTube accounts and publish to them. */
export interface YouTubeConfig {
  clientId: string;
  clientSecret: string;
  accountsUrl: string;
  oauthUrl: string;
  apiUrl: string;
  uploadChunkBytes: number;
}

/** The operator's Google app, when YOUTUBE_CLIENT_ID and YOUTUBE_CLIENT_SECRET are set. */
export function readYouTube(read: EnvReader): YouTubeConfig | undefined {
  const app = read.pair('YOUTUBE_CLIENT_ID', 'YOUTUBE_CLIENT_SECRET', 'the Google app of this server');
  if (!app) return undefined;
  const [clientId, clientSecret] = app;
  return {
    clientId,
    clientSecret,
    accountsUrl: read.origin('YOUTUBE_ACCOUNTS_URL', 'https://accounts.google.com'),
    oauthUrl: read.origin('YOUTUBE_OAUTH_URL', 'https://oauth2.googleapis.com'),
    apiUrl: read.origin('YOUTUBE_API_URL', 'https://www.googleapis.com'),
    uploadChunkBytes: readChunkBytes(read),
  };
}

// Resumable uploads go in chunks of a multiple of 256 KiB: 8 MiB unless the operator says otherwise.
function readChunkBytes(read: EnvReader): number {
  const unit = 256 * 1024;
  const raw = read.text('YOUTUBE_UPLOAD_CHUNK_BYTES');
  if (!raw) return 32 * unit;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < unit || value % unit !== 0 || value > 1024 * unit) {
    read.problem(`YOUTUBE_UPLOAD_CHUNK_BYTES must be a multiple of 262144 (256 KiB) up to 256 MiB, got "${raw}"`);
    return 32 * unit;
  }
  return value;
}
