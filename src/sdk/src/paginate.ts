/**
 * Every item of a list the API answers page by page: fetches the first page (cursor `undefined`),
 * yields its items, then fetches the page its `nextCursor` names, until `nextCursor` is null.
 *
 * A page is fetched only once the items before it are consumed, so a consumer that stops early
 * (`break` out of `for await`) sends no further request. A failed page fetch rejects the
 * iteration with that error, after the items of the earlier pages.
 */
export async function* paginate<Page extends { nextCursor: string | null }, Item>(
  fetchPage: (cursor: string | undefined) => Promise<Page>,
  itemsOf: (page: Page) => readonly Item[],
): AsyncGenerator<Item, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield* itemsOf(page);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}
