// Rows handed to delivery ahead of their time (a shard fires a little ahead: scheduler/shardActor.ts)
// are sent at their time, never before it, from one loop for every due time (dueQueue.ts) instead of
// a fiber and a timer per due time. The loop waits on an alarm (lib/alarm.ts: one plain timer per
// wait, rung when a row comes due sooner than it sleeps for), not on a race of fibers. A timer may
// wake a little before the clock reads its deadline (the event loop measures timers from a cached
// time): the clock is read again and nothing that is not due is sent. On the live clock the timer is
// set a millisecond early and the thread sleeps the rest (lib/threadSleep.ts): a timer alone sent
// 0.7 ms late in the median.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { isLiveClock, makeAlarm } from "../lib/alarm.ts"
import { makeThreadSleep } from "../lib/threadSleep.ts"
import { DueQueue } from "./dueQueue.ts"

/**
 * A fire (the node's shards moving their marks, reading and handing over their rows:
 * scheduler/shardActor.ts) keeps the main thread, PostgreSQL and the two cores busy for a few
 * milliseconds; a send due then was sent late. The fire goes at a moment when no send comes due:
 * none due within `FIRE_QUIET_MS` after it, nor in the `SEND_SETTLE_MS` before it (that send may still
 * be on its way), searched up to `FIRE_DEFER_MS` after its grid instant (past that, it fires at the
 * instant: at a high rate there is no such moment, and then nothing is gained by waiting).
 */
export const FIRE_QUIET_MS = 3
export const SEND_SETTLE_MS = 1
export const FIRE_DEFER_MS = 20

/**
 * How early the release loop's timer wakes it (live clock), the longest it then sleeps the thread,
 * and the share of the time it may sleep it (200/s needs about 17 %: lib/threadSleep.ts).
 */
const THREAD_SLEEP_LEAD_MS = 1
const THREAD_SLEEP_MAX_MS = 1.5
const THREAD_SLEEP_SHARE = 0.2
const THREAD_SLEEP_BURST_MS = 20

export const makeEarlyRelease = <T extends { readonly dueAtMs: number }>(send: (rows: ReadonlyArray<T>) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const waiting = new DueQueue<T>()
    /** The release loop's wait, cut short when a row comes due sooner. */
    const alarm = yield* makeAlarm

    /** Rows due now are sent at once; later ones wait for their time. */
    const deliverAt = (rows: ReadonlyArray<T>): Effect.Effect<void> =>
      Effect.suspend(() => {
        const nowMs = clock.currentTimeMillisUnsafe()
        const later = rows.filter((row) => row.dueAtMs > nowMs)
        if (later.length > 0) {
          const nextAtMs = waiting.nextAtMs()
          waiting.add(later)
          if (nextAtMs === undefined || waiting.nextAtMs()! < nextAtMs) alarm.ring()
        }
        if (later.length === rows.length) return Effect.void
        return send(later.length === 0 ? rows : rows.filter((row) => row.dueAtMs <= nowMs))
      })

    const precise = isLiveClock(clock)
    const threadSleep = makeThreadSleep({ share: THREAD_SLEEP_SHARE, burstMs: THREAD_SLEEP_BURST_MS })
    /** The thread's sleep toward the next due time, once the early timer woke the loop (not a ring). */
    const sleepToNext = Effect.sync(() => {
      const nextAtMs = waiting.nextAtMs()
      if (nextAtMs !== undefined) threadSleep.until(clock, nextAtMs, THREAD_SLEEP_MAX_MS)
    })
    /** Until the next due time: its timer a millisecond early and the thread's sleep, when it is that far off. */
    const waitForNext = Effect.suspend(() => {
      const nextAtMs = waiting.nextAtMs() ?? Infinity
      return precise && Number.isFinite(nextAtMs) && nextAtMs - THREAD_SLEEP_LEAD_MS > clock.currentTimeMillisUnsafe()
        ? Effect.andThen(alarm.waitUntil(nextAtMs - THREAD_SLEEP_LEAD_MS), sleepToNext)
        : alarm.waitUntil(nextAtMs)
    })

    /** One turn of the release loop: sleeps until the next due time (or a sooner one), then sends what is due. */
    const releaseTurn = waitForNext.pipe(
      Effect.andThen(Effect.suspend(() => {
        const due = waiting.takeDue(clock.currentTimeMillisUnsafe())
        return due.length > 0 ? send(due) : Effect.void
      }))
    )

    /** The moment at or after `atMs` for a fire to go without delaying a send (see FIRE_QUIET_MS). */
    const quietFrom = (atMs: number): number => {
      if (!Number.isFinite(atMs)) return atMs
      for (let t = atMs; t <= atMs + FIRE_DEFER_MS;) {
        const next = waiting.firstAtOrAfter(t - SEND_SETTLE_MS)
        if (next === undefined || next >= t + FIRE_QUIET_MS) return t
        t = next + SEND_SETTLE_MS + 1
      }
      return atMs
    }

    return {
      deliverAt,
      quietFrom,
      releaseTurn,
      /** Rows waiting for their time. */
      size: () => waiting.size,
      /** Removes and returns every waiting row (a stopping node gives them back). */
      takeAll: () => waiting.takeAll()
    }
  })
