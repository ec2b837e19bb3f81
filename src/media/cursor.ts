import { isInstant } from '../http/instant.js';
import { isStorableText } from '../http/storable-text.js';

/** A position in the newest-first list: the last item of the previous page. */
export interface MediaCursor {
  createdAt: Date;
  id: string;
}

/** The list the media cursors belong to (see CursorCodec). */
export const MEDIA_LIST = 'media';

export function mediaPosition(cursor: MediaCursor): { c: string; i: string } {
  return { c: cursor.createdAt.toISOString(), i: cursor.id };
}

/** Checked like input, though signed: an id without NUL, an instant the database can compare. */
export function readMediaPosition(value: unknown): MediaCursor | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { c, i } = value as { c?: unknown; i?: unknown };
  if (typeof i !== 'string' || i.length === 0 || !isStorableText(i) || typeof c !== 'string' || !isInstant(c))
    return undefined;
  return { createdAt: new Date(c), id: i };
}
