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
      // the instant is at least 2 ms off, so any sleep toward it would take 2 ms
      const never = makeThreadSleep({ share: 0, burstMs: 0 })
      const startMs = performance.now()
      assert.isFalse(never.until(clock, clock.currentTimeMillisUnsafe() + 3, 5))
      assert.isBelow(performance.now() - startMs, 1.5, "no budget: no sleep")
      // 5 ms of sleep in all, none refilled; each sleep that reaches its instant takes at least 1 ms
      // (the clock reads whole milliseconds), so at most six of thirty reach theirs
      const budgeted = makeThreadSleep({ share: 0, burstMs: 5 })
      let reached = 0
      for (let i = 0; i < 30; i++) {
        const atMs = clock.currentTimeMillisUnsafe() + 2
        if (budgeted.until(clock, atMs, 2.5)) {
          reached++
          assert.isAtLeast(clock.currentTimeMillisUnsafe(), atMs)
        }
      }
      assert.isAbove(reached, 0, "the budget covers some sleeps")
      assert.isAtMost(reached, 6, "not thirty sleeps' worth")
    }))
})
