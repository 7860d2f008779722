// The status sets of domain/trigger.ts as SQL literal lists, e.g. `('registered', 'retrying')`.
// Literals, not parameters: the planner matches them against the partial indexes' predicates.
import type { Fragment } from "effect/sql/Statement"
import type { SqlClient } from "effect/sql"

const WORD = /^[a-z_]+$/

/** `(…)` of the given statuses, for `status IN ${statusList(sql, DUE_STATUSES)}`. */
export const statusList = (sql: SqlClient.SqlClient, statuses: ReadonlyArray<string>): Fragment => {
  for (const status of statuses) if (!WORD.test(status)) throw new Error(`not a status: ${status}`)
  return sql.unsafe(`(${statuses.map((status) => `'${status}'`).join(", ")})`)
}
