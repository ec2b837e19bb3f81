import type { components } from '../../generated/public-v1.js';
import { ConflictError, NotFoundError } from '../core/errors.js';
import { paginateRows } from '../http/pagination.js';
import { MEDIA_LIST } from './cursor.js';
import { toMediaBody, type MediaBody } from './media-body.js';
import { deleteMediaRow, findMedia, listMediaPage, postsUsingMedia } from './queries.js';
import type { MediaContext } from './storage.js';
import type { Media } from './tables.js';
import { transaction } from '../db/transaction.js';

type MediaPage = components['schemas']['MediaPage'];

// A conflict names at most this many posts; its message gives the total.
const MAX_CONFLICT_DETAILS = 20;

/** The media as the contract shows it, with a download URL valid for the configured time. */
export function presentMedia(ctx: MediaContext, media: Media): Promise<MediaBody> {
  return toMediaBody(ctx.storage, media, downloadUrlExpiry(ctx));
}

/** When download URLs signed now stop working; whole seconds, as signed URLs carry it. */
export function downloadUrlExpiry(ctx: MediaContext): Date {
  const now = Math.floor(ctx.clock.now().getTime() / 1000) * 1000;
  return new Date(now + ctx.config.media.downloadUrlTtlSeconds * 1000);
}

/** One page of the organization's media, newest first. */
export async function mediaPage(
  ctx: MediaContext,
  organizationId: string,
  { limit, cursor }: { limit: number; cursor: string | undefined },
): Promise<MediaPage> {
  const request = { binding: { organizationId }, cursor, limit };
  const { items, nextCursor } = await paginateRows(ctx.cursors, MEDIA_LIST, request, (after, count) =>
    listMediaPage(ctx.db, organizationId, count, after),
  );
  const expiresAt = downloadUrlExpiry(ctx);
  return { data: await Promise.all(items.map((media) => toMediaBody(ctx.storage, media, expiresAt))), nextCursor };
}

/** Deletes media and its file, unless a post that is still to be published uses it (409). */
export async function removeMedia(ctx: MediaContext, organizationId: string, mediaId: string): Promise<void> {
  const media = await findMedia(ctx.db, organizationId, mediaId);
  if (!media) throw new NotFoundError(`There is no media ${mediaId} in this organization.`);
  await transaction(ctx.db, async (trx) => {
    // Locked, so that a post writer reading this media FOR SHARE waits for the delete and then sees
    // the media gone, instead of scheduling a post with it in between.
    await trx.selectFrom('media').select('id').where('id', '=', media.id).forUpdate().execute();
    const posts = await postsUsingMedia(trx, organizationId, media.id);
    if (posts.length > 0) {
      throw new ConflictError(
        `The media is used by ${posts.length} scheduled or publishing post${posts.length === 1 ? '' : 's'}; ` +
          'delete or edit those posts first.',
        posts
          .slice(0, MAX_CONFLICT_DETAILS)
          .map((post) => ({ path: 'id', message: `used by ${post.id} (${post.status})` })),
      );
    }
    await deleteMediaRow(trx, organizationId, media.id);
  });
  // After the commit: a file left behind by a failed delete is harmless, a row without its file is not.
  await ctx.storage.delete(media.storage_key).catch((error: unknown) => {
    ctx.logger.warn({ err: error, mediaId: media.id }, 'the file of deleted media could not be deleted');
  });
}
