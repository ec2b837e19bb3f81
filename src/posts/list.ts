import type { operations } from '../../generated/public-v1.js';
import type { Db } from '../db/database.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { listPosts, toPostBody, type PostBody } from './posts.js';

type ListQuery = NonNullable<operations['listPosts']['parameters']['query']>;

/** One page of GET /posts and the cursor of the next, `null` on the last page. */
export async function listPostPage(db: Db, organizationId: string, query: ListQuery): Promise<{ data: PostBody[]; nextCursor: string | null }> {
  // The validator has filled in the contract's default limit and made repeatable parameters arrays.
  const limit = query.limit!;
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  const filters = {
    from: query.from === undefined ? undefined : new Date(query.from),
    to: query.to === undefined ? undefined : new Date(query.to),
    channelIds: query.channelId,
    statuses: query.status,
    groupId: query.group,
  };
  // One row more than the page tells whether another page follows.
  const rows = await listPosts(db, organizationId, filters, after, limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const nextCursor = rows.length > limit && last ? encodeCursor({ scheduledAt: last.scheduled_at, id: last.id }) : null;
  return { data: page.map(toPostBody), nextCursor };
}
