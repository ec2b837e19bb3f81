import type { MediaContentType } from '../core/contract.js';
import type { Db } from '../db/database.js';
import { kindOf } from './media-types.js';
import { insertMedia } from './queries.js';
import type { ImageDimensions } from './image-dimensions.js';
import type { Media, NewUpload, Upload } from './tables.js';
import { transaction } from '../db/transaction.js';

export function insertUpload(db: Db, upload: NewUpload): Promise<unknown> {
  return db.insertInto('uploads').values(upload).execute();
}

export function findUpload(db: Db, organizationId: string, uploadId: string): Promise<Upload | undefined> {
  return db
    .selectFrom('uploads')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', uploadId)
    .executeTakeFirst();
}

/**
 * Takes the upload for one request until `until` (a lease, so a crashed request does not block it
 * for ever); false when another request holds it or it is settled already.
 */
export async function claimUpload(db: Db, uploadId: string, now: Date, until: Date): Promise<boolean> {
  const claimed = await db
    .updateTable('uploads')
    .set({ completing_until: until })
    .where('id', '=', uploadId)
    .where('media_id', 'is', null)
    .where('failure', 'is', null)
    .where((eb) => eb.or([eb('completing_until', 'is', null), eb('completing_until', '<', now)]))
    .executeTakeFirst();
  return Number(claimed.numUpdatedRows) === 1;
}

export async function releaseUpload(db: Db, uploadId: string): Promise<void> {
  await db.updateTable('uploads').set({ completing_until: null }).where('id', '=', uploadId).execute();
}

/** Records why the upload is refused, so completing it again says the same. */
export async function markUploadRefused(db: Db, uploadId: string, reason: string): Promise<void> {
  await db.updateTable('uploads').set({ failure: reason }).where('id', '=', uploadId).execute();
}

/** The media an upload became, and the upload marked as completed by it, in one transaction. */
export function recordUploadedMedia(
  db: Db,
  upload: Upload,
  stored: {
    mediaId: string;
    key: string;
    mediaType: MediaContentType;
    size: number;
    durationMs: number | null;
    dimensions: ImageDimensions | undefined;
    pageCount: number | null;
    now: Date;
  },
): Promise<Media> {
  const { mediaId, key, mediaType, size, durationMs, dimensions, pageCount, now } = stored;
  return transaction(db, async (trx) => {
    const media = await insertMedia(trx, {
      id: mediaId,
      organization_id: upload.organization_id,
      file_name: upload.file_name,
      content_type: mediaType,
      kind: kindOf(mediaType),
      size,
      storage_key: key,
      duration_ms: durationMs,
      width: dimensions?.width ?? null,
      height: dimensions?.height ?? null,
      page_count: pageCount,
      created_at: now,
    });
    await trx
      .updateTable('uploads')
      .set({ media_id: mediaId, completing_until: null })
      .where('id', '=', upload.id)
      .execute();
    return media;
  });
}

/** Uploads whose expiry is before `cutoff`, a batch at a time. */
export function uploadsExpiredBefore(
  db: Db,
  cutoff: Date,
  limit: number,
): Promise<Pick<Upload, 'id' | 'storage_key'>[]> {
  return db.selectFrom('uploads').select(['id', 'storage_key']).where('expires_at', '<', cutoff).limit(limit).execute();
}

export async function deleteUpload(db: Db, uploadId: string): Promise<void> {
  await db.deleteFrom('uploads').where('id', '=', uploadId).execute();
}
