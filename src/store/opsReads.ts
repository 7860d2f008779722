// What the ops listener's /metrics reads from PostgreSQL at each scrape, in one statement: the
// triggers held back by tag gates (the whole cluster's), and this node's connections by state as
// pg_stat_activity lists them (every connection of a node carries its application_name:
// nodePresence.ts).
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import { nodeApplicationName } from "./nodePresence.ts"

export interface OpsDatabaseState {
  readonly queued: number
  readonly connections: { readonly active: number; readonly idle: number; readonly idle_in_transaction: number; readonly other: number }
}

export const opsDatabaseRead = Effect.fnUntraced(function*(node: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ queued: number; active: number; idle: number; idle_in_transaction: number; other: number }>`
    SELECT (SELECT count(*) FROM triggers WHERE status = 'queued' AND claimed_by IS NULL)::int AS queued,
      count(*) FILTER (WHERE state = 'active')::int AS active,
      count(*) FILTER (WHERE state = 'idle')::int AS idle,
      count(*) FILTER (WHERE state LIKE 'idle in transaction%')::int AS idle_in_transaction,
      count(*) FILTER (WHERE state IS NULL OR state NOT IN ('active', 'idle') AND state NOT LIKE 'idle in transaction%')::int AS other
    FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = ${nodeApplicationName(node)}`
  const row = rows[0]!
  return {
    queued: row.queued,
    connections: { active: row.active, idle: row.idle, idle_in_transaction: row.idle_in_transaction, other: row.other }
  } satisfies OpsDatabaseState
})
