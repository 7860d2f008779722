// Rows handed to delivery ahead of their time (a shard fires a little ahead: scheduler/shardActor.ts)
// are sent at their time, never before it, from one loop for every due time (dueQueue.ts) instead of
// a fiber and a timer per due time. The loop waits on an alarm (lib/alarm.ts: one plain timer per
// wait, rung when a row comes due sooner than it sleeps for), not on a race of fibers. A timer may
// wake a little before the clock reads its deadline (the event loop measures timers from a cached
// time): the clock is read again and nothing that is not due is sent. On the live clock the timer is
// set a millisecond early and the thread sleeps the rest (lib/threadSleep.ts): a timer alone sent
// 0.7 ms late in the median.
// On the live clock the loop is no fiber: one plain timer, re-armed as rows come and go, takes what is
// due and hands it to `sendNow`, a plain call (the common case: docs/internals.md "The delivery
// engine"); rows it leaves (false) go through `send` on the loop's fiber (`releaseTurn`), which waits
// only for such rows. The timer stops when the scope that made the release closes (the node stops).
// Under any other clock (the tests'), the fiber waits for the due times itself, as an alarm on that clock.
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
/** setTimeout's longest delay. */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * `send` sends rows from a fiber; `sendNow`, when given, is tried first as a plain call: true when
 * it took the rows (sent them), false to leave them to `send`.
 */
export const makeEarlyRelease = <T extends { readonly dueAtMs: number }>(
  send: (rows: ReadonlyArray<T>) => Effect.Effect<void>,
  sendNow?: (rows: ReadonlyArray<T>) => boolean
) =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const waiting = new DueQueue<T>()
    /** The release loop's wait, cut short when a row comes due sooner (live clock: when rows are left to `send`). */
    const alarm = yield* makeAlarm
    const precise = isLiveClock(clock)
    const threadSleep = makeThreadSleep({ share: THREAD_SLEEP_SHARE, burstMs: THREAD_SLEEP_BURST_MS })

    /** Live clock: due rows `sendNow` left, for the loop's fiber to `send`. */
    let handedOff: Array<T> = []
    /** Tries `sendNow`; whatever it leaves (or a defect of it) goes to the loop's fiber. */
    const release = (rows: ReadonlyArray<T>): void => {
      let taken = false
      try {
        taken = sendNow !== undefined && sendNow(rows)
      } catch {
        taken = false
      }
      if (taken) return
      for (const row of rows) handedOff.push(row)
      alarm.ring()
    }

    /** Live clock: the one timer toward the next due time (a millisecond early when that is far enough off). */
    let timer: ReturnType<typeof setTimeout> | undefined
    let timerAtMs = Infinity
    let timerEarly = false
    let stopped = false
    const onTimer = (): void => {
      timer = undefined
      timerAtMs = Infinity
      const nextAtMs = waiting.nextAtMs()
      if (timerEarly && nextAtMs !== undefined) threadSleep.until(clock, nextAtMs, THREAD_SLEEP_MAX_MS)
      const due = waiting.takeDue(clock.currentTimeMillisUnsafe())
      if (due.length > 0) release(due)
      arm()
    }
    /** Sets the timer for the next due time, unless one is set for it or sooner already. */
    const arm = (): void => {
      const nextAtMs = waiting.nextAtMs()
      if (stopped || nextAtMs === undefined) return
      const nowMs = clock.currentTimeMillisUnsafe()
      const early = nextAtMs - THREAD_SLEEP_LEAD_MS > nowMs
      const wakeAtMs = early ? nextAtMs - THREAD_SLEEP_LEAD_MS : nextAtMs
      if (timer !== undefined) {
        if (timerAtMs <= wakeAtMs) return
        clearTimeout(timer)
      }
      timerAtMs = wakeAtMs
      timerEarly = early
      timer = setTimeout(onTimer, Math.min(Math.max(0, Math.ceil(wakeAtMs - nowMs)), MAX_TIMER_MS))
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        stopped = true
        if (timer !== undefined) clearTimeout(timer)
        timer = undefined
        timerAtMs = Infinity
      })
    )

    /** Rows due now are sent at once; later ones wait for their time. */
    const deliverAt = (rows: ReadonlyArray<T>): Effect.Effect<void> =>
      Effect.suspend(() => {
        const nowMs = clock.currentTimeMillisUnsafe()
        const later = rows.filter((row) => row.dueAtMs > nowMs)
        if (later.length > 0) {
          const nextAtMs = waiting.nextAtMs()
          waiting.add(later)
          if (precise) arm()
          else if (nextAtMs === undefined || waiting.nextAtMs()! < nextAtMs) alarm.ring()
        }
        if (later.length === rows.length) return Effect.void
        const due = later.length === 0 ? rows : rows.filter((row) => row.dueAtMs <= nowMs)
        return sendNow !== undefined && sendNow(due) ? Effect.void : send(due)
      })

    /** Until the next due time (any clock but the live one: no thread sleep there). */
    const waitForNext = Effect.suspend(() => alarm.waitUntil(waiting.nextAtMs() ?? Infinity))

    /**
     * One turn of the release loop: sleeps until the next due time (or a sooner one), then sends what
     * is due. Live clock: waits until the timer leaves rows to `send`.
     */
    const releaseTurn = precise
      ? Effect.andThen(
        Effect.suspend(() => handedOff.length > 0 ? Effect.void : alarm.waitUntil(Infinity)),
        Effect.suspend(() => {
          if (handedOff.length === 0) return Effect.void
          const rows = handedOff
          handedOff = []
          return send(rows)
        })
      )
      : waitForNext.pipe(
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
      /** Rows waiting for their time (or, their time come, for the loop's fiber). */
      size: () => waiting.size + handedOff.length,
      /** Removes and returns every waiting row (a stopping node gives them back). */
      takeAll: () => {
        const rows = [...handedOff, ...waiting.takeAll()]
        handedOff = []
        return rows
      }
    }
  })
