// The alarm (lib/alarm.ts): a wait that ends at its time on the clock or when rung. Under the
// TestClock it goes through the clock's sleep (moved by TestClock.adjust, never by real time);
// on Effect's live clock it is one plain timer, cleared when rung or interrupted.
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import * as Clock from "effect/Clock"
import { TestClock } from "effect/testing"
import { isLiveClock, makeAlarm } from "../../src/lib/alarm.ts"

describe("the alarm under the TestClock", () => {
  it.effect("a wait ends when the clock reaches its time, not a millisecond before", () =>
    Effect.gen(function*() {
      assert.isFalse(isLiveClock(yield* Clock.Clock))
      const alarm = yield* makeAlarm
      const startMs = yield* Clock.currentTimeMillis
      const fiber = yield* Effect.forkChild(alarm.waitUntil(startMs + 100))
      yield* TestClock.adjust(99)
      assert.isUndefined(fiber.pollUnsafe(), "still waiting 1 ms before its time")
      yield* TestClock.adjust(1)
      yield* Fiber.join(fiber)
    }))

  it.effect("a ring ends a long wait at once; a ring before a wait ends that wait at once, once", () =>
    Effect.gen(function*() {
      const alarm = yield* makeAlarm
      const startMs = yield* Clock.currentTimeMillis
      const fiber = yield* Effect.forkChild(alarm.waitUntil(startMs + 60_000))
      yield* TestClock.adjust(10)
      assert.isUndefined(fiber.pollUnsafe())
      alarm.ring()
      yield* Fiber.join(fiber)
      assert.strictEqual(yield* Clock.currentTimeMillis, startMs + 10)
      alarm.ring()
      yield* alarm.waitUntil(Infinity)
      const next = yield* Effect.forkChild(alarm.waitUntil(startMs + 1_000))
      yield* TestClock.adjust(500)
      assert.isUndefined(next.pollUnsafe(), "the ring was spent by the wait before")
      yield* TestClock.adjust(500)
      yield* Fiber.join(next)
    }))

  it.effect("a wait without a time ends only when rung; a time passed already ends it at once", () =>
    Effect.gen(function*() {
      const alarm = yield* makeAlarm
      yield* alarm.waitUntil((yield* Clock.currentTimeMillis) - 5)
      const fiber = yield* Effect.forkChild(alarm.waitUntil(Infinity))
      yield* TestClock.adjust("1 hour")
      assert.isUndefined(fiber.pollUnsafe())
      alarm.ring()
      yield* Fiber.join(fiber)
    }))
})

describe("the alarm on the live clock", () => {
  it.live("a wait ends at its time by a plain timer, not before it; a ring cuts a long one short", () =>
    Effect.gen(function*() {
      const clock = yield* Clock.Clock
      assert.isTrue(isLiveClock(clock))
      const alarm = yield* makeAlarm
      const atMs = clock.currentTimeMillisUnsafe() + 25
      yield* alarm.waitUntil(atMs)
      // a timer may end up to a millisecond early (Node measures it from its cached loop time)
      assert.isAtLeast(clock.currentTimeMillisUnsafe(), atMs - 1)
      const startMs = clock.currentTimeMillisUnsafe()
      setTimeout(alarm.ring, 10)
      yield* alarm.waitUntil(startMs + 60_000)
      assert.isBelow(clock.currentTimeMillisUnsafe() - startMs, 1_000)
    }))

  it.live("an interrupted wait clears its timer and is no longer rung", () =>
    Effect.gen(function*() {
      const clock = yield* Clock.Clock
      const alarm = yield* makeAlarm
      const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === "Timeout").length
      const fiber = yield* Effect.forkChild(alarm.waitUntil(clock.currentTimeMillisUnsafe() + 60_000))
      yield* Effect.sleep(5)
      const waiting = timers()
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(timers(), waiting - 1, "the wait's timer is cleared with it")
      // the ring after it is kept for the next wait, which it ends at once
      alarm.ring()
      const startMs = clock.currentTimeMillisUnsafe()
      yield* alarm.waitUntil(startMs + 60_000)
      assert.isBelow(clock.currentTimeMillisUnsafe() - startMs, 1_000)
    }))
})
