import { createHash } from 'node:crypto';
import { DomainError } from '../core/errors.js';
import { SNIFF_BYTES, sniffContentType } from '../media/media-types.js';
import { readBody, type OutboundClient } from '../net/outbound-client.js';

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
 * guard against server-side request forgery that media downloads use, with its address policy
 * (MEDIA_FETCH_ALLOW_PRIVATE, MEDIA_FETCH_ALLOW_RANGES) and timeouts.
 */
export class AppPictureDownloader {
  constructor(private readonly outbound: OutboundClient) {}

  async download(url: string): Promise<PictureDownload> {
    let bytes: Buffer | undefined;
    try {
      bytes = await this.outbound.get(url, (remote) => readBody(remote, MAX_PICTURE_BYTES), {
        maxDurationSeconds: MAX_PICTURE_SECONDS,
        accept: 'image/*',
      });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      return {
        ok: false,
        message: `The picture could not be downloaded: ${error.details?.[0]?.message ?? error.message}.`,
      };
    }
    if (!bytes) return tooLarge();
    const sniffed = await sniffContentType(bytes.subarray(0, SNIFF_BYTES));
    if (!sniffed.mediaType || !PICTURE_TYPES.has(sniffed.mediaType)) {
      return {
        ok: false,
        message: `The picture must be ${PICTURE_TYPE_NAMES}; the file at this URL is ${sniffed.detected}.`,
      };
    }
    return {
      ok: true,
      picture: { contentType: sniffed.mediaType, bytes, sha256: createHash('sha256').update(bytes).digest('hex') },
    };
  }
}

function tooLarge(): PictureDownload {
  return { ok: false, message: `The picture must be at most ${MAX_PICTURE_BYTES / 1024 / 1024} MB.` };
}

/** Where pages show an app's stored picture from: this installation, never the developer's server. */
export function appPicturePath(app: { client_id: string; picture_sha256: string | null }): string | undefined {
  return app.picture_sha256 ? `/oauth/apps/${app.client_id}/picture` : undefined;
}
