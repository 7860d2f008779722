// The circuit breakers of origins, shared by every node (migration 14; domain/gates/circuitBreaker.ts has
// the rules). Each change is settled in one transaction on the origin's row (locked), with the
// database's clock, and announced to every node (notification: the project, origin and state as
// JSON) when it changed the row; an opening also goes to the project's failure alerts (an outbox row
// of kind circuit_open). A probe is claimed here by one node; one whose node is gone from the
// database's sessions (and the database up longer than the restart grace) may be claimed by another.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import {
  circuitAfterAll, type CircuitEvent, type CircuitSettings, type CircuitState, claimProbe, CLOSED, releaseProbe
} from "../domain/gates/circuitBreaker.ts"
import { DRAINING_APPLICATION_PREFIX, NODE_APPLICATION_PREFIX } from "./nodePresence.ts"
import { TARGET_CIRCUITS_CHANNEL } from "./notifications.ts"

/** The columns a circuit is read from (ms as float8; a missing row reads as closed). */
export interface CircuitRecord {
  readonly failures: number
  readonly last_failure_ms: number | null
  readonly opened_ms: number | null
  readonly reason: string | null
  readonly open_until_ms: number | null
  readonly cooldown_ms: number
  readonly probe_node: string | null
  readonly probe_since_ms: number | null
  readonly version: number
}

export const circuitStateOf = (row: CircuitRecord): CircuitState => ({
  failures: row.failures,
  lastFailureAtMs: row.last_failure_ms,
  openedAtMs: row.opened_ms,
  reason: row.reason,
  openUntilMs: row.open_until_ms,
  cooldownMs: row.cooldown_ms,
  probe: row.probe_node === null ? null : { node: row.probe_node, sinceMs: row.probe_since_ms ?? 0 }
})

/** A circuit as stored: its state and how many changes it has had. */
export interface StoredCircuit {
  readonly state: CircuitState
  readonly version: number
}

/** A circuit's change as every node hears of it. */
export interface CircuitNotice extends StoredCircuit {
  readonly projectId: string
  readonly origin: string
}

const ms = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`
/** The database's clock in whole ms (what a timestamptz written from a JS Date keeps). */
const NOW_MS = "floor(extract(epoch FROM now()) * 1000)::float8"

/** The origin's row locked (made closed first when `create`), with the database's clock and whether a probe's node is gone. */
const lockedCircuit = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly origin: string
  readonly create: boolean
  readonly graceMs?: number
}) {
  const sql = yield* SqlClient.SqlClient
  if (input.create) {
    yield* sql`INSERT INTO target_circuits (project_id, origin) VALUES (${input.projectId}, ${input.origin}) ON CONFLICT DO NOTHING`
  }
  const rows = yield* sql<CircuitRecord & { now_ms: number; holder_gone: boolean }>`
    SELECT c.failures, ${sql.unsafe(ms("c.last_failure_at"))} AS last_failure_ms, ${sql.unsafe(ms("c.opened_at"))} AS opened_ms, c.reason,
      ${sql.unsafe(ms("c.open_until"))} AS open_until_ms, c.cooldown_ms, c.probe_node, ${sql.unsafe(ms("c.probe_since"))} AS probe_since_ms,
      c.version,
      ${sql.unsafe(NOW_MS)} AS now_ms,
      ${input.graceMs !== undefined} AND c.probe_node IS NOT NULL
        AND extract(epoch FROM now() - pg_postmaster_start_time()) * 1000 > ${input.graceMs ?? 0}
        AND NOT EXISTS (SELECT FROM pg_stat_activity a WHERE a.datname = current_database()
          AND a.application_name IN (${NODE_APPLICATION_PREFIX} || c.probe_node, ${DRAINING_APPLICATION_PREFIX} || c.probe_node)) AS holder_gone
    FROM target_circuits c WHERE c.project_id = ${input.projectId} AND c.origin = ${input.origin} FOR UPDATE`
  const row = rows[0]
  if (row !== undefined) return { state: circuitStateOf(row), version: row.version, nowMs: row.now_ms, holderGone: row.holder_gone, exists: true }
  const now = yield* sql<{ now_ms: number }>`SELECT ${sql.unsafe(NOW_MS)} AS now_ms`
  return { state: CLOSED, version: 0, nowMs: now[0]!.now_ms, holderGone: false, exists: false }
})

const at = (msValue: number | null) => (msValue === null ? null : new Date(msValue))

/** Writes the origin's state (its next version) and tells every node; returns the version. */
const writeCircuit = Effect.fnUntraced(function*(projectId: string, origin: string, state: CircuitState) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ version: number }>`UPDATE target_circuits SET failures = ${state.failures},
      last_failure_at = ${at(state.lastFailureAtMs)}, opened_at = ${at(state.openedAtMs)}, reason = ${state.reason},
      open_until = ${at(state.openUntilMs)}, cooldown_ms = ${state.cooldownMs}, probe_node = ${state.probe?.node ?? null},
      probe_since = ${at(state.probe?.sinceMs ?? null)}, version = version + 1
    WHERE project_id = ${projectId} AND origin = ${origin} RETURNING version`
  const version = rows[0]?.version ?? 0
  const notice: CircuitNotice = { projectId, origin, state, version }
  yield* sql`SELECT pg_notify(${TARGET_CIRCUITS_CHANNEL}, ${JSON.stringify(notice)})`
  return version
})

/** An opening in the project's failure alerts (when it has a target for them), the failing trigger named. */
const alertOpening = Effect.fnUntraced(function*(projectId: string, origin: string, state: CircuitState, triggerId: string) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO alert_outbox (execution_id, project_id, trigger_id, url, error, failed_at, kind)
    SELECT gen_random_uuid(), ${projectId}, ${triggerId}, ${origin},
      ${`circuit opened for ${Math.round(state.cooldownMs / 1000)} s after ${state.reason ?? "failures"}`}, ${at(state.openedAtMs)}, 'circuit_open'
    WHERE EXISTS (SELECT FROM project_alerts a WHERE a.project_id = ${projectId}
      AND (a.webhook_url IS NOT NULL OR cardinality(a.email_recipients) > 0))`
})

const sameState = (a: CircuitState, b: CircuitState) => JSON.stringify(a) === JSON.stringify(b)

/**
 * Outcomes of attempts to an origin, in the order they ended (on the database's clock), settled
 * under its circuit breaker's settings. `triggerId`: the last failing trigger, named in an alert of an opening.
 * Returns the state after them (database clock) and the database's clock.
 */
export const targetCircuitsSettle = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly origin: string
  readonly settings: CircuitSettings
  readonly events: ReadonlyArray<CircuitEvent>
  readonly triggerId: string
}) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(Effect.gen(function*() {
    // only a failure (or a probe's outcome: the row exists) has anything to write on a closed origin
    const create = input.events.some((event) => event._tag === "Failure")
    const read = yield* lockedCircuit({ projectId: input.projectId, origin: input.origin, create })
    const { opened, state } = circuitAfterAll(read.state, input.events, input.settings, read.nowMs)
    let version = read.version
    if (read.exists || create) {
      if (!sameState(state, read.state)) version = yield* writeCircuit(input.projectId, input.origin, state)
      if (opened) yield* alertOpening(input.projectId, input.origin, state, input.triggerId)
    }
    return { state, version, nowMs: read.nowMs, opened }
  }))
})

/**
 * `node` claims the probe of a probing origin: granted when nobody holds it, it holds it already, or
 * its holder is gone (not among the database's sessions, the database up longer than `graceMs`).
 */
export const targetCircuitsClaimProbe = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly origin: string
  readonly node: string
  readonly graceMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(Effect.gen(function*() {
    const read = yield* lockedCircuit({ projectId: input.projectId, origin: input.origin, create: false, graceMs: input.graceMs })
    const claimed = read.exists ? claimProbe(read.state, input.node, read.holderGone, read.nowMs) : null
    const version = claimed !== null && !sameState(claimed, read.state) ? yield* writeCircuit(input.projectId, input.origin, claimed) : read.version
    return { state: claimed ?? read.state, version, nowMs: read.nowMs, granted: claimed !== null }
  }))
})

/** `node` gives back the probe it claimed of this origin (it had nothing to send). */
export const targetCircuitsReleaseProbe = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly origin: string
  readonly node: string
}) {
  const sql = yield* SqlClient.SqlClient
  yield* sql.withTransaction(Effect.gen(function*() {
    const read = yield* lockedCircuit({ projectId: input.projectId, origin: input.origin, create: false })
    const released = releaseProbe(read.state, input.node)
    if (released !== null) yield* writeCircuit(input.projectId, input.origin, released)
  }))
})

/** A stopping node gives back every probe it holds (it sends nothing more). */
export const targetCircuitsLeave = Effect.fnUntraced(function*(node: string) {
  const sql = yield* SqlClient.SqlClient
  const held = yield* sql<{ project_id: string; origin: string }>`SELECT project_id, origin FROM target_circuits WHERE probe_node = ${node}`
  for (const row of held) yield* targetCircuitsReleaseProbe({ projectId: row.project_id, origin: row.origin, node })
})
