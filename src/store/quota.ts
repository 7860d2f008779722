// Monthly quota usage: one unit per /schedule call that passes the quota check. The increment is a
// single compare-and-set statement (row lock held only for that statement), so the remaining count
// is exact under concurrent calls.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export type QuotaResult =
  | { readonly _tag: "Consumed"; readonly remaining: number }
  | { readonly _tag: "Exceeded"; readonly limit: number }

/** The first day (UTC) of the calendar month containing `nowMs`, as YYYY-MM-DD. */
export const monthOf = (nowMs: number): string => new Date(nowMs).toISOString().slice(0, 8) + "01"

export const quotaConsume = Effect.fn("quotaConsume")(function*(input: { readonly projectId: string; readonly nowMs: number }) {
  const sql = yield* SqlClient.SqlClient
  const month = monthOf(input.nowMs)
  const rows = yield* sql<{ used: string; quota: string }>`
    WITH p AS (SELECT monthly_quota FROM projects WHERE id = ${input.projectId})
    INSERT INTO quota_usage (project_id, month, used)
    SELECT ${input.projectId}, ${month}::date, 1 FROM p WHERE p.monthly_quota >= 1
    ON CONFLICT (project_id, month) DO UPDATE SET used = quota_usage.used + 1
      WHERE quota_usage.used < (SELECT monthly_quota FROM p)
    RETURNING used::text, (SELECT monthly_quota FROM p)::text AS quota`
  const row = rows[0]
  if (row !== undefined) return { _tag: "Consumed", remaining: Number(row.quota) - Number(row.used) } satisfies QuotaResult
  const limit = yield* sql<{ quota: string }>`SELECT monthly_quota::text AS quota FROM projects WHERE id = ${input.projectId}`
  return { _tag: "Exceeded", limit: Number(limit[0]?.quota ?? 0) } satisfies QuotaResult
})
