// Leases of the tag gates' budgets (migration 10; domain/gates/gateLease.ts decides the shares). A
// node's lease round reads, per gate, the policy (an origin's gate: its target policy, and its
// circuit), the tag's hold, how many triggers wait for the gate in PostgreSQL, and every node's
// lease row, with no lock; the caller decides what this node holds from it; then one statement
// writes its rows (renewed_at = now), renames the rows of nodes found gone (they keep only their
// window tokens) and deletes gone rows whose tokens no longer count. Renewing or giving back needs
// no lock: holdings only shrink. Taking units needs the others' holdings as they are now: a round
// that takes runs its write in a short transaction that first takes the advisory locks of the gates
// it takes from (so two takes of one gate never overlap, whichever nodes run them), and the write
// takes at most what the others leave of each limit at that moment, under the policy the round read
// if it is still the one in force (share-locked: a change waits for the write, and the round after
// sees it). A few statements a round, a few rounds a second per active gate; no lock is held across
// a round trip but the take's. Only a write that takes units nobody held waits for the WAL flush
// at its commit (RoundWrites.durable).
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
    /** Which row it is (a tag policy's, or the target policy of this origin, or of '*'), as a take names it. */
    readonly row: PolicyRow
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

/** A policy row as a round read it: the target policy's origin (null: the tag's policy) and its updated_at exactly. */
export interface PolicyRow {
  readonly origin: string | null
  readonly stamp: string
}

/** Units of a gate: permits, and window label → tokens. */
export interface Units {
  readonly permits: number
  readonly tokens: Readonly<Record<string, number>>
}

/** This node's row of a gate after its round. */
export interface OwnLease extends GateKey, Units {
  readonly demand: Readonly<Record<string, number>>
  readonly inFlight: number
  readonly policySeenMs: number | null
  /** The row holds units this node did not hold before the round (null: it only keeps or gives back). */
  readonly take: Take | null
}

/**
 * What a take needs to stay within the limits as they are when it is written: it holds its planned
 * units (`permits`, `tokens`) at most up to what the other nodes leave of each limit then, and never
 * less than `kept`; under another policy than `policy` (changed since the read), only `kept`.
 */
export interface Take {
  /** What it holds without the take: its holding before the round, down to what it keeps of it. */
  readonly kept: Units
  readonly maxConcurrent: number | null
  /** Each throughput window: its limit, and how long a gone row's tokens of it still count (the window and its margin). */
  readonly windows: Readonly<Record<string, { readonly limit: number; readonly countsMs: number }>>
  readonly policy: PolicyRow
}

/** A row this node's round wrote: what it holds now. */
export interface Written extends GateKey, Units {}

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

/** The advisory locks of the gates a write takes from, in one order for every node (until the transaction ends). */
const lockGates = Effect.fnUntraced(function*(gates: ReadonlyArray<GateKey>) {
  const sql = yield* SqlClient.SqlClient
  const keys = [...new Set(gates.map((gate) => `${gate.projectId}/${gate.tag}`))].sort()
  yield* sql`SELECT count(pg_advisory_xact_lock(${GATE_LOCK_NAMESPACE}, hashtext(k.key)))
    FROM (SELECT key FROM unnest(${keys}::text[]) AS key ORDER BY key) k`
})

interface ReadRecord {
  project_id: string
  tag: string
  policy: {
    max_concurrent: number | null; throughput: Throughput | null; updated_ms: number; circuit: CircuitSettings | null
    origin: string | null; stamp: string
  } | null
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
    ),
    -- the target policies the origins' gates may read (each row read once, however many origins
    -- fall under a '*')
    target_rows AS (
      SELECT tp.project_id, tp.origin, tp.max_concurrent, tp.throughput, tp.updated_at, tp.circuit_failures, tp.circuit_cooldown_seconds
      FROM target_policies tp
      WHERE (tp.project_id, tp.origin) IN (SELECT project_id, tag FROM g WHERE tag LIKE '%://%'
        UNION SELECT project_id, '*' FROM g WHERE tag LIKE '%://%')
    ),
    -- an origin's gate (its name has '://'): the origin's own target policy, else the project's '*'
    targets AS (
      SELECT DISTINCT ON (g.project_id, g.tag) g.project_id, g.tag, t.origin, t.max_concurrent, t.throughput, t.updated_at,
        t.circuit_failures, t.circuit_cooldown_seconds
      FROM g JOIN target_rows t ON t.project_id = g.project_id AND t.origin IN (g.tag, '*')
      WHERE g.tag LIKE '%://%'
      ORDER BY g.project_id, g.tag, t.origin = '*'
    )
    SELECT g.project_id, g.tag,
      CASE WHEN g.tag LIKE '%://%' THEN
        CASE WHEN o.tag IS NOT NULL THEN jsonb_build_object('max_concurrent', o.max_concurrent, 'throughput', o.throughput,
          'updated_ms', ${ms("o.updated_at")}, 'origin', o.origin, 'stamp', o.updated_at::text,
          'circuit', CASE WHEN o.circuit_failures IS NOT NULL
            THEN jsonb_build_object('failures', o.circuit_failures, 'cooldownSeconds', o.circuit_cooldown_seconds) END) END
      ELSE
        CASE WHEN p.tag IS NOT NULL THEN jsonb_build_object('max_concurrent', p.max_concurrent, 'throughput', p.throughput,
          'updated_ms', ${ms("p.updated_at")}, 'origin', NULL, 'stamp', p.updated_at::text) END
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
        circuitBreaker: row.policy.circuit ?? null,
        row: { origin: row.policy.origin, stamp: row.policy.stamp }
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

const unitsNone = (units: Units) => units.permits === 0 && Object.values(units.tokens).every((n) => n === 0)

interface WrittenRecord {
  project_id: string
  tag: string
  permits: number
  tokens: Record<string, number>
}

const writeRound = Effect.fnUntraced(function*(input: { readonly node: string; readonly ttlMs: number }, writes: RoundWrites) {
  const sql = yield* SqlClient.SqlClient
  const node = input.node
  const keep = JSON.stringify(writes.keep.map((own) => ({
    project_id: own.projectId, tag: own.tag, permits: own.permits, tokens: own.tokens, demand: own.demand, in_flight: own.inFlight,
    policy_seen: own.policySeenMs === null ? null : new Date(own.policySeenMs).toISOString(),
    take: own.take !== null,
    kept_permits: own.take?.kept.permits ?? own.permits, kept_tokens: own.take?.kept.tokens ?? own.tokens,
    kept_none: unitsNone(own.take?.kept ?? own),
    max_concurrent: own.take?.maxConcurrent ?? null,
    windows: Object.fromEntries(Object.entries(own.take?.windows ?? {}).map(([label, w]) => [label, { limit: w.limit, counts_ms: w.countsMs }])),
    policy_origin: own.take?.policy.origin ?? null, policy_stamp: own.take?.policy.stamp ?? null
  })))
  const rows = yield* sql<WrittenRecord>`
    WITH durability AS (SELECT set_config('synchronous_commit', ${writes.durable ? "on" : "off"}, true)),
    o AS (SELECT * FROM jsonb_to_recordset(${keep}::jsonb) AS o(project_id uuid, tag text, permits int, tokens jsonb, demand jsonb,
      in_flight int, policy_seen timestamptz, take boolean, kept_permits int, kept_tokens jsonb, kept_none boolean, max_concurrent int,
      windows jsonb, policy_origin text, policy_stamp timestamptz)),
    -- a take stands only under the policy it was planned with, still in force: share-locked, a change
    -- of it waits for this write (and the next round reads the change)
    tag_policy AS (
      SELECT o.project_id, o.tag FROM o JOIN tag_policies p ON p.project_id = o.project_id AND p.tag = o.tag
      WHERE o.take AND o.policy_origin IS NULL AND p.updated_at = o.policy_stamp
      FOR SHARE OF p
    ),
    target_policy AS (
      SELECT o.project_id, o.tag FROM o JOIN target_policies p ON p.project_id = o.project_id AND p.origin = o.policy_origin
      WHERE o.take AND p.updated_at = o.policy_stamp
      FOR SHARE OF p
    ),
    -- what a take holds: what it planned, at most what the other rows leave of each limit now (this
    -- statement began once the gate's lock was held: no other take of the gate is under way), and
    -- never less than what it kept of its own live row
    granted AS (
      SELECT o.project_id, o.tag,
        CASE WHEN o.max_concurrent IS NULL THEN o.permits
          ELSE greatest(own.live * o.kept_permits, least(o.permits, o.max_concurrent - (
            SELECT coalesce(sum(l.permits), 0) FROM gate_leases l
            WHERE l.project_id = o.project_id AND l.tag = o.tag AND l.node <> ${node} AND l.gone_at IS NULL))::int) END AS permits,
        coalesce((SELECT jsonb_object_agg(w.key, greatest(own.live * coalesce((o.kept_tokens ->> w.key)::int, 0),
            least(coalesce((o.tokens ->> w.key)::int, 0), (w.value ->> 'limit')::int - (
              SELECT coalesce(sum((l.tokens ->> w.key)::int), 0) FROM gate_leases l
              WHERE l.project_id = o.project_id AND l.tag = o.tag AND l.node <> ${node}
                AND (l.gone_at IS NULL OR l.gone_at > now() - (w.value ->> 'counts_ms')::int * interval '1 millisecond')))::int))
          FROM jsonb_each(o.windows) w), '{}') AS tokens
      FROM o JOIN (SELECT * FROM tag_policy UNION ALL SELECT * FROM target_policy) t ON t.project_id = o.project_id AND t.tag = o.tag
        CROSS JOIN LATERAL (SELECT count(*)::int AS live FROM gate_leases l
          WHERE l.project_id = o.project_id AND l.tag = o.tag AND l.node = ${node} AND l.gone_at IS NULL) own
    ),
    f AS (
      SELECT o.*, g.tag IS NOT NULL AS took, coalesce(g.permits, o.kept_permits) AS w_permits, coalesce(g.tokens, o.kept_tokens) AS w_tokens
      FROM o LEFT JOIN granted g ON g.project_id = o.project_id AND g.tag = o.tag
    ),
    -- a row that took, or that keeps no units: written, made if missing
    made AS (
      INSERT INTO gate_leases (project_id, tag, node, permits, tokens, demand, in_flight, policy_seen, renewed_at)
      SELECT f.project_id, f.tag, ${node}, f.w_permits, f.w_tokens, f.demand, f.in_flight, f.policy_seen, now()
      FROM durability, f WHERE f.took OR f.kept_none
      ON CONFLICT (project_id, tag, node) DO UPDATE SET permits = excluded.permits, tokens = excluded.tokens,
        demand = excluded.demand, in_flight = excluded.in_flight, policy_seen = excluded.policy_seen, renewed_at = excluded.renewed_at
      RETURNING project_id, tag, permits, tokens
    ),
    -- a row keeping units it held: renewed only while it is there (one another node found gone is not
    -- made again: what it held may be another's by now)
    renewed AS (
      UPDATE gate_leases l SET permits = f.w_permits, tokens = f.w_tokens, demand = f.demand, in_flight = f.in_flight,
        policy_seen = f.policy_seen, renewed_at = now()
      FROM durability, f
      WHERE NOT f.took AND NOT f.kept_none AND l.project_id = f.project_id AND l.tag = f.tag AND l.node = ${node} AND l.gone_at IS NULL
      RETURNING l.project_id, l.tag, l.permits, l.tokens
    ), dropped AS (
      DELETE FROM gate_leases l USING jsonb_to_recordset(${keysJson(writes.drop)}::jsonb) AS d(project_id uuid, tag text)
      WHERE l.project_id = d.project_id AND l.tag = d.tag AND l.node = ${node}
    ), reclaimed AS (
      UPDATE gate_leases l SET node = l.node || '~gone~' || (extract(epoch FROM now()) * 1000)::bigint, gone_at = now(),
        permits = 0, in_flight = 0, demand = '{}'
      FROM jsonb_to_recordset(${nodeKeysJson(writes.reclaim)}::jsonb) AS r(project_id uuid, tag text, node text)
      WHERE l.project_id = r.project_id AND l.tag = r.tag AND l.node = r.node AND l.gone_at IS NULL
        -- still gone as the round read it: not renewed since, nor back among the database's sessions
        AND l.renewed_at < now() - ${`${input.ttlMs} milliseconds`}::interval
        AND NOT EXISTS (SELECT FROM pg_stat_activity a WHERE a.datname = current_database()
          AND a.application_name IN (${NODE_APPLICATION_PREFIX} || l.node, ${DRAINING_APPLICATION_PREFIX} || l.node))
    ), purged AS (
      DELETE FROM gate_leases l USING jsonb_to_recordset(${nodeKeysJson(writes.purge)}::jsonb) AS p(project_id uuid, tag text, node text)
      WHERE l.project_id = p.project_id AND l.tag = p.tag AND l.node = p.node AND l.gone_at IS NOT NULL
    )
    SELECT project_id, tag, permits, tokens FROM made UNION ALL SELECT project_id, tag, permits, tokens FROM renewed`
  return rows.map((row): Written => ({ projectId: row.project_id, tag: row.tag, permits: row.permits, tokens: row.tokens }))
})

/**
 * One lease round of `node` over `gates`: reads, lets `decide` say what to write, writes (in a short
 * transaction holding the locks of the gates it takes from, if it takes), and returns what `decide`
 * returned with the rows as written. `ttlMs`: how long a lease lasts without a renewal; `graceMs`:
 * how long after the database (re)started nobody is taken for gone (the live nodes reconnect
 * meanwhile).
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
    const read = yield* readGates(input)
    const { result, writes } = input.decide(read)
    const takes = writes.keep.filter((own) => own.take !== null)
    const written = takes.length === 0
      ? yield* writeRound(input, writes)
      : yield* sql.withTransaction(Effect.andThen(lockGates(takes), writeRound(input, writes)))
    return { result, written }
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
