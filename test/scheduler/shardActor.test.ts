// The ShardActor under TestClock on a real database: it fires each trigger exactly at its time (not
// a millisecond early), follows wake-ups (new, moved, cancelled), reads triggers beyond its window
// from PostgreSQL in time, fires overdue ones at once, recovers triggers left by a dead node, and
// materializes generator instances (next after due, replacement of a cancelled one, no catch-up).
// No test waits on the wall clock: after starting the actor, waking it or moving the clock past its
// wake-up, a test awaits the actor's own report that it is idle (see `startActor`), so whatever it
// would do by then is done, and whatever it has not done it will not do before the clock moves on.
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Queue, Semaphore } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { SCHEDULER_TIMING, SchedulerTiming } from "../../src/config.ts"
import { fireInstantFor, runShardActor, type ShardActorEvent } from "../../src/scheduler/shardActor.ts"
import { type WakeItem, Wakeups } from "../../src/cluster/wakeups.ts"
import { Gatekeeper } from "../../src/gates/gatekeeper.ts"
import { TagPolicyCache } from "../../src/gates/tagPolicyCache.ts"
import { ShardCount } from "../../src/store/db.ts"
import { Notifications } from "../../src/store/notifications.ts"
import { shardLocksOpen } from "../../src/store/shardLocks.ts"
import { ClaimBatcher } from "../../src/scheduler/claimBatcher.ts"
import { MarkBatcher } from "../../src/scheduler/markBatcher.ts"
import { ShardMailbox } from "../../src/scheduler/shardMailbox.ts"
import { Heartbeats } from "../../src/scheduler/heartbeats.ts"
import { NodeIdentity } from "../../src/cluster/node.ts"
import { SHARDS_IN_TESTS, TestDatabase } from "../support/database.ts"
import { recordingDispatcher } from "../support/dispatcher.ts"
import { ensureProject, insertTrigger, insertTriggers, instancesOf, statusOf, triggerRow, type TriggerRow } from "../support/fixtures.ts"

/** The shortest time before its due instant a trigger is fired (read into memory): its fire's grid instant (fireInstantFor). */
const MIN_LEAD_MS = SCHEDULER_TIMING.claimLeadMs + SCHEDULER_TIMING.fireWindowMs - SCHEDULER_TIMING.fireEveryMs

/**
 * Shard 3's periodic wake-ups (recovery, materializer, reload) fall at fractional milliseconds
 * (shardPhase). The TestClock counts whole nanoseconds and wakes the actor a hair before such a
 * time; the actor then finds nothing due and sleeps 0 ms over and over (reporting Idle at a time
 * already passed, which `startActor` skips) until TestClock.adjust stops waiting for it after a
 * second ("still running without suspending") and moves the clock on. That second is the actor's
 * busy wait, not a wait of these tests.
 */
const SHARD = 3
const PROJECT = "00000000-0000-7000-8000-000000000001"

/** A one-shot of the actor's shard in `status`, due at `dueAtMs` (also its scheduled time); its id. */
const trigger = (status: string, dueAtMs: number | null, claimedBy: string | null = null) => {
  const due = dueAtMs === null ? null : new Date(dueAtMs)
  return insertTrigger({ projectId: PROJECT, shard: SHARD, status, scheduledAt: due, dueAt: due, claimedBy })
}

/** The nodes connected to the database, as the actor sees them (node-a alone unless a test says). */
const LiveNodes = Context.Reference<ReadonlyArray<string>>("test/LiveNodes", { defaultValue: () => ["node-a"] })

/** The TestClock is shared by the tests of a layer block: every test works relative to its start. */
const clockNow = Effect.clockWith((clock) => clock.currentTimeMillis)

/** The first multiple of `step` milliseconds strictly after `ms`. */
const nextMultiple = (ms: number, step: number) => (Math.floor(ms / step) + 1) * step

/**
 * Starts an actor with a recording dispatcher and returns once it is idle: it has loaded its window,
 * recovered, materialized and fired everything due, and sleeps until its next wake-up.
 * - `advance(ms)` moves the TestClock on; when that reaches the actor's wake-up it waits until the
 *   actor is idle again past the new time. Short of it the actor sleeps on: nothing to wait for.
 * - `wake(item)` puts one wake-up in the mailbox and waits until the actor is idle again.
 * Hand-overs claimed ahead of time wait on the TestClock, so they reach `submitted` exactly when
 * `advance` reaches their time.
 */
const startActor = Effect.gen(function*() {
  const submitted = yield* Queue.unbounded<string>()
  const mailbox = new ShardMailbox()
  const events = yield* Queue.unbounded<ShardActorEvent>()
  const dispatcher = recordingDispatcher((ids) => Queue.offerAll(submitted, ids).pipe(Effect.asVoid))
  const fiber = yield* Effect.forkChild(
    runShardActor({
      shard: SHARD,
      node: "node-a",
      mailbox,
      // node-a alone is connected, to a database up for an hour (past the grace after a restart)
      presence: Effect.gen(function*() {
        return { nodes: yield* LiveNodes, draining: [], serverUpMs: 3_600_000 }
      }),
      laterPages: yield* Semaphore.make(2),
      onEvent: (event) => Queue.offer(events, event).pipe(Effect.asVoid)
    }).pipe(
      // the test's database server may have started seconds ago: no grace after its start (a takeover
      // reads the server's uptime itself)
      Effect.provideService(SchedulerTiming, { ...SCHEDULER_TIMING, restartGraceMs: 0 }),
      Effect.provide(Layer.mergeAll(
        dispatcher,
        Heartbeats.layer,
        Wakeups.none,
        Layer.succeed(ShardCount)({ count: SHARDS_IN_TESTS }),
        TagPolicyCache.layer.pipe(Layer.provide(Notifications.memory)),
        Layer.mergeAll(ClaimBatcher.layer, MarkBatcher.layer).pipe(Layer.provide(Layer.succeed(NodeIdentity)({ id: "node-a" }))),
        Gatekeeper.layer.pipe(Layer.provide(Layer.mergeAll(Notifications.memory, Layer.succeed(NodeIdentity)({ id: "node-a" }))))
      ))
    )
  )
  let wakeAtMs = -Infinity
  /** Takes the actor's reports up to an Idle that lies beyond the clock's time (earlier ones were passed by). */
  const idle = Effect.gen(function*() {
    for (;;) {
      const event = yield* Queue.take(events)
      if (event._tag === "Idle" && event.wakeAtMs > (yield* clockNow)) return void (wakeAtMs = event.wakeAtMs)
    }
  })
  yield* idle
  return {
    submitted,
    mailbox,
    fiber,
    advance: (ms: number) =>
      Effect.gen(function*() {
        const target = (yield* clockNow) + ms
        yield* TestClock.adjust(ms)
        if (target >= wakeAtMs) yield* idle
      }),
    wake: (item: WakeItem) => Effect.sync(() => mailbox.offer([item])).pipe(Effect.andThen(idle))
  }
})

const setup = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM triggers`
  yield* sql`UPDATE shard_marks SET fired_at = '-infinity', node = '' WHERE shard = ${SHARD}`
  yield* ensureProject(PROJECT)
})

/** The shard's mark as the database holds it: its node and time (ms). */
const markOf = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ node: string; fired_ms: string | null }>`SELECT node,
      CASE WHEN fired_at = '-infinity' THEN NULL ELSE (extract(epoch FROM fired_at) * 1000)::bigint::text END AS fired_ms
    FROM shard_marks WHERE shard = ${SHARD}`
  return { node: rows[0]!.node, firedAtMs: rows[0]!.fired_ms === null ? null : Number(rows[0]!.fired_ms) }
})

/** Sets the shard's mark as if `node` had fired the shard up to `firedAtMs`. */
/** The shard's mark as `node` left it: handed over while it ran, or left by a session that ended. */
const setMark = (node: string, firedAtMs: number, handedOver = false) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`UPDATE shard_marks SET node = ${node}, fired_at = ${new Date(firedAtMs)}, handed_over = ${handedOver} WHERE shard = ${SHARD}`)

layer(TestDatabase, { timeout: "60 seconds" })("ShardActor", (it) => {
  describe("firing", () => {
    it.effect("fires a trigger at its grid instant, at least MIN_LEAD_MS ahead, and hands it over at its time, not a millisecond before", () =>
      Effect.gen(function*() {
        yield* setup
        const dueAtMs = (yield* clockNow) + 5_000
        const id = yield* trigger("registered", dueAtMs)
        const fireAtMs = fireInstantFor(dueAtMs, SCHEDULER_TIMING)
        assert.isAtLeast(dueAtMs - fireAtMs, MIN_LEAD_MS)
        assert.isAtMost(dueAtMs - fireAtMs, SCHEDULER_TIMING.claimLeadMs + SCHEDULER_TIMING.fireWindowMs)
        const actor = yield* startActor
        yield* actor.advance(fireAtMs - 1 - (yield* clockNow))
        assert.strictEqual(yield* statusOf(id), "registered")
        yield* actor.advance(1)
        // fired by the shard's mark (reads as running) but held back until its time
        assert.strictEqual(yield* statusOf(id), "running")
        yield* actor.advance(dueAtMs - 1 - (yield* clockNow))
        assert.strictEqual(yield* Queue.size(actor.submitted), 0)
        yield* actor.advance(1)
        assert.strictEqual(yield* Queue.take(actor.submitted), id)
        assert.strictEqual(yield* statusOf(id), "running")
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("a fire whose grid instant a handed-over trigger is due at goes once that send is made, not with it", () =>
      Effect.gen(function*() {
        yield* setup
        const laterDueMs = (yield* clockNow) + 5_000
        const fireAtMs = fireInstantFor(laterDueMs, SCHEDULER_TIMING)
        // due at the later one's grid instant: fired a grid step or two before, waiting in the dispatcher then
        const atInstant = yield* trigger("registered", fireAtMs)
        const later = yield* trigger("registered", laterDueMs)
        const actor = yield* startActor
        yield* actor.advance(fireAtMs - 1 - (yield* clockNow))
        assert.strictEqual(yield* statusOf(atInstant), "running")
        assert.strictEqual(yield* statusOf(later), "registered")
        yield* actor.advance(1)
        assert.strictEqual(yield* Queue.take(actor.submitted), atInstant)
        assert.strictEqual(yield* statusOf(later), "registered", "not fired at the instant its neighbour is sent")
        yield* actor.advance(1)
        assert.strictEqual(yield* statusOf(later), "registered")
        yield* actor.advance(1)
        assert.strictEqual(yield* statusOf(later), "running", "fired 2 ms after the instant (earlyRelease.ts quietFrom)")
        yield* actor.advance(laterDueMs - 1 - (yield* clockNow))
        assert.strictEqual(yield* Queue.size(actor.submitted), 0)
        yield* actor.advance(1)
        assert.strictEqual(yield* Queue.take(actor.submitted), later)
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("fires overdue triggers at once and a pending retry at its retry time", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* clockNow
        const overdue = yield* trigger("registered", now - 9_000)
        const retry = yield* trigger("retrying", now + 30_000)
        const actor = yield* startActor
        assert.strictEqual(yield* Queue.take(actor.submitted), overdue)
        yield* actor.advance(29_999)
        assert.deepStrictEqual(yield* Queue.takeBetween(actor.submitted, 0, 10), [])
        yield* actor.advance(1)
        assert.strictEqual(yield* Queue.take(actor.submitted), retry)
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("loads triggers beyond its window from the database in time", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* clockNow
        const far = yield* trigger("registered", now + 150_000)
        const actor = yield* startActor
        for (let step = 0; step < 149; step++) yield* actor.advance(1_000)
        assert.strictEqual(yield* Queue.size(actor.submitted), 0)
        yield* actor.advance(1_000)
        assert.strictEqual(yield* Queue.take(actor.submitted), far)
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("reads more triggers due in one millisecond than a load page holds, page by page", () =>
      Effect.gen(function*() {
        yield* setup
        const due = new Date((yield* clockNow) + 1_000)
        const count = 5_100 // LOAD_LIMIT is 5,000
        yield* insertTriggers(Array.from({ length: count }, () => ({ projectId: PROJECT, shard: SHARD, scheduledAt: due, dueAt: due })))
        const actor = yield* startActor
        yield* actor.advance(1_000)
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
        const added = yield* trigger("registered", now + 2_000)
        yield* actor.wake({ shard: SHARD, id: added, dueAtMs: now + 2_000 })
        const moved = yield* trigger("registered", now + 1_000)
        yield* actor.wake({ shard: SHARD, id: moved, dueAtMs: now + 1_000 })
        // moved later in the database, then woken with the new time
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE triggers SET due_at = ${new Date(now + 3_000)}, scheduled_at = ${new Date(now + 3_000)} WHERE id = ${moved}`
        yield* actor.wake({ shard: SHARD, id: moved, dueAtMs: now + 3_000 })
        yield* actor.advance(2_000)
        assert.strictEqual(yield* Queue.take(actor.submitted), added)
        assert.strictEqual(yield* Queue.size(actor.submitted), 0)
        yield* actor.advance(1_000)
        assert.strictEqual(yield* Queue.take(actor.submitted), moved)
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("a cancelled trigger never fires, even if a stale wheel entry comes due", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* clockNow
        const id = yield* trigger("registered", now + 1_000)
        const actor = yield* startActor
        const sql = yield* SqlClient.SqlClient
        // cancelled in the database without a wake-up: the claim's compare-and-set refuses it
        yield* sql`UPDATE triggers SET status = 'cancelled', due_at = NULL WHERE id = ${id}`
        yield* actor.advance(1_000)
        assert.strictEqual(yield* Queue.size(actor.submitted), 0)
        assert.strictEqual(yield* statusOf(id), "cancelled")
        yield* Fiber.interrupt(actor.fiber)
      }))
  })

  describe("the shard's fired mark", () => {
    it.effect("a keyless trigger is fired by moving the mark, not by a write of its own; a keyed one is claimed", () =>
      Effect.gen(function*() {
        yield* setup
        const dueAtMs = (yield* clockNow) + 1_000
        const keyless = yield* trigger("registered", dueAtMs)
        const keyed = yield* insertTrigger({
          projectId: PROJECT, shard: SHARD, scheduledAt: new Date(dueAtMs), dueAt: new Date(dueAtMs), customKey: "k"
        })
        const actor = yield* startActor
        yield* actor.advance(1_000)
        const sent = yield* Queue.takeBetween(actor.submitted, 2, 2)
        assert.deepStrictEqual([...sent].sort(), [keyless, keyed].sort())
        const reachMs = SCHEDULER_TIMING.claimLeadMs + SCHEDULER_TIMING.fireWindowMs
        assert.deepStrictEqual(yield* markOf, { node: "node-a", firedAtMs: fireInstantFor(dueAtMs, SCHEDULER_TIMING) + reachMs }, "fired at its grid instant, reaching 230 ms past it")
        assert.deepStrictEqual([(yield* triggerRow(keyless)).status, (yield* triggerRow(keyless)).attempts], ["registered", 0])
        assert.strictEqual(yield* statusOf(keyless), "running")
        assert.deepStrictEqual([(yield* triggerRow(keyed)).status, (yield* triggerRow(keyed)).attempts], ["running", 1])
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("a trigger is running (a cancel or edit gets 410) at most claimLeadMs + fireWindowMs before its time, never earlier", () =>
      Effect.gen(function*() {
        yield* setup
        const { claimLeadMs, fireWindowMs } = SCHEDULER_TIMING
        // a grid instant a second or so ahead; the first trigger its fire reaches first, the last one it
        // reaches (230 ms past it), and one a millisecond beyond
        const fireAtMs = nextMultiple((yield* clockNow) + 1_000, SCHEDULER_TIMING.fireEveryMs)
        const dueAtMs = fireAtMs + MIN_LEAD_MS + 1
        const edgeAtMs = fireAtMs + claimLeadMs + fireWindowMs
        const first = yield* trigger("registered", dueAtMs)
        const edge = yield* trigger("registered", edgeAtMs)
        const keyedEdge = yield* insertTrigger({
          projectId: PROJECT, shard: SHARD, scheduledAt: new Date(edgeAtMs), dueAt: new Date(edgeAtMs), customKey: "edge"
        })
        const beyond = yield* trigger("registered", edgeAtMs + 1)
        const actor = yield* startActor
        yield* actor.advance(fireAtMs - 1 - (yield* clockNow))
        for (const id of [first, edge, keyedEdge, beyond]) assert.strictEqual(yield* statusOf(id), "registered")
        yield* actor.advance(1)
        // the window docs/scheduling.md states: 230 ms
        assert.strictEqual(claimLeadMs + fireWindowMs, 230)
        assert.strictEqual(yield* statusOf(first), "running")
        assert.strictEqual(yield* statusOf(edge), "running", "fired claimLeadMs + fireWindowMs before its time")
        assert.deepStrictEqual([(yield* triggerRow(keyedEdge)).status, (yield* triggerRow(keyedEdge)).attempts], ["running", 1], "claimed as early")
        assert.strictEqual(yield* statusOf(beyond), "registered", "a millisecond beyond the window: still cancellable")
        yield* actor.advance(dueAtMs - fireAtMs)
        assert.strictEqual(yield* Queue.take(actor.submitted), first)
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("a trigger that lands under the mark (woken after it moved) is sent at once, and only once", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* clockNow
        const first = yield* trigger("registered", now + 1_000)
        const actor = yield* startActor
        yield* actor.advance(1_000)
        assert.strictEqual(yield* Queue.take(actor.submitted), first)
        const landed = yield* trigger("registered", now + 500) // e.g. a "now" written as the mark moved
        yield* actor.wake({ shard: SHARD, id: landed, dueAtMs: now + 500 })
        assert.strictEqual(yield* Queue.take(actor.submitted), landed)
        yield* actor.wake({ shard: SHARD, id: landed, dueAtMs: now + 500 })
        yield* actor.wake({ shard: SHARD, id: first, dueAtMs: now + 1_000 })
        assert.strictEqual(yield* Queue.size(actor.submitted), 0, "a trigger held in memory is not handed over again")
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("what a node that is gone fired and did not record is logged as interrupted and sent again", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* clockNow
        const left = yield* trigger("registered", now - 2_000)
        yield* setMark("dead-node", now - 1_000)
        const actor = yield* startActor
        assert.strictEqual(yield* Queue.take(actor.submitted), left)
        const sql = yield* SqlClient.SqlClient
        const executions = yield* sql<{ attempt: number; error_code: string }>`SELECT attempt, error_code FROM executions WHERE trigger_id = ${left}`
        assert.deepStrictEqual(executions.map((x) => [x.attempt, x.error_code]), [[1, "INTERRUPTED"]])
        assert.deepStrictEqual([(yield* triggerRow(left)).attempts, yield* statusOf(left)], [1, "running"])
        assert.strictEqual((yield* markOf).node, "node-a")
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("what a live node fired becomes its claims (it is still sending them); this node sends none of them", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* clockNow
        const left = yield* trigger("registered", now - 2_000)
        // node-b handed the shard over, and its shard-lock session holds its presence lock (it did not die)
        yield* setMark("node-b", now - 1_000, true)
        yield* shardLocksOpen("node-b")
        const actor = yield* startActor.pipe(Effect.provideService(LiveNodes, ["node-a", "node-b"]))
        const row = yield* triggerRow(left)
        assert.deepStrictEqual([row.status, row.claimed_by, row.attempts], ["running", "node-b", 1])
        assert.strictEqual(yield* Queue.size(actor.submitted), 0)
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("a node killed a moment ago, still on the list of live nodes, is gone: its session's presence lock is", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* clockNow
        const left = yield* trigger("registered", now - 2_000)
        yield* setMark("killed-node", now - 1_000)
        // the list of connected nodes (read a second ago) still names it; its presence lock went with its session
        const actor = yield* startActor.pipe(Effect.provideService(LiveNodes, ["node-a", "killed-node"]))
        assert.strictEqual(yield* Queue.take(actor.submitted), left, "sent again at once, not left for crash recovery")
        const sql = yield* SqlClient.SqlClient
        const executions = yield* sql<{ attempt: number; error_code: string }>`SELECT attempt, error_code FROM executions WHERE trigger_id = ${left}`
        assert.deepStrictEqual(executions.map((x) => [x.attempt, x.error_code]), [[1, "INTERRUPTED"]])
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("a node that did not hand the shard over is gone, even while its ending session still shows its presence lock", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* clockNow
        const left = yield* trigger("registered", now - 2_000)
        yield* setMark("dying-node", now - 1_000)
        // a session ending releases its locks one by one: the shard's is free, the presence lock not yet
        yield* shardLocksOpen("dying-node")
        const actor = yield* startActor.pipe(Effect.provideService(LiveNodes, ["node-a", "dying-node"]))
        assert.strictEqual(yield* Queue.take(actor.submitted), left, "sent again at once, not left for crash recovery")
        const sql = yield* SqlClient.SqlClient
        const executions = yield* sql<{ attempt: number; error_code: string }>`SELECT attempt, error_code FROM executions WHERE trigger_id = ${left}`
        assert.deepStrictEqual(executions.map((x) => [x.attempt, x.error_code]), [[1, "INTERRUPTED"]])
        assert.deepStrictEqual(yield* sql`SELECT handed_over FROM shard_marks WHERE shard = ${SHARD}`, [{ handed_over: false }])
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("a fired trigger this node does not hold (a fetch that failed after the mark moved) is swept and sent, not logged as interrupted", () =>
      Effect.gen(function*() {
        yield* setup
        const now = yield* clockNow
        const lost = yield* trigger("registered", now - 2_000)
        yield* setMark("node-a", now - 1_000)
        const actor = yield* startActor
        assert.strictEqual(yield* Queue.take(actor.submitted), lost)
        const sql = yield* SqlClient.SqlClient
        assert.deepStrictEqual(yield* sql`SELECT id FROM executions WHERE trigger_id = ${lost}`, [])
        yield* Fiber.interrupt(actor.fiber)
      }))
  })

  it.effect("recovers triggers left queued or running by a node that is gone, not by live ones", () =>
    Effect.gen(function*() {
      yield* setup
      const orphanQueued = yield* trigger("queued", null, "dead-node")
      const orphanRunning = yield* trigger("running", null, "dead-node")
      const ownRunning = yield* trigger("running", null, "node-a")
      const actor = yield* startActor
      const first = yield* Queue.take(actor.submitted)
      const second = yield* Queue.take(actor.submitted)
      assert.deepStrictEqual([first, second].sort(), [orphanQueued, orphanRunning].sort())
      assert.strictEqual(yield* Queue.size(actor.submitted), 0)
      assert.strictEqual(yield* statusOf(orphanRunning), "queued")
      assert.strictEqual(yield* statusOf(ownRunning), "running")
      yield* Fiber.interrupt(actor.fiber)
    }))

  describe("materializer", () => {
    const insertGenerator = (cron: string) =>
      insertTrigger({
        projectId: PROJECT, kind: "generator", shard: SHARD, url: "http://127.0.0.1:9/g", method: "POST",
        headers: [["x-a", "1"]], body: new Uint8Array([104, 105]), tags: ["t1"], title: "title", cronExpr: cron, cronTz: "UTC"
      })
    /** What the tests compare of an instance: its status and time (ms), and what it copied. */
    const timeOf = (row: TriggerRow) => row.scheduled_at?.getTime()

    it.effect("creates the first instance at the next matching time, a copy of the generator", () =>
      Effect.gen(function*() {
        yield* setup
        const generator = yield* insertGenerator("*/10 * * * * *")
        // start 1 ms past a 10 s boundary: the first instance is due 9,999 ms later, well beyond the claim lead
        yield* TestClock.adjust(nextMultiple(yield* clockNow, 10_000) + 1 - (yield* clockNow))
        const now = yield* clockNow
        const firstAt = nextMultiple(now, 10_000)
        const actor = yield* startActor
        const [first, ...rest] = yield* instancesOf(generator)
        assert.deepStrictEqual(rest, [])
        assert.deepStrictEqual(
          { status: first!.status, ms: timeOf(first!), url: first!.url, tags: first!.tags, title: first!.title },
          { status: "registered", ms: firstAt, url: "http://127.0.0.1:9/g", tags: ["t1"], title: "title" }
        )
        yield* actor.advance(firstAt - now)
        assert.strictEqual(yield* Queue.take(actor.submitted), first!.id)
        // the next instance exists right after the claim, without waiting for the 5 s check
        const after = yield* instancesOf(generator)
        assert.deepStrictEqual(after.map((row) => [row.status, timeOf(row)]), [["running", firstAt], ["registered", firstAt + 10_000]])
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("replaces a cancelled upcoming instance with a new one for the same time within 5 s", () =>
      Effect.gen(function*() {
        yield* setup
        const generator = yield* insertGenerator("0 * * * *")
        const hour = nextMultiple(yield* clockNow, 3_600_000)
        const actor = yield* startActor
        const [upcoming] = yield* instancesOf(generator)
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE triggers SET status = 'cancelled', due_at = NULL WHERE id = ${upcoming!.id}`
        yield* actor.advance(5_000)
        const rows = yield* instancesOf(generator)
        assert.deepStrictEqual(rows.map((row) => [row.status, timeOf(row)]), [["cancelled", hour], ["registered", hour]])
        assert.notStrictEqual(rows[1]!.id, upcoming!.id)
        yield* Fiber.interrupt(actor.fiber)
      }))

    it.effect("after downtime the scheduled instance fires once, late, and missed times are not caught up", () =>
      Effect.gen(function*() {
        yield* setup
        const generator = yield* insertGenerator("*/10 * * * * *")
        const lateAt = nextMultiple(yield* clockNow, 10_000)
        const late = yield* insertTrigger({
          projectId: PROJECT, generatorId: generator, shard: SHARD, scheduledAt: new Date(lateAt), dueAt: new Date(lateAt),
          url: "http://127.0.0.1:9/g"
        })
        // the service was down for 55 s past the instance's time: five more times were missed
        yield* TestClock.adjust(lateAt + 55_000 - (yield* clockNow))
        const actor = yield* startActor
        assert.strictEqual(yield* Queue.take(actor.submitted), late)
        const rows = yield* instancesOf(generator)
        assert.deepStrictEqual(rows.map((row) => [row.status, timeOf(row)]), [["running", lateAt], ["registered", lateAt + 60_000]])
        yield* Fiber.interrupt(actor.fiber)
      }))
  })
})
