import { isInstant } from '../http/instant.js';
import { isStorableText } from '../http/storable-text.js';

/** Where a page of posts ended: the sort key of its last post. */
export interface PostCursor {
  scheduledAt: Date | null;
  id: string;
}

/** The list the posts' cursors belong to (see CursorCodec). */
export const POSTS_LIST = 'posts';

/** Millisecond precision is exact: `scheduled_at` is only ever written from JavaScript dates. */
export function postPosition(cursor: PostCursor): { s: string | null; i: string } {
  return { s: cursor.scheduledAt?.toISOString() ?? null, i: cursor.id };
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * A signed cursor was issued by this API, but its position is still checked like input: an id
 * without NUL, an instant in the range the API stores.
 */
export function readPostPosition(value: unknown): PostCursor | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { s, i } = value as { s?: unknown; i?: unknown };
  if (typeof i !== 'string' || i === '' || !isStorableText(i)) return undefined;
  if (s === null) return { scheduledAt: null, id: i };
  if (typeof s !== 'string' || !ISO_INSTANT.test(s) || !isInstant(s)) return undefined;
  return { scheduledAt: new Date(s), id: i };
}
