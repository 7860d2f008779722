// Execution reads of the log endpoints (GET /executions, GET /executions/{id}, GET
// /jobs/{id}/executions). Every query is scoped by project_id. Listing is newest first with keyset
// pagination on the UUIDv7 id: executions_project (project_id, id DESC), or the partial
// executions_dead_letters when only dead letters are asked for (the literal `is_dead_letter` predicate
// lets the planner pick it); a trigger's attempts come from executions_trigger, a page at a time after
// the last one read. A read of one trigger's executions is bounded below by the day it was made
// (domain/executionDays.ts executionIdFloor), so only the day partitions from then on are probed.
// A page never reads more than about LIST_PAGE_MAX_BYTES (docs/reading.md "How long a page is"): the rows past that budget, counted in stored bytes of their large columns, come without
// them (`fetched` false; the page ends before the first of them, domain/listPage.ts).
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { LatestAttempt } from "../domain/trigger.ts"
import type { Fragment } from "effect/sql/Statement"
import { executionIdFloor } from "../domain/executionDays.ts"
import { LIST_PAGE_MAX_BYTES } from "../domain/listPage.ts"
import type { ExecutionRow } from "../domain/views.ts"

const selectExecution = (sql: SqlClient.SqlClient) => sql`
  SELECT e.id, e.trigger_id, e.attempt, e.status, e.started_at, e.finished_at, e.duration_ms,
    e.http_status, e.response_headers, e.response_body, e.error_kind, e.error_code, e.error_message,
    e.is_dead_letter, e.connect_timeout_seconds, e.timeout_seconds, e.triggered_by, e.url
  FROM executions e`

/** An execution row of a page: its large columns (response headers and body, error message, url) are null unless `fetched`. */
export interface ListedExecutionRow extends ExecutionRow {
  readonly fetched: boolean
}

/**
 * A page of executions: up to `limit` rows matching `where` in `order` (a fragment naming e's
 * columns), those past LIST_PAGE_MAX_BYTES of stored bytes without their large columns. The inner
 * query picks the rows and sums what the rows before each one cost; only the outer one reads the
 * large columns, of the rows within the budget.
 */
const listedExecutions = (sql: SqlClient.SqlClient, where: Fragment, order: Fragment, limit: number) =>
  sql<ListedExecutionRow>`
    SELECT e.id, e.trigger_id, e.attempt, e.status, e.started_at, e.finished_at, e.duration_ms, e.http_status,
      CASE WHEN e.fetched THEN e.response_headers END AS response_headers,
      CASE WHEN e.fetched THEN e.response_body END AS response_body,
      e.error_kind, e.error_code, CASE WHEN e.fetched THEN e.error_message END AS error_message,
      e.is_dead_letter, e.connect_timeout_seconds, e.timeout_seconds, e.triggered_by,
      CASE WHEN e.fetched THEN e.url END AS url, e.fetched
    FROM (
      SELECT e.*, coalesce(sum(
          coalesce(octet_length(e.response_body), 0) + coalesce(octet_length(e.response_headers::text), 0)
          + coalesce(octet_length(e.error_message), 0) + octet_length(e.url)
        ) OVER (ORDER BY ${order} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) < ${LIST_PAGE_MAX_BYTES} AS fetched
      FROM executions e
      WHERE ${where}
      ORDER BY ${order}
      LIMIT ${limit}
    ) e
    ORDER BY ${order}`

/** One execution of the project, or undefined. */
export const executionsGet = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly id: string
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<ExecutionRow>`${selectExecution(sql)}
    WHERE e.id = ${input.id} AND e.project_id = ${input.projectId}`
  return rows[0]
})

/** Where a trigger's attempts continue: after this one (oldest first). */
export interface AttemptPosition {
  readonly attempt: number
  readonly started_at: Date
  readonly id: string
}

/**
 * A page of one trigger's attempts, oldest first (by attempt number: it only grows for a trigger,
 * each start, replays included, takes attempts + 1, which is also the order of executions_trigger),
 * after `after` when given: up to `limit` rows, those past the budget without their large columns.
 */
export const executionsListForTrigger = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly triggerId: string
  readonly after?: AttemptPosition | undefined
  readonly limit: number
}) {
  const sql = yield* SqlClient.SqlClient
  const clauses = [
    sql`e.trigger_id = ${input.triggerId}`,
    sql`e.project_id = ${input.projectId}`,
    sql`e.id >= ${executionIdFloor(input.triggerId)}`
  ]
  if (input.after !== undefined) {
    clauses.push(sql`(e.attempt, e.started_at, e.id) > (${input.after.attempt}, ${input.after.started_at}, ${input.after.id})`)
  }
  return yield* listedExecutions(sql, sql.and(clauses), sql`e.attempt, e.started_at, e.id`, input.limit)
})

export interface ExecutionsListInput {
  readonly projectId: string
  readonly jobId?: string | undefined
  /**
   * Executions of the trigger(s) carrying this custom key, and of the instances of a generator
   * carrying it (docs/cron.md: the custom key belongs to the generator only, its instances have none).
   */
  readonly customKey?: string | undefined
  readonly executionStatus?: "succeeded" | "failed" | undefined
  readonly httpStatus?: number | undefined
  readonly deadLetterOnly?: boolean | undefined
  /** Page size; one more row is read to learn whether another page follows. */
  readonly limit: number
  /** The last id of the previous page: only older executions are returned. */
  readonly olderThanId?: string | undefined
}

/**
 * A page of the project's executions, newest first: up to `limit` + 1 rows (the last tells whether
 * another page follows), those past the budget without their large columns.
 */
export const executionsList = Effect.fnUntraced(function*(input: ExecutionsListInput) {
  const sql = yield* SqlClient.SqlClient
  const clauses = [sql`e.project_id = ${input.projectId}`]
  if (input.deadLetterOnly === true) clauses.push(sql`e.is_dead_letter`)
  if (input.jobId !== undefined) clauses.push(sql`e.trigger_id = ${input.jobId}`, sql`e.id >= ${executionIdFloor(input.jobId)}`)
  if (input.customKey !== undefined) {
    clauses.push(sql`e.trigger_id IN (
      SELECT t.id FROM triggers t
      WHERE t.project_id = ${input.projectId} AND (t.custom_key = ${input.customKey} OR t.generator_id IN (
        SELECT g.id FROM triggers g
        WHERE g.project_id = ${input.projectId} AND g.kind = 'generator' AND g.custom_key = ${input.customKey})))`)
  }
  if (input.executionStatus !== undefined) clauses.push(sql`e.status = ${input.executionStatus}`)
  if (input.httpStatus !== undefined) clauses.push(sql`e.http_status = ${input.httpStatus}`)
  if (input.olderThanId !== undefined) clauses.push(sql`e.id < ${input.olderThanId}`)
  return yield* listedExecutions(sql, sql.and(clauses), sql`e.id DESC`, input.limit + 1)
})

/**
 * The latest attempt (by attempt number, through executions_trigger) of each of these triggers of
 * the project that has one (each probing the partitions from the day it was made on): what a
 * completed trigger's outcome is read from (domain/trigger.ts).
 */
export const executionsLatestOfTriggers = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly triggerIds: ReadonlyArray<string>
}) {
  if (input.triggerIds.length === 0) return new Map<string, LatestAttempt>()
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ trigger_id: string; succeeded: boolean; is_dead_letter: boolean }>`
    SELECT l.trigger_id, l.status = 'succeeded' AS succeeded, l.is_dead_letter
    FROM unnest(${input.triggerIds}::uuid[], ${input.triggerIds.map(executionIdFloor)}::uuid[]) AS t(id, floor)
    CROSS JOIN LATERAL (
      SELECT e.trigger_id, e.status, e.is_dead_letter FROM executions e
      WHERE e.trigger_id = t.id AND e.project_id = ${input.projectId} AND e.id >= t.floor
      ORDER BY e.attempt DESC LIMIT 1
    ) l`
  return new Map(rows.map((row) => [row.trigger_id, { succeeded: row.succeeded, isDeadLetter: row.is_dead_letter }] as const))
})
