// Projects: name, monthly quota and the project default retry policy (stored as its API view).
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

export interface ProjectRow {
  readonly id: string
  readonly name: string
  readonly monthlyQuota: number
}

/** True for an SqlError caused by a unique constraint (SQLSTATE 23505). */
export const isUniqueViolation = (error: unknown): boolean => {
  const reason = (error as { reason?: { _tag?: string; cause?: { code?: string } } } | undefined)?.reason
  return reason?._tag === "UniqueViolation" || reason?.cause?.code === "23505"
}

/** Inserts a project; `false` when the name is taken. */
export const projectsCreate = Effect.fnUntraced(function*(input: {
  readonly id: string
  readonly name: string
  readonly monthlyQuota: number
  readonly retryPolicy: unknown
  /** Absent: the database draws one (the column's default). */
  readonly signingSecret?: string
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  const rows = yield* sql<{ id: string }>`
    INSERT INTO projects (id, name, monthly_quota, retry_policy, signing_secret, created_at, updated_at)
    VALUES (${input.id}, ${input.name}, ${input.monthlyQuota}, ${JSON.stringify(input.retryPolicy)}::jsonb, ${input.signingSecret ?? sql`DEFAULT`},
      ${now}, ${now})
    ON CONFLICT (name) DO NOTHING
    RETURNING id`
  return rows.length === 1
})

export const projectsFindByName = Effect.fnUntraced(function*(name: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string; name: string; monthly_quota: string }>`
    SELECT id, name, monthly_quota::text FROM projects WHERE name = ${name}`
  const row = rows[0]
  return row === undefined ? undefined : { id: row.id, name: row.name, monthlyQuota: Number(row.monthly_quota) } satisfies ProjectRow
})

/** Sets the monthly quota; `false` when no project has that name. */
export const projectsSetQuota = Effect.fnUntraced(function*(input: {
  readonly name: string
  readonly monthlyQuota: number
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    UPDATE projects SET monthly_quota = ${input.monthlyQuota}, updated_at = ${new Date(input.nowMs)}
    WHERE name = ${input.name} RETURNING id`
  return rows.length === 1
})

export const projectsGetRetryPolicy = Effect.fnUntraced(function*(projectId: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ retry_policy: unknown }>`SELECT retry_policy FROM projects WHERE id = ${projectId}`
  return rows[0]?.retry_policy
})

export const projectsSetRetryPolicy = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly retryPolicy: unknown
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE projects SET retry_policy = ${JSON.stringify(input.retryPolicy)}::jsonb,
    updated_at = ${new Date(input.nowMs)} WHERE id = ${input.projectId}`
})

/** Every project, by name (the dashboard's project picker). */
export const projectsList = Effect.fnUntraced(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string; name: string }>`SELECT id, name FROM projects ORDER BY name`
  return rows.map((row) => ({ id: row.id, name: row.name }))
})

/** The name of the project with this id, if any. */
export const projectsNameOf = Effect.fnUntraced(function*(id: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ name: string }>`SELECT name FROM projects WHERE id = ${id}`
  return rows[0]?.name
})
