/** One page of a list response. */
export interface Page<T> {
  items: T[];
  totalItems: number;
  pageNumber: number;
  pageSize: number;
}

/**
 * The result of a `list()` call: iterate it with `for await` to walk every item of every page, or
 * call {@link PageIterator.pages} to walk whole pages. Pages are fetched lazily, one at a time.
 */
export class PageIterator<T> implements AsyncIterable<T> {
  readonly #fetchPage: (pageNumber: number) => Promise<Page<T>>;
  readonly #firstPage: number;

  /** @internal */
  constructor(fetchPage: (pageNumber: number) => Promise<Page<T>>, firstPage = 1) {
    this.#fetchPage = fetchPage;
    this.#firstPage = firstPage;
  }

  /** Every page from the first asked for to the last. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    for (let pageNumber = this.#firstPage; ; pageNumber++) {
      const page = await this.#fetchPage(pageNumber);
      yield page;
      if (page.items.length === 0 || page.pageNumber * page.pageSize >= page.totalItems) return;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }

  /** Collects every item into an array. */
  async toArray(): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}
