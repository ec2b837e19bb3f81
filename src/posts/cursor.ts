import { ValidationError } from '../errors.js';
import { isInstant } from '../http/instant.js';
import { isStorableText } from '../http/storable-text.js';

/** Where a page of posts ended: the sort key of its last post. */
export interface PostCursor {
  scheduledAt: Date | null;
  id: string;
}

/**
 * The cursor is opaque to clients: base64url of `{"s": scheduledAt or null, "i": id}`. Millisecond
 * precision is exact because `scheduled_at` is only ever written from JavaScript dates.
 */
export function encodeCursor(cursor: PostCursor): string {
  const key = { s: cursor.scheduledAt?.toISOString() ?? null, i: cursor.id };
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function decodeCursor(value: string): PostCursor {
  const invalid = () =>
    new ValidationError('The cursor is not one this list returned; start again without a cursor.', [
      { path: 'query.cursor', message: 'is not a cursor returned by GET /public/v1/posts' },
    ]);
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (typeof key !== 'object' || key === null) throw invalid();
  const { s, i } = key as { s?: unknown; i?: unknown };
  // A cursor is sent back by clients, so it is input like any other: its parts must be values the
  // database can compare against (an id without NUL, an instant in the range the API stores).
  if (typeof i !== 'string' || i === '' || !isStorableText(i)) throw invalid();
  if (s === null) return { scheduledAt: null, id: i };
  if (typeof s !== 'string' || !ISO_INSTANT.test(s) || !isInstant(s)) throw invalid();
  return { scheduledAt: new Date(s), id: i };
}
