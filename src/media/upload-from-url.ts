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
import type { MediaContentType } from '../core/contract.js';
import { insertMedia } from './queries.js';
import type { MediaContext } from './storage.js';
import type { Media } from './tables.js';
import { readImageDimensions } from './image-dimensions.js';
import { readPageCount, UNREADABLE_DOCUMENT } from './document-pages.js';
import { UnprocessableError } from '../core/errors.js';
import { readVideoDuration, type RangeReader } from './video-duration.js';

/** What is known of a downloaded file once checked, before it is stored: its media row's facts. */
export type DownloadedFile = Pick<Media, 'kind' | 'size' | 'duration_ms' | 'width' | 'height' | 'page_count'> & {
  content_type: MediaContentType;
  /** The last segment of the URL's path; `undefined` when it has none. */
  fileName: string | undefined;
};

/** Downloads a file from a caller's URL into storage as media, within the limits of the configuration. */
export class UrlDownloads {
  constructor(
    private readonly ctx: MediaContext,
    private readonly policy: MediaPolicy,
    private readonly outbound: OutboundClient,
  ) {}

  /** Downloads the file at `url`, checks it and stores it in the organization's library. */
  download(organizationId: string, url: string): Promise<Media> {
    return this.staged(url, (file, staging) => this.store(organizationId, file, staging));
  }

  /**
   * Downloads the file at `url` and checks it as `download` does, storing nothing: what it would be as
   * media (an import's dry run judges a row's media by it).
   */
  inspect(url: string): Promise<DownloadedFile> {
    return this.staged(url, (file) => Promise.resolve(file));
  }

  /**
   * Downloads and checks the file at `url` into a staging file on disk, which is removed after `use`. What
   * `use` does (storing the file) runs after the download, so that its failures are never read as the
   * remote side's.
   */
  private async staged<T>(url: string, use: (file: DownloadedFile, staging: string) => Promise<T>): Promise<T> {
    const staging = path.join(this.ctx.config.dataDir, 'tmp', `download-${randomBytes(12).toString('hex')}`);
    try {
      const file = await this.outbound.get(
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
          const file: DownloadedFile = {
            fileName: fileNameOf(remote.url, url),
            content_type: contentType,
            kind,
            size: String(size),
            duration_ms: durationMs,
            width: dimensions?.width ?? null,
            height: dimensions?.height ?? null,
            page_count: pageCount,
          };
          return file;
        },
        { accept: 'image/*, video/*, application/pdf' },
      );
      return await use(file, staging);
    } finally {
      await fsp.rm(staging, { force: true });
    }
  }

  private async store(organizationId: string, file: DownloadedFile, staging: string): Promise<Media> {
    const mediaId = newId('med');
    const key = mediaKey(organizationId, mediaId);
    const { fileName, ...facts } = file;
    await this.ctx.storage.put(key, fs.createReadStream(staging), {
      contentType: file.content_type,
      size: Number(file.size),
    });
    try {
      return await insertMedia(this.ctx.db, {
        ...facts,
        id: mediaId,
        organization_id: organizationId,
        file_name: fileName ?? `${mediaId}.${extensionOf(file.content_type)}`,
        storage_key: key,
        created_at: this.ctx.clock.now(),
      });
    } catch (error) {
      await this.ctx.storage.delete(key);
      throw error;
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

/** The last segment of the URL's path, or `undefined` when it has none. */
function fileNameOf(finalUrl: URL, requested: string): string | undefined {
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
  return undefined;
}
