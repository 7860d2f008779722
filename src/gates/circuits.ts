// The circuit breakers of the origin gates on this node (docs/protecting-targets.md "Circuit
// breaker"; domain/gates/circuitGate.ts is a gate's view, store/targetCircuits.ts the shared state). Beside
// the hot path, fibers of the gatekeeper's scope:
// - outcomes of attempts to an origin with a circuit breaker are settled in PostgreSQL in batches
//   per origin — a failure always, an answer only when failures were counted (or another node's
//   failure is heard to have come before this node's last answer), the probe's outcome always — and
//   the state that comes back applies here at once (every other node hears of it by notification);
// - a probing origin with triggers waiting here or in PostgreSQL gets this node's claim of the
//   probe; a probe held and unused for PROBE_UNUSED_MS is given back;
// - notifications of circuit changes apply to the gates this node knows.
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import { type CircuitEvent, failureReason, verdictOf } from "../domain/gates/circuitBreaker.ts"
import { forkLoop, retryUntilDone } from "../lib/backgroundLoop.ts"
import { Metrics } from "../metrics/metrics.ts"
import type { Database } from "../store/db.ts"
import { Notifications, TARGET_CIRCUITS_CHANNEL } from "../store/notifications.ts"
import {
  type CircuitNotice, targetCircuitsClaimProbe, targetCircuitsLeave, targetCircuitsReleaseProbe, targetCircuitsSettle
} from "../store/targetCircuits.ts"
import { gateKey, type NodeGate, type Ticket } from "./nodeGates.ts"

/** A probe held this long without a start (nothing of the origin waited here after all) is given back. */
export const PROBE_UNUSED_MS = 2_000
/** After a claim of the probe was refused (another node holds it), the next claim waits this long. */
const CLAIM_AGAIN_MS = 1_000
const BATCH = 1_000

/** What an attempt's response tells a circuit. */
export interface CircuitResponse {
  readonly httpStatus: number | null
  readonly errorKind?: string | null
  readonly errorMessage?: string | null
}

interface Outcome<I> {
  readonly gate: NodeGate<I>
  readonly event: CircuitEvent
  readonly triggerId: string
}

export const makeCircuits = <I>(input: {
  readonly node: string
  readonly gates: ReadonlyMap<string, NodeGate<I>>
  readonly now: () => number
  /** The database's clock minus this node's. */
  readonly dbOffsetMs: () => number
  readonly graceMs: number
  /** Something changed: admission looks again. */
  readonly signal: () => void
  /** The gate's lease round is due now (its circuit now lets starts through: it needs its budget). */
  readonly roundNow: (gate: NodeGate<I>) => void
}): Effect.Effect<{
  readonly finished: (triggerId: string, ticket: Ticket<I>, response: CircuitResponse) => void
  readonly maintain: (nowMs: number) => void
  readonly leave: Effect.Effect<void, unknown, Database>
}, never, Database | Notifications | Scope.Scope> =>
  Effect.gen(function*() {
    const { node, gates, now, signal } = input
    const metrics = yield* Metrics
    const notifications = yield* Notifications
    const outcomes = yield* Queue.unbounded<Outcome<I>>()
    const claims = yield* Queue.unbounded<NodeGate<I>>()
    const releases = yield* Queue.unbounded<NodeGate<I>>()

    const circuitOf = (gate: NodeGate<I>) => gate.book?.circuit ?? null
    metrics.watch("circuitsOpen", () => count((gate) => circuitOf(gate)?.phase(now()) === "open"))
    metrics.watch("circuitsProbing", () => count((gate) => circuitOf(gate)?.phase(now()) === "probing"))
    const count = (test: (gate: NodeGate<I>) => boolean) => {
      let n = 0
      for (const gate of gates.values()) if (test(gate)) n++
      return n
    }

    const applied = (gate: NodeGate<I>, stored: { readonly state: CircuitNotice["state"]; readonly version: number }, dbOffsetMs: number) => {
      const circuit = circuitOf(gate)
      if (circuit === null) return
      const admitted = circuit.admits(now())
      if (!circuit.apply(stored.state, stored.version, dbOffsetMs, node)) return
      // a gate that admits again (closed, or the probe this node's) leases its budget now, not at its next watch
      if (!admitted && circuit.admits(now())) input.roundNow(gate)
      // a failure another node counted after this node's last answer is reset by that answer
      const { failures, lastFailureAtMs } = stored.state
      if (failures > 0 && circuit.phase(now()) === "closed" && lastFailureAtMs !== null && lastFailureAtMs <= circuit.lastAnswerAtMs) {
        Queue.offerUnsafe(outcomes, { gate, event: { _tag: "Answer", atMs: circuit.lastAnswerAtMs }, triggerId: "" })
      }
      signal()
    }

    /** Each origin's outcomes of a batch in one transaction, in the order they ended. */
    const settler = Effect.gen(function*() {
      const batch = yield* Queue.takeBetween(outcomes, 1, BATCH)
      const byGate = new Map<NodeGate<I>, Array<Outcome<I>>>()
      for (const outcome of batch) byGate.set(outcome.gate, [...(byGate.get(outcome.gate) ?? []), outcome])
      for (const [gate, list] of byGate) {
        const settings = circuitOf(gate)?.settings
        if (settings === undefined) continue
        const failing = list.findLast((outcome) => outcome.event._tag !== "Answer")
        const settled = yield* retryUntilDone("settling a circuit breaker", targetCircuitsSettle({
          projectId: gate.ref.projectId, origin: gate.ref.tag, settings, events: list.map((outcome) => outcome.event),
          triggerId: failing?.triggerId ?? list[0]!.triggerId
        }))
        if (settled.opened) metrics.circuitOpened()
        const circuit = circuitOf(gate)
        if (circuit !== null) circuit.pendingFailures = Math.max(0, circuit.pendingFailures - list.filter((o) => o.event._tag === "Failure").length)
        applied(gate, settled, settled.nowMs - now())
        signal()
      }
    })

    const claimer = Effect.gen(function*() {
      const gate = yield* Queue.take(claims)
      const circuit = circuitOf(gate)
      if (circuit === null || circuit.probe !== "claiming") return
      const claimed = yield* targetCircuitsClaimProbe({ projectId: gate.ref.projectId, origin: gate.ref.tag, node, graceMs: input.graceMs }).pipe(
        Effect.catchCause((cause) => Effect.as(Effect.logWarning(`claiming the probe of ${gate.ref.tag} failed`, cause), null))
      )
      if (claimed === null || !claimed.granted) {
        circuit.probe = "none"
        circuit.claimAfterMs = now() + CLAIM_AGAIN_MS
      }
      if (claimed !== null) applied(gate, claimed, claimed.nowMs - now())
      signal()
    })

    const releaser = Effect.gen(function*() {
      const gate = yield* Queue.take(releases)
      yield* targetCircuitsReleaseProbe({ projectId: gate.ref.projectId, origin: gate.ref.tag, node }).pipe(
        Effect.catchCause((cause) => Effect.logWarning(`giving back the probe of ${gate.ref.tag} failed (it is taken over once this node is gone)`, cause))
      )
    })

    yield* forkLoop("circuit outcomes", settler)
    yield* forkLoop("circuit probe claims", claimer)
    yield* forkLoop("circuit probe releases", releaser)
    yield* forkLoop("circuit listener", Effect.scoped(Effect.gen(function*() {
      const next = yield* notifications.listen(TARGET_CIRCUITS_CHANNEL)
      for (;;) {
        const notice = JSON.parse(yield* next) as CircuitNotice
        const gate = gates.get(gateKey({ projectId: notice.projectId, tag: notice.origin }))
        if (gate !== undefined) applied(gate, notice, input.dbOffsetMs())
      }
    })))

    return {
      finished: (triggerId, ticket, response) => {
        const nowMs = now()
        for (const gate of ticket.gates) {
          const circuit = circuitOf(gate)
          if (circuit === null) continue
          const verdict = verdictOf({ httpStatus: response.httpStatus, errorKind: response.errorKind ?? null })
          const reason = failureReason({ httpStatus: response.httpStatus, errorKind: response.errorKind ?? null, errorMessage: response.errorMessage ?? null })
          const atMs = nowMs + input.dbOffsetMs()
          if (ticket.probes.includes(gate)) {
            if (verdict === "unsent") circuit.probe = "none"
            Queue.offerUnsafe(outcomes, { gate, event: { _tag: "Probed", node, verdict, reason }, triggerId })
          } else if (verdict === "failure") {
            if (circuit.phase(nowMs) === "closed") {
              circuit.pendingFailures++
              Queue.offerUnsafe(outcomes, { gate, event: { _tag: "Failure", atMs, reason }, triggerId })
            }
          } else if (verdict === "answer") {
            circuit.lastAnswerAtMs = Math.max(circuit.lastAnswerAtMs, atMs)
            if (circuit.state.failures > 0 && circuit.phase(nowMs) === "closed") {
              Queue.offerUnsafe(outcomes, { gate, event: { _tag: "Answer", atMs }, triggerId })
            }
          }
        }
      },
      maintain: (nowMs) => {
        for (const gate of gates.values()) {
          const circuit = circuitOf(gate)
          if (circuit === null) continue
          if (circuit.probe === "mine" && nowMs - circuit.probeSinceMs >= PROBE_UNUSED_MS) {
            circuit.probe = "none"
            circuit.claimAfterMs = nowMs + CLAIM_AGAIN_MS
            Queue.offerUnsafe(releases, gate)
          } else if ((gate.waiting > 0 || gate.backlog > 0) && circuit.wantsClaim(nowMs)) {
            circuit.probe = "claiming"
            Queue.offerUnsafe(claims, gate)
          }
        }
      },
      leave: targetCircuitsLeave(node)
    }
  })
