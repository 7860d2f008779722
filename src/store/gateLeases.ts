// Leases of the tag gates' budgets (migration 10; domain/gates/gateLease.ts decides the shares): a node's
// lease round is one transaction holding the advisory locks of its gates (so rounds of one gate
// never overlap, whichever nodes run them). It reads, per gate, the policy (FOR SHARE: a policy
// change waits for the round, and the round after it sees the change; an origin's gate reads its
// target policy and its circuit), the tag's hold, how many
// triggers wait for the gate in PostgreSQL, and every node's lease row; the caller decides what
// this node holds from it; then its rows are written (renewed_at = the round's start), the rows of
// nodes found gone are renamed and keep only their window tokens, and gone rows whose tokens no
// longer count are deleted. A few statements a round, a few rounds a second per active gate. Only a
// round that takes units nobody held waits for the WAL flush at its commit (RoundWrites.durable).
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { CircuitSettings } from "../domain/gates/circuitBreaker.ts"
import type { HoldState } from "../domain/gates/gateHold.ts"
import type { Throughput } from "../domain/gates/throughput.ts"
import { WAITING_SQL } from "./gates.ts"
import { DRAINING_APPLICATION_PREFIX, NODE_APPLICATION_PREFIX } from "./nodePresence.ts"
import { circuitStateOf, type CircuitRecord, type StoredCircuit } from "./targetCircuits.ts"

/** First key of the gates' two-int advisory locks ("tg"); the second is hashtext(project/tag). */
export const GATE_LOCK_NAMESPACE = 0x7467

export interface GateKey {
  readonly projectId: string
  readonly tag: string
}

/** One node's lease row as a round reads it. */
export interface LeaseRow {
  readonly node: string
  readonly permits: number
  readonly tokens: Readonly<Record<string, number>>
  readonly demand: Readonly<Record<string, number>>
  readonly inFlight: number
  /** Set once the node was found gone (the row then only keeps its window tokens). */
  readonly goneAtMs: number | null
  /**
   * A live row whose node is gone: absent from the database's sessions and its lease expired (and
   * the database up long enough for every live node to have reconnected). The round reclaims it.
   */
  readonly reclaimable: boolean
}

export interface GateRoundRead extends GateKey {
  /**
   * The policy of the tag, or of the origin (its own, else the project's `*`); null: none now. Only
   * a target policy has a circuit breaker.
   */
  readonly policy: {
    readonly maxConcurrent: number | null
    readonly throughput: Throughput | null
    readonly updatedAtMs: number
    readonly circuitBreaker: CircuitSettings | null
  } | null
  readonly hold: HoldState | null
  /** An origin's circuit (null: a tag, or an origin that never failed). */
  readonly circuit: StoredCircuit | null
  /** Triggers waiting for the gate in PostgreSQL, taken by no node (counted up to 1,000). */
  readonly backlog: number
  readonly leases: ReadonlyArray<LeaseRow>
}

export interface RoundRead {
  /** The database's clock at the round's start. */
  readonly nowMs: number
  /** How long the database server has been up (since its last start or restart). */
  readonly serverUpMs: number
  /** Nodes connected to the database now. */
  readonly liveNodes: number
  readonly gates: ReadonlyArray<GateRoundRead>
}

/** This node's row of a gate after its round. */
export interface OwnLease extends GateKey {
  readonly permits: number
  readonly tokens: Readonly<Record<string, number>>
  readonly demand: Readonly<Record<string, number>>
  readonly inFlight: number
  readonly policySeenMs: number | null
}

export interface RoundWrites {
  /** Rows of this node to write. */
  readonly keep: ReadonlyArray<OwnLease>
  /** Gates this node holds nothing of and wants nothing from: its row goes. */
  readonly drop: ReadonlyArray<GateKey>
  /** Rows of gone nodes (read `reclaimable`) to rename: their permits come back at once. */
  readonly reclaim: ReadonlyArray<GateKey & { readonly node: string }>
  /** Gone rows whose tokens count no start any more. */
  readonly purge: ReadonlyArray<GateKey & { readonly node: string }>
  /**
   * The round takes units nobody held (or reclaims a gone node's): its commit waits for the WAL
   * flush. A round that only renews or gives back commits asynchronously: lost with a crash of
   * PostgreSQL itself, it leaves rows saying a node holds more, or renewed earlier, than it did.
   */
  readonly durable: boolean
}

const keysJson = (gates: ReadonlyArray<GateKey>) => JSON.stringify(gates.map((g) => ({ project_id: g.projectId, tag: g.tag })))
const nodeKeysJson = (rows: ReadonlyArray<GateKey & { readonly node: string }>) =>
  JSON.stringify(rows.map((r) => ({ project_id: r.projectId, tag: r.tag, node: r.node })))

/** The gates' advisory locks, in one order for every node (until the transaction ends), and the transaction's asynchronous commit. */
const lockGates = Effect.fnUntraced(function*(gates: ReadonlyArray<GateKey>) {
  const sql = yield* SqlClient.SqlClient
  const keys = [...new Set(gates.map((gate) => `${gate.projectId}/${gate.tag}`))].sort()
  yield* sql`SELECT set_config('synchronous_commit', 'off', true),
    (SELECT count(pg_advisory_xact_lock(${GATE_LOCK_NAMESPACE}, hashtext(k.key)))
      FROM (SELECT key FROM unnest(${keys}::text[]) AS key ORDER BY key) k)`
})

interface ReadRecord {
  project_id: string
  tag: string
  policy: { max_concurrent: number | null; throughput: Throughput | null; updated_ms: number; circuit: CircuitSettings | null } | null
  hold: { since_ms: number; until_ms: number; backoff_ms: number } | null
  circuit: CircuitRecord | null
  backlog: number
  leases: Array<{
    node: string; permits: number; tokens: Record<string, number>; demand: Record<string, number>; in_flight: number
    gone_ms: number | null; reclaimable: boolean
  }>
  now_ms: string
  up_ms: string
  nodes: number
}

const readGates = Effect.fnUntraced(function*(input: {
  readonly node: string
  readonly gates: ReadonlyArray<GateKey>
  readonly ttlMs: number
  readonly graceMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const ms = (column: string) => sql.unsafe(`(extract(epoch FROM ${column}) * 1000)::float8`)
  const rows = yield* sql<ReadRecord>`
    WITH g AS (SELECT * FROM jsonb_to_recordset(${keysJson(input.gates)}::jsonb) AS g(project_id uuid, tag text)),
    server AS (SELECT (extract(epoch FROM now() - pg_postmaster_start_time()) * 1000)::bigint AS up_ms,
      (SELECT count(DISTINCT application_name) FROM pg_stat_activity
        WHERE datname = current_database() AND application_name LIKE ${NODE_APPLICATION_PREFIX + "%"})::int AS nodes),
    policies AS (
      SELECT tp.project_id, tp.tag, tp.max_concurrent, tp.throughput, tp.updated_at
      FROM tag_policies tp JOIN g ON g.project_id = tp.project_id AND g.tag = tp.tag
      FOR SHARE OF tp
    ),
    -- the target policies the origins' gates may read (each row locked once, however many origins
    -- fall under a '*')
    target_rows AS (
      SELECT tp.project_id, tp.origin, tp.max_concurrent, tp.throughput, tp.updated_at, tp.circuit_failures, tp.circuit_cooldown_seconds
      FROM target_policies tp
      WHERE (tp.project_id, tp.origin) IN (SELECT project_id, tag FROM g WHERE tag LIKE '%://%'
        UNION SELECT project_id, '*' FROM g WHERE tag LIKE '%://%')
      FOR SHARE OF tp
    ),
    -- an origin's gate (its name has '://'): the origin's own target policy, else the project's '*'
    targets AS (
      SELECT DISTINCT ON (g.project_id, g.tag) g.project_id, g.tag, t.max_concurrent, t.throughput, t.updated_at,
        t.circuit_failures, t.circuit_cooldown_seconds
      FROM g JOIN target_rows t ON t.project_id = g.project_id AND t.origin IN (g.tag, '*')
      WHERE g.tag LIKE '%://%'
      ORDER BY g.project_id, g.tag, t.origin = '*'
    )
    SELECT g.project_id, g.tag,
      CASE WHEN g.tag LIKE '%://%' THEN
        CASE WHEN o.tag IS NOT NULL THEN jsonb_build_object('max_concurrent', o.max_concurrent, 'throughput', o.throughput,
          'updated_ms', ${ms("o.updated_at")},
          'circuit', CASE WHEN o.circuit_failures IS NOT NULL
            THEN jsonb_build_object('failures', o.circuit_failures, 'cooldownSeconds', o.circuit_cooldown_seconds) END) END
      ELSE
        CASE WHEN p.tag IS NOT NULL THEN jsonb_build_object('max_concurrent', p.max_concurrent, 'throughput', p.throughput,
          'updated_ms', ${ms("p.updated_at")}) END
      END AS policy,
      (SELECT jsonb_build_object('since_ms', ${ms("h.held_since")}, 'until_ms', ${ms("h.held_until")}, 'backoff_ms', h.backoff_ms)
        FROM gate_holds h WHERE h.project_id = g.project_id AND h.tag = g.tag) AS hold,
      (SELECT jsonb_build_object('failures', c.failures, 'last_failure_ms', ${ms("c.last_failure_at")}, 'opened_ms', ${ms("c.opened_at")},
          'reason', c.reason, 'open_until_ms', ${ms("c.open_until")}, 'cooldown_ms', c.cooldown_ms, 'probe_node', c.probe_node,
          'probe_since_ms', ${ms("c.probe_since")}, 'version', c.version)
        FROM target_circuits c WHERE c.project_id = g.project_id AND c.origin = g.tag) AS circuit,
      (SELECT count(*) FROM (SELECT 1 FROM gate_slots s JOIN triggers t ON t.id = s.trigger_id
        WHERE s.project_id = g.project_id AND s.tag = g.tag AND NOT s.running AND ${sql.unsafe(WAITING_SQL)} AND t.claimed_by IS NULL
        LIMIT 1000) b)::int AS backlog,
      coalesce((SELECT jsonb_agg(jsonb_build_object('node', l.node, 'permits', l.permits, 'tokens', l.tokens, 'demand', l.demand,
          'in_flight', l.in_flight, 'gone_ms', ${ms("l.gone_at")},
          -- pg_stat_activity is read only for a live row past its lease
          'reclaimable', l.gone_at IS NULL AND l.node <> ${input.node}
            AND l.renewed_at < now() - ${`${input.ttlMs} milliseconds`}::interval AND server.up_ms > ${input.graceMs}
            AND NOT EXISTS (SELECT FROM pg_stat_activity a WHERE a.datname = current_database()
              AND a.application_name IN (${NODE_APPLICATION_PREFIX} || l.node, ${DRAINING_APPLICATION_PREFIX} || l.node)))
          ORDER BY l.node)
        FROM gate_leases l WHERE l.project_id = g.project_id AND l.tag = g.tag), '[]') AS leases,
      (extract(epoch FROM now()) * 1000)::bigint::text AS now_ms,
      server.up_ms::text AS up_ms, server.nodes
    FROM g CROSS JOIN server
      LEFT JOIN targets o ON o.project_id = g.project_id AND o.tag = g.tag
      LEFT JOIN policies p ON p.project_id = g.project_id AND p.tag = g.tag`
  return {
    nowMs: rows.length === 0 ? 0 : Number(rows[0]!.now_ms),
    serverUpMs: rows.length === 0 ? Infinity : Number(rows[0]!.up_ms),
    liveNodes: rows[0]?.nodes ?? 1,
    gates: rows.map((row): GateRoundRead => ({
      projectId: row.project_id,
      tag: row.tag,
      policy: row.policy === null ? null : {
        maxConcurrent: row.policy.max_concurrent, throughput: row.policy.throughput, updatedAtMs: row.policy.updated_ms,
        circuitBreaker: row.policy.circuit ?? null
      },
      hold: row.hold === null ? null : { heldSinceMs: row.hold.since_ms, heldUntilMs: row.hold.until_ms, backoffMs: row.hold.backoff_ms },
      circuit: row.circuit === null ? null : { state: circuitStateOf(row.circuit), version: row.circuit.version },
      backlog: row.backlog,
      leases: row.leases.map((lease): LeaseRow => ({
        node: lease.node, permits: lease.permits, tokens: lease.tokens, demand: lease.demand, inFlight: lease.in_flight,
        goneAtMs: lease.gone_ms, reclaimable: lease.reclaimable
      }))
    }))
  } satisfies RoundRead
})

const writeRound = Effect.fnUntraced(function*(node: string, writes: RoundWrites) {
  const sql = yield* SqlClient.SqlClient
  const keep = JSON.stringify(writes.keep.map((own) => ({
    project_id: own.projectId, tag: own.tag, permits: own.permits, tokens: own.tokens, demand: own.demand, in_flight: own.inFlight,
    policy_seen: own.policySeenMs === null ? null : new Date(own.policySeenMs).toISOString()
  })))
  yield* sql`
    WITH durability AS (SELECT set_config('synchronous_commit', ${writes.durable ? "on" : "off"}, true)), kept AS (
      INSERT INTO gate_leases (project_id, tag, node, permits, tokens, demand, in_flight, policy_seen, renewed_at)
      SELECT o.project_id, o.tag, ${node}, o.permits, o.tokens, o.demand, o.in_flight, o.policy_seen, now()
      FROM durability, jsonb_to_recordset(${keep}::jsonb) AS o(project_id uuid, tag text, permits int, tokens jsonb, demand jsonb, in_flight int,
        policy_seen timestamptz)
      ON CONFLICT (project_id, tag, node) DO UPDATE SET permits = excluded.permits, tokens = excluded.tokens,
        demand = excluded.demand, in_flight = excluded.in_flight, policy_seen = excluded.policy_seen, renewed_at = excluded.renewed_at
    ), dropped AS (
      DELETE FROM gate_leases l USING jsonb_to_recordset(${keysJson(writes.drop)}::jsonb) AS d(project_id uuid, tag text)
      WHERE l.project_id = d.project_id AND l.tag = d.tag AND l.node = ${node}
    ), reclaimed AS (
      UPDATE gate_leases l SET node = l.node || '~gone~' || (extract(epoch FROM now()) * 1000)::bigint, gone_at = now(),
        permits = 0, in_flight = 0, demand = '{}'
      FROM jsonb_to_recordset(${nodeKeysJson(writes.reclaim)}::jsonb) AS r(project_id uuid, tag text, node text)
      WHERE l.project_id = r.project_id AND l.tag = r.tag AND l.node = r.node AND l.gone_at IS NULL
    ), purged AS (
      DELETE FROM gate_leases l USING jsonb_to_recordset(${nodeKeysJson(writes.purge)}::jsonb) AS p(project_id uuid, tag text, node text)
      WHERE l.project_id = p.project_id AND l.tag = p.tag AND l.node = p.node AND l.gone_at IS NOT NULL
    )
    SELECT * FROM durability`
})

/**
 * One lease round of `node` over `gates`: locks, reads, lets `decide` say what to write, writes, in
 * one transaction. `ttlMs`: how long a lease lasts without a renewal; `graceMs`: how long after the
 * database (re)started nobody is taken for gone (the live nodes reconnect meanwhile).
 */
export const gateLeasesRound = <A>(input: {
  readonly node: string
  readonly gates: ReadonlyArray<GateKey>
  readonly ttlMs: number
  readonly graceMs: number
  readonly decide: (read: RoundRead) => { readonly writes: RoundWrites; readonly result: A }
}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(Effect.gen(function*() {
      yield* lockGates(input.gates)
      const read = yield* readGates(input)
      const { result, writes } = input.decide(read)
      yield* writeRound(input.node, writes)
      return result
    }))
  })

/**
 * How many live nodes' leases of these gates were granted under a policy older than `updatedAtMs`
 * (nodes that have not yet applied the change): a pause waits for none to be left.
 */
export const gateLeasesBehind = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly tags: ReadonlyArray<string>
  readonly updatedAtMs: number
  /** Every origin's gate of the project too (a `*` target policy's). */
  readonly anyOrigin?: boolean
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ n: number }>`
    SELECT count(*)::int AS n FROM gate_leases l
    WHERE l.project_id = ${input.projectId} AND l.gone_at IS NULL
      AND (l.tag = ANY(${input.tags}::text[]) OR (${input.anyOrigin === true} AND l.tag LIKE '%://%'))
      AND (l.policy_seen IS NULL OR l.policy_seen < ${new Date(input.updatedAtMs)})
      AND EXISTS (SELECT FROM pg_stat_activity a WHERE a.datname = current_database()
        AND a.application_name IN (${NODE_APPLICATION_PREFIX} || l.node, ${DRAINING_APPLICATION_PREFIX} || l.node))`
  return rows[0]?.n ?? 0
})

/** Requests in flight per tag, cluster-wide, as the live leases last reported them. */
export const gateLeasesInFlight = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly tags: ReadonlyArray<string> }) {
  const out = new Map<string, number>()
  if (input.tags.length === 0) return out as ReadonlyMap<string, number>
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ tag: string; n: number }>`
    SELECT tag, sum(in_flight)::int AS n FROM gate_leases
    WHERE project_id = ${input.projectId} AND tag = ANY(${input.tags}::text[]) AND gone_at IS NULL
    GROUP BY tag`
  for (const row of rows) out.set(row.tag, row.n)
  return out as ReadonlyMap<string, number>
})

/** A stopping node's rows: gone now (its permits back at once, its tokens counting its last starts). */
export const gateLeasesLeave = Effect.fnUntraced(function*(node: string) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE gate_leases SET node = node || '~gone~' || (extract(epoch FROM now()) * 1000)::bigint, gone_at = now(),
      permits = 0, in_flight = 0, demand = '{}'
    WHERE node = ${node} AND gone_at IS NULL`
})
