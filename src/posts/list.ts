import type { operations } from '../../generated/public-v1.js';
import type { AppContext } from '../http/context.js';
import { paginateRows } from '../http/pagination.js';
import { POSTS_LIST } from './cursor.js';
import { toPostBody, type PostBody } from './post-body.js';
import { listPosts } from './queries.js';

type ListQuery = NonNullable<operations['listPosts']['parameters']['query']>;

/** One page of GET /posts and the cursor of the next, `null` on the last page. */
export async function listPostPage(
  ctx: AppContext,
  organizationId: string,
  query: ListQuery,
): Promise<{ data: PostBody[]; nextCursor: string | null }> {
  // A cursor reads back only with the filters it was issued for (in any order); the page size may change.
  const sorted = (values: string[] | undefined) => (values === undefined ? undefined : [...values].sort());
  const binding = {
    organizationId,
    from: query.from,
    to: query.to,
    channelId: sorted(query.channelId),
    status: sorted(query.status),
    group: query.group,
  };
  const filters = {
    from: query.from === undefined ? undefined : new Date(query.from),
    to: query.to === undefined ? undefined : new Date(query.to),
    channelIds: query.channelId,
    statuses: query.status,
    groupId: query.group,
  };
  // The validator has filled in the contract's default limit and made repeatable parameters arrays.
  const request = { binding, cursor: query.cursor, limit: query.limit! };
  const { items, nextCursor } = await paginateRows(ctx.cursors, POSTS_LIST, request, (after, count) =>
    listPosts(ctx.db, organizationId, filters, after, count),
  );
  return { data: items.map(toPostBody), nextCursor };
}
