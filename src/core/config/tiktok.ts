import type { EnvReader } from './env-reader.js';

/** The operator's TikTok app, through which channels connect TikTok accounts and publish to them. */
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

/** The operator's TikTok app, when TIKTOK_CLIENT_KEY and TIKTOK_CLIENT_SECRET are set. */
export function readTikTok(read: EnvReader): TikTokConfig | undefined {
  const app = read.pair('TIKTOK_CLIENT_KEY', 'TIKTOK_CLIENT_SECRET', 'the TikTok app of this server');
  if (!app) return undefined;
  const [clientKey, clientSecret] = app;
  const chunk = read.text('TIKTOK_UPLOAD_CHUNK_BYTES') || String(10 * MB);
  const uploadChunkBytes = /^\d+$/.test(chunk) ? Number(chunk) : NaN;
  if (!(uploadChunkBytes >= 5 * MB && uploadChunkBytes <= 64 * MB)) {
    read.problem(
      'TIKTOK_UPLOAD_CHUNK_BYTES must be between 5242880 (5 MB) and 67108864 (64 MB), as TikTok requires, ' +
        `got "${chunk}"`,
    );
  }
  const hosts = read.list('TIKTOK_VERIFIED_MEDIA_HOSTS').map((host) => host.toLowerCase());
  for (const host of hosts) {
    if (!/^[a-z0-9.-]+(:\d+)?$/.test(host))
      read.problem(`TIKTOK_VERIFIED_MEDIA_HOSTS takes host names separated by commas, got "${host}"`);
  }
  return {
    clientKey,
    clientSecret,
    authUrl: read.origin('TIKTOK_AUTH_URL', 'https://www.tiktok.com'),
    apiUrl: read.origin('TIKTOK_API_URL', 'https://open.tiktokapis.com'),
    uploadChunkBytes,
    verifiedMediaHosts: hosts,
  };
}
