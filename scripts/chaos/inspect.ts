// What the database says, read through the harness's own connections: who holds which shard lock
// (session-level advisory locks in timewheel's namespace, from pg_locks, attributed to a node process
// by the session's client port, with whether that session still carries the node's
// `timewheel-node:<id>` application name), which triggers a node has claimed and not finished, and
// at the end the execution log of every trigger (rows, attempt numbers, final status).
import type { NodeProcess } from "./nodes.ts"
import type { PrivateCluster } from "./postgres.ts"
import { connectionOwners } from "./sockets.ts"

/** First key of timewheel's two-int shard locks (src/store/shardLocks.ts, "tw"). */
const LOCK_NAMESPACE = 0x7477
const NODE_APPLICATION_PREFIX = "timewheel-node:"

export interface NodeOwnership {
  /** Sessions of this node process in the scenario's database. */
  readonly sessions: number
  /** Node id of each of its sessions named `timewheel-node:<id>` (the shard-lock session; later versions name every connection). */
  readonly nodeIds: ReadonlyArray<string>
  readonly shards: ReadonlyArray<number>
}

export interface Ownership {
  readonly atMs: number
  /** By node index. */
  readonly nodes: Readonly<Record<string, NodeOwnership>>
  /** Locks held by sessions not attributed to a live node process (e.g. a dead node's backend not yet gone). */
  readonly unattributedShards: ReadonlyArray<number>
}

export const ownership = async (cluster: PrivateCluster, database: string, nodes: ReadonlyArray<NodeProcess>): Promise<Ownership> => {
  const rows = await cluster.query<{ app: string | null; port: number | null; shards: string }>(database, `
    SELECT a.application_name AS app, a.client_port AS port,
      coalesce(string_agg(l.objid::text, ',' ORDER BY l.objid), '') AS shards
    FROM pg_stat_activity a
    LEFT JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory' AND l.classid = ${LOCK_NAMESPACE}
      AND l.objsubid = 2 AND l.granted
    WHERE a.datname = current_database() AND a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()
    GROUP BY a.pid, a.application_name, a.client_port`, 3_000)
  const atMs = Date.now()
  const owners = await connectionOwners(nodes.filter((node) => node.alive()), cluster.port)
  const result: Record<string, { sessions: number; nodeIds: Array<string>; shards: Array<number> }> = {}
  for (const node of nodes) result[node.index] = { sessions: 0, nodeIds: [], shards: [] }
  const unattributed: Array<number> = []
  for (const row of rows) {
    const shards = row.shards === "" ? [] : row.shards.split(",").map(Number)
    const owner = row.port === null ? undefined : owners.get(Number(row.port))
    if (owner === undefined) {
      unattributed.push(...shards)
      continue
    }
    const entry = result[owner]!
    entry.sessions++
    if (row.app?.startsWith(NODE_APPLICATION_PREFIX)) entry.nodeIds.push(row.app.slice(NODE_APPLICATION_PREFIX.length))
    entry.shards.push(...shards)
  }
  for (const entry of Object.values(result)) entry.shards.sort((a, b) => a - b)
  return { atMs, nodes: result, unattributedShards: unattributed.sort((a, b) => a - b) }
}

/** Shards held per node index (and "?" for unattributed), e.g. { "0": 22, "1": 21, "2": 21 }. */
export const shardCounts = (snapshot: Ownership): Record<string, number> => {
  const counts: Record<string, number> = {}
  for (const [index, entry] of Object.entries(snapshot.nodes)) counts[index] = entry.shards.length
  if (snapshot.unattributedShards.length > 0) counts["?"] = snapshot.unattributedShards.length
  return counts
}

/**
 * SQL: the triggers `nodeId` took and has not finished: claimed by it (queued or running), or fired by
 * the mark of a shard it holds (still registered or retrying, no custom key, not an instance, due at
 * or before the mark: src/store/shardMarks.ts). `nodeId` must be checked by the caller.
 */
export const takenBySql = (nodeId: string, columns: string) =>
  `SELECT ${columns} FROM triggers t WHERE (t.claimed_by = '${nodeId}' AND t.status IN ('queued', 'running'))
    OR (t.status IN ('registered', 'retrying') AND t.custom_key IS NULL AND t.generator_id IS NULL AND EXISTS (
      SELECT 1 FROM shard_marks m WHERE m.shard = t.shard AND m.node = '${nodeId}' AND t.due_at <= m.fired_at))`

/** Ids of the triggers `nodeId` took and has not finished (claimed or fired: takenBySql). */
export const claimedBy = async (cluster: PrivateCluster, database: string, nodeId: string): Promise<ReadonlyArray<string>> => {
  if (!/^[0-9a-f-]+$/i.test(nodeId)) return []
  const rows = await cluster.query<{ id: string }>(database, takenBySql(nodeId, "t.id::text AS id"), 5_000)
  return rows.map((row) => row.id)
}

export interface TriggerRecord {
  readonly shard: number
  readonly status: string
  readonly executions: number
  /** Its execution rows with status `succeeded`. */
  readonly succeeded: number
  /** Attempt numbers of its execution rows, ascending. */
  readonly attempts: ReadonlyArray<number>
}

/** Every one-shot trigger of the scenario's database, by id. */
export const triggerRecords = async (cluster: PrivateCluster, database: string): Promise<Map<string, TriggerRecord>> => {
  const rows = await cluster.query<{ id: string; shard: number; status: string; executions: number; succeeded: number; attempts: string }>(database, `
    SELECT t.id::text AS id, t.shard, t.status, count(e.id)::int AS executions,
      count(e.id) FILTER (WHERE e.status = 'succeeded')::int AS succeeded,
      coalesce(string_agg(e.attempt::text, ',' ORDER BY e.attempt), '') AS attempts
    FROM triggers t LEFT JOIN executions e ON e.trigger_id = t.id
    WHERE t.kind = 'job'
    GROUP BY t.id`, 30_000)
  return new Map(rows.map((row) => [row.id, {
    shard: Number(row.shard),
    status: row.status,
    executions: Number(row.executions),
    succeeded: Number(row.succeeded),
    attempts: row.attempts === "" ? [] : row.attempts.split(",").map(Number)
  }]))
}
