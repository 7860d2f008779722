// The tag gates a shard actor looks after (those whose shard it owns: domain/gate.ts gateShardOf),
// each with the time of its next admission round. Pure: a kick asks for a round now, a round says
// when the next one is due (or none: the gate waits for a kick), and the actor runs what is due.
import type { GateRef } from "../cluster/wakeups.ts"

interface Entry {
  readonly gate: GateRef
  atMs: number
  /** When start times were last pruned (once a second at most). */
  prunedAtMs: number
}

/** How often a gate's old start times are pruned, at most. */
export const PRUNE_EVERY_MS = 1_000

export class GateSchedule {
  readonly #entries = new Map<string, Entry>()

  /** A round of `gate` at `atMs` at the latest. */
  kick(gate: GateRef, atMs: number): void {
    const key = `${gate.projectId}/${gate.tag}`
    const entry = this.#entries.get(key)
    if (entry === undefined) this.#entries.set(key, { gate, atMs, prunedAtMs: -Infinity })
    else entry.atMs = Math.min(entry.atMs, atMs)
  }

  /** The gates whose round is due at `nowMs`, with whether to prune their start times this time. */
  due(nowMs: number): Array<{ readonly gate: GateRef; readonly prune: boolean }> {
    const out: Array<{ gate: GateRef; prune: boolean }> = []
    for (const entry of this.#entries.values()) {
      if (entry.atMs > nowMs) continue
      const prune = nowMs - entry.prunedAtMs >= PRUNE_EVERY_MS
      if (prune) entry.prunedAtMs = nowMs
      out.push({ gate: entry.gate, prune })
    }
    return out
  }

  /** After a round: the next one at `atMs`, or none until a kick (null). */
  after(gate: GateRef, atMs: number | null): void {
    const key = `${gate.projectId}/${gate.tag}`
    const entry = this.#entries.get(key)
    if (entry === undefined) return
    if (atMs === null) this.#entries.delete(key)
    else entry.atMs = atMs
  }

  /** The earliest round due, if any. */
  nextAtMs(): number | undefined {
    let next: number | undefined
    for (const entry of this.#entries.values()) next = next === undefined ? entry.atMs : Math.min(next, entry.atMs)
    return next
  }
}
