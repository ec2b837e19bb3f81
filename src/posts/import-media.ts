import { DomainError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { removeMedia } from '../media/library.js';
import { MediaPolicy } from '../media/media-types.js';
import type { MediaContext } from '../media/storage.js';
import { UrlDownloads } from '../media/upload-from-url.js';
import type { MediaOfPost } from './validation.js';

/** The most distinct media URLs one import downloads: each is a download of up to the media limits. */
export const MAX_IMPORT_URLS = 100;

/** The longest media URL, as the contract's `ImportRow.media` items (a CSV cell is checked here). */
const MAX_URL_LENGTH = 2048;

/** Downloads at once: enough to overlap the remote servers' latency, few enough to be polite to them. */
const CONCURRENT_DOWNLOADS = 4;

/** A URL's place in an import: the media id its rows take, or why it cannot be taken. */
type Downloaded = { mediaId: string } | { problem: string };

/** Whether a `media` entry of a row is a URL rather than a media id (`med_…` has no colon). */
export const isMediaUrl = (entry: string): boolean => entry.includes(':');

/** Why a `media` entry that is a URL is none this server downloads, before any connection; `undefined` when fine. */
export function mediaUrlProblem(entry: string): string | undefined {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return `${entry} is neither a media id (med_…) nor a URL.`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return `${entry} is not an https:// or http:// URL; those are the addresses an import downloads.`;
  if (entry.length > MAX_URL_LENGTH)
    return `${entry.slice(0, 60)}… has ${entry.length} characters; a media URL has at most ${MAX_URL_LENGTH}.`;
  return undefined;
}

/**
 * The files an import downloads from its rows' media URLs, each URL once. An import stores them in the
 * organization's library, as `POST /public/v1/media/upload-from-url` would, and deletes them again when it
 * creates nothing; a dry run downloads and checks them but stores nothing, and judges each row by the
 * media the file would become.
 */
export class ImportDownloads {
  private readonly downloads: UrlDownloads;
  private readonly byUrl = new Map<string, Downloaded>();
  private readonly stored: string[] = [];
  /** What a dry run downloaded, as media under ids of their own: judged, never stored. */
  readonly unstored: MediaOfPost[] = [];

  constructor(
    private readonly ctx: MediaContext,
    private readonly organizationId: string,
    private readonly dryRun: boolean,
  ) {
    this.downloads = new UrlDownloads(ctx, new MediaPolicy(ctx.config.media), ctx.outbound);
  }

  /**
   * Downloads every URL, a few at once. A download that fails is recorded as its URL's problem; any other
   * failure (storage, the database) stops the downloads not yet begun and, once those under way have
   * ended (and are known to `discard`), is thrown.
   */
  async fetch(urls: string[]): Promise<void> {
    const waiting = [...new Set(urls)].filter((url) => !this.byUrl.has(url));
    const failures: unknown[] = [];
    const next = async (): Promise<void> => {
      for (let url = waiting.shift(); url !== undefined; url = waiting.shift()) {
        try {
          this.byUrl.set(url, await this.fetchOne(url));
        } catch (error) {
          failures.push(error);
          waiting.length = 0;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENT_DOWNLOADS, waiting.length) }, next));
    if (failures.length > 0) throw failures[0];
  }

  private async fetchOne(url: string): Promise<Downloaded> {
    try {
      if (this.dryRun) {
        const file = await this.downloads.inspect(url);
        const mediaId = newId('med');
        this.unstored.push({ id: mediaId, ...file });
        return { mediaId };
      }
      const media = await this.downloads.download(this.organizationId, url);
      this.stored.push(media.id);
      return { mediaId: media.id };
    } catch (error) {
      // The remote side's failures (unreachable, refused address, a type or size the server does not take).
      if (error instanceof DomainError) return { problem: error.message };
      throw error;
    }
  }

  /** The media id a row's entry stands for: the URL's download, or the entry itself (a media id). */
  mediaIdOf(entry: string): string {
    const downloaded = this.byUrl.get(entry);
    return downloaded && 'mediaId' in downloaded ? downloaded.mediaId : entry;
  }

  /** Why the file of a URL could not be taken; `undefined` when it was downloaded (or is no URL). */
  problemOf(entry: string): string | undefined {
    const downloaded = this.byUrl.get(entry);
    return downloaded && 'problem' in downloaded ? downloaded.problem : undefined;
  }

  /** A message about a row's media, naming the files by their URLs rather than by the ids they were given. */
  inRowTerms(message: string): string {
    let said = message;
    for (const [url, downloaded] of this.byUrl) {
      if ('mediaId' in downloaded) said = said.replaceAll(downloaded.mediaId, url);
    }
    return said;
  }

  /** Deletes what this import stored: it created nothing, and the files were downloaded for it alone. */
  async discard(): Promise<void> {
    for (const mediaId of this.stored.splice(0)) {
      await removeMedia(this.ctx, this.organizationId, mediaId).catch((error: unknown) => {
        this.ctx.logger.warn({ err: error, mediaId }, 'media downloaded for an import that failed was not deleted');
      });
    }
  }
}
