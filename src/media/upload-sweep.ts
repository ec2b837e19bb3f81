import type { MediaContext } from './storage.js';
import { deleteUpload, uploadsExpiredBefore } from './upload-queries.js';

const HOUR_MS = 3_600_000;
/** Uploads (and bytes never completed) are forgotten this long after `expiresAt`. */
export const FORGET_AFTER_MS = 24 * HOUR_MS;
const SWEEP_BATCH = 100;

/**
 * Forgets uploads long past their expiry, with any bytes that were PUT but never completed (or PUT
 * again after completing), in small batches. A failure is logged: the next sweep tries again.
 */
export async function forgetStaleUploads(ctx: MediaContext, now: Date): Promise<void> {
  const stale = await uploadsExpiredBefore(ctx.db, new Date(now.getTime() - FORGET_AFTER_MS), SWEEP_BATCH);
  try {
    for (const upload of stale) {
      await ctx.storage.delete(upload.storage_key);
      await deleteUpload(ctx.db, upload.id);
    }
  } catch (error) {
    ctx.logger.warn({ err: error }, 'could not forget stale uploads');
  }
}
