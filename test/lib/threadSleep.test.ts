// The thread's own sleep toward an instant (lib/threadSleep.ts): it ends once the clock reads the
// instant, not before; it does nothing when the instant is further off than its bound, nor past the
// share of the time its budget allows.
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { makeThreadSleep, sleepThreadUntil } from "../../src/lib/threadSleep.ts"

describe("sleepThreadUntil", () => {
  it.live("sleeps until the clock reads the instant, never returning before it", () =>
    Effect.gen(function*() {
      const clock = yield* Clock.Clock
      for (let i = 0; i < 20; i++) {
        const atMs = clock.currentTimeMillisUnsafe() + 1
        assert.isTrue(sleepThreadUntil(clock, atMs, 1.5))
        assert.isAtLeast(clock.currentTimeMillisUnsafe(), atMs)
      }
      assert.isTrue(sleepThreadUntil(clock, clock.currentTimeMillisUnsafe() - 5, 1.5), "an instant passed: at once")
    }))

  it.live("does nothing when the instant is further off than its bound", () =>
    Effect.gen(function*() {
      const clock = yield* Clock.Clock
      const atMs = clock.currentTimeMillisUnsafe() + 50
      const startMs = performance.now()
      assert.isFalse(sleepThreadUntil(clock, atMs, 1.5))
      assert.isBelow(performance.now() - startMs, 5)
      assert.isBelow(clock.currentTimeMillisUnsafe(), atMs)
    }))
})

describe("makeThreadSleep", () => {
  it.live("sleeps no more than its budget: past it, it returns at once", () =>
    Effect.gen(function*() {
      const clock = yield* Clock.Clock
      const never = makeThreadSleep({ share: 0, burstMs: 0 })
      const startMs = performance.now()
      assert.isFalse(never.until(clock, clock.currentTimeMillisUnsafe() + 1, 1.5))
      assert.isBelow(performance.now() - startMs, 0.5, "no budget: no sleep")
      // 5 ms of sleep in all, none refilled: ten sleeps of up to a millisecond each do not all fit
      const budgeted = makeThreadSleep({ share: 0, burstMs: 5 })
      let refused = 0
      const sleptFrom = performance.now()
      for (let i = 0; i < 10; i++) {
        const atMs = clock.currentTimeMillisUnsafe() + 1
        if (!budgeted.until(clock, atMs, 1.5)) refused++
        else assert.isAtLeast(clock.currentTimeMillisUnsafe(), atMs)
      }
      assert.isAbove(refused, 0)
      assert.isBelow(performance.now() - sleptFrom, 5 + 1.5 + 3, "slept about its budget, not ten sleeps' worth")
    }))
})
