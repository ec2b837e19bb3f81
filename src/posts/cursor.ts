import { isInstant } from '../http/instant.js';
import type { RowCursorList } from '../http/pagination.js';
import { isStorableText } from '../http/storable-text.js';
import type { Post } from './tables.js';

/** Where a page of posts ended: the sort key of its last post. */
export interface PostCursor {
  scheduledAt: Date | null;
  id: string;
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The list of posts in `listPosts`' order, paged after the sort key of a page's last post. */
export const POSTS_LIST: RowCursorList<Pick<Post, 'scheduled_at' | 'id'>, PostCursor> = {
  name: 'posts',
  // Millisecond precision is exact: `scheduled_at` is only ever written from JavaScript dates.
  positionOf: (post) => ({ s: post.scheduled_at?.toISOString() ?? null, i: post.id }),
  // A signed cursor was issued by this API, but its position is still checked like input: an id
  // without NUL, an instant in the range the API stores.
  read(value) {
    if (typeof value !== 'object' || value === null) return undefined;
    const { s, i } = value as { s?: unknown; i?: unknown };
    if (typeof i !== 'string' || i === '' || !isStorableText(i)) return undefined;
    if (s === null) return { scheduledAt: null, id: i };
    if (typeof s !== 'string' || !ISO_INSTANT.test(s) || !isInstant(s)) return undefined;
    return { scheduledAt: new Date(s), id: i };
  },
};
