// Next fire instant of a compiled expression in a time zone, with the clock-change rules of docs/cron.md.
//
// Time is cut into segments of constant UTC offset (between two transitions). Inside a segment the
// wall clock is instant + offset, so the wall-clock matcher answers directly. Across segments:
// - every-hour field (all 24 hours allowed): runs follow elapsed time. A skipped wall time never
//   occurs; a repeated wall time occurs twice and both passes run (each segment is searched over
//   its own wall-clock range).
// - any other hour field: runs follow the wall clock. The first matching wall time inside a
//   spring-forward gap runs at (that time + gap), the other skipped times do not run; a repeated wall
//   time runs only in its first pass (after a fall-back the search resumes at the wall time the clock
//   had reached). A skipped time still runs when asked from inside the shift window (docs/cron.md "Time
//   zones and clock changes": created at 03:15 for a skipped 02:30 -> 03:30 the same day).

import { MS_PER_DAY, MS_PER_SECOND, yearOf, yearStartMs } from "./calendar.ts"
import { nextLocalMatch } from "./match.ts"
import type { CompiledCron } from "./parse.ts"
import type { TimeZone } from "./zone.ts"

/** How far ahead (in years) a fire time is looked for; enough for `0 0 * 2 5#5` (every 28-40 years). */
export const SEARCH_YEARS = 50
/** Supported local years. */
export const FIRST_YEAR = 1000
export const LAST_YEAR = 9999

const FIRST_INSTANT = yearStartMs(FIRST_YEAR) + MS_PER_DAY
const LAST_INSTANT = yearStartMs(LAST_YEAR + 1)

/** nextLocalMatch with a one-entry memo: walking several segments often asks for the same answer. */
const memoMatcher = (c: CompiledCron, lastYear: number) => {
  let lastFrom = Infinity
  let lastResult: number | null = null
  return (from: number): number | null => {
    if (from >= lastFrom && (lastResult === null || from <= lastResult)) return lastResult
    lastFrom = from
    lastResult = nextLocalMatch(c, from, lastYear)
    return lastResult
  }
}

/** First fire instant strictly after `afterMs`, or null if none within SEARCH_YEARS. */
export const nextFire = (c: CompiledCron, zone: TimeZone, afterMs: number): number | null => {
  if (Number.isNaN(afterMs)) return null
  let t = Math.max(Math.floor(afterMs / MS_PER_SECOND) * MS_PER_SECOND + MS_PER_SECOND, FIRST_INSTANT)
  if (t >= LAST_INSTANT) return null
  const match = memoMatcher(c, Math.min(yearOf(t) + SEARCH_YEARS, LAST_YEAR))
  const wallClock = !c.everyHour
  let offset = zone.offsetAt(t)
  let previous = zone.transitionAtOrBefore(t, t - 2 * MS_PER_DAY)

  for (;;) {
    // Wall clock: the first matching time skipped by the spring-forward that opened this segment.
    let shifted = Infinity
    if (wallClock && previous !== null && previous.after > previous.before) {
      const gap = previous.after - previous.before
      if (t < previous.at + gap) {
        const gapStart = previous.at + previous.before
        const skipped = match(gapStart)
        if (skipped !== null && skipped < gapStart + gap && skipped - previous.before >= t) {
          shifted = skipped - previous.before
        }
      }
    }
    // Regular match inside this segment; after a fall-back the wall clock resumes where it was.
    let localStart = t + offset
    if (wallClock && previous !== null && previous.before > previous.after) {
      localStart = Math.max(localStart, previous.at + previous.before)
    }
    const local = match(localStart)
    if (local === null) return shifted === Infinity ? null : shifted
    const candidate = local - offset
    const next = zone.transitionAfter(t, candidate)
    if (next === null) return Math.min(candidate, shifted)
    if (shifted < next.at) return shifted
    t = next.at
    offset = next.after
    previous = next
  }
}
