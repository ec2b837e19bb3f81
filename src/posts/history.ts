import type { components } from '../../generated/public-v1.js';
import type { AppContext } from '../http/context.js';
import { paginateRows, type RowCursorList } from '../http/pagination.js';
import { listPostEvents, toPostEventBody } from './events.js';
import { getPost } from './lifecycle.js';
import type { PostEventRow } from './tables.js';

type PostEventPage = components['schemas']['PostEventPage'];

/** A post's events, oldest first, paged after the id of the last event of a page. */
const HISTORY_LIST: RowCursorList<Pick<PostEventRow, 'id'>, string> = {
  name: 'post-history',
  positionOf: (event) => ({ e: String(event.id) }),
  read(value) {
    const id = (value as { e?: unknown } | null)?.e;
    return typeof id === 'string' && /^\d{1,19}$/.test(id) ? id : undefined;
  },
};

/** One page of a post's history, oldest first; 404 for a post that is not the organization's. */
export async function postHistoryPage(
  ctx: AppContext,
  organizationId: string,
  postId: string,
  query: { limit?: number; cursor?: string },
): Promise<PostEventPage> {
  await getPost(ctx.db, organizationId, postId);
  const request = { binding: { organizationId, postId }, cursor: query.cursor, limit: query.limit! };
  const { items, nextCursor } = await paginateRows(ctx.cursors, HISTORY_LIST, request, (after, count) =>
    listPostEvents(ctx.db, postId, after, count),
  );
  return { data: items.map(toPostEventBody), nextCursor };
}
