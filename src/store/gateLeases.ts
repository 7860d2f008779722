// Leases of the tag gates' budgets (migrations 10 and 19; domain/gates/gateLease.ts decides the shares): a
// node's lease round holds the advisory locks of its gates (so rounds of one gate never overlap,
// whichever nodes run them) across two statements on a session of its own. The first takes the locks
// and reads, per gate, the policy (an origin's gate reads its target policy and its circuit), the
// tag's hold, how many triggers wait for the gate in PostgreSQL, and every node's lease row; the
// caller decides what this node holds from it; the second writes its rows (renewed_at = the write's
// start) unless their policy changed since the read (it locks the policies until its commit: a policy
// change waits for it), renames the rows of nodes found gone (they keep only their window tokens),
// deletes gone rows whose tokens no longer count, commits and gives the locks back. A few rounds a
// second per active gate. Only a round that takes units nobody held waits for the WAL flush at its
// commit (RoundWrites.durable).
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { CircuitSettings } from "../domain/gates/circuitBreaker.ts"
import type { HoldState } from "../domain/gates/gateHold.ts"
import type { Throughput } from "../domain/gates/throughput.ts"
import { DRAINING_APPLICATION_PREFIX, NODE_APPLICATION_PREFIX } from "./nodePresence.ts"
import { circuitStateOf, type CircuitRecord, type StoredCircuit } from "./targetCircuits.ts"

/** First key of the gates' two-int advisory locks ("tg", 29799 in migration 19); the second is hashtext(project/tag). */
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

const roundReadOf = (rows: ReadonlyArray<ReadRecord>): RoundRead => ({
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
})

// the round's two statements (migration 19): the locks and the read; the write, its commit and the locks given back
const READ = "SELECT r AS gate FROM gate_round_read($1::jsonb, $2, $3, $4, $5, $6) r"
const WRITE = "CALL gate_round_write($1, $2::jsonb, $3::jsonb, $4::jsonb, $5::jsonb, $6, NULL)"
/** Gives back every advisory lock of the round's session (it holds none but the gates'), after a round that failed. */
const UNLOCK = "SELECT pg_advisory_unlock_all()"

const keepJson = (keep: ReadonlyArray<OwnLease>) => JSON.stringify(keep.map((own) => ({
  project_id: own.projectId, tag: own.tag, permits: own.permits, tokens: own.tokens, demand: own.demand, in_flight: own.inFlight,
  policy_seen: own.policySeenMs === null ? null : new Date(own.policySeenMs).toISOString(), policy_ms: own.policySeenMs
})))

/**
 * One lease round of `node` over `gates` on a session of its own (migration 19): the gates' locks
 * and the read in one statement, `decide` says what to write, the write, its commit and the locks
 * given back in another: the locks are held across one answer of this node, not four. `ttlMs`: how
 * long a lease lasts without a renewal; `graceMs`: how long after the database (re)started nobody is
 * taken for gone (the live nodes reconnect meanwhile). `stale`: the gates whose row was not written
 * (their policy changed since the read: what they took is not theirs).
 */
export const gateLeasesRound = <A>(input: {
  readonly node: string
  readonly gates: ReadonlyArray<GateKey>
  readonly ttlMs: number
  readonly graceMs: number
  readonly decide: (read: RoundRead) => { readonly writes: RoundWrites; readonly result: A }
}): Effect.Effect<{ readonly result: A; readonly stale: ReadonlyArray<GateKey> }, unknown, SqlClient.SqlClient> =>
  Effect.scoped(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const session = yield* sql.reserve
    return yield* Effect.gen(function*() {
      const rows = yield* session.execute(
        READ,
        [keysJson(input.gates), input.node, input.ttlMs, input.graceMs, NODE_APPLICATION_PREFIX, DRAINING_APPLICATION_PREFIX],
        undefined
      )
      const { result, writes } = input.decide(roundReadOf((rows as ReadonlyArray<{ gate: ReadRecord }>).map((row) => row.gate)))
      const written = yield* session.execute(WRITE, [
        input.node, keepJson(writes.keep), keysJson(writes.drop), nodeKeysJson(writes.reclaim), nodeKeysJson(writes.purge), writes.durable
      ], undefined)
      const stale = (written as ReadonlyArray<{ p_stale: Array<{ project_id: string; tag: string }> }>)[0]?.p_stale ?? []
      return { result, stale: stale.map((gate) => ({ projectId: gate.project_id, tag: gate.tag })) }
    }).pipe(Effect.onError(() => Effect.ignore(session.execute(UNLOCK, [], undefined))))
  }))

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
