// The tag gates of this node (docs/tag-policies.md "How the limits hold across nodes", "Backpressure
// from the target"): gated triggers handed to delivery wait here and start as their gates admit them,
// in memory, with no round trip per start (nodeGates.ts). Beside the hot path, fibers keep the gates
// supplied:
// - lease rounds (leaseRound.ts, store/gateLeases.ts) renew this node's share of every active gate
//   a few times a second, at once when a policy changes (every node hears of it) and when a gate is
//   first met, and apply the policy and the tag's hold they read;
// - releases: triggers waiting too long, or at a paused or held gate, go back to PostgreSQL
//   (`queued`, store/gates.ts), and takes bring the oldest waiting there into memory when a gate has
//   room — any node's, so a gate's backlog is shared by every node with budget;
// - starts of taken triggers are marked `running` in batches;
// - refusals (429, 503) hold the trigger's gated tags here at once, then cluster-wide through the
//   database and a notification every node applies (store/gateHolds.ts); a 2xx clears the backoff;
// - every second, the gates with triggers waiting in PostgreSQL are looked up (a kick lost, a node
//   gone);
// - an origin's gate (its target policy: docs/protecting-targets.md) is the same machinery, keyed by
//   the origin; its circuit breaker's outcomes, probe and notifications are circuits.ts's.
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import { NodeIdentity } from "../cluster/node.ts"
import type { GateRef } from "../cluster/wakeups.ts"
import { SchedulerTiming } from "../config.ts"
import { isOriginGate } from "../domain/gates/gate.ts"
import { isRefusal, type Refusal, refusalRetryAfterMs } from "../domain/gates/gateHold.ts"
import type { DeliveryRow } from "../domain/trigger.ts"
import { forkLoop } from "../lib/backgroundLoop.ts"
import { type HoldReason, Metrics } from "../metrics/metrics.ts"
import type { Database } from "../store/db.ts"
import { gateHoldsRefused, gateHoldsSucceeded } from "../store/gateHolds.ts"
import { gateLeasesLeave, gateLeasesRound } from "../store/gateLeases.ts"
import { gateBacklogRelease, gateBacklogStart, gateBacklogTake, gateSlotsPrune, gatesWaiting } from "../store/gates.ts"
import { GATE_HOLDS_CHANNEL, Notifications, TAG_POLICIES_CHANGED_CHANNEL, TARGET_POLICIES_CHANGED_CHANNEL } from "../store/notifications.ts"
import { type CircuitResponse, makeCircuits } from "./circuits.ts"
import { decideRound } from "./leaseRound.ts"
import { gateKey, type NodeGate, NodeGates, type Waiter } from "./nodeGates.ts"

/** A trigger on its way through the gates (the dispatcher's item: the row and what it needs to send it). */
export interface GatedItem {
  readonly row: DeliveryRow
}

/** Where the gates hand their triggers: the dispatcher. */
export interface GateSink {
  /** Admitted: send now. */
  readonly send: (items: ReadonlyArray<GatedItem>) => void
  /** Fired triggers released to wait in PostgreSQL: no longer this node's to send. */
  readonly released: (triggerIds: ReadonlyArray<string>) => void
  /** Triggers taken from PostgreSQL, made ready to send (their tag policies read). */
  readonly prepare: (rows: ReadonlyArray<DeliveryRow>) => Effect.Effect<ReadonlyArray<GatedItem>>
  /** Fewer triggers wait here: a fetch waiting for room may go on. */
  readonly roomChanged: () => void
  /** How many sends run at once at most: admitted triggers not yet finished stay below it. */
  readonly maxInFlight: number
}

/** What a refusal and a circuit breaker need of an attempt's response. */
export interface AttemptResponse extends CircuitResponse {
  readonly httpStatus: number | null
  readonly responseHeaders: Readonly<Record<string, string>> | null
}

/** A lease lasts this long after its round began without a renewal. */
export const LEASE_TTL_MS = 2_000
/** How often a node renews the lease of a gate it admits from. */
const RENEW_EVERY_MS = 400
/** A gate waiting for units others hold, or holding some others wait for: looked at again this soon. */
const STARVED_EVERY_MS = 150
/** A gate with nothing to lease (paused, held, no limit) is read this often, for its policy and hold. */
const WATCH_EVERY_MS = 2_000
/** Releases and takes are looked at this often while anything waits. */
const MAINTAIN_EVERY_MS = 50
const DISCOVER_EVERY = "1 second"
const RETRY_AFTER_FAILURE_MS = 1_000
const BATCH = 1_000

type HoldEvent =
  | { readonly _tag: "Refused"; readonly gate: NodeGate<GatedItem>; readonly refusal: Refusal; readonly reason: HoldReason }
  | { readonly _tag: "Succeeded"; readonly gate: NodeGate<GatedItem> }

export class Gatekeeper extends Context.Service<Gatekeeper, {
  /** The dispatcher attaches where admitted triggers go (once, when it starts). */
  readonly attach: (sink: GateSink) => void
  /** Triggers with gated tags (`row.gateTags`), to start when their gates admit them. */
  readonly offer: (items: ReadonlyArray<GatedItem>) => void
  /** The request of an admitted trigger was written to its connection now. */
  readonly written: (triggerId: string) => void
  /** An admitted trigger's attempt ended with this response (none: `httpStatus` null). */
  readonly finished: (triggerId: string, response: AttemptResponse) => void
  /** Triggers came to wait for these gates in PostgreSQL (a claim, a replay, a recovery, a policy change). */
  readonly kick: (gates: ReadonlyArray<GateRef>) => void
  /** Triggers waiting in this node's memory now. */
  readonly waiting: () => number
  /** A stopping node: nothing more starts; every waiting trigger goes back to PostgreSQL. */
  readonly releaseAll: Effect.Effect<void>
  /** A stopped node's leases end (its permits come back at once, its tokens count its last starts). */
  readonly leave: Effect.Effect<void>
}>()("timewheel/Gatekeeper") {
  static readonly layer = Layer.effect(Gatekeeper, Effect.gen(function*() {
    const node = (yield* NodeIdentity).id
    const timing = yield* SchedulerTiming
    const notifications = yield* Notifications
    const metrics = yield* Metrics
    const clock = yield* Clock.Clock
    const services = yield* Effect.context<Database>()
    const gates = new NodeGates<GatedItem>()
    let sink: GateSink | undefined
    /** The database's clock minus this node's, as the last round measured it. */
    let dbOffsetMs = 0
    const wake = yield* Queue.unbounded<void>()
    const roundDue = yield* Queue.unbounded<void>()
    const releases = yield* Queue.unbounded<Waiter<GatedItem>>()
    const starts = yield* Queue.unbounded<string>()
    const holds = yield* Queue.unbounded<HoldEvent>()
    const now = () => clock.currentTimeMillisUnsafe()
    const heldCount = (origins: boolean) => () =>
      [...gates.gates.values()].filter((gate) => isOriginGate(gate.ref.tag) === origins && gate.book?.stopped(now()) === true && !gate.book.limits.paused).length
    metrics.watch("gatesHeld", heldCount(false))
    metrics.watch("targetsHeld", heldCount(true))

    /** Starts what the gates admit now and hands it to delivery. */
    const pump = () => {
      const admitted = gates.admit(now())
      if (admitted.length === 0) return
      for (const waiter of admitted) if (waiter.taken) Queue.offerUnsafe(starts, waiter.row.id)
      sink?.send(admitted.map((waiter) => waiter.item))
      sink?.roomChanged()
    }

    const signal = () => void Queue.offerUnsafe(wake, undefined)
    const roundNow = (gate: NodeGate<GatedItem>) => {
      gate.roundAtMs = Math.min(gate.roundAtMs, now())
      Queue.offerUnsafe(roundDue, undefined)
    }
    const circuits = yield* makeCircuits({
      node, gates: gates.gates, now, dbOffsetMs: () => dbOffsetMs, graceMs: timing.restartGraceMs, signal, roundNow
    })

    /** Brings the oldest triggers waiting for `gate` in PostgreSQL into memory. */
    const take = (gate: NodeGate<GatedItem>, limit: number) =>
      Effect.gen(function*() {
        const rows = yield* gateBacklogTake({ ...gate.ref, limit, node, nowMs: now() })
        if (rows.length < limit) {
          gate.backlog = 0
          if (rows.length === 0) yield* gateSlotsPrune(gate.ref)
        }
        if (rows.length === 0 || sink === undefined) return
        const items = yield* sink.prepare(rows)
        // a trigger whose tags have no policy any more is gated no more: it starts at once
        const free = items.filter((item) => item.row.gateTags.length === 0)
        if (free.length > 0) {
          for (const item of free) Queue.offerUnsafe(starts, item.row.id)
          sink.send(free)
        }
        gates.offer(items.filter((item) => item.row.gateTags.length > 0).map((item) => ({ item, row: item.row })), true, now())
        pump()
      }).pipe(
        Effect.catchCause((cause) => Effect.logWarning(`taking triggers waiting for tag ${gate.ref.tag} failed`, cause)),
        Effect.ensuring(Effect.sync(() => {
          gate.taking = false
          signal()
        }))
      )

    /** Releases and rounds due now; returns the takes due (the caller forks them). */
    const maintain = (nowMs: number) => {
      const out = gates.releasable(nowMs)
      if (out.length > 0) {
        Queue.offerAllUnsafe(releases, out)
        sink?.roomChanged()
      }
      for (const gate of gates.gates.values()) {
        if (gate.roundAtMs <= nowMs) {
          Queue.offerUnsafe(roundDue, undefined)
          break
        }
      }
      circuits.maintain(nowMs)
      const due = gates.takes(nowMs)
      for (const { gate } of due) gate.taking = true
      return due
    }

    const anyBacklog = () => {
      for (const gate of gates.gates.values()) if (gate.backlog > 0) return true
      return false
    }

    /** Admission and maintenance at the times things change by themselves (a token, a hold's end, a release). */
    const engine = Effect.gen(function*() {
      let maintainedAtMs = -Infinity
      let signalled = true
      for (;;) {
        const nowMs = now()
        pump()
        // releases and takes look at every waiting trigger: when asked (a signal), else every
        // MAINTAIN_EVERY_MS at most (a paced gate wakes this loop each millisecond)
        if (signalled || nowMs - maintainedAtMs >= MAINTAIN_EVERY_MS) {
          maintainedAtMs = nowMs
          for (const { gate, limit } of maintain(nowMs)) yield* Effect.forkDetach(take(gate, limit))
        }
        const next = Math.min(
          gates.nextWakeMs(nowMs) ?? Infinity,
          gates.waitingTotal > 0 || anyBacklog() ? maintainedAtMs + MAINTAIN_EVERY_MS : Infinity
        )
        if (next === Infinity) {
          yield* Queue.takeBetween(wake, 1, 10_000)
          signalled = true
        } else {
          const woken = yield* Effect.timeoutOption(Queue.takeBetween(wake, 1, 10_000), Math.max(1, next - now()))
          signalled = Option.isSome(woken)
        }
      }
    })

    /** When a gate's next round is due after one: soon while it admits or waits for units, seldom when it only watches. */
    const nextRoundMs = (gate: NodeGate<GatedItem>, nowMs: number): number => {
      const book = gate.book
      if (gate.open || book === null) return nowMs + WATCH_EVERY_MS
      if (gate.stopped(nowMs)) {
        return Math.min(nowMs + WATCH_EVERY_MS, book.held(nowMs) ? book.heldUntilMs : Infinity, book.circuit?.openUntilMs() ?? Infinity)
      }
      if (!book.leased) return nowMs + WATCH_EVERY_MS
      // waiting for units, or holding more than its share (others wait for it to give them back): soon
      const holding = book.holding()
      const aboveShare = holding.permits > book.permitShare || book.aboveShare()
      return nowMs + ((gate.waiting > 0 && !book.admits(nowMs)) || aboveShare ? STARVED_EVERY_MS : RENEW_EVERY_MS)
    }

    const runRound = (due: ReadonlyArray<NodeGate<GatedItem>>) =>
      Effect.gen(function*() {
        const roundStartMs = now()
        const { result: commit, stale } = yield* gateLeasesRound({
          node,
          gates: due.map((gate) => gate.ref),
          ttlMs: LEASE_TTL_MS,
          graceMs: timing.restartGraceMs,
          decide: (read) => {
            const decided = decideRound({ node, read, gates: gates.gates, roundStartMs, readAtMs: now(), ttlMs: LEASE_TTL_MS })
            if (read.gates.length > 0) dbOffsetMs = decided.dbOffsetMs
            return { writes: decided.writes, result: decided.commit }
          }
        })
        commit(stale)
        const nowMs = now()
        for (const gate of due) {
          if (gate.idle(nowMs) && gates.gates.get(gate.key) === gate) gates.gates.delete(gate.key)
          else gate.roundAtMs = nextRoundMs(gate, nowMs)
        }
        // a gate whose policy changed since the read: its next round reads the change, now
        for (const ref of stale) {
          const gate = gates.gates.get(gateKey(ref))
          if (gate !== undefined) gate.roundAtMs = nowMs
        }
        pump()
        signal()
      }).pipe(Effect.catchCause((cause) =>
        Effect.andThen(
          Effect.sync(() => {
            for (const gate of due) gate.roundAtMs = now() + RETRY_AFTER_FAILURE_MS
          }),
          Effect.logWarning("a lease round of the tag gates failed; retrying", cause)
        )))

    const rounds = Effect.gen(function*() {
      for (;;) {
        const nowMs = now()
        const due = [...gates.gates.values()].filter((gate) => gate.roundAtMs <= nowMs)
        if (due.length > 0) yield* runRound(due)
        let next = Infinity
        for (const gate of gates.gates.values()) next = Math.min(next, gate.roundAtMs)
        if (next === Infinity) yield* Queue.takeBetween(roundDue, 1, 10_000)
        else if (next > now()) yield* Effect.timeoutOption(Queue.takeBetween(roundDue, 1, 10_000), next - now())
        else yield* Queue.takeBetween(roundDue, 0, 10_000)
      }
    })

    /** Triggers back to PostgreSQL; those the release did not take (their state changed) wait again here. */
    const releaser = Effect.gen(function*() {
      const batch = yield* Queue.takeBetween(releases, 1, BATCH)
      const released = new Set(yield* gateBacklogRelease({
        triggers: batch.map((waiter) => ({
          id: waiter.row.id, attempt: waiter.row.attempt, firedSeenUs: waiter.row.fired?.seenUs ?? null, gateTags: waiter.row.gateTags
        })),
        node,
        nowMs: now()
      }).pipe(Effect.catchCause((cause) => Effect.as(Effect.logWarning("releasing gated triggers failed; they wait here", cause), []))))
      const kept = batch.filter((waiter) => !released.has(waiter.row.id))
      for (const waiter of batch) {
        if (!released.has(waiter.row.id)) continue
        for (const gate of waiter.gates) gate.backlog++
      }
      sink?.released(batch.filter((waiter) => waiter.row.fired !== null && released.has(waiter.row.id)).map((waiter) => waiter.row.id))
      if (kept.length > 0) {
        gates.requeue(kept, now())
        if (released.size === 0) yield* Effect.sleep(RETRY_AFTER_FAILURE_MS)
      }
      signal()
    })

    const starter = Effect.gen(function*() {
      const ids = yield* Queue.takeBetween(starts, 1, BATCH)
      yield* gateBacklogStart({ ids, node, nowMs: now() }).pipe(
        Effect.catchCause((cause) => Effect.logWarning("marking started gated triggers running failed (their outcome records them)", cause))
      )
    })

    /** Holds settled in the database (one write per gate and batch), then applied here and counted. */
    const holder = Effect.gen(function*() {
      const events = yield* Queue.takeBetween(holds, 1, BATCH)
      const byGate = new Map<NodeGate<GatedItem>, Array<HoldEvent>>()
      for (const event of events) byGate.set(event.gate, [...(byGate.get(event.gate) ?? []), event])
      for (const [gate, list] of byGate) {
        const refused = list.filter((event): event is Extract<HoldEvent, { _tag: "Refused" }> => event._tag === "Refused")
        if (refused.length === 0) {
          yield* gateHoldsSucceeded({ ...gate.ref, tags: [gate.ref.tag] })
          continue
        }
        // several refusals of one batch: the latest Retry-After, else the request that left last
        const withRetryAfter = refused.filter((event) => event.refusal.retryAfterUntilMs !== null)
        const chosen = withRetryAfter.length > 0
          ? withRetryAfter.reduce((a, b) => (b.refusal.retryAfterUntilMs! > a.refusal.retryAfterUntilMs! ? b : a))
          : refused.reduce((a, b) => (b.refusal.leftAtMs > a.refusal.leftAtMs ? b : a))
        const moved = yield* gateHoldsRefused({ projectId: gate.ref.projectId, tags: [gate.ref.tag], refusal: chosen.refusal })
        for (const { hold } of moved) {
          gate.hold = hold
          metrics.gateHeld(chosen.reason, isOriginGate(gate.ref.tag))
          if (gate.book !== null) gate.book.heldUntilMs = Math.max(gate.book.heldUntilMs, hold.heldUntilMs - dbOffsetMs)
        }
      }
      signal()
    }).pipe(Effect.catchCause((cause) => Effect.logWarning("recording a hold of a tag failed", cause)))

    /** Every node hears of a policy change (its project's gates get a round now) and of a hold (applied now). */
    const listen = (
      channel: typeof TAG_POLICIES_CHANGED_CHANNEL | typeof TARGET_POLICIES_CHANGED_CHANNEL | typeof GATE_HOLDS_CHANNEL,
      onPayload: (payload: string) => void
    ) =>
      forkLoop(`gate ${channel} listener`, Effect.scoped(Effect.gen(function*() {
        const next = yield* notifications.listen(channel)
        for (;;) onPayload(yield* next)
      })))

    const policiesChanged = (projectId: string) => {
      for (const gate of gates.gates.values()) if (gate.ref.projectId === projectId) roundNow(gate)
    }
    yield* listen(TAG_POLICIES_CHANGED_CHANNEL, policiesChanged)
    yield* listen(TARGET_POLICIES_CHANGED_CHANNEL, policiesChanged)
    yield* listen(GATE_HOLDS_CHANNEL, (payload) => {
      const [projectId, tag, untilMs] = payload.split(" ")
      const gate = gates.gates.get(gateKey({ projectId: projectId ?? "", tag: tag ?? "" }))
      if (gate?.book === undefined || gate.book === null || untilMs === undefined) return
      gate.book.heldUntilMs = Math.max(gate.book.heldUntilMs, Number(untilMs) - dbOffsetMs)
      signal()
    })

    /** The gates with triggers waiting in PostgreSQL: met here (a round, then takes). */
    const discover = Effect.gen(function*() {
      for (const ref of yield* gatesWaiting) {
        const known = gates.gates.get(gateKey(ref))
        const gate = known ?? gates.gate(ref)
        if (gate.backlog === 0) gate.backlog = 1
        if (known === undefined) roundNow(gate)
      }
      signal()
    })

    yield* forkLoop("gate admission", engine)
    yield* forkLoop("gate lease rounds", rounds)
    yield* forkLoop("gate releases", releaser, { afterFailure: 0 })
    yield* forkLoop("gate starts", starter)
    yield* forkLoop("gate holds", holder)
    yield* forkLoop("gate discovery", discover, { every: DISCOVER_EVERY })

    return Gatekeeper.of({
      attach: (attached) => {
        sink = attached
        gates.maxStarts = attached.maxInFlight
      },
      offer: (items) => {
        const nowMs = now()
        const known = gates.gates.size
        gates.offer(items.map((item) => ({ item, row: item.row })), false, nowMs)
        if (gates.gates.size > known) {
          for (const gate of gates.gates.values()) if (gate.book === null && !gate.open) roundNow(gate)
        }
        pump()
      },
      written: (triggerId) => gates.written(triggerId, now()),
      finished: (triggerId, response) => {
        const nowMs = now()
        const ticket = gates.finished(triggerId, nowMs)
        if (ticket === undefined) return
        circuits.finished(triggerId, ticket, response)
        if (isRefusal(response.httpStatus)) {
          const untilMs = refusalRetryAfterMs(response, nowMs)
          // on the database's clock, which settles holds for every node
          const refusal: Refusal = {
            retryAfterUntilMs: untilMs === null ? null : untilMs + dbOffsetMs,
            leftAtMs: (ticket.writtenAtMs ?? ticket.admittedAtMs) + dbOffsetMs
          }
          for (const gate of ticket.gates) {
            if (gate.book === null) continue
            // held here at once (provisionally: the database settles the backoff), cluster-wide next
            gate.book.heldUntilMs = Math.max(gate.book.heldUntilMs, untilMs ?? nowMs + Math.max(1_000, gate.hold?.backoffMs ?? 0))
            Queue.offerUnsafe(holds, { _tag: "Refused", gate, refusal, reason: untilMs === null ? "backoff" : "retry_after" })
          }
          signal()
        } else if (response.httpStatus !== null && response.httpStatus >= 200 && response.httpStatus < 300) {
          for (const gate of ticket.gates) {
            if (gate.hold === null || gate.hold.backoffMs === 0) continue
            gate.hold = { ...gate.hold, backoffMs: 0 }
            Queue.offerUnsafe(holds, { _tag: "Succeeded", gate })
          }
        }
        pump()
      },
      kick: (refs) => {
        for (const ref of refs) {
          const gate = gates.gate(ref)
          if (gate.backlog === 0) gate.backlog = 1
          roundNow(gate)
        }
        signal()
      },
      waiting: () => gates.waitingTotal,
      releaseAll: Effect.gen(function*() {
        gates.closed = true
        const out = gates.releasable(now())
        if (out.length === 0) return
        Queue.offerAllUnsafe(releases, out)
        // the releaser writes them: wait until it has (bounded: a database away leaves them to recovery)
        for (let i = 0; i < 100 && (yield* Queue.size(releases)) > 0; i++) yield* Effect.sleep(50)
        yield* Effect.sleep(50)
      }),
      leave: Effect.provideContext(Effect.andThen(gateLeasesLeave(node), circuits.leave), services).pipe(
        Effect.catchCause((cause) => Effect.logWarning("ending this node's gate leases and probes failed; they expire", cause))
      )
    })
  }))
}

