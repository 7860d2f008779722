// Target policies: one row per (project, origin), the origin normalised or `*` (migration 14). Every
// change is announced (notification payload: the project id) in its own statement's transaction,
// so every node's target policy cache and gates apply it at once. The live state of an origin comes
// from its gate's rows — gate_slots (triggers waiting in PostgreSQL), gate_leases (in flight, as
// the nodes last reported), gate_holds (a refusal's hold) — and its circuit (target_circuits).
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import { circuitPhase, type CircuitPhase } from "../domain/gates/circuitBreaker.ts"
import { ANY_ORIGIN, type StoredTargetPolicy, type TargetLive, type TargetPolicyFields, type TargetView } from "../domain/targetPolicy.ts"
import { WAITING_SQL } from "./gates.ts"
import { TARGET_POLICIES_CHANGED_CHANNEL } from "./notifications.ts"
import { circuitStateOf, type CircuitRecord } from "./targetCircuits.ts"

interface PolicyRecord {
  readonly id: string
  readonly origin: string
  readonly max_concurrent: number | null
  readonly throughput: Record<string, number> | null
  readonly circuit_failures: number | null
  readonly circuit_cooldown_seconds: number | null
  readonly created_at: Date
  readonly updated_at: Date
}

const COLUMNS = "id, origin, max_concurrent, throughput, circuit_failures, circuit_cooldown_seconds, created_at, updated_at"

const toPolicy = (row: PolicyRecord): StoredTargetPolicy => ({
  id: row.id,
  origin: row.origin,
  maxConcurrent: row.max_concurrent,
  throughput: row.throughput,
  circuitBreaker: row.circuit_failures === null || row.circuit_cooldown_seconds === null
    ? null
    : { failures: row.circuit_failures, cooldownSeconds: row.circuit_cooldown_seconds },
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

const columnsOf = (fields: TargetPolicyFields) => ({
  origin: fields.origin,
  maxConcurrent: fields.maxConcurrent,
  throughput: fields.throughput === null ? null : JSON.stringify(fields.throughput),
  failures: fields.circuitBreaker?.failures ?? null,
  cooldownSeconds: fields.circuitBreaker?.cooldownSeconds ?? null
})

/** Every policy of the project, oldest first. */
export const targetPoliciesList = Effect.fnUntraced(function*(projectId: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<PolicyRecord>`SELECT ${sql.unsafe(COLUMNS)} FROM target_policies
    WHERE project_id = ${projectId} ORDER BY created_at, id`
  return rows.map(toPolicy)
})

/** The projects that have a target policy (a loose index scan: one probe per project). */
export const targetPolicyProjects = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ project_id: string }>`
    WITH RECURSIVE p AS (
      (SELECT project_id FROM target_policies ORDER BY project_id LIMIT 1)
      UNION ALL
      SELECT next.project_id FROM p CROSS JOIN LATERAL (
        SELECT project_id FROM target_policies WHERE project_id > p.project_id ORDER BY project_id LIMIT 1) next
    )
    SELECT project_id FROM p`
  return rows.map((row) => row.project_id)
})

/** One policy of the project, locked until the transaction ends (a PUT reads, merges and writes it), or undefined. */
export const targetPoliciesGetForUpdate = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly id: string }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<PolicyRecord>`SELECT ${sql.unsafe(COLUMNS)} FROM target_policies
    WHERE id = ${input.id} AND project_id = ${input.projectId} FOR UPDATE`
  return rows[0] === undefined ? undefined : toPolicy(rows[0])
})

/** The policy of an origin (or `*`), or undefined. */
export const targetPoliciesFindByOrigin = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly origin: string }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<PolicyRecord>`SELECT ${sql.unsafe(COLUMNS)} FROM target_policies
    WHERE project_id = ${input.projectId} AND origin = ${input.origin}`
  return rows[0] === undefined ? undefined : toPolicy(rows[0])
})

/** Creates a policy; undefined when the origin has one already. */
export const targetPoliciesCreate = Effect.fnUntraced(function*(input: {
  readonly id: string
  readonly projectId: string
  readonly fields: TargetPolicyFields
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const c = columnsOf(input.fields)
  const now = new Date(input.nowMs)
  const rows = yield* sql<PolicyRecord>`
    WITH created AS (
      INSERT INTO target_policies (id, project_id, origin, max_concurrent, throughput, circuit_failures, circuit_cooldown_seconds,
        created_at, updated_at)
      VALUES (${input.id}, ${input.projectId}, ${c.origin}, ${c.maxConcurrent}, ${c.throughput}::jsonb, ${c.failures}, ${c.cooldownSeconds},
        ${now}, ${now})
      ON CONFLICT (project_id, origin) DO NOTHING
      RETURNING ${sql.unsafe(COLUMNS)}
    ), announced AS (
      SELECT pg_notify(${TARGET_POLICIES_CHANGED_CHANNEL}, ${input.projectId}) FROM created
    )
    SELECT created.* FROM created, announced`
  return rows[0] === undefined ? undefined : toPolicy(rows[0])
})

/** Replaces a policy's limits (its origin never changes); undefined when it does not exist. */
export const targetPoliciesUpdate = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly id: string
  readonly fields: TargetPolicyFields
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const c = columnsOf(input.fields)
  const rows = yield* sql<PolicyRecord>`
    WITH updated AS (
      UPDATE target_policies SET max_concurrent = ${c.maxConcurrent}, throughput = ${c.throughput}::jsonb,
        circuit_failures = ${c.failures}, circuit_cooldown_seconds = ${c.cooldownSeconds}, updated_at = ${new Date(input.nowMs)}
      WHERE id = ${input.id} AND project_id = ${input.projectId}
      RETURNING ${sql.unsafe(COLUMNS)}
    ), announced AS (
      SELECT pg_notify(${TARGET_POLICIES_CHANGED_CHANNEL}, ${input.projectId}) FROM updated
    )
    SELECT updated.* FROM updated, announced`
  return rows[0] === undefined ? undefined : toPolicy(rows[0])
})

/** Deletes a policy; the deleted one, or undefined when it did not exist. */
export const targetPoliciesDelete = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly id: string }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<PolicyRecord>`
    WITH deleted AS (
      DELETE FROM target_policies WHERE id = ${input.id} AND project_id = ${input.projectId}
      RETURNING ${sql.unsafe(COLUMNS)}
    ), announced AS (
      SELECT pg_notify(${TARGET_POLICIES_CHANGED_CHANNEL}, ${input.projectId}) FROM deleted
    )
    SELECT deleted.* FROM deleted, announced`
  return rows[0] === undefined ? undefined : toPolicy(rows[0])
})

interface OriginRecord extends CircuitRecord {
  readonly origin: string
  readonly policy_id: string | null
  readonly has_breaker: boolean
  readonly queued: number
  readonly in_flight: number
  readonly held_until: Date | null
  readonly now_ms: number
}

/** What one origin's row says now: its live state, the policy covering it, its circuit. */
export interface OriginLive extends TargetLive {
  readonly origin: string
  readonly policyId: string | null
  readonly circuit: CircuitPhase
  readonly consecutiveFailures: number
  readonly circuitOpenedAt: Date | null
  readonly circuitReason: string | null
}

/**
 * The live state of some origins of a project in one statement: the policy covering each (its own,
 * else `*`), triggers waiting for its gate in PostgreSQL (the partial index gate_slots_waiting; one
 * triggers lookup per waiting row), in flight as the live leases last said, the refusal's hold and
 * the circuit (closed without a circuit breaker). heldUntil is the later of the hold and an open
 * circuit's cooldown.
 */
const originsLive = Effect.fnUntraced(function*(projectId: string, origins: ReadonlyArray<string>) {
  if (origins.length === 0) return [] as Array<OriginLive>
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<OriginRecord>`
    SELECT o.origin, pol.id AS policy_id, coalesce(pol.circuit_failures IS NOT NULL, false) AS has_breaker,
      (SELECT count(*) FROM gate_slots s WHERE s.project_id = ${projectId} AND s.tag = o.origin AND NOT s.running
        AND EXISTS (SELECT FROM triggers t WHERE t.id = s.trigger_id AND ${sql.unsafe(WAITING_SQL)}))::int AS queued,
      (SELECT coalesce(sum(l.in_flight), 0) FROM gate_leases l
        WHERE l.project_id = ${projectId} AND l.tag = o.origin AND l.gone_at IS NULL)::int AS in_flight,
      (SELECT h.held_until FROM gate_holds h WHERE h.project_id = ${projectId} AND h.tag = o.origin AND h.held_until > now()) AS held_until,
      ${sql.unsafe(CIRCUIT_COLUMNS_OF_C)}, (extract(epoch FROM now()) * 1000)::float8 AS now_ms
    FROM unnest(${[...origins]}::text[]) AS o(origin)
    LEFT JOIN LATERAL (SELECT tp.id, tp.circuit_failures FROM target_policies tp
      WHERE tp.project_id = ${projectId} AND tp.origin IN (o.origin, ${ANY_ORIGIN}) ORDER BY tp.origin = ${ANY_ORIGIN} LIMIT 1) pol ON true
    LEFT JOIN target_circuits c ON c.project_id = ${projectId} AND c.origin = o.origin`
  return rows.map((row): OriginLive => {
    const state = circuitStateOf(row)
    const circuit = row.has_breaker ? circuitPhase(state, row.now_ms) : "closed"
    const openUntil = circuit === "open" && state.openUntilMs !== null ? new Date(state.openUntilMs) : null
    const heldUntil = row.held_until === null ? openUntil : openUntil === null || row.held_until > openUntil ? row.held_until : openUntil
    return {
      origin: row.origin, policyId: row.policy_id, queued: row.queued, inFlight: row.in_flight, heldUntil, circuit,
      consecutiveFailures: row.has_breaker ? state.failures : 0,
      circuitOpenedAt: state.openedAtMs === null ? null : new Date(state.openedAtMs), circuitReason: state.reason
    }
  })
})

/** The columns circuitStateOf reads, over the alias `c` (target_circuits, maybe absent). */
const CIRCUIT_COLUMNS_OF_C = `coalesce(c.failures, 0) AS failures,
  (extract(epoch FROM c.last_failure_at) * 1000)::float8 AS last_failure_ms, (extract(epoch FROM c.opened_at) * 1000)::float8 AS opened_ms,
  c.reason, (extract(epoch FROM c.open_until) * 1000)::float8 AS open_until_ms, coalesce(c.cooldown_ms, 0) AS cooldown_ms,
  c.probe_node, (extract(epoch FROM c.probe_since) * 1000)::float8 AS probe_since_ms, coalesce(c.version, 0) AS version`

/** What waits for and is in flight to the origins a `*` policy covers (those without a policy of their own), summed. */
const anyOriginTotals = Effect.fnUntraced(function*(projectId: string) {
  const sql = yield* SqlClient.SqlClient
  const own = sql`SELECT FROM target_policies tp WHERE tp.project_id = ${projectId} AND tp.origin = `
  const rows = yield* sql<{ queued: number; in_flight: number }>`
    SELECT
      (SELECT count(*) FROM gate_slots s WHERE s.project_id = ${projectId} AND NOT s.running AND s.tag LIKE '%://%'
        AND NOT EXISTS (${own} s.tag)
        AND EXISTS (SELECT FROM triggers t WHERE t.id = s.trigger_id AND ${sql.unsafe(WAITING_SQL)}))::int AS queued,
      (SELECT coalesce(sum(l.in_flight), 0) FROM gate_leases l WHERE l.project_id = ${projectId} AND l.gone_at IS NULL
        AND l.tag LIKE '%://%' AND NOT EXISTS (${own} l.tag))::int AS in_flight`
  return { queued: rows[0]?.queued ?? 0, inFlight: rows[0]?.in_flight ?? 0 }
})

/** The live state of each policy of the list (by id): its origin's, or for `*` the sums over the origins it covers. */
export const targetPoliciesLive = Effect.fnUntraced(function*(projectId: string, policies: ReadonlyArray<StoredTargetPolicy>) {
  const out = new Map<string, TargetLive>()
  const exact = policies.filter((policy) => policy.origin !== ANY_ORIGIN)
  for (const live of yield* originsLive(projectId, exact.map((policy) => policy.origin))) {
    const policy = exact.find((p) => p.origin === live.origin)
    if (policy !== undefined) out.set(policy.id, live)
  }
  const star = policies.find((policy) => policy.origin === ANY_ORIGIN)
  if (star !== undefined) out.set(star.id, { ...(yield* anyOriginTotals(projectId)), heldUntil: null, circuit: null })
  return out as ReadonlyMap<string, TargetLive>
})

/**
 * GET /targets: the origins under a policy of the project that now have triggers waiting in
 * PostgreSQL or in flight, a hold, or a circuit that is not closed, alphabetically. The candidates
 * come from the gate rows of origins (a loose index scan of the waiting ones: one probe per origin)
 * and the circuits.
 */
export const targetsActive = Effect.fnUntraced(function*(projectId: string) {
  const sql = yield* SqlClient.SqlClient
  const candidates = yield* sql<{ origin: string }>`
    WITH RECURSIVE waiting AS (
      (SELECT tag FROM gate_slots WHERE project_id = ${projectId} AND NOT running AND tag > '' ORDER BY tag LIMIT 1)
      UNION ALL
      SELECT next.tag FROM waiting w CROSS JOIN LATERAL (
        SELECT tag FROM gate_slots WHERE project_id = ${projectId} AND NOT running AND tag > w.tag ORDER BY tag LIMIT 1) next
    )
    SELECT tag AS origin FROM waiting WHERE tag LIKE '%://%'
    UNION SELECT tag FROM gate_leases WHERE project_id = ${projectId} AND gone_at IS NULL AND in_flight > 0 AND tag LIKE '%://%'
    UNION SELECT tag FROM gate_holds WHERE project_id = ${projectId} AND held_until > now() AND tag LIKE '%://%'
    UNION SELECT origin FROM target_circuits WHERE project_id = ${projectId} AND open_until IS NOT NULL`
  const live = yield* originsLive(projectId, candidates.map((row) => row.origin))
  return live
    .filter((o) => o.policyId !== null && (o.queued > 0 || o.inFlight > 0 || o.heldUntil !== null || o.circuit !== "closed"))
    .sort((a, b) => (a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0))
    .map((o): TargetView => ({
      origin: o.origin,
      policyId: o.policyId!,
      queued: o.queued,
      inFlight: o.inFlight,
      heldUntil: o.heldUntil === null ? null : o.heldUntil.toISOString(),
      circuit: o.circuit,
      consecutiveFailures: o.consecutiveFailures,
      circuitOpenedAt: o.circuitOpenedAt === null ? null : o.circuitOpenedAt.toISOString(),
      circuitReason: o.circuitReason
    }))
})
