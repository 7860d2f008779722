// Never early (docs/internals.md "Fine print"): a shard fires a little ahead and the dispatcher holds
// the rows until their time (delivery/earlyRelease.ts). A timer may fire before the clock reaches its
// deadline (the event loop measures timers from a cached time); here a clock whose every sleep ends 2
// ms short shows that no row is sent before its time, each is sent once it has come, and a row due
// sooner than the loop sleeps for is not held back by that sleep; on the live clock too.
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, Scope } from "effect"
import * as Clock from "effect/Clock"
import { DueQueue } from "../../src/delivery/dueQueue.ts"
import { FIRE_DEFER_MS, FIRE_QUIET_MS, makeEarlyRelease, SEND_SETTLE_MS } from "../../src/delivery/earlyRelease.ts"

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

interface Row {
  readonly id: string
  readonly dueAtMs: number
}

/** A release loop on `clock` that records each row with the clock's time when it was sent. */
const releaseOn = (clock: Clock.Clock, now: () => number) =>
  Effect.gen(function*() {
    const sent: Array<{ readonly id: string; readonly dueAtMs: number; readonly atMs: number }> = []
    const early = yield* makeEarlyRelease<Row>((rows) => Effect.sync(() => rows.forEach((row) => sent.push({ ...row, atMs: now() }))))
    return { early, sent }
  }).pipe(Effect.provideService(Clock.Clock, clock))

describe("the early release of rows fired ahead", () => {
  it.effect("a row is sent only once the clock reads its time, even when every timer fires early; one due already at once", () =>
    Effect.gen(function*() {
      for (const waitMs of [1, 2, 3, 10, 250]) {
        const { clock, now } = earlyWakingClock(1_000, 2)
        const { early, sent } = yield* releaseOn(clock, now)
        yield* early.deliverAt([{ id: "due", dueAtMs: 900 }, { id: "later", dueAtMs: 1_000 + waitMs }])
        assert.deepStrictEqual(sent.map((row) => row.id), ["due"], "a row whose time has come goes at once")
        while (sent.length < 2) yield* early.releaseTurn.pipe(Effect.provideService(Clock.Clock, clock))
        assert.isAtLeast(sent[1]!.atMs, 1_000 + waitMs, `waited ${waitMs} ms`)
        assert.strictEqual(early.size(), 0)
      }
    }))

  it.effect("a row due sooner than the loop sleeps for wakes it: it is not held back by the later one's sleep", () =>
    Effect.gen(function*() {
      const { clock, now } = earlyWakingClock(1_000, 0)
      const { early, sent } = yield* releaseOn(clock, now)
      yield* early.deliverAt([{ id: "late", dueAtMs: 5_000 }])
      yield* early.deliverAt([{ id: "sooner", dueAtMs: 1_050 }])
      // the turn's sleep toward 5,000 is cut short by the sooner row, which goes at 1,050
      while (sent.length < 1) yield* early.releaseTurn.pipe(Effect.provideService(Clock.Clock, clock))
      assert.deepStrictEqual(sent.map((row) => [row.id, row.atMs]), [["sooner", 1_050]])
      assert.deepStrictEqual(early.takeAll().map((row) => row.id), ["late"], "a stopping node takes back what waits")
    }))
})

describe("the early release on the live clock (a plain timer per wait: lib/alarm.ts)", () => {
  it.live("rows go at their time, not before, and a row due sooner cuts a long wait short", () =>
    Effect.gen(function*() {
      const clock = yield* Clock.Clock
      const now = () => clock.currentTimeMillisUnsafe()
      const { early, sent } = yield* releaseOn(clock, now)
      yield* Effect.forkChild(Effect.forever(early.releaseTurn))
      const startMs = now()
      yield* early.deliverAt([{ id: "late", dueAtMs: startMs + 2_000 }, { id: "soon", dueAtMs: startMs + 30 }])
      // handed over while the loop sleeps toward `soon`: due before it, it wakes the loop
      yield* early.deliverAt([{ id: "sooner", dueAtMs: startMs + 15 }])
      while (sent.length < 2) yield* Effect.sleep(5)
      assert.deepStrictEqual(sent.map((row) => row.id), ["sooner", "soon"])
      for (const row of sent) assert.isAtLeast(row.atMs, row.dueAtMs, `${row.id} not early`)
      assert.isBelow(sent[0]!.atMs, startMs + 30, "the sooner row did not wait for the later one's time")
      assert.deepStrictEqual(early.takeAll().map((row) => row.id), ["late"], "a stopping node takes back what waits")
    }))
})

describe("the early release on the live clock with a plain sender (no fiber per release)", () => {
  it.live("the timer hands due rows to the plain sender, never early; rows it leaves go to the loop's fiber; a stopped loop sends nothing more", () =>
    Effect.gen(function*() {
      const clock = yield* Clock.Clock
      const now = () => clock.currentTimeMillisUnsafe()
      const sent: Array<{ readonly id: string; readonly dueAtMs: number; readonly atMs: number; readonly by: string }> = []
      const scope = yield* Scope.make()
      const early = yield* Scope.provide(scope)(makeEarlyRelease<Row>(
        (rows) => Effect.sync(() => rows.forEach((row) => sent.push({ ...row, atMs: now(), by: "fiber" }))),
        // the plain sender leaves the rows whose id starts with "x"
        (rows) => {
          if (rows.some((row) => row.id.startsWith("x"))) return false
          rows.forEach((row) => sent.push({ ...row, atMs: now(), by: "plain" }))
          return true
        }
      ))
      const loop = yield* Effect.forkChild(Effect.forever(early.releaseTurn))
      const startMs = now()
      yield* early.deliverAt([
        { id: "now", dueAtMs: startMs - 5 },
        { id: "a", dueAtMs: startMs + 40 },
        // far enough from "a" that a timer late under load does not take both in one turn
        { id: "x", dueAtMs: startMs + 300 },
        { id: "gone", dueAtMs: startMs + 1_000 }
      ])
      // handed over later but due sooner: the timer is set again for it
      yield* early.deliverAt([{ id: "b", dueAtMs: startMs + 20 }])
      assert.deepStrictEqual(sent.map((row) => [row.id, row.by]), [["now", "plain"]], "a row whose time has come goes at once")
      while (sent.length < 4) yield* Effect.sleep(5)
      assert.deepStrictEqual(sent.map((row) => [row.id, row.by]), [["now", "plain"], ["b", "plain"], ["a", "plain"], ["x", "fiber"]])
      for (const row of sent) assert.isAtLeast(row.atMs, row.dueAtMs, `${row.id} not early`)
      assert.strictEqual(early.size(), 1)
      // the node stops: its scope closes, and the timer goes with it
      yield* Fiber.interrupt(loop)
      yield* Scope.close(scope, Exit.void)
      yield* Effect.sleep(Math.max(0, startMs + 1_050 - now()))
      assert.strictEqual(sent.length, 4, "nothing is sent once the loop stopped")
      assert.deepStrictEqual(early.takeAll().map((row) => row.id), ["gone"], "a stopping node takes back what waits")
    }))
})

describe("the early release's precision on the live clock", () => {
  it.live("rows due a few ms apart go within a fraction of a millisecond of their time (the thread sleeps the last one), never before it", () =>
    Effect.gen(function*() {
      const clock = yield* Clock.Clock
      const wallMs = () => performance.timeOrigin + performance.now()
      const sent: Array<{ readonly dueAtMs: number; readonly lateMs: number; readonly clockMs: number }> = []
      const record = (rows: ReadonlyArray<Row>) =>
        rows.forEach((row) => sent.push({ dueAtMs: row.dueAtMs, lateMs: wallMs() - row.dueAtMs, clockMs: clock.currentTimeMillisUnsafe() }))
      const early = yield* makeEarlyRelease<Row>((rows) => Effect.sync(() => record(rows)), (rows) => {
        record(rows)
        return true
      })
      yield* Effect.forkChild(Effect.forever(early.releaseTurn))
      const startMs = clock.currentTimeMillisUnsafe() + 20
      yield* early.deliverAt(Array.from({ length: 40 }, (_, i) => ({ id: String(i), dueAtMs: startMs + 4 * i })))
      while (sent.length < 40) yield* Effect.sleep(10)
      for (const row of sent) assert.isAtLeast(row.clockMs, row.dueAtMs, "not early")
      const late = sent.map((row) => row.lateMs).sort((a, b) => a - b)
      // a plain timer: 0.7 ms in the median (it wakes on whole milliseconds of the loop's cached time)
      assert.isBelow(late[20]!, 0.5, `median lateness ${late[20]!.toFixed(2)} ms`)
    }))
})

describe("DueQueue", () => {
  it("takes what is due, earliest first, rows of one millisecond in the order given", () => {
    const queue = new DueQueue<Row>()
    queue.add([{ id: "c", dueAtMs: 30 }, { id: "a", dueAtMs: 10 }, { id: "b1", dueAtMs: 20 }])
    queue.add([{ id: "b2", dueAtMs: 20 }, { id: "d", dueAtMs: 40 }])
    assert.strictEqual(queue.nextAtMs(), 10)
    assert.deepStrictEqual(queue.takeDue(9), [])
    assert.deepStrictEqual(queue.takeDue(20).map((row) => row.id), ["a", "b1", "b2"])
    assert.deepStrictEqual([queue.size, queue.nextAtMs()], [2, 30])
    assert.deepStrictEqual(queue.takeAll().map((row) => row.id), ["c", "d"])
    assert.deepStrictEqual([queue.size, queue.nextAtMs()], [0, undefined])
  })
})

describe("the moment a fire goes (quietFrom)", () => {
  const waitingAt = (times: ReadonlyArray<number>) =>
    Effect.gen(function*() {
      const { clock, now } = earlyWakingClock(0, 0)
      const { early } = yield* releaseOn(clock, now)
      yield* early.deliverAt(times.map((dueAtMs) => ({ id: String(dueAtMs), dueAtMs }))).pipe(Effect.provideService(Clock.Clock, clock))
      return early
    })

  it.effect("at its grid instant when no send comes due around it", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* waitingAt([])).quietFrom(1_000), 1_000)
      assert.strictEqual((yield* waitingAt([990, 1_010])).quietFrom(1_000), 1_000)
      assert.strictEqual((yield* waitingAt([1_000 + FIRE_QUIET_MS])).quietFrom(1_000), 1_000)
      assert.strictEqual((yield* waitingAt([5_000])).quietFrom(Infinity), Infinity)
    }))

  it.effect("after a send due at or just before its instant, once no other comes due within FIRE_QUIET_MS", () =>
    Effect.gen(function*() {
      // one due every 5 ms (the precision bench): the fire goes 2 ms after the send due at its instant
      assert.strictEqual((yield* waitingAt([995, 1_000, 1_005, 1_010])).quietFrom(1_000), 1_000 + SEND_SETTLE_MS + 1)
      // a send due the millisecond before the instant may still be on its way
      assert.strictEqual((yield* waitingAt([1_000 - SEND_SETTLE_MS])).quietFrom(1_000), 1_000 + 1)
      // too short a gap is passed over
      assert.strictEqual((yield* waitingAt([1_000, 1_003, 1_005, 1_012])).quietFrom(1_000), 1_007)
    }))

  it.effect("never later than FIRE_DEFER_MS after its instant: with sends every millisecond it goes at the instant", () =>
    Effect.gen(function*() {
      const busy = Array.from({ length: 40 }, (_, i) => 995 + i)
      assert.strictEqual((yield* waitingAt(busy)).quietFrom(1_000), 1_000)
      const early = yield* waitingAt(Array.from({ length: 20 }, (_, i) => 1_000 + 2 * i))
      for (let atMs = 990; atMs < 1_100; atMs++) {
        const fireAtMs = early.quietFrom(atMs)
        assert.isAtLeast(fireAtMs, atMs)
        assert.isAtMost(fireAtMs, atMs + FIRE_DEFER_MS)
      }
    }))
})
