// Which nodes are alive: every connection of a node — its shard-lock session and its pool — carries
// the application_name `timewheel-node:<node id>`, so the live nodes are those PostgreSQL lists in
// pg_stat_activity. A node that dies loses its connections, and with them its presence, at once.
// After PostgreSQL itself restarts every node is absent until it reconnects: the server's uptime
// tells the scheduler to wait before it takes anyone for dead. A stopping node renames its
// shard-lock session `timewheel-draining:<node id>`: still alive (its pool keeps the node's name),
// but no longer counted when the others share the shards out.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

export const NODE_APPLICATION_PREFIX = "timewheel-node:"
export const DRAINING_APPLICATION_PREFIX = "timewheel-draining:"

/** The application_name every connection of a node carries. */
export const nodeApplicationName = (node: string): string => `${NODE_APPLICATION_PREFIX}${node}`

/** The application_name of a stopping node's shard-lock session. */
export const drainingApplicationName = (node: string): string => `${DRAINING_APPLICATION_PREFIX}${node}`

export interface Presence {
  /** Ids of the nodes connected to this database now (stopping ones included). */
  readonly nodes: ReadonlyArray<string>
  /** Those of them that are stopping: they take no shards. */
  readonly draining: ReadonlyArray<string>
  /** How long the database server has been up (since its last start or restart). */
  readonly serverUpMs: number
}

/** The live nodes and the server's uptime, in one statement (an aggregate always yields one row). */
export const presenceRead = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ names: ReadonlyArray<string>; draining: ReadonlyArray<string>; up_ms: string }>`
    SELECT coalesce(array_agg(DISTINCT application_name) FILTER (
        WHERE datname = current_database() AND application_name LIKE ${NODE_APPLICATION_PREFIX + "%"}), '{}') AS names,
      coalesce(array_agg(DISTINCT application_name) FILTER (
        WHERE datname = current_database() AND application_name LIKE ${DRAINING_APPLICATION_PREFIX + "%"}), '{}') AS draining,
      (extract(epoch FROM now() - pg_postmaster_start_time()) * 1000)::bigint::text AS up_ms
    FROM pg_stat_activity`
  const row = rows[0]!
  const draining = row.draining.map((name) => name.slice(DRAINING_APPLICATION_PREFIX.length))
  return {
    nodes: [...new Set([...row.names.map((name) => name.slice(NODE_APPLICATION_PREFIX.length)), ...draining])],
    draining,
    serverUpMs: Number(row.up_ms)
  } satisfies Presence
})
