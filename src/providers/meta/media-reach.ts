import { isIP } from 'node:net';
import type { Config } from '../../core/config.js';
import type { ErrorDetail } from '../../core/errors.js';
import type { ItemFacts } from '../provider-adapter.js';

/**
 * Why Meta cannot fetch this server's media, or `undefined` when it can. Instagram and Threads take
 * media by URL and download it from Meta's servers ("the media must be hosted on a publicly accessible
 * server at the time of the attempt"): the signed URLs this server gives are PUBLIC_URL's, or the S3
 * bucket's. The operator says so with MEDIA_URLS_PUBLIC (true: a tunnel, a proxy or a bucket Meta can
 * reach; false: a closed network); unset, media on S3 is taken as reachable, and so is media served
 * from a PUBLIC_URL that is https on a public host name (not localhost, an address of a private
 * range, or a name of a local domain). Refused at create, a post never fails later for this.
 */
export function mediaUnreachableReason(config: Pick<Config, 'publicUrl' | 'media'>): string | undefined {
  const { urlsPublic, storage } = config.media;
  if (urlsPublic === true) return undefined;
  if (urlsPublic === false)
    return (
      'this server says its media URLs cannot be reached from the internet (MEDIA_URLS_PUBLIC=false), and the ' +
      'network downloads media from them: ask the operator to serve media from a public origin'
    );
  if (storage.kind === 's3') return undefined;
  const url = new URL(config.publicUrl);
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const local =
    isIP(host) !== 0 ||
    host === 'localhost' ||
    !host.includes('.') ||
    /\.(localhost|local|internal|lan|home\.arpa|test|example|invalid)$/.test(host);
  if (url.protocol === 'https:' && !local) return undefined;
  return (
    `the network downloads media from this server's URLs, and PUBLIC_URL (${config.publicUrl}) is not a public ` +
    'https origin: ask the operator to set PUBLIC_URL to one, keep media on S3, or set MEDIA_URLS_PUBLIC=true ' +
    'if the network can reach it anyway'
  );
}

/** The refusal of a post (or a thread's part) with media that `network` would have to download from here. */
export function mediaReachProblems(item: ItemFacts, network: string, reason: string | undefined): ErrorDetail[] {
  if (!reason || !item.media || item.media.length === 0) return [];
  return [{ path: item.paths.mediaIds, message: `${network} cannot publish this post's media: ${reason}.` }];
}
