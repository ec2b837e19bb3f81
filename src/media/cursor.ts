import { isInstant } from '../http/instant.js';
import type { RowCursorList } from '../http/pagination.js';
import { isStorableText } from '../http/storable-text.js';
import type { Media } from './tables.js';

/** A position in the newest-first list: the last item of the previous page. */
export interface MediaCursor {
  createdAt: Date;
  id: string;
}

/** The organization's media, newest first, paged after the last item of a page. */
export const MEDIA_LIST: RowCursorList<Pick<Media, 'created_at' | 'id'>, MediaCursor> = {
  name: 'media',
  positionOf: (media) => ({ c: media.created_at.toISOString(), i: media.id }),
  // Checked like input, though signed: an id without NUL, an instant the database can compare.
  read(value) {
    if (typeof value !== 'object' || value === null) return undefined;
    const { c, i } = value as { c?: unknown; i?: unknown };
    if (typeof i !== 'string' || i.length === 0 || !isStorableText(i) || typeof c !== 'string' || !isInstant(c))
      return undefined;
    return { createdAt: new Date(c), id: i };
  },
};
