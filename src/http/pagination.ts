import type { CursorCodec } from './cursors.js';

/** A list paged by cursor: its name, and how the position a cursor carries is read back. */
export interface CursorList<Position> {
  /** The list's name: a cursor reads back only in the list, and with the binding, that issued it. */
  name: string;
  /**
   * The position a cursor carries, checked like input though it is signed (the fields the list needs,
   * such as an instant the database can compare); `undefined` refuses the cursor with 400.
   */
  read: (written: unknown) => Position | undefined;
}

/** A list of rows in a stable order, each page starting after the last row of the previous one. */
export interface RowCursorList<Row, Position> extends CursorList<Position> {
  /** The position after a row, as its cursor carries it (plain JSON, read back by `read`). */
  positionOf(row: Row): object;
}

export interface PageRequest {
  /** What the page depends on besides its position: the organization and the list's filters. */
  binding: unknown;
  /** The `nextCursor` of the previous page; none for the first page. */
  cursor: string | undefined;
}

/**
 * The one way a list pages: `load` is given the position the request's cursor names (`undefined` for the
 * first page) and returns its page with `next`, where the following page starts (`null` after the last
 * page), which is signed into the page's `nextCursor` (see CursorCodec).
 */
export async function paginate<Position, Page extends { next: object | null }>(
  cursors: CursorCodec,
  list: CursorList<Position>,
  request: PageRequest,
  load: (after: Position | undefined) => Promise<Page>,
): Promise<Omit<Page, 'next'> & { nextCursor: string | null }> {
  const scope = { list: list.name, binding: request.binding };
  const after = request.cursor === undefined ? undefined : cursors.decode(scope, request.cursor, list.read);
  const { next, ...page } = await load(after);
  return { ...page, nextCursor: next === null ? null : cursors.encode(scope, next) };
}

/**
 * One page of rows of `limit`, for lists read from the database: `load` reads up to `count` rows after
 * the position, one more than the page, so that the extra row (not shown) tells whether another page
 * follows.
 */
export function paginateRows<Row, Position>(
  cursors: CursorCodec,
  list: RowCursorList<NoInfer<Row>, Position>,
  request: PageRequest & { limit: number },
  load: (after: Position | undefined, count: number) => Promise<Row[]>,
): Promise<{ items: Row[]; nextCursor: string | null }> {
  return paginate(cursors, list, request, async (after) => {
    const rows = await load(after, request.limit + 1);
    const items = rows.slice(0, request.limit);
    const last = items.at(-1);
    return { items, next: rows.length > request.limit && last ? list.positionOf(last) : null };
  });
}
