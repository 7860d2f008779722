// Which nodes are alive: each node holds one session (its shard-lock session) whose
// application_name is `timewheel-node:<node id>`, so the live nodes are the sessions PostgreSQL
// lists in pg_stat_activity. A node that dies loses its session, and with it its presence.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

export const NODE_APPLICATION_PREFIX = "timewheel-node:"

/** The application_name a node's presence session carries. */
export const nodeApplicationName = (node: string): string => `${NODE_APPLICATION_PREFIX}${node}`

/** Ids of the nodes connected to this database now. */
export const nodesLive = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ name: string }>`SELECT application_name AS name FROM pg_stat_activity
    WHERE datname = current_database() AND application_name LIKE ${NODE_APPLICATION_PREFIX + "%"}`
  return rows.map((row) => row.name.slice(NODE_APPLICATION_PREFIX.length))
})
