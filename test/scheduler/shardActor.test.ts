// The ShardActor under TestClock on a real database: it fires each trigger exactly at its time (not
// a millisecond early), follows wake-ups (new, moved, cancelled), reads triggers beyond its window
// from PostgreSQL in time, fires overdue ones at once, recovers triggers left by a dead node, and
// materializes generator instances (next after due, replacement of a cancelled one, no catch-up).
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { SCHEDULER_TIMING } from "../../src/config.ts"
import { Dispatcher } from "../../src/delivery/dispatch.ts"
import { runShardActor } from "../../src/scheduler/shardActor.ts"
import type { WakeItem } from "../../src/cluster/wakeups.ts"
import { ClaimBatcher } from "../../src/scheduler/claimBatcher.ts"
import { Heartbeats } from "../../src/scheduler/heartbeats.ts"
import { NodeIdentity } from "../../src/cluster/node.ts"
import { TestDatabase } from "../support/database.ts"

const CLAIM_LEAD_MS = SCHEDULER_TIMING.claimLeadMs

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

/** The TestClock is shared by the tests of a layer block: every test works relative to its start. */
const clockNow = Effect.clockWith((clock) => clock.currentTimeMillis)

/** The first multiple of `step` milliseconds strictly after `ms`. */
const nextMultiple = (ms: number, step: number) => (Math.floor(ms / step) + 1) * step

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
  const dispatcher = Layer.succeed(Dispatcher)({
    submit: (ids) => Queue.offerAll(submitted, ids).pipe(Effect.asVoid),
    deliver: (rows) => Queue.offerAll(submitted, rows.map((row) => row.id)).pipe(Effect.asVoid)
  })
  const fiber = yield* Effect.forkChild(
    runShardActor({ shard: SHARD, node: "node-a", mailbox, liveNodes: Effect.succeed(["node-a"]) }).pipe(
      Effect.provide(Layer.mergeAll(
        dispatcher,
        Heartbeats.layer,
        ClaimBatcher.layer.pipe(Layer.provide(Layer.succeed(NodeIdentity)({ id: "node-a" })))
      ))
    )
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
    it.effect("claims a trigger CLAIM_LEAD_MS ahead and hands it over at its time, not a millisecond before", () =>
      Effect.gen(function*() {
        yield* setup
        const id = newId()
        yield* insertTrigger(id, "registered", (yield* clockNow) + 5_000)
        const actor = yield* startActor
        yield* settle
        yield* TestClock.adjust(4_999 - CLAIM_LEAD_MS)
        yield* settle
        assert.strictEqual(yield* statusOf(id), "registered")
        yield* TestClock.adjust(1)
        yield* settle
        // claimed (running) but held back until its time
        assert.strictEqual(yield* statusOf(id), "running")
        yield* TestClock.adjust(CLAIM_LEAD_MS - 1)
        yield* settle
        assert.strictEqual(yield* Queue.size(actor.submitted), 0)
        yield* TestClock.adjust(1)
        assert.strictEqual(yield* Queue.take(actor.submitted), id)
        // claimed and started in one statement: running, attempt counted
        assert.strictEqual(yield* statusOf(id), "running")
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("fires overdue triggers at once and a pending retry at its retry time", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* clockNow
        const overdue = newId()
        const retry = newId()
        yield* insertTrigger(overdue, "registered", now - 9_000)
        yield* insertTrigger(retry, "retrying", now + 30_000)
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
        const now = yield* clockNow
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
    it.effect("reads more triggers due in one millisecond than a load page holds, page by page", () =>
      Effect.gen(function*() {
        yield* setup
        const sql = yield* SqlClient.SqlClient
        const due = new Date((yield* clockNow) + 1_000)
        const count = 5_100 // LOAD_LIMIT is 5,000
        yield* sql`INSERT INTO triggers (id, project_id, kind, shard, status, scheduled_at, due_at, url, method, headers,
            created_at, updated_at)
          SELECT ('00000000-0000-7000-9000-' || lpad(to_hex(n), 12, '0'))::uuid, ${PROJECT}, 'job', ${SHARD}, 'registered',
            ${due}, ${due}, 'http://127.0.0.1:9/', 'GET', '[]'::jsonb, now(), now()
          FROM generate_series(1, ${count}) AS n`
        const actor = yield* startActor
        yield* settle
        yield* TestClock.adjust(1_000)
        const fired = new Set<string>()
        while (fired.size < count) for (const id of yield* Queue.takeBetween(actor.submitted, 1, count)) fired.add(id)
        assert.strictEqual(fired.size, count)
        yield* Fiber.interrupt(actor.fiber)
      }))
  })

  describe("wake-ups", () => {
    it.effect("a new trigger woken into the mailbox fires at its time; a moved one at the new time", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* clockNow
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
        const now = yield* clockNow
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

  describe("materializer", () => {
    const insertGenerator = (id: string, cron: string) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO triggers (id, project_id, kind, shard, status, url, method, headers, body, tags, title,
            cron_expr, cron_tz, created_at, updated_at)
          VALUES (${id}, ${PROJECT}, 'generator', ${SHARD}, 'active', 'http://127.0.0.1:9/g', 'POST',
            '[["x-a","1"]]'::jsonb, ${new Uint8Array([104, 105])}, '{t1}', 'title', ${cron}, 'UTC', now(), now())`
      })
    const instancesOf = (generatorId: string) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ id: string; status: string; ms: string; url: string; tags: Array<string>; title: string }>`
          SELECT id, status, (extract(epoch FROM scheduled_at) * 1000)::bigint::text AS ms, url, tags, title
          FROM triggers WHERE generator_id = ${generatorId} ORDER BY scheduled_at, id`
      })

    it.effect("creates the first instance at the next matching time, a copy of the generator", () =>
      Effect.gen(function*() {
        yield* setup
        const generator = newId()
        yield* insertGenerator(generator, "*/10 * * * * *")
        // start 1 ms past a 10 s boundary: the first instance is due 9,999 ms later, well beyond the claim lead
        yield* TestClock.adjust(nextMultiple(yield* clockNow, 10_000) + 1 - (yield* clockNow))
        const now = yield* clockNow
        const firstAt = nextMultiple(now, 10_000)
        const actor = yield* startActor
        yield* settle
        const [first, ...rest] = yield* instancesOf(generator)
        assert.deepStrictEqual(rest, [])
        assert.deepStrictEqual({ ...first!, id: "" }, {
          id: "", status: "registered", ms: String(firstAt), url: "http://127.0.0.1:9/g", tags: ["t1"], title: "title"
        })
        yield* TestClock.adjust(firstAt - now)
        assert.strictEqual(yield* Queue.take(actor.submitted), first!.id)
        yield* settle
        // the next instance exists right after the claim, without waiting for the 5 s check
        const after = yield* instancesOf(generator)
        assert.deepStrictEqual(after.map((row) => [row.status, row.ms]), [["running", String(firstAt)], ["registered", String(firstAt + 10_000)]])
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("replaces a cancelled upcoming instance with a new one for the same time within 5 s", () =>
      Effect.gen(function*() {
        yield* setup
        const generator = newId()
        yield* insertGenerator(generator, "0 * * * *")
        const hour = String(nextMultiple(yield* clockNow, 3_600_000))
        const actor = yield* startActor
        yield* settle
        const [upcoming] = yield* instancesOf(generator)
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE triggers SET status = 'cancelled', due_at = NULL WHERE id = ${upcoming!.id}`
        yield* TestClock.adjust(5_000)
        yield* settle
        const rows = yield* instancesOf(generator)
        assert.deepStrictEqual(rows.map((row) => [row.status, row.ms]), [["cancelled", hour], ["registered", hour]])
        assert.notStrictEqual(rows[1]!.id, upcoming!.id)
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("after downtime the scheduled instance fires once, late, and missed times are not caught up", () =>
      Effect.gen(function*() {
        yield* setup
        const generator = newId()
        yield* insertGenerator(generator, "*/10 * * * * *")
        const late = newId()
        const lateAt = nextMultiple(yield* clockNow, 10_000)
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO triggers (id, project_id, kind, generator_id, shard, status, scheduled_at, due_at, url, method,
            headers, created_at, updated_at)
          VALUES (${late}, ${PROJECT}, 'job', ${generator}, ${SHARD}, 'registered', ${new Date(lateAt)}, ${new Date(lateAt)},
            'http://127.0.0.1:9/g', 'POST', '[]'::jsonb, now(), now())`
        // the service was down for 55 s past the instance's time: five more times were missed
        yield* TestClock.adjust(lateAt + 55_000 - (yield* clockNow))
        const actor = yield* startActor
        assert.strictEqual(yield* Queue.take(actor.submitted), late)
        yield* settle
        const rows = yield* instancesOf(generator)
        assert.deepStrictEqual(rows.map((row) => [row.status, row.ms]), [["running", String(lateAt)], ["registered", String(lateAt + 60_000)]])
        yield* Fiber.interrupt(actor.fiber)
      }))
  })
})
