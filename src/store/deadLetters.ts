// The triggers that end in a dead letter now: those whose latest execution (highest attempt, then
// id, as store/triggerFilter.ts reads it for the `deadLetter` filter) is a dead letter. A trigger
// replayed with success since is not one any more. Read from the dead-letter executions through the
// partial index executions_dead_letters (project_id, id DESC), each kept when no later execution of
// its trigger exists (one probe of executions_trigger per dead-letter execution, in the day partitions
// from the one its trigger was made on: store/executionFloor.ts): the work follows
// the project's dead-letter executions, not its triggers. Newest dead letter first, keyset paging on
// the dead-letter execution's id. The dashboard's Dead letters page and its overview read these.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import { executionFloorSql } from "./executionFloor.ts"
import { effectiveStatusSql } from "./shardMarks.ts"

/** Characters of the dead letter's response body shown beside its status. */
export const RESPONSE_EXCERPT_CHARS = 200

/** The conditions on `e` of the project's dead-letter executions that are their trigger's latest. */
const latestDeadLetters = (sql: SqlClient.SqlClient, projectId: string) => [
  sql`e.project_id = ${projectId}`,
  sql`e.is_dead_letter`,
  sql`NOT EXISTS (SELECT FROM executions l WHERE l.trigger_id = e.trigger_id AND (l.attempt, l.id) > (e.attempt, e.id)
    AND l.id >= ${sql.unsafe(executionFloorSql("e.trigger_id"))})`
]

export interface DeadLetterRow {
  readonly id: string
  readonly kind: string
  readonly generator_id: string | null
  readonly status: string
  readonly method: string
  readonly url: string
  readonly title: string | null
  readonly tags: ReadonlyArray<string>
  readonly custom_key: string | null
  readonly attempts: number
  readonly execution_id: string
  readonly attempt: number
  readonly finished_at: Date
  readonly http_status: number | null
  readonly error_kind: string | null
  readonly error_code: string | null
  readonly error_message: string | null
  readonly response_excerpt: string | null
  readonly execution_url: string
  readonly triggered_by: string | null
}

/**
 * A page of the project's triggers that end in a dead letter, newest dead letter first: up to
 * `limit` + 1 rows (the last tells whether another page follows), older than the dead-letter
 * execution `olderThanExecutionId` when given.
 */
export const deadLettersList = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly olderThanExecutionId?: string | undefined
  readonly limit: number
}) {
  const sql = yield* SqlClient.SqlClient
  const clauses = latestDeadLetters(sql, input.projectId)
  if (input.olderThanExecutionId !== undefined) clauses.push(sql`e.id < ${input.olderThanExecutionId}`)
  return yield* sql<DeadLetterRow>`
    SELECT t.id, t.kind, t.generator_id, ${sql.unsafe(effectiveStatusSql("t"))} AS status, t.method, t.url, t.title, t.tags,
      t.custom_key, t.attempts, e.id AS execution_id, e.attempt, e.finished_at, e.http_status, e.error_kind, e.error_code,
      e.error_message, left(e.response_body, ${RESPONSE_EXCERPT_CHARS}) AS response_excerpt, e.url AS execution_url, e.triggered_by
    FROM executions e JOIN triggers t ON t.id = e.trigger_id AND t.project_id = e.project_id
    WHERE ${sql.and(clauses)}
    ORDER BY e.id DESC
    LIMIT ${input.limit + 1}`
})

/** How many of the project's triggers end in a dead letter now. */
export const deadLettersCount = Effect.fnUntraced(function*(input: { readonly projectId: string }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ count: string }>`
    SELECT count(*) AS count FROM executions e WHERE ${sql.and(latestDeadLetters(sql, input.projectId))}`
  return Number(rows[0]!.count)
})
