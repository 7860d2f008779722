// Monthly quota usage: one unit per /schedule call that passes the quota check. Concurrent calls of
// a project are grouped: one statement per project and batch locks the usage row, grants as many
// units as the quota still allows, and reports the count before and after, so each call learns its
// exact remaining count. Grouping matters: every statement holds the row lock through its commit
// (a WAL flush), so one statement per call would serialise a project's calls on fsync.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

export type QuotaResult =
  | { readonly _tag: "Consumed"; readonly remaining: number }
  | { readonly _tag: "Exceeded"; readonly limit: number }

/** The month `monthOf` last answered: [fromMs, toMs) and its text. */
let lastMonth = { fromMs: 0, toMs: 0, month: "" }

/**
 * The first day (UTC) of the calendar month containing `nowMs`, as YYYY-MM-DD. Called for every
 * create (the insert batcher groups by it): the last month's bounds are remembered.
 */
export const monthOf = (nowMs: number): string => {
  if (nowMs >= lastMonth.fromMs && nowMs < lastMonth.toMs) return lastMonth.month
  const date = new Date(nowMs)
  const month = date.toISOString().slice(0, 8) + "01"
  lastMonth = {
    fromMs: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1),
    toMs: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1),
    month
  }
  return month
}

export interface Grant {
  readonly before: number
  readonly after: number
  readonly quota: number
}

/** What a granting statement returns: the usage before and after, and the quota (as text). */
export interface GrantRow {
  readonly before: string
  readonly after: string
  readonly quota: string
}

/**
 * Runs a statement that grants units from the project's usage row of the month; it finds no row on
 * the month's first use, so the row is created (nothing used) and the statement run again.
 */
export const grantFromUsageRow = <E, R>(
  input: { readonly projectId: string; readonly month: string },
  statement: Effect.Effect<ReadonlyArray<GrantRow>, E, R>
) =>
  Effect.gen(function*() {
    let rows = yield* statement
    if (rows.length === 0) {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO quota_usage (project_id, month, used) VALUES (${input.projectId}, ${input.month}::date, 0)
        ON CONFLICT (project_id, month) DO NOTHING`
      rows = yield* statement
    }
    const row = rows[0]!
    return { before: Number(row.before), after: Number(row.after), quota: Number(row.quota) } satisfies Grant
  })

/**
 * Takes up to `units` units for the project's month; returns the usage before and after and the
 * quota. The usage row is created on first use.
 */
export const quotaTake = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly month: string
  readonly units: number
}) {
  const sql = yield* SqlClient.SqlClient
  return yield* grantFromUsageRow(input, sql<GrantRow>`
    WITH old AS (
      SELECT used FROM quota_usage WHERE project_id = ${input.projectId} AND month = ${input.month}::date FOR UPDATE
    )
    UPDATE quota_usage q SET used = LEAST(q.used + ${input.units}, GREATEST(q.used, p.monthly_quota))
    FROM projects p, old
    WHERE q.project_id = ${input.projectId} AND q.month = ${input.month}::date AND p.id = q.project_id
    RETURNING old.used::text AS before, q.used::text AS after, p.monthly_quota::text AS quota`)
})

/** Splits one grant among the calls of a batch, in order: the first `after - before` are consumed. */
export const splitGrant = (grant: Grant, calls: number): ReadonlyArray<QuotaResult> =>
  Array.from({ length: calls }, (_, i): QuotaResult =>
    grant.before + i < grant.after
      ? { _tag: "Consumed", remaining: grant.quota - (grant.before + i + 1) }
      : { _tag: "Exceeded", limit: grant.quota })
