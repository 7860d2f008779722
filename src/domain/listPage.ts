// How long a page of a list is (issue 20, item 1; docs/reading.md "How long a page is"): at most
// its `limit` entries, and it ends early — with a `nextCursor` — before the entry that would take its
// entries past LIST_PAGE_MAX_BYTES once encoded as JSON. Its first entry is always listed, so every
// page moves on. The store reads a page under the same budget counted in stored bytes and hands over
// the rows past it unread (`fetched: false`): the page ends at the first of those. Pure.
import { jsonBytes } from "./jsonSize.ts"

/** The encoded size of a page's entries (the answer around them adds under 100 bytes). */
export const LIST_PAGE_MAX_BYTES = 1024 * 1024

export interface PageOptions<Row, View> {
  /** The page's `limit`: the store reads one row more, to tell whether another page follows. */
  readonly limit: number
  /** Whether the store read the row's large columns (false past its byte budget). */
  readonly fetched: (row: Row) => boolean
  readonly view: (row: Row) => View
}

/** The views of the page out of the rows read for it, and whether another page follows. */
export const takePage = <Row, View>(rows: ReadonlyArray<Row>, options: PageOptions<Row, View>): { readonly views: ReadonlyArray<View>; readonly more: boolean } => {
  const views: Array<View> = []
  let bytes = 0
  for (const row of rows) {
    if (views.length >= options.limit || !options.fetched(row)) return { views, more: true }
    const view = options.view(row)
    const size = jsonBytes(view) + 1 // and the comma before the next entry
    if (views.length > 0 && bytes + size > LIST_PAGE_MAX_BYTES) return { views, more: true }
    views.push(view)
    bytes += size
  }
  return { views, more: false }
}
