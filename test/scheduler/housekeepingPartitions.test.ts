// The day partitions made by housekeeping under TestClock on a real database (docs/operations.md
// "How history is stored"): two nodes' loops started at once make today and the three days ahead
// once between them, at start, before their first sweep; a day later their sweeps make the one new
// day once; each node counts what it made in timewheel_execution_partitions_created_total, and the
// node whose sweep dropped a day counts it in timewheel_execution_partitions_dropped_total.
import { assert, layer } from "@effect/vitest"
import { Clock, Effect, Fiber, Queue } from "effect"
import { TestClock } from "effect/testing"
import { DAY_MS } from "../../src/domain/executionDays.ts"
import { makeMetrics, Metrics } from "../../src/metrics/metrics.ts"
import { type HousekeepingEvent, runHousekeeping } from "../../src/scheduler/housekeeping.ts"
import { executionPartitionsList } from "../../src/store/executionPartitions.ts"
import { TestDatabase } from "../support/database.ts"

const EVERY = 60_000
const START = Date.UTC(2031, 5, 10, 23, 59, 30)

const counted = async (metrics: ReturnType<typeof makeMetrics>, name: string) =>
  (await metrics.registry.getSingleMetric(name)!.get()).values.reduce((sum, value) => sum + value.value, 0)

/**
 * The TestClock seen `toMs` ahead (the test's TestClock starts at 0, where the partition from before
 * partitioning covers every day; moving the TestClock itself decades ahead would run every periodic
 * sleep of the connection pool meanwhile). Sleeps are the TestClock's.
 */
const shiftedClock = (toMs: number) =>
  Effect.clockWith((clock): Effect.Effect<Clock.Clock> => {
    const offset = toMs - clock.currentTimeMillisUnsafe()
    const nanos = BigInt(offset) * 1_000_000n
    return Effect.succeed({
      currentTimeMillisUnsafe: () => clock.currentTimeMillisUnsafe() + offset,
      currentTimeMillis: Effect.map(clock.currentTimeMillis, (ms) => ms + offset),
      currentTimeNanosUnsafe: () => clock.currentTimeNanosUnsafe() + nanos,
      currentTimeNanos: Effect.map(clock.currentTimeNanos, (ns) => ns + nanos),
      monotonicTimeNanosUnsafe: () => clock.monotonicTimeNanosUnsafe(),
      monotonicTimeNanos: clock.monotonicTimeNanos,
      sleep: (duration) => clock.sleep(duration)
    })
  })

/** A node's loop with its own metrics, its clock at `nowMs`; its reports. */
const node = (retentionDays: number, nowMs: number) =>
  Effect.gen(function*() {
    const metrics = makeMetrics()
    const clock = yield* shiftedClock(nowMs)
    const events = yield* Queue.unbounded<HousekeepingEvent>()
    const fiber = yield* Effect.forkChild(runHousekeeping({
      retentionDays, everyMs: EVERY, pauseMs: 10,
      onEvent: (event) => Queue.offer(events, event).pipe(Effect.asVoid)
    }).pipe(Effect.provideService(Metrics, metrics), Effect.provideService(Clock.Clock, clock)))
    /** Reports until both loops sleep: up to the chores' next Tidied and retention's next Waiting. */
    const untilWaiting = Effect.gen(function*() {
      const seen: Array<HousekeepingEvent> = []
      while (!seen.some((e) => e._tag === "Tidied") || !seen.some((e) => e._tag === "Waiting")) seen.push(yield* Queue.take(events))
      return seen
    })
    return { metrics, fiber, untilWaiting }
  })

const made = (events: ReadonlyArray<HousekeepingEvent>) => events.flatMap((e) => e._tag === "Partitions" ? e.created : [])
const dropped = (events: ReadonlyArray<HousekeepingEvent>) => events.flatMap((e) => e._tag === "Partitions" ? e.dropped : [])

layer(TestDatabase, { timeout: "60 seconds" })("housekeeping: day partitions", (it) => {
  it.effect("two nodes make today and three days ahead once at start, and the next day once when it comes; each counts its own", () =>
    Effect.gen(function*() {
      const [a, b] = [yield* node(0, START), yield* node(0, START)]
      const [startA, startB] = [yield* a.untilWaiting, yield* b.untilWaiting]
      assert.deepStrictEqual([...made(startA), ...made(startB)].sort(),
        ["executions_20310610", "executions_20310611", "executions_20310612", "executions_20310613"])

      // the first sweeps, 30 s past midnight: the 14th is now three days ahead
      yield* TestClock.adjust(EVERY)
      const [sweptA, sweptB] = [yield* a.untilWaiting, yield* b.untilWaiting]
      assert.deepStrictEqual([...made(sweptA), ...made(sweptB)], ["executions_20310614"])
      assert.deepStrictEqual((yield* executionPartitionsList).map((p) => p.name).filter((n) => n.startsWith("executions_2031")).sort(),
        ["executions_20310610", "executions_20310611", "executions_20310612", "executions_20310613", "executions_20310614"])
      const createdA = yield* Effect.promise(() => counted(a.metrics, "timewheel_execution_partitions_created_total"))
      const createdB = yield* Effect.promise(() => counted(b.metrics, "timewheel_execution_partitions_created_total"))
      assert.deepStrictEqual([createdA + createdB, createdA], [5, made([...startA, ...sweptA]).length])
      yield* Fiber.interrupt(a.fiber)
      yield* Fiber.interrupt(b.fiber)
    }))

  it.effect("with RETENTION_DAYS a sweep drops the days wholly past it and counts them", () =>
    Effect.gen(function*() {
      // the 10th ends 2 days + 30 s after START: with RETENTION_DAYS=2 it is wholly past the cutoff then
      const c = yield* node(2, START + 2 * DAY_MS)
      yield* c.untilWaiting
      yield* TestClock.adjust(EVERY)
      const swept = yield* c.untilWaiting
      assert.include(dropped(swept), "executions_20310610")
      assert.notInclude(dropped(swept), "executions_20310611")
      assert.strictEqual(yield* Effect.promise(() => counted(c.metrics, "timewheel_execution_partitions_dropped_total")), dropped(swept).length)
      yield* Fiber.interrupt(c.fiber)
    }))
})
