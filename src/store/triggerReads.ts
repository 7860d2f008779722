// Trigger reads of the log endpoints (GET /jobs, GET /jobs/{id}). Every query is scoped by
// project_id. Listing is newest first with keyset pagination on the UUIDv7 id, so a page is an
// index range scan of triggers_project (project_id, id DESC); the filter is store/triggerFilter.ts.
// Cron expression and time zone are never selected (docs/reading.md "A trigger": they are never
// returned). A trigger its shard's mark has fired reads as `running` (shardMarks.ts).
// The outcome of a completed trigger comes from its latest execution (executionReads.ts), read apart so
// that a pending trigger reads without the executions table. A list never reads a large body
// (docs/reading.md "Large bodies in lists": over 64 KiB it is listed without its value): only its size
// (octet_length reads the stored length, not the value) and a short prefix to tell its encoding. Nor
// does a page read more than about LIST_PAGE_MAX_BYTES (docs/reading.md "How long a page is"): the rows
// past that budget, counted in stored bytes of their large columns, come without them (`fetched` false;
// the page ends before the first of them, domain/listPage.ts).
// Sealed headers and bodies (ENCRYPTION_KEYS) are opened by openStoredRequest; a sealed body's plain
// size is its stored size less the seal's overhead, and its prefix opens to the plain prefix.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import { LIST_PAGE_MAX_BYTES } from "../domain/listPage.ts"
import type { TriggerFilter } from "../domain/triggerFilter.ts"
import { ENCODING_PROBE_BYTES, LIST_BODY_MAX_BYTES, type TriggerRow } from "../domain/views.ts"
import { bodyPrefixSql, EncryptionKeys, openStoredRequest, plainBodySizeSql } from "./sealedRequests.ts"
import { effectiveStatusSql } from "./shardMarks.ts"
import { triggerFilterClauses, UPCOMING_AT_SQL } from "./triggerFilter.ts"

/** The whole body, its size, not truncated. */
const wholeBody = (sql: SqlClient.SqlClient) => sql`t.body, ${plainBodySizeSql(sql)} AS body_size, false AS body_truncated`

/**
 * A body up to LIST_BODY_MAX_BYTES whole; a larger one as its first ENCODING_PROBE_BYTES, marked
 * truncated; none at all for a row past the page's budget (`t.fetched`, triggersList).
 */
const listedBody = (sql: SqlClient.SqlClient) => sql`
    CASE WHEN NOT t.fetched THEN NULL
      WHEN ${plainBodySizeSql(sql)} > ${LIST_BODY_MAX_BYTES} THEN ${bodyPrefixSql(sql, ENCODING_PROBE_BYTES)}
      ELSE t.body END AS body,
    ${plainBodySizeSql(sql)} AS body_size,
    coalesce(${plainBodySizeSql(sql)} > ${LIST_BODY_MAX_BYTES}, false) AS body_truncated`

type StoredTriggerRow = TriggerRow & { readonly sealed_with: string | null }

/** The columns every read of a trigger shows but its large ones (url, headers, body, title). */
const smallColumns = (sql: SqlClient.SqlClient) =>
  sql`t.id, t.kind, t.generator_id, ${sql.unsafe(effectiveStatusSql("t"))} AS status, t.scheduled_at,
    CASE WHEN t.kind = 'generator' THEN ${sql.unsafe(UPCOMING_AT_SQL)} END AS upcoming_at,
    t.method, t.sealed_with, t.content_type, t.tags, t.custom_key, t.retry, t.attempts, t.created_at, t.updated_at`

/** One trigger of the project, or undefined (unknown id or another project's). */
export const triggersGet = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly id: string
}) {
  const sql = yield* SqlClient.SqlClient
  const keyring = yield* EncryptionKeys
  const rows = yield* sql<StoredTriggerRow>`
    SELECT ${smallColumns(sql)}, t.url, t.headers, ${wholeBody(sql)}, t.title FROM triggers t
    WHERE t.id = ${input.id} AND t.project_id = ${input.projectId}`
  return rows[0] === undefined ? undefined : openStoredRequest(rows[0], keyring) as TriggerRow
})

export interface TriggersListInput {
  readonly projectId: string
  /** Which triggers (store/triggerFilter.ts, the clause of the bulk actions too). */
  readonly filter: TriggerFilter
  /** Page size; one more row is read to learn whether another page follows. */
  readonly limit: number
  /** The last id of the previous page: only older triggers are returned. */
  readonly olderThanId?: string | undefined
}

/** A trigger row of a page: its large columns (url, headers, body, title) are null unless `fetched`. */
export interface ListedTriggerRow extends TriggerRow {
  readonly fetched: boolean
}

/** What a row's large columns cost to read: its listed body (or the prefix of a larger one), headers, URL and title. */
const storedBytes = (sql: SqlClient.SqlClient) => sql`(
    CASE WHEN octet_length(t.body) > ${LIST_BODY_MAX_BYTES} THEN ${ENCODING_PROBE_BYTES} ELSE coalesce(octet_length(t.body), 0) END
    + octet_length(t.headers::text) + octet_length(t.url) + coalesce(octet_length(t.title), 0))`

/**
 * A page of the project's triggers, newest first: up to `limit` + 1 rows (the last tells whether
 * another page follows), those past LIST_PAGE_MAX_BYTES of stored bytes without their large columns.
 */
export const triggersList = Effect.fnUntraced(function*(input: TriggersListInput) {
  const sql = yield* SqlClient.SqlClient
  const clauses: Array<Fragment> = triggerFilterClauses(sql, input.projectId, input.filter)
  if (input.olderThanId !== undefined) clauses.push(sql`t.id < ${input.olderThanId}`)
  const keyring = yield* EncryptionKeys
  // the inner query picks the page and sums what the rows before each one cost; only the outer one
  // reads the large columns, of the rows within the budget
  const rows = yield* sql<ListedTriggerRow & { readonly sealed_with: string | null }>`
    SELECT ${smallColumns(sql)},
      CASE WHEN t.fetched THEN t.url END AS url, CASE WHEN t.fetched THEN t.headers END AS headers,
      ${listedBody(sql)}, CASE WHEN t.fetched THEN t.title END AS title, t.fetched
    FROM (
      SELECT t.*, coalesce(sum(${storedBytes(sql)}) OVER (ORDER BY t.id DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
        < ${LIST_PAGE_MAX_BYTES} AS fetched
      FROM triggers t
      WHERE ${sql.and(clauses)}
      ORDER BY t.id DESC
      LIMIT ${input.limit + 1}
    ) t
    ORDER BY t.id DESC`
  // a row past the budget has nothing to open
  return rows.map((row): ListedTriggerRow => (row.fetched ? openStoredRequest(row, keyring) : row))
})
