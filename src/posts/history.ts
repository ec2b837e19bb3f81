import type { components } from '../../generated/public-v1.js';
import type { AppContext } from '../http/context.js';
import { listPostEvents, toPostEventBody } from './events.js';
import { getPost } from './lifecycle.js';

type PostEventPage = components['schemas']['PostEventPage'];

const HISTORY_LIST = 'post-history';

/** A history position: the id of the last event of the previous page. */
function readEventPosition(value: unknown): string | undefined {
  const id = (value as { e?: unknown } | null)?.e;
  return typeof id === 'string' && /^\d{1,19}$/.test(id) ? id : undefined;
}

/** One page of a post's history, oldest first; 404 for a post that is not the organization's. */
export async function postHistoryPage(
  ctx: AppContext,
  organizationId: string,
  postId: string,
  query: { limit?: number; cursor?: string },
): Promise<PostEventPage> {
  await getPost(ctx.db, organizationId, postId);
  const limit = query.limit!;
  const scope = { list: HISTORY_LIST, binding: { organizationId, postId } };
  const after = query.cursor === undefined ? undefined : ctx.cursors.decode(scope, query.cursor, readEventPosition);
  const rows = await listPostEvents(ctx.db, postId, after, limit);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    data: page.map(toPostEventBody),
    nextCursor: rows.length > limit && last ? ctx.cursors.encode(scope, { e: String(last.id) }) : null,
  };
}
