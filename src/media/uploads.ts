import type { components } from '../../generated/public-v1.js';
import type { MediaContentType } from '../core/contract.js';
import { ConflictError, NotFoundError, UnprocessableError } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { mediaKey } from './media-body.js';
import { kindOf, SNIFF_BYTES, sniffContentType, type MediaPolicy } from './media-types.js';
import { readVideoDuration, storedRanges } from './video-duration.js';
import { readImageDimensions, type ImageDimensions } from './image-dimensions.js';
import { readPageCount, UNREADABLE_DOCUMENT } from './document-pages.js';
import { findMedia } from './queries.js';
import { ObjectMissingError, type MediaContext } from './storage.js';
import type { Media, Upload } from './tables.js';
import {
  claimUpload,
  findUpload,
  insertUpload,
  markUploadRefused,
  recordUploadedMedia,
  releaseUpload,
} from './upload-queries.js';
import { FORGET_AFTER_MS } from './upload-sweep.js';

export type UploadBody = components['schemas']['Upload'];
export type CreateUploadRequest = components['schemas']['CreateUploadRequest'];

/** A PUT that started before `expiresAt` may end after it; completing stays possible this long after. */
export const COMPLETE_GRACE_MS = 3_600_000;
/** How long one request may hold an upload while checking and moving its bytes. */
const COMPLETING_LEASE_MS = 5 * 60_000;

export function uploadKey(organizationId: string, uploadId: string): string {
  return `uploads/${organizationId}/${uploadId}`;
}

const wholeSeconds = (ms: number) => new Date(Math.floor(ms / 1000) * 1000);

/**
 * Bytes of an upload found as declared: their size and type, a video's duration, an image's dimensions
 * and a document's number of pages.
 */
interface CheckedBytes {
  size: number;
  mediaType: MediaContentType;
  durationMs: number | null;
  dimensions: ImageDimensions | undefined;
  pageCount: number | null;
}

/**
 * The signed three-step upload: create (declare name, type and size; get a signed PUT URL), PUT the
 * bytes straight to storage, complete (check the bytes, create the media).
 */
export class SignedUploads {
  constructor(
    private readonly ctx: MediaContext,
    private readonly policy: MediaPolicy,
  ) {}

  async create(organizationId: string, request: CreateUploadRequest): Promise<UploadBody> {
    const contentType = this.policy.acceptDeclared(request.contentType);
    this.policy.checkSize(contentType, request.size);
    const now = this.ctx.clock.now();
    // Whole seconds: signed URLs carry their expiry in seconds.
    const expiresAt = wholeSeconds(now.getTime() + this.ctx.config.media.uploadUrlTtlSeconds * 1000);
    const id = newId('upl');
    const upload = {
      id,
      organization_id: organizationId,
      file_name: request.fileName,
      content_type: contentType,
      size: request.size,
      storage_key: uploadKey(organizationId, id),
      expires_at: expiresAt,
      media_id: null,
      failure: null,
      completing_until: null,
      created_at: now,
    };
    await insertUpload(this.ctx.db, upload);
    const { url, headers } = await this.ctx.storage.signedPutUrl(upload.storage_key, {
      contentType,
      size: request.size,
      expiresAt,
    });
    return { uploadId: id, uploadUrl: url, method: 'PUT', headers, expiresAt: expiresAt.toISOString() };
  }

  /**
   * Checks the uploaded bytes and turns them into media. Idempotent: a completed upload answers its
   * media again, a refused one its refusal again.
   */
  async complete(organizationId: string, uploadId: string): Promise<Media> {
    const { db } = this.ctx;
    const upload = await findUpload(db, organizationId, uploadId);
    const now = this.ctx.clock.now();
    // Forgotten a day after expiring, as the contract says, whether or not a sweep has removed it yet:
    // the sweep runs only as new uploads are created.
    if (!upload || now.getTime() > upload.expires_at.getTime() + FORGET_AFTER_MS) {
      throw new NotFoundError(`There is no upload ${uploadId} in this organization.`);
    }
    if (upload.media_id) return this.completedMedia(upload);
    if (upload.failure) throw new UnprocessableError(upload.failure);

    if (now.getTime() > upload.expires_at.getTime() + COMPLETE_GRACE_MS) {
      throw await this.refuse(
        upload,
        `The upload expired at ${upload.expires_at.toISOString()} and was not completed within an hour after; ` +
          'start a new upload.',
      );
    }

    if (!(await claimUpload(db, upload.id, now, new Date(now.getTime() + COMPLETING_LEASE_MS)))) {
      const current = await findUpload(db, organizationId, uploadId);
      if (current?.media_id) return this.completedMedia(current);
      if (current?.failure) throw new UnprocessableError(current.failure);
      throw new ConflictError('Another request is completing this upload right now; retry in a moment.');
    }
    let completed = false;
    try {
      const media = await this.checkAndStore(upload, now);
      completed = true;
      return media;
    } catch (error) {
      if (error instanceof ObjectMissingError) {
        throw new ConflictError(`The bytes of upload ${upload.id} are gone; start a new upload.`);
      }
      throw error;
    } finally {
      if (!completed) await releaseUpload(db, upload.id);
    }
  }

  /** Checks the stored bytes against the declaration and records them as media (the upload is claimed). */
  private async checkAndStore(upload: Upload, now: Date): Promise<Media> {
    const checked = await this.checkBytes(upload);
    return this.storeAsMedia(upload, checked, now);
  }

  /** The stored bytes, refused unless they are all there and of the declared type; a video's duration. */
  private async checkBytes(upload: Upload): Promise<CheckedBytes> {
    const { storage } = this.ctx;
    const stored = await storage.stat(upload.storage_key);
    if (!stored) {
      throw new ConflictError(
        `The bytes of upload ${upload.id} have not arrived yet: PUT them to the upload URL, then complete the upload.`,
      );
    }
    const declaredSize = Number(upload.size);
    if (stored.size !== declaredSize) {
      throw await this.refuse(
        upload,
        `The upload has ${stored.size} bytes but ${declaredSize} were declared; start a new upload.`,
      );
    }
    const { mediaType, detected } = await sniffContentType(await readHead(this.ctx, upload.storage_key, stored.size));
    if (!mediaType || mediaType !== upload.content_type) {
      throw await this.refuse(
        upload,
        `The bytes are ${detected} but the upload was declared as ${upload.content_type}; ` +
          'start a new upload with the right content type.',
      );
    }

    const ranges = storedRanges((range) => storage.get(upload.storage_key, range), stored.size);
    const kind = kindOf(mediaType);
    const durationMs = kind === 'video' ? await readVideoDuration(ranges, stored.size, mediaType) : null;
    const dimensions = kind === 'image' ? await readImageDimensions(ranges) : undefined;
    let pageCount: number | null = null;
    if (kind === 'document') {
      const pages = await readPageCount(ranges, stored.size);
      if (pages === undefined) throw await this.refuse(upload, UNREADABLE_DOCUMENT);
      pageCount = pages;
    }
    return { size: declaredSize, mediaType, durationMs, dimensions, pageCount };
  }

  /** Records checked bytes as media, under a key of their own. */
  private async storeAsMedia(upload: Upload, checked: CheckedBytes, now: Date): Promise<Media> {
    const { db, storage } = this.ctx;
    const mediaId = newId('med');
    const key = mediaKey(upload.organization_id, mediaId);
    // The media gets a key of its own, so a late PUT to the still-valid upload URL cannot replace
    // bytes that were already checked.
    await storage.move(upload.storage_key, key);
    try {
      return await recordUploadedMedia(db, upload, { ...checked, mediaId, key, now });
    } catch (error) {
      // Nothing points at the moved bytes: put them back where the upload keeps them, so that
      // completing again can succeed instead of finding them gone.
      await storage.move(key, upload.storage_key).catch((moveError: unknown) => {
        this.ctx.logger.error(
          { err: moveError, uploadId: upload.id },
          'could not return the bytes of an upload whose completion failed',
        );
      });
      throw error;
    }
  }

  private async completedMedia(upload: Upload): Promise<Media> {
    const media = await findMedia(this.ctx.db, upload.organization_id, upload.media_id as string);
    if (!media) {
      throw new UnprocessableError(
        `The upload was completed as media ${upload.media_id}, which has since been deleted; start a new upload.`,
      );
    }
    return media;
  }

  /** Records why the upload is refused (so completing again says the same) and deletes its bytes. */
  private async refuse(upload: Upload, reason: string): Promise<UnprocessableError> {
    await markUploadRefused(this.ctx.db, upload.id, reason);
    await this.ctx.storage.delete(upload.storage_key);
    return new UnprocessableError(reason);
  }
}

/** The first bytes of a stored object, enough to recognise its type. */
async function readHead(ctx: MediaContext, key: string, size: number): Promise<Buffer> {
  if (size === 0) return Buffer.alloc(0);
  const stream = await ctx.storage.get(key, { start: 0, end: Math.min(size, SNIFF_BYTES) - 1 });
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
