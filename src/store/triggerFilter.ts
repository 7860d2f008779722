// The trigger filter (domain/triggerFilter.ts) as SQL: the one WHERE clause of GET /jobs, of a bulk
// action's dry run and of the set an action fixes when it starts, so a previewed set and an acted-on
// set are the same rows. Every clause reads the alias `t` of `triggers`; the project comes first, so
// the scan is triggers_project (project_id, id DESC), `tag` adds the GIN triggers_tags.
// - status is the status a reader sees (a trigger its shard's mark fired is running: shardMarks.ts);
// - outcome reads a completed trigger's latest execution (cancelled and skipped are statuses);
// - deadLetter looks at the trigger's latest execution (highest attempt) through executions_trigger
//   (trigger_id, attempt): one index probe per candidate row, in the day partitions from the one the
//   trigger was made on (store/executionFloor.ts); `true` (and the outcome dead_letter)
//   also names the candidates, the triggers with a dead-letter execution (the partial index
//   executions_dead_letters), so the planner need not probe every trigger of the project;
// - the scheduled range reads a generator's time as GET /jobs shows it: its upcoming instance's,
//   found through the unique partial index triggers_generator_upcoming.
import type { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import type { JobOutcome } from "../domain/trigger.ts"
import type { TriggerFilter } from "../domain/triggerFilter.ts"
import { executionFloorSql } from "./executionFloor.ts"
import { effectiveStatusIs } from "./shardMarks.ts"

/** The scheduled time of a generator's upcoming (registered) instance, for a generator row `t`. */
export const UPCOMING_AT_SQL = `(SELECT i.scheduled_at FROM triggers i
      WHERE i.generator_id = t.id AND i.status = 'registered' AND i.project_id = t.project_id)`

/** A trigger's scheduled time as the views show it: its own, or a generator's upcoming instance's. */
const SCHEDULED_AT_SQL = `(CASE WHEN t.kind = 'generator' THEN ${UPCOMING_AT_SQL} ELSE t.scheduled_at END)`

/** Whether the latest execution of trigger `t` is a dead letter (NULL: it has none). */
export const LATEST_IS_DEAD_LETTER_SQL = `(SELECT e.is_dead_letter FROM executions e
      WHERE e.trigger_id = t.id AND e.id >= ${executionFloorSql("t.id")} ORDER BY e.attempt DESC, e.id DESC LIMIT 1)`

/** The outcome of a completed trigger: its latest execution's (by attempt, through executions_trigger). */
const LATEST_OUTCOME_SQL = `(SELECT CASE WHEN e.is_dead_letter THEN 'dead_letter' WHEN e.status = 'succeeded' THEN 'delivered' END
      FROM executions e WHERE e.trigger_id = t.id AND e.id >= ${executionFloorSql("t.id")} ORDER BY e.attempt DESC LIMIT 1)`

/** The triggers of the project with a dead-letter execution: where a dead letter now can be. */
const hasDeadLetter = (sql: SqlClient.SqlClient, projectId: string): Fragment =>
  sql`t.id IN (SELECT d.trigger_id FROM executions d WHERE d.project_id = ${projectId} AND d.is_dead_letter)`

/** The rows with this outcome (domain/trigger.ts outcomeOf, in SQL). */
const outcomeIs = (sql: SqlClient.SqlClient, projectId: string, wanted: JobOutcome): Fragment =>
  wanted === "cancelled" || wanted === "skipped" ? sql`t.status = ${wanted}`
  : wanted === "dead_letter" ? sql`t.status = 'completed' AND ${hasDeadLetter(sql, projectId)} AND ${sql.unsafe(LATEST_OUTCOME_SQL)} = ${wanted}`
  : sql`t.status = 'completed' AND ${sql.unsafe(LATEST_OUTCOME_SQL)} = ${wanted}`

/** The conditions on `t` of the project's triggers that match `filter` (combine with `sql.and`). */
export const triggerFilterClauses = (sql: SqlClient.SqlClient, projectId: string, filter: TriggerFilter): Array<Fragment> => {
  const clauses: Array<Fragment> = [sql`t.project_id = ${projectId}`]
  if (filter.status !== undefined) clauses.push(effectiveStatusIs(sql, "t", filter.status))
  if (filter.outcome !== undefined) clauses.push(outcomeIs(sql, projectId, filter.outcome))
  if (filter.kind !== undefined) clauses.push(sql`t.kind = ${filter.kind}`)
  if (filter.tag !== undefined) clauses.push(sql`cardinality(t.tags) > 0 AND t.tags @> ARRAY[${filter.tag}]::text[]`)
  if (filter.customKey !== undefined) clauses.push(sql`t.custom_key = ${filter.customKey}`)
  if (filter.deadLetter === true) clauses.push(hasDeadLetter(sql, projectId))
  if (filter.deadLetter !== undefined) {
    clauses.push(sql.unsafe(`${LATEST_IS_DEAD_LETTER_SQL} IS ${filter.deadLetter ? "TRUE" : "NOT TRUE"}`))
  }
  if (filter.scheduledFromMs !== undefined) clauses.push(sql`${sql.unsafe(SCHEDULED_AT_SQL)} >= ${new Date(filter.scheduledFromMs)}`)
  if (filter.scheduledToMs !== undefined) clauses.push(sql`${sql.unsafe(SCHEDULED_AT_SQL)} < ${new Date(filter.scheduledToMs)}`)
  return clauses
}
