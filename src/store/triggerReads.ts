// Trigger reads of the log endpoints (GET /jobs, GET /jobs/{id}). Every query is scoped by
// project_id. Listing is newest first with keyset pagination on the UUIDv7 id, so a page is an
// index range scan of triggers_project (project_id, id DESC); `tag` adds the GIN triggers_tags.
// Cron expression and time zone are never selected (SPEC: they cannot be read back).
// The outcome of a completed trigger comes from its latest execution (executionReads.ts), read apart so
// that a pending trigger reads without the executions table; the `outcome` filter looks it up here.
// A list never reads a large body (DECISIONS: over 64 KiB it is listed without its value): only its
// size (octet_length reads the stored length, not the value) and a short prefix to tell its encoding.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import type { JobOutcome, TriggerKind } from "../domain/trigger.ts"
import { ENCODING_PROBE_BYTES, LIST_BODY_MAX_BYTES, type TriggerRow } from "../domain/views.ts"

/** The whole body, its size, not truncated. */
const wholeBody = (sql: SqlClient.SqlClient) => sql`t.body, octet_length(t.body) AS body_size, false AS body_truncated`

/** A body up to LIST_BODY_MAX_BYTES whole; a larger one as its first ENCODING_PROBE_BYTES, marked truncated. */
const listedBody = (sql: SqlClient.SqlClient) => sql`
    CASE WHEN octet_length(t.body) > ${LIST_BODY_MAX_BYTES} THEN substring(t.body FROM 1 FOR ${ENCODING_PROBE_BYTES})
      ELSE t.body END AS body,
    octet_length(t.body) AS body_size,
    coalesce(octet_length(t.body) > ${LIST_BODY_MAX_BYTES}, false) AS body_truncated`

/** The outcome of a completed trigger: its latest execution's (by attempt, through executions_trigger). */
const latestOutcome = (sql: SqlClient.SqlClient) => sql`(
  SELECT CASE WHEN e.is_dead_letter THEN 'dead_letter' WHEN e.status = 'succeeded' THEN 'delivered' END
  FROM executions e WHERE e.trigger_id = t.id ORDER BY e.attempt DESC LIMIT 1)`

/** The rows with this outcome (domain/trigger.ts outcomeOf, in SQL). */
const outcomeIs = (sql: SqlClient.SqlClient, wanted: JobOutcome) =>
  wanted === "cancelled" || wanted === "skipped"
    ? sql`t.status = ${wanted}`
    : sql`t.status = 'completed' AND ${latestOutcome(sql)} = ${wanted}`

/** The upcoming instance is found through the unique partial index triggers_generator_upcoming. */
const selectTrigger = (sql: SqlClient.SqlClient, body: Fragment) => sql`
  SELECT t.id, t.kind, t.generator_id, t.status, t.scheduled_at,
    CASE WHEN t.kind = 'generator' THEN (
      SELECT i.scheduled_at FROM triggers i
      WHERE i.generator_id = t.id AND i.status = 'registered' AND i.project_id = t.project_id
    ) END AS upcoming_at,
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
  readonly outcome?: JobOutcome | undefined
  readonly kind?: TriggerKind | undefined
  readonly tag?: string | undefined
  readonly customKey?: string | undefined
  /** Page size; one more row is read to learn whether another page follows. */
  readonly limit: number
  /** The last id of the previous page: only older triggers are returned. */
  readonly olderThanId?: string | undefined
}

/** A page of the project's triggers, newest first; `more` when another page follows. */
export const triggersList = Effect.fnUntraced(function*(input: TriggersListInput) {
  const sql = yield* SqlClient.SqlClient
  const clauses = [sql`t.project_id = ${input.projectId}`]
  if (input.status !== undefined) clauses.push(sql`t.status = ${input.status}`)
  if (input.outcome !== undefined) clauses.push(outcomeIs(sql, input.outcome))
  if (input.kind !== undefined) clauses.push(sql`t.kind = ${input.kind}`)
  if (input.tag !== undefined) clauses.push(sql`t.tags @> ARRAY[${input.tag}]::text[]`)
  if (input.customKey !== undefined) clauses.push(sql`t.custom_key = ${input.customKey}`)
  if (input.olderThanId !== undefined) clauses.push(sql`t.id < ${input.olderThanId}`)
  const rows = yield* sql<TriggerRow>`${selectTrigger(sql, listedBody(sql))}
    WHERE ${sql.and(clauses)}
    ORDER BY t.id DESC
    LIMIT ${input.limit + 1}`
  return { rows: rows.slice(0, input.limit), more: rows.length > input.limit }
})
