import type { operations } from '../../generated/public-v1.js';
import type { AppContext } from '../http/context.js';
import { postPosition, POSTS_LIST, readPostPosition } from './cursor.js';
import { toPostBody, type PostBody } from './post-body.js';
import { listPosts } from './queries.js';

type ListQuery = NonNullable<operations['listPosts']['parameters']['query']>;

/** One page of GET /posts and the cursor of the next, `null` on the last page. */
export async function listPostPage(
  ctx: AppContext,
  organizationId: string,
  query: ListQuery,
): Promise<{ data: PostBody[]; nextCursor: string | null }> {
  // The validator has filled in the contract's default limit and made repeatable parameters arrays.
  const limit = query.limit!;
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
  const scope = { list: POSTS_LIST, binding };
  const after = query.cursor === undefined ? undefined : ctx.cursors.decode(scope, query.cursor, readPostPosition);
  const filters = {
    from: query.from === undefined ? undefined : new Date(query.from),
    to: query.to === undefined ? undefined : new Date(query.to),
    channelIds: query.channelId,
    statuses: query.status,
    groupId: query.group,
  };
  // One row more than the page tells whether another page follows.
  const rows = await listPosts(ctx.db, organizationId, filters, after, limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const nextCursor =
    rows.length > limit && last
      ? ctx.cursors.encode(scope, postPosition({ scheduledAt: last.scheduled_at, id: last.id }))
      : null;
  return { data: page.map(toPostBody), nextCursor };
}
