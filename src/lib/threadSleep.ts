// The last fraction of a millisecond before a due instant, slept by the thread itself. A timer of
// the event loop wakes on whole milliseconds of its own cached time, so a send timed by one is 0 to
// 2 ms late (0.7 ms in the median; BENCHMARKS.md "Precision"). A loop that must act at an instant
// sets its timer a millisecond early and sleeps the rest here: `Atomics.wait` suspends the thread (it
// uses no CPU) until a deadline kept to the microsecond. The thread does nothing else meanwhile, so
// the sleep is short (a caller's bound), only for live clocks (lib/alarm.ts isLiveClock), and a
// budget bounds the share of the time spent in it (at 500 sends a second, one every 2 ms, sleeping
// before each would stall the event loop 45 % of the time): past it the caller's timer alone is late.
import type * as Clock from "effect/Clock"

const cell = new Int32Array(new SharedArrayBuffer(4))

/** The process's time origin, read once: each read of `performance.timeOrigin` allocates a number. */
const TIME_ORIGIN_MS = performance.timeOrigin

/** The wall clock, to the microsecond. */
const preciseNowMs = () => TIME_ORIGIN_MS + performance.now()

/**
 * Blocks the thread until `clock` reads `atMs`, when that is at most `maxMs` away; returns whether
 * the clock reads it (false: too far off, nothing done, or still short of it after `maxMs`).
 */
export const sleepThreadUntil = (clock: Clock.Clock, atMs: number, maxMs: number): boolean => {
  if (clock.currentTimeMillisUnsafe() >= atMs) return true
  const startMs = preciseNowMs()
  if (atMs - startMs > maxMs) return false
  for (;;) {
    const restMs = atMs - preciseNowMs()
    // the two clocks may differ by a hair: once past the instant, short waits until the clock reads it
    Atomics.wait(cell, 0, 0, restMs > 0 ? restMs : 0.02)
    if (clock.currentTimeMillisUnsafe() >= atMs) return true
    if (preciseNowMs() - startMs >= maxMs) return false
  }
}

/**
 * Sleeps of the thread within a budget: at most `share` of the time on average (tokens of sleep
 * refill at `share` ms per ms, up to `burstMs`). `until` as sleepThreadUntil; false, without
 * sleeping, when the budget does not cover the sleep.
 */
export const makeThreadSleep = (options: { readonly share: number; readonly burstMs: number }) => {
  let budgetMs = options.burstMs
  let lastMs = preciseNowMs()
  return {
    until: (clock: Clock.Clock, atMs: number, maxMs: number): boolean => {
      const nowMs = preciseNowMs()
      budgetMs = Math.min(options.burstMs, budgetMs + (nowMs - lastMs) * options.share)
      lastMs = nowMs
      // the budget bounds the sleep itself too: the caller's clock may read a hair behind this one
      if (budgetMs <= 0 || atMs - nowMs > budgetMs) return clock.currentTimeMillisUnsafe() >= atMs
      const reached = sleepThreadUntil(clock, atMs, Math.min(maxMs, budgetMs))
      const endMs = preciseNowMs()
      budgetMs -= endMs - nowMs
      lastMs = endMs
      return reached
    }
  }
}
