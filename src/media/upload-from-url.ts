import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { newId } from '../core/ids.js';
import type { OutboundClient } from '../net/outbound-client.js';
import { mediaKey } from './media-body.js';
import { MediaInspector } from './media-inspector.js';
import { extensionOf, kindOf, type MediaPolicy } from './media-types.js';
import { insertMedia } from './queries.js';
import type { MediaContext } from './storage.js';
import type { Media } from './tables.js';
import { readImageDimensions } from './image-dimensions.js';
import { readPageCount, UNREADABLE_DOCUMENT } from './document-pages.js';
import { UnprocessableError } from '../core/errors.js';
import { readVideoDuration, type RangeReader } from './video-duration.js';

/** Downloads a file from a caller's URL into storage as media, within the limits of the configuration. */
export class UrlDownloads {
  constructor(
    private readonly ctx: MediaContext,
    private readonly policy: MediaPolicy,
    private readonly outbound: OutboundClient,
  ) {}

  async download(organizationId: string, url: string): Promise<Media> {
    const staging = path.join(this.ctx.config.dataDir, 'tmp', `download-${randomBytes(12).toString('hex')}`);
    try {
      return await this.outbound.get(
        url,
        async (remote) => {
          const inspector = new MediaInspector(this.policy, remote.contentLength);
          await fsp.mkdir(path.dirname(staging), { recursive: true });
          // Staged on disk: S3 needs the length before the first byte, and memory stays flat for any size.
          await pipeline(remote.body, inspector, fs.createWriteStream(staging));
          const contentType = inspector.contentType!;
          const size = inspector.received;
          const kind = kindOf(contentType);
          const durationMs = kind === 'video' ? await readVideoDuration(fileRanges(staging), size, contentType) : null;
          const dimensions = kind === 'image' ? await readImageDimensions(fileRanges(staging)) : undefined;
          const pageCount = kind === 'document' ? await readPageCount(fileRanges(staging), size) : null;
          if (pageCount === undefined) throw new UnprocessableError(UNREADABLE_DOCUMENT);

          const mediaId = newId('med');
          const key = mediaKey(organizationId, mediaId);
          await this.ctx.storage.put(key, fs.createReadStream(staging), { contentType, size });
          try {
            return await insertMedia(this.ctx.db, {
              id: mediaId,
              organization_id: organizationId,
              file_name: fileNameOf(remote.url, url, `${mediaId}.${extensionOf(contentType)}`),
              content_type: contentType,
              kind: kindOf(contentType),
              size,
              storage_key: key,
              duration_ms: durationMs,
              width: dimensions?.width ?? null,
              height: dimensions?.height ?? null,
              page_count: pageCount,
              created_at: this.ctx.clock.now(),
            });
          } catch (error) {
            await this.ctx.storage.delete(key);
            throw error;
          }
        },
        { accept: 'image/*, video/*, application/pdf' },
      );
    } finally {
      await fsp.rm(staging, { force: true });
    }
  }
}

/** Reads ranges of a file on disk. */
function fileRanges(file: string): RangeReader {
  return async (start, length) => {
    const handle = await fsp.open(file, 'r');
    try {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, start);
      return buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  };
}

/** The last segment of the URL's path, or `fallback` when it has none. */
function fileNameOf(finalUrl: URL, requested: string, fallback: string): string {
  for (const candidate of [new URL(requested).pathname, finalUrl.pathname]) {
    const segment = candidate.split('/').filter(Boolean).pop();
    if (!segment) continue;
    let name = segment;
    try {
      name = decodeURIComponent(segment);
    } catch {
      // A malformed escape: keep the segment as written.
    }
    name = name
      // eslint-disable-next-line no-control-regex -- the control characters are what is removed
      .replace(/[\u0000-\u001f\u007f]/g, '')
      .trim()
      .slice(0, 255);
    if (name) return name;
  }
  return fallback;
}
