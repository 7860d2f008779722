// Young-generation collections in the gaps between due times. A scavenge stops the event loop for
// 1–4 ms whenever the young generation fills (every few hundred milliseconds at a steady 200 sends/s);
// a trigger due during it leaves that much late, and at a steady rate that alone set the 99th
// percentile of lateness (BENCHMARKS.md "Precision"). The early release (delivery/earlyRelease.ts)
// knows when nothing is due for a while: there, once the young generation is mostly full, it is
// collected at once, in the gap, rather than at whatever moment it overflows. At high rates there are
// no such gaps and nothing changes. Only when the process runs with `--expose-gc` (`npm start`
// does: package.json); without it `collectInGap` does nothing.
import * as v8 from "node:v8"

type Gc = (options: { readonly type: "minor" | "major"; readonly execution: "sync" | "async" }) => void

const gc = (globalThis as { readonly gc?: Gc }).gc

/** A gap shorter than this is left alone (a scavenge takes up to a few milliseconds). */
export const MIN_GAP_MS = 4
/** The young generation's fill from which a gap is used to collect it. */
const FILL = 0.7
/** The young generation is looked at no more often than this (reading it costs a few microseconds). */
const LOOK_EVERY_MS = 10

let lookedAtMs = -Infinity

/** Whether a young-generation collection may be run in gaps (the process exposes `gc`). */
export const gcInGaps = gc !== undefined

/**
 * Nothing is due for at least MIN_GAP_MS after `nowMs`: collects the young generation now if it is
 * at least FILL full. Whether it did.
 */
export const collectInGap = (nowMs: number): boolean => {
  if (gc === undefined || nowMs - lookedAtMs < LOOK_EVERY_MS) return false
  lookedAtMs = nowMs
  for (const space of v8.getHeapSpaceStatistics()) {
    if (space.space_name !== "new_space") continue
    const capacity = space.space_used_size + space.space_available_size
    if (capacity === 0 || space.space_used_size < FILL * capacity) return false
    gc({ type: "minor", execution: "sync" })
    return true
  }
  return false
}
