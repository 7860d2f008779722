// An alarm: one fiber's wait that ends at an instant of the Clock or when it is rung, whichever comes
// first, for loops that turn once per due millisecond or per fire (delivery/earlyRelease.ts,
// scheduler/shardActor.ts). `Effect.timeoutOption(Queue.take(…), ms)` does the same by racing two
// fibers, each with its own context and a queue taker, on every turn: at a few hundred turns a
// second that was a large part of the service's allocation while idle (BENCHMARKS.md "Precision").
// Here a wait is one `Effect.callback`, ended by one plain timer or by `ring`, a plain call.
//
// Which timer: under Effect's own live Clock (its sleep is a setTimeout) the alarm sets the
// setTimeout itself, once per wait, and clears it when rung or interrupted. Under any other Clock (the
// tests' TestClock, or a test's own) the time part is that Clock's `sleep`, raced with the ring as
// before, so a test moves the alarm's time with `TestClock.adjust` exactly as it moves any sleep. The
// live clock is recognised by its class (the default value of Effect's Clock reference), not by a
// service of its own: no test has to provide one, and a test clock can never get a real timer.
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/** setTimeout's longest delay; a longer wait is cut into such pieces (the loop that waits turns again). */
const MAX_TIMER_MS = 2 ** 31 - 1

/** The constructor of Effect's live Clock (reads Date.now, sleeps with setTimeout). */
const liveClockClass = (Clock.Clock.defaultValue() as object).constructor

/** Whether `clock` is Effect's own live Clock. */
export const isLiveClock = (clock: Clock.Clock): boolean => (clock as object).constructor === liveClockClass

export interface Alarm {
  /**
   * Waits until the clock reads `atMs` (Infinity: until rung), or until `ring` is called. A ring
   * since the last wait ended ends it at once. It may end a little before `atMs` (the event loop
   * measures timers from a cached time): the caller reads the clock again.
   */
  readonly waitUntil: (atMs: number) => Effect.Effect<void>
  /** Ends the current wait, or else the next one at once. A plain call: from a callback, a fiber, anywhere. */
  readonly ring: () => void
}

/** An alarm on the current fiber's Clock. */
export const makeAlarm: Effect.Effect<Alarm> = Clock.clockWith((clock) => Effect.sync(() => alarmOn(clock)))

const alarmOn = (clock: Clock.Clock): Alarm => {
  let rung = false
  /** Ends the wait in progress, if any. */
  let waiter: (() => void) | undefined
  const ring = () => {
    if (waiter === undefined) rung = true
    else waiter()
  }
  /** Waits for a ring only. */
  const rang = Effect.callback<void>((resume) => {
    waiter = () => {
      waiter = undefined
      resume(Effect.void)
    }
    return Effect.sync(() => void (waiter = undefined))
  })

  if (isLiveClock(clock)) {
    const waitUntil = (atMs: number): Effect.Effect<void> =>
      Effect.callback<void>((resume) => {
        if (rung) {
          rung = false
          return resume(Effect.void)
        }
        const ms = atMs - clock.currentTimeMillisUnsafe()
        if (ms <= 0) return resume(Effect.void)
        const timer = Number.isFinite(ms)
          ? setTimeout(() => {
            waiter = undefined
            resume(Effect.void)
          }, Math.min(Math.ceil(ms), MAX_TIMER_MS))
          : undefined
        waiter = () => {
          waiter = undefined
          clearTimeout(timer)
          resume(Effect.void)
        }
        return Effect.sync(() => {
          waiter = undefined
          clearTimeout(timer)
        })
      })
    return { waitUntil, ring }
  }

  const waitUntil = (atMs: number): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (rung) {
        rung = false
        return Effect.void
      }
      const ms = atMs - clock.currentTimeMillisUnsafe()
      if (ms <= 0) return Effect.void
      return Number.isFinite(ms) ? Effect.raceFirst(rang, clock.sleep(Duration.millis(ms))) : rang
    })
  return { waitUntil, ring }
}
