// How long a page of a list is (docs/reading.md "How long a page is"): at most
// its `limit` entries, and it ends early — with a `nextCursor` — before the entry that would take its
// entries past LIST_PAGE_MAX_BYTES once encoded as JSON. Its first entry is always listed, so every
// page moves on. The store reads rows under the same budget counted in stored bytes and hands over
// the rows past it unread (`fetched: false`); when a page reaches such a row with room left (bodies
// left out of a list cost less than they weigh stored), it is filled from another read after its
// last entry. Pure.
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

export interface Page<View> {
  readonly views: ReadonlyArray<View>
  /** The encoded size of the entries, separators included. */
  readonly bytes: number
  /** Another page follows. */
  readonly more: boolean
  /** The page ended at a row the store did not read, with room left: read on after its last entry. */
  readonly unread: boolean
}

export const emptyPage: Page<never> = { views: [], bytes: 0, more: false, unread: false }

/** `page` (empty at first) continued with the rows read after its last entry. */
export const takePage = <Row, View>(rows: ReadonlyArray<Row>, options: PageOptions<Row, View>, page: Page<View> = emptyPage): Page<View> => {
  const views = [...page.views]
  let bytes = page.bytes
  const ended = (unread: boolean): Page<View> => ({ views, bytes, more: true, unread })
  for (const row of rows) {
    if (views.length >= options.limit) return ended(false)
    if (!options.fetched(row)) return ended(true)
    const view = options.view(row)
    const size = jsonBytes(view) + 1 // and the comma before the next entry
    if (views.length > 0 && bytes + size > LIST_PAGE_MAX_BYTES) return ended(false)
    views.push(view)
    bytes += size
  }
  return { views, bytes, more: false, unread: false }
}
