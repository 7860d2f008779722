// Trigger reads of the log endpoints (GET /jobs, GET /jobs/{id}). Every query is scoped by
// project_id. Listing is newest first with keyset pagination on the UUIDv7 id, so a page is an
// index range scan of triggers_project (project_id, id DESC); `tag` adds the GIN triggers_tags.
// Cron expression and time zone are never selected (SPEC: they cannot be read back).
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { TriggerKind } from "../domain/trigger.ts"
import type { TriggerRow } from "../domain/views.ts"

/** The upcoming instance is found through the unique partial index triggers_generator_upcoming. */
const selectTrigger = (sql: SqlClient.SqlClient) => sql`
  SELECT t.id, t.kind, t.generator_id, t.status, t.scheduled_at,
    CASE WHEN t.kind = 'generator' THEN (
      SELECT i.scheduled_at FROM triggers i
      WHERE i.generator_id = t.id AND i.status = 'registered' AND i.project_id = t.project_id
    ) END AS upcoming_at,
    t.url, t.method, t.headers, t.body, t.content_type, t.title, t.tags, t.custom_key, t.retry,
    t.attempts, t.created_at, t.updated_at
  FROM triggers t`

/** One trigger of the project, or undefined (unknown id or another project's). */
export const triggersGet = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly id: string
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<TriggerRow>`${selectTrigger(sql)}
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

/** A page of the project's triggers, newest first; `more` when another page follows. */
export const triggersList = Effect.fnUntraced(function*(input: TriggersListInput) {
  const sql = yield* SqlClient.SqlClient
  const clauses = [sql`t.project_id = ${input.projectId}`]
  if (input.status !== undefined) clauses.push(sql`t.status = ${input.status}`)
  if (input.kind !== undefined) clauses.push(sql`t.kind = ${input.kind}`)
  if (input.tag !== undefined) clauses.push(sql`t.tags @> ARRAY[${input.tag}]::text[]`)
  if (input.customKey !== undefined) clauses.push(sql`t.custom_key = ${input.customKey}`)
  if (input.olderThanId !== undefined) clauses.push(sql`t.id < ${input.olderThanId}`)
  const rows = yield* sql<TriggerRow>`${selectTrigger(sql)}
    WHERE ${sql.and(clauses)}
    ORDER BY t.id DESC
    LIMIT ${input.limit + 1}`
  return { rows: rows.slice(0, input.limit), more: rows.length > input.limit }
})
