import { sql } from 'kysely';
import type { PostStatus } from '../core/contract.js';
import { UnprocessableError } from '../core/errors.js';
import { compiledOnce } from '../db/compiled-once.js';
import type { Db } from '../db/database.js';
import type { PostCursor } from './cursor.js';
import type { PostRow } from './post-body.js';
import type { PostUpdate, StoredFirstComment, StoredThreadPart } from './tables.js';

function selectPosts(db: Db, organizationId: string) {
  return (
    db
      .selectFrom('posts')
      .selectAll('posts')
      // Each post's channel read by its key for the rows returned only, after the list is sorted and cut
      // to its page: joined instead, the planner hashed every channel of the installation for a week's
      // posts, thousands of them once organizations add up, and chose how to read the posts by the join.
      .select((eb) =>
        eb
          .selectFrom('channels')
          .select('channels.provider')
          .whereRef('channels.id', '=', 'posts.channel_id')
          .$asScalar()
          .$notNull()
          .as('provider'),
      )
      .where('posts.organization_id', '=', organizationId)
  );
}

/** A post of this organization; another organization's post is `undefined`, exactly like an unknown one. */
const postById = compiledOnce(2, (db, organizationId: string, postId: string) =>
  selectPosts(db, organizationId).where('posts.id', '=', postId),
);

export async function findPost(db: Db, organizationId: string, postId: string): Promise<PostRow | undefined> {
  return (await db.executeQuery(postById(db, organizationId, postId))).rows[0];
}

/** Like `findPost`, and holds the post's row until the transaction ends, so its status cannot change meanwhile. */
export function lockPost(trx: Db, organizationId: string, postId: string): Promise<PostRow | undefined> {
  return selectPosts(trx, organizationId).where('posts.id', '=', postId).forUpdate('posts').executeTakeFirst();
}

/** A thread part as stored before it is published. */
export function unpublishedPart(part: {
  content: string;
  mediaIds: string[];
  altTexts: Record<string, string>;
}): StoredThreadPart {
  return {
    content: part.content,
    mediaIds: part.mediaIds,
    altTexts: part.altTexts,
    releaseId: null,
    releaseUrl: null,
    reference: null,
  };
}

/** A first comment as stored before it is published. */
export function unpublishedComment(comment: { content: string }): StoredFirstComment {
  return { content: comment.content, releaseId: null, releaseUrl: null, reference: null };
}

/** The media of a post and of its thread's parts, each list with the path of its field. */
export function mediaOf(post: {
  mediaIds: string[];
  thread: { mediaIds: string[] }[];
  paths: { mediaIds: string; thread: string | undefined };
}): { mediaIds: string[]; path: string }[] {
  const { paths } = post;
  return [
    { mediaIds: post.mediaIds, path: paths.mediaIds },
    ...post.thread.map((part, i) => ({ mediaIds: part.mediaIds, path: `${paths.thread ?? 'thread'}[${i}].mediaIds` })),
  ];
}

/**
 * Re-reads the media of posts about to be written, locked FOR SHARE: deleting media locks it FOR
 * UPDATE and refuses while a scheduled post uses it, so holding the share lock until the post is
 * written means no post can be scheduled with media deleted in between. Problems name the field.
 */
export async function assertMediaStillPresent(
  trx: Db,
  organizationId: string,
  items: { mediaIds: string[]; path: string }[],
): Promise<void> {
  const ids = [...new Set(items.flatMap((item) => item.mediaIds))];
  if (ids.length === 0) return;
  const present = new Set(
    (
      await trx
        .selectFrom('media')
        .select('id')
        .where('organization_id', '=', organizationId)
        .where('id', 'in', ids)
        .forShare()
        .execute()
    ).map((row) => row.id),
  );
  const problems = items.flatMap((item) =>
    item.mediaIds.flatMap((id, index) =>
      present.has(id)
        ? []
        : [
            {
              path: `${item.path}[${index}]`,
              message: `There is no media ${id} in this organization (it was deleted).`,
            },
          ],
    ),
  );
  if (problems.length > 0)
    throw new UnprocessableError('Media of the post no longer exists; nothing was changed.', problems);
}

export async function updatePost(
  trx: Db,
  organizationId: string,
  postId: string,
  changes: PostUpdate,
): Promise<PostRow> {
  await trx
    .updateTable('posts')
    .set(changes)
    .where('organization_id', '=', organizationId)
    .where('id', '=', postId)
    .execute();
  const post = await findPost(trx, organizationId, postId);
  if (!post) throw new Error(`post ${postId} vanished while it was being updated`);
  return post;
}

export async function deletePost(trx: Db, organizationId: string, postId: string): Promise<void> {
  await trx.deleteFrom('posts').where('organization_id', '=', organizationId).where('id', '=', postId).execute();
}

export interface PostFilters {
  from?: Date | undefined;
  to?: Date | undefined;
  channelIds?: string[] | undefined;
  statuses?: PostStatus[] | undefined;
  groupId?: string | undefined;
}

/**
 * One page of the organization's posts in the list order: `scheduledAt` ascending with undated posts
 * last, then `id`. `after` is the sort key of the previous page's last post; comparing against it
 * (keyset pagination) instead of skipping an offset means posts created while a client pages never
 * shift the rows that existed, so none is shown twice or skipped.
 */
export function listPosts(
  db: Db,
  organizationId: string,
  filters: PostFilters,
  after: PostCursor | undefined,
  limit: number,
) {
  return postPageQuery(db, organizationId, filters, after, limit).execute();
}

/** The query behind `listPosts`, to read its plan. */
export function postPageQuery(
  db: Db,
  organizationId: string,
  filters: PostFilters,
  after: PostCursor | undefined,
  limit: number,
) {
  let query = selectPosts(db, organizationId);
  // The sort key as one indexed row value: undated posts sort as if due at 'infinity', and ids compare
  // byte by byte whatever the database's locale, so "then by id" means the same everywhere.
  const dueAt = sql<Date>`coalesce(posts.scheduled_at, 'infinity'::timestamptz)`;
  const id = sql<string>`(posts.id collate "C")`;
  // The times as a range of the sort key, which the list's indexes hold, so that a week reads its own
  // posts; an undated post (its key 'infinity') is in no range.
  if (filters.from || filters.to) {
    if (filters.from) query = query.where(dueAt, '>=', filters.from);
    query = query.where(dueAt, '<', filters.to ?? sql<Date>`'infinity'::timestamptz`);
  }
  if (filters.channelIds?.length) query = query.where('posts.channel_id', 'in', filters.channelIds);
  if (filters.statuses?.length) query = query.where('posts.status', 'in', filters.statuses);
  if (filters.groupId) query = query.where('posts.group_id', '=', filters.groupId);
  if (after) {
    query = query.where(
      sql<boolean>`
        (${dueAt}, ${id})
        > (coalesce(${after.scheduledAt}::timestamptz, 'infinity'::timestamptz), ${after.id} collate "C")
      `,
    );
  }
  return query.orderBy(dueAt).orderBy(id).limit(limit);
}
