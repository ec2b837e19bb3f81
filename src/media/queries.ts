import { sql } from 'kysely';
import type { PostStatus } from '../core/contract.js';
import type { Db } from '../db/database.js';
import type { MediaCursor } from './cursor.js';
import type { Media, NewMedia } from './tables.js';

/** Posts in these states will still read their media: it must not be deleted under them. */
export const MEDIA_IN_USE_STATUSES = ['scheduled', 'publishing'] as const satisfies readonly PostStatus[];

export function insertMedia(db: Db, media: NewMedia): Promise<Media> {
  return db.insertInto('media').values(media).returningAll().executeTakeFirstOrThrow();
}

/** Media of this organization; another organization's media is `undefined`, exactly like an unknown id. */
export function findMedia(db: Db, organizationId: string, mediaId: string): Promise<Media | undefined> {
  return db
    .selectFrom('media')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', mediaId)
    .executeTakeFirst();
}

/** Up to `count` of the organization's media after a position, newest first. */
export function listMediaPage(
  db: Db,
  organizationId: string,
  count: number,
  after: MediaCursor | undefined,
): Promise<Media[]> {
  let query = db.selectFrom('media').selectAll().where('organization_id', '=', organizationId);
  if (after) {
    query = query.where((eb) =>
      eb.or([
        eb('created_at', '<', after.createdAt),
        eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)]),
      ]),
    );
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(count).execute();
}

/** The organization's posts that are still to be published with this media. */
export function postsUsingMedia(
  db: Db,
  organizationId: string,
  mediaId: string,
): Promise<{ id: string; status: PostStatus }[]> {
  return db
    .selectFrom('posts')
    .select(['id', 'status'])
    .where('organization_id', '=', organizationId)
    .where('status', 'in', MEDIA_IN_USE_STATUSES)
    .where(
      sql<boolean>`(media_ids @> ${JSON.stringify([mediaId])}::jsonb
        or thread @> ${JSON.stringify([{ mediaIds: [mediaId] }])}::jsonb)`,
    )
    .orderBy('id')
    .execute();
}

export async function deleteMediaRow(db: Db, organizationId: string, mediaId: string): Promise<void> {
  await db.deleteFrom('media').where('organization_id', '=', organizationId).where('id', '=', mediaId).execute();
}
