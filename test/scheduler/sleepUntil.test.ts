// Never early (issue "Safe under faults" 9): a timer may fire before the clock reaches its deadline
// (the event loop measures timers from a cached time). `sleepUntil` is what holds a claimed trigger
// back until its time; here a clock whose every sleep ends 2 ms short shows it never returns early.
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as Clock from "effect/Clock"
import { sleepUntil } from "../../src/scheduler/shardActor.ts"

/** A clock at `startMs` whose sleeps end `shortMs` before they should (at least 1 ms later). */
const earlyWakingClock = (startMs: number, shortMs: number) => {
  let nowMs = startMs
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: () => nowMs,
    currentTimeMillis: Effect.sync(() => nowMs),
    currentTimeNanosUnsafe: () => BigInt(nowMs) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => BigInt(nowMs) * 1_000_000n),
    monotonicTimeNanosUnsafe: () => BigInt(nowMs) * 1_000_000n,
    monotonicTimeNanos: Effect.sync(() => BigInt(nowMs) * 1_000_000n),
    sleep: (duration) => Effect.sync(() => void (nowMs += Math.max(1, Duration.toMillis(duration) - shortMs)))
  }
  return { clock, now: () => nowMs }
}

describe("sleepUntil", () => {
  it.effect("returns only once the clock reads the deadline, even when every timer fires early", () =>
    Effect.gen(function*() {
      for (const waitMs of [1, 2, 3, 10, 250]) {
        const { clock, now } = earlyWakingClock(1_000, 2)
        yield* sleepUntil(1_000 + waitMs).pipe(Effect.provideService(Clock.Clock, clock))
        assert.isAtLeast(now(), 1_000 + waitMs, `waited ${waitMs} ms`)
      }
    }))

  it.effect("returns at once for a deadline already reached", () =>
    Effect.gen(function*() {
      const { clock, now } = earlyWakingClock(5_000, 0)
      yield* sleepUntil(4_000).pipe(Effect.provideService(Clock.Clock, clock))
      assert.strictEqual(now(), 5_000)
    }))
})
