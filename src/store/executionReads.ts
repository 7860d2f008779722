// Execution reads of the log endpoints (GET /executions, GET /executions/{id},
// GET /jobs/{id}/executions). Every query is scoped by project_id. Listing is newest first with
// keyset pagination on the UUIDv7 id: executions_project (project_id, id DESC), or the partial
// executions_dead_letters when only dead letters are asked for (the literal `is_dead_letter`
// predicate lets the planner pick it); a trigger's attempts come from executions_trigger.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { LatestAttempt } from "../domain/trigger.ts"
import type { ExecutionRow } from "../domain/views.ts"

const selectExecution = (sql: SqlClient.SqlClient) => sql`
  SELECT e.id, e.trigger_id, e.attempt, e.status, e.started_at, e.finished_at, e.duration_ms,
    e.http_status, e.response_headers, e.response_body, e.error_kind, e.error_code, e.error_message,
    e.is_dead_letter, e.connect_timeout_seconds, e.timeout_seconds, e.triggered_by, e.url
  FROM executions e`

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

/**
 * Every attempt of one trigger, oldest first: by attempt number (it only grows for a trigger: each
 * start, replays included, takes attempts + 1), which is also the order of executions_trigger.
 */
export const executionsListForTrigger = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly triggerId: string
}) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<ExecutionRow>`${selectExecution(sql)}
    WHERE e.trigger_id = ${input.triggerId} AND e.project_id = ${input.projectId}
    ORDER BY e.attempt, e.started_at, e.id`
})

export interface ExecutionsListInput {
  readonly projectId: string
  readonly jobId?: string | undefined
  /**
   * Executions of the trigger(s) carrying this custom key, and of the instances of a generator
   * carrying it (SPEC: the custom key belongs to the generator only, its instances have none).
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

/** A page of the project's executions, newest first; `more` when another page follows. */
export const executionsList = Effect.fnUntraced(function*(input: ExecutionsListInput) {
  const sql = yield* SqlClient.SqlClient
  const clauses = [sql`e.project_id = ${input.projectId}`]
  if (input.deadLetterOnly === true) clauses.push(sql`e.is_dead_letter`)
  if (input.jobId !== undefined) clauses.push(sql`e.trigger_id = ${input.jobId}`)
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
  const rows = yield* sql<ExecutionRow>`${selectExecution(sql)}
    WHERE ${sql.and(clauses)}
    ORDER BY e.id DESC
    LIMIT ${input.limit + 1}`
  return { rows: rows.slice(0, input.limit), more: rows.length > input.limit }
})

/**
 * The latest attempt (by attempt number, through executions_trigger) of each of these triggers of
 * the project that has one: what a completed trigger's outcome is read from (domain/trigger.ts).
 */
export const executionsLatestOfTriggers = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly triggerIds: ReadonlyArray<string>
}) {
  if (input.triggerIds.length === 0) return new Map<string, LatestAttempt>()
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ trigger_id: string; succeeded: boolean; is_dead_letter: boolean }>`
    SELECT l.trigger_id, l.status = 'succeeded' AS succeeded, l.is_dead_letter
    FROM unnest(${input.triggerIds}::uuid[]) AS t(id)
    CROSS JOIN LATERAL (
      SELECT e.trigger_id, e.status, e.is_dead_letter FROM executions e
      WHERE e.trigger_id = t.id AND e.project_id = ${input.projectId}
      ORDER BY e.attempt DESC LIMIT 1
    ) l`
  return new Map(rows.map((row) => [row.trigger_id, { succeeded: row.succeeded, isDeadLetter: row.is_dead_letter }] as const))
})
