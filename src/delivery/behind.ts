// How far behind its due times this node is sending (docs/operations.md, "Operator endpoints and
// metrics" and the `delivery_behind` event): the lateness of the latest trigger sent at its time,
// read as a gauge (0 once nothing has been sent for a second), and a warning once every send for at
// least BEHIND_FOR_MS left BEHIND_WARN_MS or more late (at most one a minute while that lasts), then
// one line when a send is on time again (under a tenth of that). One late send alone (a trigger
// scheduled in the past with `ttr-run-missed`, a single pause) is not being behind. Plain state
// updated by the send path: a subtraction and a few comparisons.

/** Sends this late, for BEHIND_FOR_MS, say the node is behind. */
export const BEHIND_WARN_MS = 1_000
export const BEHIND_FOR_MS = 1_000
/** A send under this late, after the node was behind, says it has caught up. */
export const CAUGHT_UP_MS = BEHIND_WARN_MS / 10
/** While behind, the warning is repeated (with the lateness then) at most this often. */
export const BEHIND_REPEAT_MS = 60_000
/** The gauge reads 0 once nothing was sent at its time for this long. */
export const BEHIND_FRESH_MS = 1_000

export type BehindEvent =
  | { readonly _tag: "Behind"; readonly latenessMs: number; readonly forMs: number }
  | { readonly _tag: "CaughtUp"; readonly behindForMs: number }

export interface BehindTracker {
  /** A trigger due at `dueAtMs` leaves at `nowMs` (hot path). */
  readonly sent: (nowMs: number, dueAtMs: number) => void
  /** Seconds the latest send at its time was late, 0 when none was in the last BEHIND_FRESH_MS. */
  readonly behindSeconds: (nowMs: number) => number
}

export const makeBehindTracker = (report: (event: BehindEvent) => void): BehindTracker => {
  let lastLatenessMs = 0
  let lastSentAtMs = -Infinity
  /** Since when every send was at least BEHIND_WARN_MS late, or null. */
  let lateSinceMs: number | null = null
  /** Since when the node is behind (warned), or null. */
  let behindSinceMs: number | null = null
  let warnedAtMs = -Infinity
  return {
    sent: (nowMs, dueAtMs) => {
      const latenessMs = nowMs > dueAtMs ? nowMs - dueAtMs : 0
      lastLatenessMs = latenessMs
      lastSentAtMs = nowMs
      if (latenessMs >= BEHIND_WARN_MS) {
        if (lateSinceMs === null) lateSinceMs = nowMs
        if (nowMs - lateSinceMs >= BEHIND_FOR_MS && nowMs - warnedAtMs >= BEHIND_REPEAT_MS) {
          if (behindSinceMs === null) behindSinceMs = lateSinceMs
          warnedAtMs = nowMs
          report({ _tag: "Behind", latenessMs, forMs: nowMs - lateSinceMs })
        }
        return
      }
      lateSinceMs = null
      if (behindSinceMs !== null && latenessMs < CAUGHT_UP_MS) {
        const since = behindSinceMs
        behindSinceMs = null
        warnedAtMs = -Infinity
        report({ _tag: "CaughtUp", behindForMs: nowMs - since })
      }
    },
    behindSeconds: (nowMs) => nowMs - lastSentAtMs < BEHIND_FRESH_MS ? lastLatenessMs / 1000 : 0
  }
}
