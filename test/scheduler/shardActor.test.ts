// The ShardActor under TestClock on a real database: it fires each trigger exactly at its time (not
// a millisecond early), follows wake-ups (new, moved, cancelled), reads triggers beyond its window
// from PostgreSQL in time, fires overdue ones at once, and recovers triggers left by a dead node.
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { Dispatcher } from "../../src/delivery/dispatch.ts"
import { runShardActor } from "../../src/scheduler/shardActor.ts"
import type { WakeItem } from "../../src/scheduler/wake.ts"
import { TestDatabase } from "../support/database.ts"

const SHARD = 3
const PROJECT = "00000000-0000-7000-8000-000000000001"


const insertTrigger = (id: string, status: string, dueAtMs: number | null, claimedBy: string | null = null) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const due = dueAtMs === null ? null : new Date(dueAtMs)
    yield* sql`INSERT INTO triggers (id, project_id, kind, shard, status, scheduled_at, due_at, url, method, headers,
        claimed_by, created_at, updated_at)
      VALUES (${id}, ${PROJECT}, 'job', ${SHARD}, ${status}, ${due}, ${due}, 'http://127.0.0.1:9/', 'GET', '[]'::jsonb,
        ${claimedBy}, now(), now())`
  })

const statusOf = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return (yield* sql<{ status: string }>`SELECT status FROM triggers WHERE id = ${id}`)[0]?.status
  })

/** Lets the actor's real database round trips finish before asserting that nothing happened. */
const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 150)))

let counter = 0
const newId = () => `00000000-0000-7000-8000-${(++counter).toString(16).padStart(12, "0")}`

/** Starts an actor with a recording dispatcher; returns its mailbox and the submitted ids. */
const startActor = Effect.gen(function*() {
  const submitted = yield* Queue.unbounded<string>()
  const mailbox = yield* Queue.unbounded<WakeItem>()
  const dispatcher = Layer.succeed(Dispatcher)({ submit: (ids) => Queue.offerAll(submitted, ids).pipe(Effect.asVoid) })
  const fiber = yield* Effect.forkChild(
    runShardActor({ shard: SHARD, node: "node-a", mailbox, liveNodes: Effect.succeed(["node-a"]) }).pipe(Effect.provide(dispatcher))
  )
  return { submitted, mailbox, fiber }
})

const setup = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM triggers`
  yield* sql`INSERT INTO projects (id, name, monthly_quota, retry_policy, created_at, updated_at)
    VALUES (${PROJECT}, 'p', 10, '{}'::jsonb, now(), now()) ON CONFLICT DO NOTHING`
})

layer(TestDatabase, { timeout: "60 seconds" })("ShardActor", (it) => {
  describe("firing", () => {
    it.effect("fires a trigger at its time and not a millisecond before", () =>
      Effect.gen(function*() {
        yield* setup
        const id = newId()
        yield* insertTrigger(id, "registered", 5_000)
        const actor = yield* startActor
        yield* settle
        yield* TestClock.adjust(4_999)
        yield* settle
        assert.strictEqual(yield* Queue.size(actor.submitted), 0)
        assert.strictEqual(yield* statusOf(id), "registered")
        yield* TestClock.adjust(1)
        assert.strictEqual(yield* Queue.take(actor.submitted), id)
        assert.strictEqual(yield* statusOf(id), "queued")
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("fires overdue triggers at once and a pending retry at its retry time", () =>
      Effect.gen(function*() {
        yield* setup
        yield* TestClock.adjust(10_000)
        const overdue = newId()
        const retry = newId()
        yield* insertTrigger(overdue, "registered", 1_000)
        yield* insertTrigger(retry, "retrying", 40_000)
        const actor = yield* startActor
        assert.strictEqual(yield* Queue.take(actor.submitted), overdue)
        yield* TestClock.adjust(29_999)
        yield* settle
        assert.deepStrictEqual(yield* Queue.takeBetween(actor.submitted, 0, 10), [])
        yield* TestClock.adjust(1)
        assert.strictEqual(yield* Queue.take(actor.submitted), retry)
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("loads triggers beyond its window from the database in time", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        const far = newId()
        yield* insertTrigger(far, "registered", now + 150_000)
        const actor = yield* startActor
        yield* settle
        for (let step = 0; step < 149; step++) {
          yield* TestClock.adjust(1_000)
          yield* Effect.yieldNow
        }
        yield* settle
        assert.strictEqual(yield* Queue.size(actor.submitted), 0)
        yield* TestClock.adjust(1_000)
        assert.strictEqual(yield* Queue.take(actor.submitted), far)
        yield* Fiber.interrupt(actor.fiber)
      }))
  })

  describe("wake-ups", () => {
    it.effect("a new trigger woken into the mailbox fires at its time; a moved one at the new time", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        const actor = yield* startActor
        yield* settle
        const added = newId()
        yield* insertTrigger(added, "registered", now + 2_000)
        yield* Queue.offer(actor.mailbox, { shard: SHARD, id: added, dueAtMs: now + 2_000 })
        const moved = newId()
        yield* insertTrigger(moved, "registered", now + 1_000)
        yield* Queue.offer(actor.mailbox, { shard: SHARD, id: moved, dueAtMs: now + 1_000 })
        // moved later in the database, then woken with the new time
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE triggers SET due_at = ${new Date(now + 3_000)}, scheduled_at = ${new Date(now + 3_000)} WHERE id = ${moved}`
        yield* Queue.offer(actor.mailbox, { shard: SHARD, id: moved, dueAtMs: now + 3_000 })
        yield* settle
        yield* TestClock.adjust(2_000)
        assert.strictEqual(yield* Queue.take(actor.submitted), added)
        yield* settle
        assert.strictEqual(yield* Queue.size(actor.submitted), 0)
        yield* TestClock.adjust(1_000)
        assert.strictEqual(yield* Queue.take(actor.submitted), moved)
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("a cancelled trigger never fires, even if a stale wheel entry comes due", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        const id = newId()
        yield* insertTrigger(id, "registered", now + 1_000)
        const actor = yield* startActor
        yield* settle
        const sql = yield* SqlClient.SqlClient
        // cancelled in the database without a wake-up: the claim's compare-and-set refuses it
        yield* sql`UPDATE triggers SET status = 'cancelled', due_at = NULL WHERE id = ${id}`
        yield* TestClock.adjust(1_000)
        yield* settle
        assert.strictEqual(yield* Queue.size(actor.submitted), 0)
        assert.strictEqual(yield* statusOf(id), "cancelled")
        yield* Fiber.interrupt(actor.fiber)
      }))
  })

  it.effect("recovers triggers left queued or running by a node that is gone, not by live ones", () =>
    Effect.gen(function*() {
      yield* setup
      const orphanQueued = newId()
      const orphanRunning = newId()
      const ownRunning = newId()
      yield* insertTrigger(orphanQueued, "queued", null, "dead-node")
      yield* insertTrigger(orphanRunning, "running", null, "dead-node")
      yield* insertTrigger(ownRunning, "running", null, "node-a")
      const actor = yield* startActor
      const first = yield* Queue.take(actor.submitted)
      const second = yield* Queue.take(actor.submitted)
      assert.deepStrictEqual([first, second].sort(), [orphanQueued, orphanRunning].sort())
      yield* settle
      assert.strictEqual(yield* Queue.size(actor.submitted), 0)
      assert.strictEqual(yield* statusOf(orphanRunning), "queued")
      assert.strictEqual(yield* statusOf(ownRunning), "running")
      yield* Fiber.interrupt(actor.fiber)
    }))
})
