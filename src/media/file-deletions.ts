import type { Db } from '../db/database.js';
import type { MediaContext } from './storage.js';

/** A file a worker is deleting is not taken again for this long (a worker that died with it lets it go). */
const CLAIM_MS = 10 * 60_000;
const BATCH = 100;
/** After this many failed attempts the file is left in the storage and forgotten (logged). */
const GIVE_UP_AFTER_ATTEMPTS = 20;

/**
 * Plans the deletion of every stored file of the organization's media and uploads, in the caller's
 * transaction (the one that deletes their rows): once it commits, the housekeeping removes the files.
 */
export async function planOrganizationFileDeletions(trx: Db, organizationId: string): Promise<number> {
  const keys = [
    ...(await trx.selectFrom('media').select('storage_key').where('organization_id', '=', organizationId).execute()),
    ...(await trx.selectFrom('uploads').select('storage_key').where('organization_id', '=', organizationId).execute()),
  ].map((row) => ({ storage_key: row.storage_key }));
  for (let start = 0; start < keys.length; start += 1000) {
    await trx
      .insertInto('stored_file_deletions')
      .values(keys.slice(start, start + 1000))
      .onConflict((oc) => oc.column('storage_key').doNothing())
      .execute();
  }
  return keys.length;
}

/**
 * Housekeeping: deletes the planned files from the storage, a batch at a time; a file whose deletion
 * fails is tried again at the next pass, with a growing wait.
 */
export async function deletePlannedFiles(ctx: MediaContext): Promise<void> {
  for (;;) {
    const now = ctx.clock.now();
    const claimed = await ctx.db
      .updateTable('stored_file_deletions')
      .set({ next_attempt_at: new Date(now.getTime() + CLAIM_MS) })
      .where('storage_key', 'in', (eb) =>
        eb
          .selectFrom('stored_file_deletions')
          .select('storage_key')
          .where('next_attempt_at', '<=', now)
          .orderBy('next_attempt_at')
          .limit(BATCH),
      )
      .where('next_attempt_at', '<=', now)
      .returning(['storage_key', 'attempts'])
      .execute();
    for (const file of claimed) {
      try {
        await ctx.storage.delete(file.storage_key);
      } catch (error) {
        const attempts = file.attempts + 1;
        if (attempts < GIVE_UP_AFTER_ATTEMPTS) {
          await ctx.db
            .updateTable('stored_file_deletions')
            .set({
              attempts,
              next_attempt_at: new Date(now.getTime() + Math.min(6 * 60 * 60_000, 60_000 * 2 ** attempts)),
            })
            .where('storage_key', '=', file.storage_key)
            .execute();
          continue;
        }
        ctx.logger.warn({ err: error, attempts }, 'gave up deleting the file of a deleted organization');
      }
      await ctx.db.deleteFrom('stored_file_deletions').where('storage_key', '=', file.storage_key).execute();
    }
    if (claimed.length < BATCH) return;
  }
}
