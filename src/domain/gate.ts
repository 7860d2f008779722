// The gate of a tag (SPEC "Tag policy", "Recurring behaviour" 3; DECISIONS "Tag policies"): the pure
// arithmetic of maxConcurrent and sliding-window throughput. The store keeps the cluster-wide state
// (in-flight counts, recent start times) in PostgreSQL, feeds it here with the current time, and
// starts what planAdmission admits; held-back triggers stay `queued`.

import { effectiveWindowMs, isValidRate, windowLabelMs } from "./throughput.ts"
import type { Throughput } from "./throughput.ts"

/** At most `limit` starts in any half-open window (t − windowMs, t]. */
export interface GateWindow {
  readonly label: string
  readonly windowMs: number
  readonly limit: number
}

export interface GateLimits {
  /** A rate of 0 pauses the tag: nothing starts until the policy changes. */
  readonly paused: boolean
  readonly windows: ReadonlyArray<GateWindow>
}

/** One gated tag at the moment of a decision. */
export interface Gate extends GateLimits {
  readonly maxConcurrent: number | null
  /** Triggers with the tag being sent now, cluster-wide. */
  readonly inFlight: number
  /** Start times (ms) of the tag's triggers, covering at least what startsLookback asks for. */
  readonly recentStarts: ReadonlyArray<number>
}

/**
 * The windows a throughput enforces: a rate r ≥ 1 admits floor(r) per window as written (2.5 per
 * `1s` admits 2); 0 < r < 1 admits 1 per window stretched by 1/r (`{"1m": 0.5}` = 1 per 120 s);
 * r = 0 pauses the tag. A window decoding never lets through (malformed label, negative or
 * non-finite rate) also pauses it: a broken policy holds triggers back rather than flood a target.
 */
export const effectiveWindows = (throughput: Throughput | null): GateLimits => {
  const windows: Array<GateWindow> = []
  let paused = false
  for (const [label, rate] of Object.entries(throughput ?? {})) {
    const lengthMs = windowLabelMs(label)
    if (lengthMs === undefined || !isValidRate(rate) || rate === 0) {
      paused = true
      continue
    }
    windows.push({ label, windowMs: effectiveWindowMs(lengthMs, rate), limit: Math.max(1, Math.floor(rate)) })
  }
  return { paused, windows }
}

/** A gate from a policy's limits and the tag's live state. */
export const gateOf = (
  policy: { readonly maxConcurrent: number | null; readonly throughput: Throughput | null },
  live: { readonly inFlight: number; readonly recentStarts: ReadonlyArray<number> }
): Gate => ({ ...effectiveWindows(policy.throughput), maxConcurrent: policy.maxConcurrent, ...live })

/**
 * What `recentStarts` must hold: the newest `count` starts of the last `windowMs` (the longest
 * window, the largest limit) — enough for every window. Null when no window limits the tag.
 */
export const startsLookback = (windows: ReadonlyArray<GateWindow>): { readonly windowMs: number; readonly count: number } | null =>
  windows.length === 0
    ? null
    : { windowMs: Math.max(...windows.map((w) => w.windowMs)), count: Math.max(...windows.map((w) => w.limit)) }

/** How much after its admission a start is stamped (see startStampMs). */
export const START_MARGIN_MS = 50

/**
 * The time a start is recorded at: its admission plus START_MARGIN_MS, for the moments between
 * admission and the request reaching its target (a request that leaves later than its stamp moves
 * the stamp to when it left). Counted from there, no window as the target sees it holds more than
 * its limit; the cost is a rate at most 5 % lower (for the shortest window, 1 s).
 */
export const startStampMs = (windows: ReadonlyArray<GateWindow>, admittedAtMs: number): number =>
  windows.length === 0 ? admittedAtMs : admittedAtMs + START_MARGIN_MS

// ---------------------------------------------------------------------------------------------
// One window, one gate

/** Index of the first start later than `t` in ascending `starts`. */
const firstIndexAfter = (starts: ReadonlyArray<number>, t: number): number => {
  let low = 0
  let high = starts.length
  while (low < high) {
    const mid = (low + high) >>> 1
    if (starts[mid] <= t) low = mid + 1
    else high = mid
  }
  return low
}

/** Starts inside (nowMs − windowMs, …]: a start stamped after nowMs (a clock ahead) counts too. */
const startsInWindow = (window: GateWindow, starts: ReadonlyArray<number>, nowMs: number): number =>
  starts.length - firstIndexAfter(starts, nowMs - window.windowMs)

/**
 * When `window` admits one more start, with `extra` starts added at nowMs: nowMs if it admits now,
 * otherwise the moment the limit-th newest start in the window leaves it (a start at t0 in a
 * 1000 ms window lets the next in at t0 + 1000, not before). `starts` is ascending.
 */
const windowOpensAtMs = (window: GateWindow, starts: ReadonlyArray<number>, nowMs: number, extra: number): number => {
  const from = firstIndexAfter(starts, nowMs - window.windowMs)
  const upToNow = firstIndexAfter(starts, nowMs) - from
  const total = starts.length - from + extra
  if (total < window.limit) return nowMs
  // ascending in-window list: [existing ≤ nowMs (upToNow)] [extra × nowMs] [existing > nowMs]
  const k = total - window.limit
  const limitThNewest = k < upToNow ? starts[from + k] : k < upToNow + extra ? nowMs : starts[from + k - extra]
  return limitThNewest + window.windowMs
}

export type GateVerdict =
  | { readonly _tag: "Admit" }
  /** Only throughput holds it back: it admits from atMs on (if nothing else starts). */
  | { readonly _tag: "WaitUntil"; readonly atMs: number }
  /** maxConcurrent is reached: only a completion frees a slot. */
  | { readonly _tag: "WaitForCompletion" }
  | { readonly _tag: "Paused" }

/** A gate with its starts sorted ascending, mutated as a plan admits candidates. */
interface GateState {
  readonly limits: Gate
  inFlight: number
  readonly starts: Array<number>
}

const stateOf = (gate: Gate): GateState => ({
  limits: gate,
  inFlight: gate.inFlight,
  starts: [...gate.recentStarts].sort((a, b) => a - b)
})

const concurrencyRoom = (state: GateState): number =>
  state.limits.maxConcurrent === null ? Infinity : Math.max(0, state.limits.maxConcurrent - state.inFlight)

const verdictOf = (state: GateState, nowMs: number): GateVerdict => {
  if (state.limits.paused) return { _tag: "Paused" }
  if (concurrencyRoom(state) === 0) return { _tag: "WaitForCompletion" }
  const atMs = Math.max(nowMs, ...state.limits.windows.map((w) => windowOpensAtMs(w, state.starts, nowMs, 0)))
  return atMs === nowMs ? { _tag: "Admit" } : { _tag: "WaitUntil", atMs }
}

/** One more start at nowMs: in flight, and in every window. */
const take = (state: GateState, nowMs: number): void => {
  state.inFlight += 1
  state.starts.splice(firstIndexAfter(state.starts, nowMs), 0, nowMs)
}

/** Whether one gate admits one more start at nowMs, and if not, what it waits for. */
export const gateVerdict = (gate: Gate, nowMs: number): GateVerdict => verdictOf(stateOf(gate), nowMs)

/**
 * How many starts one gate admits at nowMs (Infinity when nothing limits it), and when it admits
 * one more after those: nextAtMs is null when a completion (maxConcurrent) or the pause is what
 * then holds it back, or when nothing limits it.
 */
export const gateAllowance = (gate: Gate, nowMs: number): { readonly now: number; readonly nextAtMs: number | null } => {
  if (gate.paused) return { now: 0, nextAtMs: null }
  const state = stateOf(gate)
  const byConcurrency = concurrencyRoom(state)
  const byWindows = Math.min(...gate.windows.map((w) => Math.max(0, w.limit - startsInWindow(w, state.starts, nowMs))))
  const now = Math.min(byConcurrency, byWindows)
  if (now === Infinity || byConcurrency <= byWindows) return { now, nextAtMs: null }
  return { now, nextAtMs: Math.max(...gate.windows.map((w) => windowOpensAtMs(w, state.starts, nowMs, now))) }
}

// ---------------------------------------------------------------------------------------------
// Admission of held-back triggers

export interface AdmissionCandidate {
  readonly id: string
  readonly tags: ReadonlyArray<string>
}

export interface AdmissionPlan {
  /** Ids to start now, in candidate order. */
  readonly admitted: ReadonlyArray<string>
  /** Earliest time throughput alone would let one more blocked candidate start; null when none would. */
  readonly nextCheckAtMs: number | null
}

/** When a blocked candidate could start if nothing else did: null if a pause or a completion must come first. */
const candidateOpensAtMs = (states: ReadonlyArray<GateState>, nowMs: number): number | null => {
  let atMs = nowMs
  for (const state of states) {
    const verdict = verdictOf(state, nowMs)
    if (verdict._tag === "Paused" || verdict._tag === "WaitForCompletion") return null
    if (verdict._tag === "WaitUntil") atMs = Math.max(atMs, verdict.atMs)
  }
  return atMs
}

/**
 * Which held-back triggers start at nowMs. Candidates come oldest first (scheduled time, then id);
 * tags without a gate are ungated. A candidate starts when every gate of its tags admits it, and
 * then counts at once (in flight, a start at nowMs) against the candidates after it. A blocked
 * candidate does not hold back later ones whose gates admit them (no head-of-line blocking across
 * tags); within a full tag, all wait, so its order holds. nextCheckAtMs is computed against the
 * state after every admission.
 */
export const planAdmission = (input: {
  readonly nowMs: number
  readonly gates: ReadonlyMap<string, Gate>
  readonly candidates: ReadonlyArray<AdmissionCandidate>
}): AdmissionPlan => {
  const { nowMs } = input
  const states = new Map([...input.gates].map(([tag, gate]) => [tag, stateOf(gate)] as const))
  const gatesOfCandidate = (candidate: AdmissionCandidate): ReadonlyArray<GateState> =>
    [...new Set(candidate.tags)].flatMap((tag) => states.get(tag) ?? [])

  const admitted: Array<string> = []
  const blocked: Array<ReadonlyArray<GateState>> = []
  for (const candidate of input.candidates) {
    const gates = gatesOfCandidate(candidate)
    if (gates.every((state) => verdictOf(state, nowMs)._tag === "Admit")) {
      admitted.push(candidate.id)
      for (const state of gates) take(state, nowMs)
    } else {
      blocked.push(gates)
    }
  }
  const nextCheckAtMs = blocked.reduce<number | null>((earliest, gates) => {
    const atMs = candidateOpensAtMs(gates, nowMs)
    return atMs === null ? earliest : Math.min(earliest ?? Infinity, atMs)
  }, null)
  return { admitted, nextCheckAtMs }
}

// ---------------------------------------------------------------------------------------------
// Where a gate is kept

/**
 * The shard whose owner admits a gate's held-back triggers: a stable hash (FNV-1a) of project and
 * tag, so every node agrees and the gates of a busy project spread over the cluster.
 */
export const gateShardOf = (projectId: string, tag: string, shards: number): number => {
  let hash = 0x811c9dc5
  const key = `${projectId}/${tag}`
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash % shards
}
