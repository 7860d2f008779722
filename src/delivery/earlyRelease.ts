// Rows handed to delivery ahead of their time (a shard fires a little ahead: scheduler/shardActor.ts)
// are sent at their time, never before it, from one loop for every due time (dueQueue.ts) instead of
// a fiber and a timer per due time. A timer may wake a little before the clock reads its deadline
// (the event loop measures timers from a cached time): the clock is read again and nothing that is
// not due is sent.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import { DueQueue } from "./dueQueue.ts"

/** The longest wait of the release loop that a sooner row does not cut short. */
const SHORT_WAIT_MS = 5

export const makeEarlyRelease = <T extends { readonly dueAtMs: number }>(send: (rows: ReadonlyArray<T>) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const clock = yield* Clock.Clock
    const waiting = new DueQueue<T>()
    /** Wakes the loop when a row comes due sooner than it sleeps for. */
    const sooner = yield* Queue.unbounded<void>()

    /** Rows due now are sent at once; later ones wait for their time. */
    const deliverAt = (rows: ReadonlyArray<T>): Effect.Effect<void> =>
      Effect.suspend(() => {
        const nowMs = clock.currentTimeMillisUnsafe()
        const later = rows.filter((row) => row.dueAtMs > nowMs)
        if (later.length > 0) {
          const nextAtMs = waiting.nextAtMs()
          waiting.add(later)
          if (nextAtMs === undefined || waiting.nextAtMs()! < nextAtMs) Queue.offerUnsafe(sooner, undefined)
        }
        if (later.length === rows.length) return Effect.void
        return send(later.length === 0 ? rows : rows.filter((row) => row.dueAtMs <= nowMs))
      })

    /**
     * One turn of the release loop: sleeps until the next due time (or a sooner one), then sends what
     * is due. A wait of at most SHORT_WAIT_MS is a plain sleep: a row due sooner than that, handed
     * over meanwhile, waits for the end of it (never more than SHORT_WAIT_MS late for it); racing
     * the sleep with the wake-up costs more than the sleep itself, once per due millisecond.
     */
    const releaseTurn = Effect.gen(function*() {
      const nextAtMs = waiting.nextAtMs()
      if (nextAtMs === undefined) yield* Queue.take(sooner)
      else {
        const waitMs = nextAtMs - (yield* Clock.currentTimeMillis)
        if (waitMs > SHORT_WAIT_MS) yield* Effect.timeoutOption(Queue.take(sooner), waitMs)
        else if (waitMs > 0) {
          yield* Effect.sleep(waitMs)
          // wake-ups offered meanwhile are spent: what they announced is taken below if due
          if (Queue.sizeUnsafe(sooner) > 0) yield* Queue.clear(sooner)
        }
      }
      const due = waiting.takeDue(yield* Clock.currentTimeMillis)
      if (due.length > 0) yield* send(due)
    })

    return {
      deliverAt,
      releaseTurn,
      /** Rows waiting for their time. */
      size: () => waiting.size,
      /** Removes and returns every waiting row (a stopping node gives them back). */
      takeAll: () => waiting.takeAll()
    }
  })
