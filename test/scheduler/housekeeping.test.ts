// Retention under TestClock on a real database (docs/operations.md "Retention"): which triggers a sweep
// deletes (finished ones that last changed before the cutoff, the start of the UTC day RETENTION_DAYS
// ago, with their executions; a cancelled generator only without live instances) and which it keeps,
// that the cutoff moves a day at a time; that it deletes in batches with a pause
// between them (in proportion to the batch's time), a sweep every interval; that a node finding the lock taken skips its turn;
// RETENTION_DAYS=0; that expired previous signing secrets are forgotten, on time even while a long
// retention sweep goes on. The loops' pauses are TestClock sleeps, so the tests move the clock and
// await the loops' own reports instead of waiting.
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { deletePaced, type HousekeepingEvent, runHousekeeping } from "../../src/scheduler/housekeeping.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, insertExecution, insertTrigger, insertTriggers, nextId } from "../support/fixtures.ts"

const PROJECT = "00000000-0000-7000-8000-0000000000aa"
const DAY = 24 * 60 * 60 * 1000
const EVERY = 60_000
const PAUSE = 200
/** Later than every id test/support/fixtures.ts mints, by more than the retention of these tests. */
const FIXTURES_PAST_MS = Date.UTC(2021, 0, 1)

/**
 * The TestClock is shared by the tests of a layer block: each test works relative to its start. It
 * starts past the fixtures' ids (they are of 2020), set before the database's pool exists (moving it
 * that far later would wake the pool's timers over and over): an attempt's id is never later than
 * its trigger's last change, and retention reads a deleted trigger's attempts only up to its cutoff.
 */
const clockNow = Effect.clockWith((clock) => clock.currentTimeMillis)

/**
 * Starts the loops with `options` and returns their reports: retention's (`events`, `next`; the first
 * sweep is EVERY away) and the chores' (`chores`, `nextChores`: a Tidied after each turn, the first at start).
 */
const startLoop = (options: { readonly retentionDays: number; readonly batchSize?: number; readonly pauseMs?: number }) =>
  Effect.gen(function*() {
    const events = yield* Queue.unbounded<HousekeepingEvent>()
    const chores = yield* Queue.unbounded<HousekeepingEvent>()
    const fiber = yield* Effect.forkChild(runHousekeeping({
      pauseMs: PAUSE,
      ...options,
      everyMs: EVERY,
      onEvent: (event) =>
        Queue.offer(event._tag === "Tidied" || (event._tag === "Partitions" && event.created.length > 0) ? chores : events, event)
          .pipe(Effect.asVoid)
    }))
    /** The next report (the loops run their statements in real time, between TestClock sleeps). */
    const next = Queue.take(events)
    const nextChores = Effect.gen(function*() {
      for (;;) {
        const event = yield* Queue.take(chores)
        if (event._tag === "Tidied") return event
      }
    })
    // both asleep until their next turn: moving the clock now reaches them
    assert.deepStrictEqual(yield* next, { _tag: "Waiting" })
    assert.deepStrictEqual(yield* nextChores, { _tag: "Tidied" })
    return { events, fiber, next, nextChores }
  })

/** The previous signing secrets of `ids` (null: forgotten), in the order of `ids`. */
const previousSecrets = (ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ id: string; previous: string | null }>`
      SELECT id, previous_signing_secret AS previous FROM projects WHERE id IN ${sql.in(ids)}`
    return ids.map((id) => {
      const row = rows.find((r) => r.id === id)
      return row === undefined ? "missing" : row.previous
    })
  })

/** Projects whose previous signing secret is kept until each of `untilMs`; their ids. */
const rotatedProjects = (untilMs: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids: Array<string> = []
    for (const until of untilMs) {
      const id = nextId()
      yield* ensureProject(id)
      yield* sql`UPDATE projects SET previous_signing_secret = 'whsec_old', previous_signing_secret_until = ${new Date(until)}
        WHERE id = ${id}`
      ids.push(id)
    }
    return ids
  })

const exists = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return (yield* sql`SELECT 1 FROM triggers WHERE id = ${id}`).length === 1
  })

const count = (table: "triggers" | "executions") =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return Number((yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM ${sql(table)}`)[0]!.n)
  })

/** Empty triggers and executions tables; `ago(ms)`: the date that long before the test's start. */
const setup = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM triggers`
  yield* sql`DELETE FROM executions`
  yield* ensureProject(PROJECT)
  const now = yield* clockNow
  return { now, ago: (ms: number) => new Date(now - ms) }
})

const Database = Layer.provideMerge(TestDatabase, Layer.effectDiscard(TestClock.setTime(FIXTURES_PAST_MS)))

layer(Database, { timeout: "60 seconds" })("housekeeping", (it) => {
  describe("what retention deletes", () => {
    it.effect("finished triggers last changed before the cutoff, with their executions; everything else stays", () =>
      Effect.gen(function*() {
        const { ago } = yield* setup
        // the cutoff is the start of the UTC day 30 days ago: before it, and after it (10 minutes younger than 30 days)
        const old = ago(31 * DAY)
        const recent = ago(30 * DAY - 10 * 60_000)
        const oneShot = (status: string, updatedAt: Date) => insertTrigger({ projectId: PROJECT, status, updatedAt, createdAt: updatedAt })
        const completedOld = yield* oneShot("completed", old)
        yield* insertExecution({ projectId: PROJECT, triggerId: completedOld, attempt: 1, status: "failed", httpStatus: 500 })
        yield* insertExecution({ projectId: PROJECT, triggerId: completedOld, attempt: 2 })
        const deleted = [completedOld, yield* oneShot("cancelled", old), yield* oneShot("skipped", old)]
        const completedRecent = yield* oneShot("completed", recent)
        yield* insertExecution({ projectId: PROJECT, triggerId: completedRecent })
        const kept = [completedRecent, yield* oneShot("cancelled", recent)]
        for (const status of ["registered", "retrying", "queued", "running"]) kept.push(yield* oneShot(status, old))

        // an active generator: kept; its old finished instances go, its upcoming one stays
        const active = yield* insertTrigger({ projectId: PROJECT, kind: "generator", status: "active", cronExpr: "* * * * *", updatedAt: old })
        kept.push(active)
        const instance = (generatorId: string, status: string, scheduledAt: Date) =>
          insertTrigger({ projectId: PROJECT, generatorId, status, scheduledAt, updatedAt: old })
        deleted.push(yield* instance(active, "completed", ago(31 * DAY)))
        kept.push(yield* instance(active, "registered", ago(-DAY)))
        // a cancelled generator with an instance still retrying: both stay until that one finishes
        const busy = yield* insertTrigger({ projectId: PROJECT, kind: "generator", status: "cancelled", cronExpr: "* * * * *", updatedAt: old })
        kept.push(busy, yield* instance(busy, "retrying", ago(31 * DAY)))
        // a cancelled generator whose instances are all finished: it goes, and they do
        const done = yield* insertTrigger({ projectId: PROJECT, kind: "generator", status: "cancelled", cronExpr: "* * * * *", updatedAt: old })
        deleted.push(done, yield* instance(done, "completed", ago(31 * DAY)))
        const loop = yield* startLoop({ retentionDays: 30 })
        yield* TestClock.adjust(EVERY)
        assert.deepStrictEqual(yield* loop.next, { _tag: "Batch", deleted: deleted.length })
        assert.deepStrictEqual(yield* loop.next, { _tag: "Swept", deleted: deleted.length })
        assert.deepStrictEqual(yield* loop.next, { _tag: "Waiting" })
        for (const id of deleted) assert.isFalse(yield* exists(id), `${id} deleted`)
        for (const id of kept) assert.isTrue(yield* exists(id), `${id} kept`)
        assert.strictEqual(yield* count("executions"), 1) // completedRecent's; completedOld's two went with it

        // the cutoff moves a day at a time: the sweeps of the next minutes, the recent ones now 30 days old, find nothing more
        for (let minute = 2; minute <= 12; minute++) {
          yield* TestClock.adjust(EVERY)
          assert.deepStrictEqual(yield* loop.next, { _tag: "Batch", deleted: 0 }, `minute ${minute}`)
          assert.deepStrictEqual(yield* loop.next, { _tag: "Swept", deleted: 0 })
          assert.deepStrictEqual(yield* loop.next, { _tag: "Waiting" })
        }
        assert.isTrue(yield* exists(completedRecent))
        yield* Fiber.interrupt(loop.fiber)
        // a cutoff two days later takes them (and completedRecent's execution)
        const later = yield* startLoop({ retentionDays: 28 })
        yield* TestClock.adjust(EVERY)
        assert.deepStrictEqual(yield* later.next, { _tag: "Batch", deleted: 2 })
        assert.isFalse(yield* exists(completedRecent))
        assert.strictEqual(yield* count("executions"), 0)
        yield* Fiber.interrupt(later.fiber)
      }))

    it.effect("RETENTION_DAYS=0 keeps everything", () =>
      Effect.gen(function*() {
        const { ago } = yield* setup
        const id = yield* insertTrigger({ projectId: PROJECT, status: "completed", updatedAt: ago(10_000 * DAY) })
        const loop = yield* startLoop({ retentionDays: 0 })
        yield* TestClock.adjust(EVERY)
        assert.deepStrictEqual(yield* loop.next, { _tag: "Swept", deleted: 0 })
        assert.isTrue(yield* exists(id))
        yield* Fiber.interrupt(loop.fiber)
      }))
  })

  describe("how it deletes", () => {
    it.effect("in batches with a pause between them; nothing more until the clock moves past the pause", () =>
      Effect.gen(function*() {
        const { ago } = yield* setup
        const old = ago(31 * DAY)
        yield* insertTriggers(Array.from({ length: 25 }, (_, i) => ({
          projectId: PROJECT, status: "completed", updatedAt: new Date(old.getTime() + i), createdAt: old
        })))
        const loop = yield* startLoop({ retentionDays: 30, batchSize: 10 })
        yield* TestClock.adjust(EVERY - 1)
        assert.strictEqual(yield* count("triggers"), 25, "no sweep before its time")
        yield* TestClock.adjust(1)
        assert.deepStrictEqual(yield* loop.next, { _tag: "Batch", deleted: 10 })
        assert.strictEqual(yield* count("triggers"), 15)
        // the loop now sleeps its pause (TestClock): a statement of its own would show here
        yield* TestClock.adjust(PAUSE - 1)
        assert.strictEqual(yield* Queue.size(loop.events), 0)
        assert.strictEqual(yield* count("triggers"), 15)
        yield* TestClock.adjust(1)
        assert.deepStrictEqual(yield* loop.next, { _tag: "Batch", deleted: 10 })
        assert.strictEqual(yield* count("triggers"), 5)
        yield* TestClock.adjust(PAUSE)
        assert.deepStrictEqual(yield* loop.next, { _tag: "Batch", deleted: 5 })
        assert.deepStrictEqual(yield* loop.next, { _tag: "Swept", deleted: 25 })
        assert.strictEqual(yield* count("triggers"), 0)
        // oldest first: the ones left after the first batch were the newest
        yield* Fiber.interrupt(loop.fiber)
      }))

    it.effect("each pause is in proportion to its batch's time (busy busyPercent of the time), never under the least pause", () =>
      Effect.gen(function*() {
        /** The TestClock times the batches start at, for batches taking `busyMs` each and a pacing of `busyPercent`. */
        const starts = (busyMs: number, busyPercent: number) =>
          Effect.gen(function*() {
            const at: Array<number> = []
            const sizes = [10, 10, 5]
            const batch = (limit: number) =>
              Effect.gen(function*() {
                at.push(yield* clockNow)
                if (busyMs > 0) yield* Effect.sleep(busyMs) // the statement's time, passed by the steps below
                return Math.min(limit, sizes[at.length - 1]!)
              })
            const fiber = yield* Effect.forkChild(deletePaced(batch, { batchSize: 10, busyPercent, minPauseMs: 10 }))
            for (let i = 0; i < 1_000 && at.length < 3; i++) yield* TestClock.adjust(1)
            yield* TestClock.adjust(busyMs) // the last batch's statement
            assert.strictEqual(yield* Fiber.join(fiber), 25)
            return at.slice(1).map((t, i) => t - at[i]!)
          })
        // 30 ms busy at 25 %: 90 ms of pause, a batch every 120 ms
        assert.deepStrictEqual(yield* starts(30, 25), [120, 120])
        // at 10 % (the default): nine times the batch's time
        assert.deepStrictEqual(yield* starts(20, 10), [200, 200])
        // a batch that took no time still pauses the least pause
        assert.deepStrictEqual(yield* starts(0, 10), [10, 10])
        // 100 %: no pause at all
        assert.deepStrictEqual(yield* starts(30, 100), [30, 30])
      }))

    it.effect("a node that finds the retention lock taken skips its turn; the next turn sweeps", () =>
      Effect.gen(function*() {
        const { ago } = yield* setup
        const id = yield* insertTrigger({ projectId: PROJECT, status: "cancelled", updatedAt: ago(40 * DAY) })
        const sql = yield* SqlClient.SqlClient
        const loop = yield* startLoop({ retentionDays: 30 })
        yield* Effect.scoped(Effect.gen(function*() {
          // another node sweeping: it holds the lock on its session
          const other = yield* sql.reserve
          yield* other.execute("SELECT pg_advisory_lock($1, $2)", [0x7472, 0], undefined)
          yield* TestClock.adjust(EVERY)
          assert.deepStrictEqual(yield* loop.next, { _tag: "Busy" })
          assert.deepStrictEqual(yield* loop.next, { _tag: "Waiting" })
          assert.isTrue(yield* exists(id))
          yield* other.execute("SELECT pg_advisory_unlock($1, $2)", [0x7472, 0], undefined)
        }))
        yield* TestClock.adjust(EVERY)
        assert.deepStrictEqual(yield* loop.next, { _tag: "Batch", deleted: 1 })
        assert.deepStrictEqual(yield* loop.next, { _tag: "Swept", deleted: 1 })
        assert.isFalse(yield* exists(id))
        // once the sweep is over it has given the lock back: another session can take it
        assert.deepStrictEqual(yield* loop.next, { _tag: "Waiting" })
        yield* Effect.scoped(Effect.gen(function*() {
          const other = yield* sql.reserve
          const rows = yield* other.execute("SELECT pg_try_advisory_lock($1, $2) AS ok", [0x7472, 0], undefined)
          assert.deepStrictEqual(rows, [{ ok: true }])
          yield* other.execute("SELECT pg_advisory_unlock($1, $2)", [0x7472, 0], undefined)
        }))
        yield* Fiber.interrupt(loop.fiber)
      }))
  })

  it.effect("a previous signing secret is forgotten once its overlap has ended", () =>
    Effect.gen(function*() {
      const { now } = yield* setup
      const [ending, lasting] = yield* rotatedProjects([now + EVERY - 1, now + DAY])
      const loop = yield* startLoop({ retentionDays: 0 })
      yield* TestClock.adjust(EVERY)
      yield* loop.nextChores
      assert.deepStrictEqual(yield* previousSecrets([ending!, lasting!]), [null, "whsec_old"])
      yield* Fiber.interrupt(loop.fiber)
    }))

  it.effect("a long retention sweep holds up none of the rest: a secret whose overlap ends meanwhile is forgotten on time", () =>
    Effect.gen(function*() {
      const { now, ago } = yield* setup
      const old = ago(31 * DAY)
      yield* insertTriggers(Array.from({ length: 25 }, (_, i) => ({
        projectId: PROJECT, status: "completed", updatedAt: new Date(old.getTime() + i), createdAt: old
      })))
      // batches of 10, two minutes apart: the sweep started at EVERY ends at 5 EVERY
      const [ending] = yield* rotatedProjects([now + EVERY + 1_000])
      const loop = yield* startLoop({ retentionDays: 30, batchSize: 10, pauseMs: 2 * EVERY })
      yield* TestClock.adjust(EVERY)
      assert.deepStrictEqual(yield* loop.next, { _tag: "Batch", deleted: 10 })
      yield* loop.nextChores
      assert.deepStrictEqual(yield* previousSecrets([ending!]), ["whsec_old"], "its overlap has not ended yet")
      // the next minute: the sweep is in its pause, the chores' turn comes all the same (within 10 s of real time)
      yield* TestClock.adjust(EVERY)
      const late = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10_000))).pipe(Effect.as("late" as const))
      assert.deepStrictEqual(yield* Effect.raceFirst(loop.nextChores, late), { _tag: "Tidied" })
      assert.deepStrictEqual(yield* previousSecrets([ending!]), [null])
      assert.strictEqual(yield* Queue.size(loop.events), 0, "the sweep is still pausing")
      assert.strictEqual(yield* count("triggers"), 15)
      // and the sweep goes on at its own pace, then waits a minute for the next
      yield* TestClock.adjust(EVERY)
      assert.deepStrictEqual(yield* loop.next, { _tag: "Batch", deleted: 10 })
      yield* TestClock.adjust(2 * EVERY)
      assert.deepStrictEqual(yield* loop.next, { _tag: "Batch", deleted: 5 })
      assert.deepStrictEqual(yield* loop.next, { _tag: "Swept", deleted: 25 })
      assert.deepStrictEqual(yield* loop.next, { _tag: "Waiting" })
      yield* Fiber.interrupt(loop.fiber)
    }))
})
