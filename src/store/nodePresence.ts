// Which nodes are alive: every connection of a node — its shard-lock session and its pool — carries
// the application_name `timewheel-node:<node id>`, so the live nodes are those PostgreSQL lists in
// pg_stat_activity. A node that dies loses its connections, and with them its presence, at once.
// After PostgreSQL itself restarts every node is absent until it reconnects: the server's uptime
// tells the scheduler to wait before it takes anyone for dead. A stopping node renames its
// shard-lock session `timewheel-draining:<node id>`: still alive (its pool keeps the node's name),
// but no longer counted when the others share the shards out.
// Whether one given node is alive is read from a lock instead: its shard-lock session holds the
// node's presence lock (store/shardLocks.ts), which PostgreSQL releases the moment that session
// ends, with the node's shard locks — so a node that takes a shard over can tell, at that moment,
// whether the shard's previous holder is gone, with no list of nodes to go stale.
import * as crypto from "node:crypto"
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

/** First key of the nodes' presence locks ("tx"; the shard locks use "tw"). */
export const PRESENCE_LOCK_NAMESPACE = 0x7478

/**
 * The second key of a node's presence lock: 32 bits of a hash of its id. Two live nodes sharing one
 * (a chance of 1 in 4 billion) would only make one look alive to the other's takeovers while it is
 * gone: its triggers then wait for crash recovery, a few seconds later.
 */
export const presenceLockKey = (node: string): number => crypto.createHash("sha256").update(node).digest().readInt32BE(0)

/** Whether `node`'s session holds its presence lock now, and how long the server has been up. */
export const presenceHeld = Effect.fnUntraced(function*(node: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ held: boolean; up_ms: string }>`
    SELECT EXISTS (SELECT FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid::bigint = ${PRESENCE_LOCK_NAMESPACE} AND l.objid::bigint = ${presenceLockKey(node) >>> 0}) AS held,
      (extract(epoch FROM now() - pg_postmaster_start_time()) * 1000)::bigint::text AS up_ms`
  return { held: rows[0]!.held, serverUpMs: Number(rows[0]!.up_ms) }
})
