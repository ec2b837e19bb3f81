import { sql } from 'kysely';
import type { components } from '../../generated/public-v1.js';
import type { MediaContentType } from '../config.js';
import type { Db } from '../db/database.js';
import type { Media, NewMedia, PostStatus } from '../db/schema.js';
import { ValidationError } from '../errors.js';
import { isInstant } from '../http/instant.js';
import { isStorableText } from '../http/storable-text.js';
import type { MediaStorage } from './storage.js';

export type MediaBody = components['schemas']['Media'];

/** Posts in these states will still read their media: it must not be deleted under them. */
export const MEDIA_IN_USE_STATUSES = ['scheduled', 'publishing'] as const satisfies readonly PostStatus[];

export function mediaKey(organizationId: string, mediaId: string): string {
  return `media/${organizationId}/${mediaId}`;
}

/** The media as the contract shows it, with a fresh signed download URL. */
export async function toMediaBody(storage: MediaStorage, media: Media, urlExpiresAt: Date): Promise<MediaBody> {
  const contentType = media.content_type as MediaContentType;
  return {
    id: media.id,
    fileName: media.file_name,
    contentType,
    kind: media.kind,
    size: Number(media.size),
    url: await storage.signedGetUrl(media.storage_key, { contentType, expiresAt: urlExpiresAt }),
    urlExpiresAt: urlExpiresAt.toISOString(),
    createdAt: media.created_at.toISOString(),
  };
}

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

/** A position in the newest-first list: the last item of the previous page. */
export interface MediaCursor {
  createdAt: Date;
  id: string;
}

export function encodeCursor(cursor: MediaCursor): string {
  return Buffer.from(JSON.stringify({ c: cursor.createdAt.toISOString(), i: cursor.id })).toString('base64url');
}

export function decodeCursor(text: string): MediaCursor {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as { c?: unknown; i?: unknown };
    // Sent back by clients, so checked like input: an id without NUL, an instant the database can compare.
    if (typeof value.i === 'string' && value.i.length > 0 && isStorableText(value.i) && typeof value.c === 'string' && isInstant(value.c)) {
      return { createdAt: new Date(value.c), id: value.i };
    }
  } catch {
    // Falls through to the error below: a cursor is ours or it is nothing.
  }
  throw new ValidationError('The cursor is not one this API issued; pass the nextCursor of the previous page.', [
    { path: 'query.cursor', message: 'is not a cursor issued by this API' },
  ]);
}

/** One page, newest first; `limit + 1` rows are read so the caller knows whether another page follows. */
export function listMediaPage(db: Db, organizationId: string, limit: number, after: MediaCursor | undefined): Promise<Media[]> {
  let query = db.selectFrom('media').selectAll().where('organization_id', '=', organizationId);
  if (after) {
    query = query.where((eb) =>
      eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]),
    );
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit + 1).execute();
}

/** The organization's posts that are still to be published with this media. */
export function postsUsingMedia(db: Db, organizationId: string, mediaId: string): Promise<{ id: string; status: PostStatus }[]> {
  return db
    .selectFrom('posts')
    .select(['id', 'status'])
    .where('organization_id', '=', organizationId)
    .where('status', 'in', MEDIA_IN_USE_STATUSES)
    .where(sql<boolean>`media_ids @> ${JSON.stringify([mediaId])}::jsonb`)
    .orderBy('id')
    .execute();
}

export async function deleteMediaRow(db: Db, organizationId: string, mediaId: string): Promise<void> {
  await db.deleteFrom('media').where('organization_id', '=', organizationId).where('id', '=', mediaId).execute();
}
