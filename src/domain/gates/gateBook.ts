// One tag gate as a node holds it in memory (docs/tag-policies.md "How the limits hold across nodes",
// "Backpressure from the target"): the permits (maxConcurrent) and window tokens (throughput) its lease
// gives it, what of them is in use, its lease's end, and the hold a refusal of the target put on the
// tag. A start takes a permit and one token of every window; the permit comes back with the attempt's
// outcome, the token a window (and a small margin) after the request was written to its connection —
// or, for a request that never left, a window after its admission: a token counts its start from
// admission until a window after the write, whichever ends later, so no sliding window at the target
// ever sees more starts than the tokens there are; and the starts of a short window are paced over it
// (bursts of at most PACE_BURST of the tokens). Pure: the caller passes the time.

import type { CircuitGate } from "./circuitGate.ts"
import type { GatePolicyLimits, GateWindow } from "./gate.ts"
import { limitsSomething } from "./gate.ts"

/** The demand key of maxConcurrent (window labels are `<n><s|m|h|d>`, never this). */
export const CONCURRENCY = "concurrency"

/**
 * Added to the window after a write before a token is used again: what a target may lag behind
 * the write when it stamps a request (its event loop busy with a burst, a slice of a busy CPU's
 * scheduler: 30 ms and more seen on a loaded machine). 2.5 % of the window, at least 25 ms and at
 * most 1 s: the rate it costs is at most 2.5 %.
 */
export const tokenMarginMs = (windowMs: number): number => Math.min(1_000, Math.max(25, Math.round(windowMs / 40)))

/**
 * Windows shorter than this are paced: a node sends at most PACE_BURST of its tokens (and at least
 * PACE_BURST_MIN) at once, the rest at the window's pace, so that the starts spread over the window
 * instead of leaving in one burst at its start (a burst makes a target queue and stamp the last of
 * one window's starts into the next; for longer windows the token margin covers that).
 */
export const PACE_WINDOWS_BELOW_MS = 10_000
export const PACE_BURST = 0.05
export const PACE_BURST_MIN = 20

/** A binary min-heap of times. */
class TimeHeap {
  readonly #items: Array<number> = []
  get size(): number {
    return this.#items.length
  }
  peek(): number | undefined {
    return this.#items[0]
  }
  push(value: number): void {
    const items = this.#items
    items.push(value)
    let i = items.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (items[parent]! <= value) break
      items[i] = items[parent]!
      i = parent
    }
    items[i] = value
  }
  pop(): void {
    const items = this.#items
    const last = items.pop()!
    if (items.length === 0) return
    let i = 0
    for (;;) {
      const left = 2 * i + 1
      if (left >= items.length) break
      const child = left + 1 < items.length && items[left + 1]! < items[left]! ? left + 1 : left
      if (items[child]! >= last) break
      items[i] = items[child]!
      i = child
    }
    items[i] = last
  }
}

/** The tokens of one window: held by this node, in use by starts not yet written, or counting one until a time. */
class WindowTokens {
  window: GateWindow
  held = 0
  /** This node's share as its last round computed it: above it (tokens it could not give back yet), none is used. */
  share = 0
  /** Admitted starts whose request has not been written yet: they count until it is. */
  unwritten = 0
  readonly #busyUntil = new TimeHeap()
  constructor(window: GateWindow) {
    this.window = window
  }
  inUse(nowMs: number): number {
    while (this.#busyUntil.size > 0 && this.#busyUntil.peek()! <= nowMs) this.#busyUntil.pop()
    return this.unwritten + this.#busyUntil.size
  }
  free(nowMs: number): number {
    return this.held - this.inUse(nowMs)
  }
  /** Tokens this node may still use now: within what it holds and its share. */
  usable(nowMs: number): number {
    return Math.min(this.held, this.share) - this.inUse(nowMs)
  }
  /** When the next token counting a start comes free (null: none counts one until a time). */
  nextFreeAtMs(nowMs: number): number | null {
    this.inUse(nowMs)
    return this.#busyUntil.peek() ?? null
  }
  // Pacing (a window shorter than PACE_WINDOWS_BELOW_MS): a bucket refilled at this node's usable
  // tokens per window, holding at most PACE_BURST of them (at least PACE_BURST_MIN).
  #paceLevel = Infinity
  #pacedAtMs = -Infinity
  #paceRatePerMs(): number {
    return Math.max(0, Math.min(this.held, this.share)) / this.window.windowMs
  }
  /** Starts the pacing allows now (fractional; Infinity for a window that is not paced). */
  paced(nowMs: number): number {
    if (this.window.windowMs >= PACE_WINDOWS_BELOW_MS) return Infinity
    const cap = Math.max(PACE_BURST_MIN, Math.ceil(Math.min(this.held, this.share) * PACE_BURST))
    this.#paceLevel = Math.min(cap, this.#paceLevel + Math.max(0, nowMs - this.#pacedAtMs) * this.#paceRatePerMs())
    this.#pacedAtMs = nowMs
    return this.#paceLevel
  }
  /** When the pacing allows one more start (now, or never without tokens). */
  nextPacedAtMs(nowMs: number): number | null {
    const level = this.paced(nowMs)
    if (level >= 1) return nowMs
    const rate = this.#paceRatePerMs()
    return rate === 0 ? null : nowMs + Math.ceil((1 - level) / rate)
  }
  /** One start taken now (after `paced` allowed it). */
  take(): void {
    this.unwritten++
    this.#paceLevel -= 1
  }
  /** A start counted from `sinceMs` (its write, or its admission) for a window and the margin. */
  count(sinceMs: number): void {
    this.#busyUntil.push(sinceMs + this.window.windowMs + tokenMarginMs(this.window.windowMs))
  }
}

/** What a node holds of a gate, as its lease row records it. */
export interface GateHolding {
  readonly permits: number
  /** Window label → tokens held. */
  readonly tokens: Readonly<Record<string, number>>
}

export class GateBook {
  #limits: GatePolicyLimits
  /** Permits leased to this node, and those in use (admitted, outcome not known yet). */
  permits = 0
  inUse = 0
  /** This node's share of the permits as its last round computed it (it may hold more, in use, for a while). */
  permitShare = 0
  readonly #windows = new Map<string, WindowTokens>()
  /** This node's lease is valid until then (its last round's start plus the lease time). */
  leaseUntilMs = -Infinity
  /** The tag is held (a refusal of the target) until then. */
  heldUntilMs = -Infinity
  /** An origin's circuit breaker (null: none; docs/protecting-targets.md). */
  circuit: CircuitGate | null = null

  constructor(limits: GatePolicyLimits) {
    this.#limits = limits
    this.setLimits(limits)
  }

  get limits(): GatePolicyLimits {
    return this.#limits
  }

  /** The policy changed: windows no longer limited are forgotten, new ones start with no token held. */
  setLimits(limits: GatePolicyLimits): void {
    this.#limits = limits
    const labels = new Set(limits.windows.map((window) => window.label))
    for (const label of [...this.#windows.keys()]) if (!labels.has(label)) this.#windows.delete(label)
    for (const window of limits.windows) {
      const tokens = this.#windows.get(window.label)
      if (tokens === undefined) this.#windows.set(window.label, new WindowTokens(window))
      else tokens.window = window
    }
  }

  /** Whether starts need a lease (the policy limits concurrency or throughput). */
  get leased(): boolean {
    return limitsSomething(this.#limits)
  }

  held(nowMs: number): boolean {
    return nowMs < this.heldUntilMs
  }

  /** Nothing of the gate starts now: paused, held, or its circuit open (or probing, the probe not this node's to send). */
  stopped(nowMs: number): boolean {
    return this.#limits.paused || this.held(nowMs) || (this.circuit !== null && !this.circuit.admits(nowMs))
  }

  /** Whether one more start may happen now: not stopped, and a permit and a token of every window free. */
  admits(nowMs: number): boolean {
    if (this.stopped(nowMs)) return false
    if (!this.leased) return true
    if (nowMs >= this.leaseUntilMs) return false
    const { maxConcurrent } = this.#limits
    if (maxConcurrent !== null && this.inUse >= Math.min(this.permits, this.permitShare, maxConcurrent)) return false
    for (const tokens of this.#windows.values()) if (tokens.usable(nowMs) < 1 || tokens.paced(nowMs) < 1) return false
    return true
  }

  /** One start admitted now (after `admits`). */
  take(): void {
    this.inUse++
    for (const tokens of this.#windows.values()) tokens.take()
  }

  /** The request of a start was written to its connection at `atMs`. */
  written(atMs: number): void {
    for (const tokens of this.#windows.values()) {
      if (tokens.unwritten === 0) continue
      tokens.unwritten--
      tokens.count(atMs)
    }
  }

  /**
   * A start's attempt ended: its permit comes back; a request that was never written counts a
   * window from its admission (a window later from now on, if it waited that long to fail).
   */
  finished(wasWritten: boolean, admittedAtMs: number): void {
    this.inUse = Math.max(0, this.inUse - 1)
    if (wasWritten) return
    for (const tokens of this.#windows.values()) {
      if (tokens.unwritten === 0) continue
      tokens.unwritten--
      tokens.count(admittedAtMs)
    }
  }

  /** The units this node may give back now: permits and tokens not in use. */
  giveable(nowMs: number): GateHolding {
    const tokens: Record<string, number> = {}
    for (const [label, window] of this.#windows) tokens[label] = Math.max(0, window.free(nowMs))
    return { permits: Math.max(0, this.permits - this.inUse), tokens }
  }

  /** Whether it holds window tokens beyond its share (units it gives back as they come free). */
  aboveShare(): boolean {
    for (const window of this.#windows.values()) if (window.held > window.share) return true
    return false
  }

  /** What this node holds. */
  holding(): GateHolding {
    const tokens: Record<string, number> = {}
    for (const [label, window] of this.#windows) tokens[label] = window.held
    return { permits: this.permits, tokens }
  }

  /**
   * Units wanted per limit: those in use and `wanted` more (the starts waiting), at most the limit;
   * none while stopped.
   */
  demand(wanted: number, nowMs: number): Record<string, number> {
    const stopped = this.stopped(nowMs)
    const out: Record<string, number> = {}
    const { maxConcurrent } = this.#limits
    if (maxConcurrent !== null) out[CONCURRENCY] = Math.min(maxConcurrent, this.inUse + (stopped ? 0 : wanted))
    for (const [label, window] of this.#windows) {
      out[label] = Math.min(window.window.limit, window.inUse(nowMs) + (stopped ? 0 : wanted))
    }
    return out
  }

  /**
   * A lease round's outcome: what this node holds now, valid until `leaseUntilMs`, and its share
   * (what it may use; it holds more while units in use cannot be given back yet).
   */
  lease(holding: GateHolding, leaseUntilMs: number, share: GateHolding = holding): void {
    this.permits = holding.permits
    this.permitShare = share.permits
    for (const [label, window] of this.#windows) {
      window.held = holding.tokens[label] ?? 0
      window.share = share.tokens[label] ?? 0
    }
    this.leaseUntilMs = leaseUntilMs
  }

  /**
   * When a window that holds starts back now lets one more through (a token comes free, or its
   * pacing allows one), if it will by itself: the latest of those times over the windows.
   */
  nextTokenAtMs(nowMs: number): number | null {
    let next: number | null = null
    for (const window of this.#windows.values()) {
      const at = window.usable(nowMs) >= 1 ? window.nextPacedAtMs(nowMs) : window.nextFreeAtMs(nowMs)
      if (at === null) return null
      if (at > nowMs) next = next === null ? at : Math.max(next, at)
    }
    return next
  }

  /**
   * About how many starts a second this node may admit with its holding (before its first lease,
   * with the whole limit): permits over the attempts' duration, each window's tokens over its length.
   */
  startsPerSecond(attemptMs: number): number {
    if (this.#limits.paused) return 0
    const { maxConcurrent } = this.#limits
    let rate = Infinity
    if (maxConcurrent !== null) rate = Math.min(rate, (this.leaseUntilMs === -Infinity ? maxConcurrent : this.permits) * 1000 / Math.max(1, attemptMs))
    for (const window of this.#windows.values()) {
      const tokens = this.leaseUntilMs === -Infinity ? window.window.limit : window.held
      rate = Math.min(rate, tokens * 1000 / window.window.windowMs)
    }
    return rate
  }
}
