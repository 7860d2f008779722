// One admission round of a tag gate (SPEC "Tag policy"; DECISIONS "Tag policies"), run by the actor
// of the gate's shard whenever the gate may admit more. In one transaction holding the gate's lock:
// the oldest held-back triggers of the tag, the policies and live state (in flight, recent starts)
// of every gate they carry — another gate whose lock is busy counts as closed for this round — then
// the pure decision (domain/gate.ts planAdmission) and the start of what it admits. A trigger with
// several gated tags starts only when all of them admit it. The policies are read in the round (not
// from a cache), so a limit holds from the moment its policy is written.
import * as Effect from "effect/Effect"
import type { GateRef } from "../cluster/wakeups.ts"
import { effectiveWindows, type Gate, gateAllowance, gateOf, planAdmission, startStampMs, startsLookback } from "../domain/gate.ts"
import { isGating, type StoredTagPolicy } from "../domain/tagPolicy.ts"
import type { DeliveryRow } from "../domain/trigger.ts"
import {
  type GateCandidate, gateCandidates, type GateLive, gateLiveState, gateLock, gateSlotsDrop, gateStart, gateStartsPrune, gateTryLock
} from "../store/gates.ts"
import { tagPoliciesOfTags } from "../store/tagPolicies.ts"
import { withTransaction } from "../store/transaction.ts"

/** Held-back triggers read at a time; a round reads at most MAX_PAGES pages. */
const PAGE_SIZE = 500
const MAX_PAGES = 8
/** When another gate a candidate needs is busy (its own round runs), look again this soon. */
const BUSY_GATE_RETRY_MS = 20

export interface AdmissionRound {
  /** Started now: to be sent. */
  readonly started: ReadonlyArray<DeliveryRow>
  /** When to run the next round of this gate: now (more may start), a time, or null (wait for a kick). */
  readonly nextAtMs: number | null
}

const CLOSED: Gate = { paused: true, windows: [], maxConcurrent: null, inFlight: 0, recentStarts: [] }

/**
 * One round of `gate` at nowMs, started by `node`; `prune` also forgets start times no window can
 * count any more (the caller asks for it now and then, not every round).
 */
export const admitGate = (input: { readonly gate: GateRef; readonly node: string; readonly nowMs: number; readonly prune: boolean }) =>
  withTransaction(Effect.gen(function*() {
    const { gate, node, nowMs } = input
    const { projectId } = gate
    yield* gateLock(gate)
    const policies = new Map<string, StoredTagPolicy>()
    const open = new Set<string>()
    let busy = false
    /** The gates of the tags of `candidates` not looked at yet: their policies, and their locks if free. */
    const addGatesOf = (candidates: ReadonlyArray<GateCandidate>) =>
      Effect.gen(function*() {
        const fresh = [...new Set(candidates.flatMap((candidate) => candidate.tags))].filter((tag) => !policies.has(tag))
        for (const policy of (yield* tagPoliciesOfTags({ projectId, tags: fresh })).filter(isGating)) {
          policies.set(policy.tag, policy)
          if (policy.tag === gate.tag || (yield* gateTryLock({ projectId, tag: policy.tag }))) open.add(policy.tag)
          else busy = true
        }
      })
    const windowsOf = (tag: string) => effectiveWindows(policies.get(tag)!.throughput).windows
    const liveOf = (tags: ReadonlyArray<string>) =>
      gateLiveState({ projectId, nowMs, gates: tags.map((tag) => ({ tag, lookback: startsLookback(windowsOf(tag)) })) })

    // the oldest waiting triggers, a page at a time: another page only while some ready ones are
    // blocked by other gates (so a full or paused tag they also carry never holds back this one's)
    const ready: Array<GateCandidate> = []
    const notYet: Array<number> = []
    const live = new Map<string, GateLive>()
    let plan = { admitted: [] as ReadonlyArray<string>, nextCheckAtMs: null as number | null }
    let after: string | null = null
    let more = false
    for (let page = 0; page < MAX_PAGES; page++) {
      const candidates: ReadonlyArray<GateCandidate> = yield* gateCandidates({ projectId, tag: gate.tag, limit: PAGE_SIZE, after })
      yield* gateSlotsDrop(candidates.filter((candidate) => !candidate.waiting).map((candidate) => candidate.id))
      const waiting = candidates.filter((candidate) => candidate.waiting)
      ready.push(...waiting.filter((candidate) => candidate.notBeforeMs <= nowMs))
      notYet.push(...waiting.filter((candidate) => candidate.notBeforeMs > nowMs).map((candidate) => candidate.notBeforeMs))
      yield* addGatesOf(waiting)
      const unread = [...open].filter((tag) => !live.has(tag))
      for (const [tag, state] of yield* liveOf(unread)) live.set(tag, state)
      const gates = new Map<string, Gate>([...policies].map(([tag, policy]) => [tag, live.has(tag) ? gateOf(policy, live.get(tag)!) : CLOSED]))
      plan = planAdmission({ nowMs, gates, candidates: ready })
      more = candidates.length === PAGE_SIZE
      // every candidate carries this gate's tag: once this gate admits no more (full, paused, window
      // used up), a later page cannot start anything; only candidates blocked by other gates need one
      const own = gates.get(gate.tag)
      const ownFull = own !== undefined && plan.admitted.length >= gateAllowance(own, nowMs).now
      if (!more || ownFull || plan.admitted.length === ready.length) break
      after = candidates.at(-1)!.after
    }

    const counted = [...open].filter((tag) => windowsOf(tag).length > 0)
    const started = yield* gateStart({
      projectId, ids: plan.admitted, counted: counted.map((tag) => ({ tag, atMs: startStampMs(windowsOf(tag), nowMs) })), node, nowMs
    })
    for (const tag of input.prune ? counted : []) {
      yield* gateStartsPrune({ projectId, tag, beforeMs: nowMs - startsLookback(windowsOf(tag))!.windowMs })
    }
    const times = [
      ...(more && plan.admitted.length > 0 ? [nowMs] : []),
      ...(plan.nextCheckAtMs === null ? [] : [plan.nextCheckAtMs]),
      ...notYet,
      ...(busy ? [nowMs + BUSY_GATE_RETRY_MS] : [])
    ]
    const idle = ready.length === 0 && notYet.length === 0 && !more
    return { started, nextAtMs: idle || times.length === 0 ? null : Math.min(...times) } satisfies AdmissionRound
  }))
