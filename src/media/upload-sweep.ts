import type { MediaContext } from './storage.js';
import { deleteUpload, uploadsExpiredBefore } from './upload-queries.js';

const HOUR_MS = 3_600_000;
/** Uploads (and bytes never completed) are forgotten this long after `expiresAt`. */
export const FORGET_AFTER_MS = 24 * HOUR_MS;
const SWEEP_BATCH = 100;

/**
 * Housekeeping: forgets uploads long past their expiry, with any bytes that were PUT but never
 * completed (or PUT again after completing), a batch at a time.
 */
export async function forgetStaleUploads(ctx: MediaContext, now: Date): Promise<void> {
  for (;;) {
    const stale = await uploadsExpiredBefore(ctx.db, new Date(now.getTime() - FORGET_AFTER_MS), SWEEP_BATCH);
    for (const upload of stale) {
      await ctx.storage.delete(upload.storage_key);
      await deleteUpload(ctx.db, upload.id);
    }
    if (stale.length < SWEEP_BATCH) return;
  }
}
