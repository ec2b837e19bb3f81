import { createHash } from 'node:crypto';
import type { MediaConfig } from '../config.js';
import { DomainError } from '../errors.js';
import { AddressPolicy } from '../media/address-policy.js';
import { SNIFF_BYTES, sniffContentType } from '../media/media-types.js';
import { explainFetchFailure, openRemote } from '../media/remote-fetch.js';
import { MAX_REDIRECTS } from '../media/upload-from-url.js';

/** A picture larger than this is refused: it is shown at 72 pixels. */
export const MAX_PICTURE_BYTES = 1024 * 1024;
// The longest a developer waits on the form for the picture, whatever downloads of media may take.
const MAX_PICTURE_SECONDS = 30;
// Raster formats only: an SVG is a document that can carry script.
const PICTURE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);
const PICTURE_TYPE_NAMES = 'a PNG, JPEG, GIF or WebP image';

export interface AppPicture {
  contentType: string;
  bytes: Buffer;
  /** SHA-256 of the bytes (hex): the version of the picture, and its ETag. */
  sha256: string;
}

export type PictureDownload = { ok: true; picture: AppPicture } | { ok: false; message: string };

/**
 * Downloads app pictures once, when they are registered, so that the consent page loads nothing from
 * the developer's server (which would learn who looks at it, and when). The download goes through the
 * media feature's guard against server-side request forgery, with its address policy
 * (MEDIA_FETCH_ALLOW_PRIVATE, MEDIA_FETCH_ALLOW_RANGES) and timeouts.
 */
export class AppPictureDownloader {
  private readonly addresses: AddressPolicy;

  constructor(private readonly limits: MediaConfig['fetch']) {
    this.addresses = new AddressPolicy({ allowPrivate: limits.allowPrivateAddresses, allowedRanges: limits.allowedRanges });
  }

  async download(url: string): Promise<PictureDownload> {
    const { idleTimeoutSeconds } = this.limits;
    const maxDurationSeconds = Math.min(this.limits.maxDurationSeconds, MAX_PICTURE_SECONDS);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), maxDurationSeconds * 1000);
    let bytes: Buffer;
    try {
      const remote = await openRemote(url, {
        policy: this.addresses,
        idleTimeoutMs: idleTimeoutSeconds * 1000,
        maxRedirects: MAX_REDIRECTS,
        signal: deadline.signal,
      });
      try {
        if (remote.contentLength !== undefined && remote.contentLength > MAX_PICTURE_BYTES) return tooLarge();
        const chunks: Buffer[] = [];
        let received = 0;
        for await (const chunk of remote.body) {
          received += (chunk as Buffer).length;
          // Cut off as soon as it is too large, so a huge file is never read to its end.
          if (received > MAX_PICTURE_BYTES) return tooLarge();
          chunks.push(chunk as Buffer);
        }
        bytes = Buffer.concat(chunks);
      } finally {
        remote.body.destroy();
      }
    } catch (error) {
      const failure = explainFetchFailure(error, { timedOut: deadline.signal.aborted, idleTimeoutSeconds, maxDurationSeconds });
      if (!(failure instanceof DomainError)) throw failure;
      return { ok: false, message: `The picture could not be downloaded: ${failure.details?.[0]?.message ?? failure.message}.` };
    } finally {
      clearTimeout(timer);
    }
    const sniffed = await sniffContentType(bytes.subarray(0, SNIFF_BYTES));
    if (!sniffed.mediaType || !PICTURE_TYPES.has(sniffed.mediaType)) {
      return { ok: false, message: `The picture must be ${PICTURE_TYPE_NAMES}; the file at this URL is ${sniffed.detected}.` };
    }
    return { ok: true, picture: { contentType: sniffed.mediaType, bytes, sha256: createHash('sha256').update(bytes).digest('hex') } };
  }
}

function tooLarge(): PictureDownload {
  return { ok: false, message: `The picture must be at most ${MAX_PICTURE_BYTES / 1024 / 1024} MB.` };
}

/** Where pages show an app's stored picture from: this installation, never the developer's server. */
export function appPicturePath(app: { client_id: string; picture_sha256: string | null }): string | undefined {
  return app.picture_sha256 ? `/oauth/apps/${app.client_id}/picture` : undefined;
}
