// Trigger reads of the log endpoints (GET /jobs, GET /jobs/{id}). Every query is scoped by
// project_id. Listing is newest first with keyset pagination on the UUIDv7 id, so a page is an
// index range scan of triggers_project (project_id, id DESC); `tag` adds the GIN triggers_tags.
// Cron expression and time zone are never selected (SPEC: they cannot be read back).
// A list never reads a large body (DECISIONS: over 64 KiB it is listed without its value): only its
// size (octet_length reads the stored length, not the value) and a short prefix to tell its encoding.
// Nor does a page read more than about LIST_PAGE_MAX_BYTES (issue 20): the rows past that budget,
// counted in stored bytes of their large columns, come without them (`fetched` false; the page ends
// before the first of them, domain/listPage.ts).
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import type { TriggerKind } from "../domain/trigger.ts"
import { LIST_PAGE_MAX_BYTES } from "../domain/listPage.ts"
import { ENCODING_PROBE_BYTES, LIST_BODY_MAX_BYTES, type TriggerRow } from "../domain/views.ts"

/** The whole body, its size, not truncated. */
const wholeBody = (sql: SqlClient.SqlClient) => sql`t.body, octet_length(t.body) AS body_size, false AS body_truncated`

/**
 * A body up to LIST_BODY_MAX_BYTES whole; a larger one as its first ENCODING_PROBE_BYTES, marked
 * truncated; none at all for a row past the page's budget (`t.fetched`, triggersList).
 */
const listedBody = (sql: SqlClient.SqlClient) => sql`
    CASE WHEN NOT t.fetched THEN NULL
      WHEN octet_length(t.body) > ${LIST_BODY_MAX_BYTES} THEN substring(t.body FROM 1 FOR ${ENCODING_PROBE_BYTES})
      ELSE t.body END AS body,
    octet_length(t.body) AS body_size,
    coalesce(octet_length(t.body) > ${LIST_BODY_MAX_BYTES}, false) AS body_truncated`

/** A generator's upcoming instance, found through the unique partial index triggers_generator_upcoming. */
const upcomingAt = (sql: SqlClient.SqlClient) => sql`
    CASE WHEN t.kind = 'generator' THEN (
      SELECT i.scheduled_at FROM triggers i
      WHERE i.generator_id = t.id AND i.status = 'registered' AND i.project_id = t.project_id
    ) END AS upcoming_at`

const selectTrigger = (sql: SqlClient.SqlClient, body: Fragment) => sql`
  SELECT t.id, t.kind, t.generator_id, t.status, t.scheduled_at, ${upcomingAt(sql)},
    t.url, t.method, t.headers, ${body}, t.content_type, t.title, t.tags, t.custom_key, t.retry,
    t.attempts, t.created_at, t.updated_at
  FROM triggers t`

/** One trigger of the project, or undefined (unknown id or another project's). */
export const triggersGet = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly id: string
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<TriggerRow>`${selectTrigger(sql, wholeBody(sql))}
    WHERE t.id = ${input.id} AND t.project_id = ${input.projectId}`
  return rows[0]
})

export interface TriggersListInput {
  readonly projectId: string
  readonly status?: string | undefined
  readonly kind?: TriggerKind | undefined
  readonly tag?: string | undefined
  readonly customKey?: string | undefined
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
  const clauses = [sql`t.project_id = ${input.projectId}`]
  if (input.status !== undefined) clauses.push(sql`t.status = ${input.status}`)
  if (input.kind !== undefined) clauses.push(sql`t.kind = ${input.kind}`)
  if (input.tag !== undefined) clauses.push(sql`t.tags @> ARRAY[${input.tag}]::text[]`)
  if (input.customKey !== undefined) clauses.push(sql`t.custom_key = ${input.customKey}`)
  if (input.olderThanId !== undefined) clauses.push(sql`t.id < ${input.olderThanId}`)
  // the inner query picks the page and sums what the rows before each one cost; only the outer one
  // reads the large columns, of the rows within the budget
  return yield* sql<ListedTriggerRow>`
    SELECT t.id, t.kind, t.generator_id, t.status, t.scheduled_at, ${upcomingAt(sql)},
      CASE WHEN t.fetched THEN t.url END AS url, t.method, CASE WHEN t.fetched THEN t.headers END AS headers,
      ${listedBody(sql)}, t.content_type,
      CASE WHEN t.fetched THEN t.title END AS title, t.tags, t.custom_key, t.retry, t.attempts, t.created_at, t.updated_at,
      t.fetched
    FROM (
      SELECT t.*, coalesce(sum(${storedBytes(sql)}) OVER (ORDER BY t.id DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
        < ${LIST_PAGE_MAX_BYTES} AS fetched
      FROM triggers t
      WHERE ${sql.and(clauses)}
      ORDER BY t.id DESC
      LIMIT ${input.limit + 1}
    ) t
    ORDER BY t.id DESC`
})
