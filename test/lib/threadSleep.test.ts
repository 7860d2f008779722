// The thread's own sleep toward an instant (lib/threadSleep.ts): it ends once the clock reads the
// instant, not before; it does nothing when the instant is further off than its bound.
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { sleepThreadUntil } from "../../src/lib/threadSleep.ts"

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
