// One lock order for a shard's mark and its triggers (store/shardMarks.ts): a cancel or an edit of
// a trigger near its time locks the mark, then the trigger; a takeover of the shard locks the mark,
// then its fired triggers. Run against each other on a real database, the cancel waits for the
// takeover and answers as for the running trigger it now is (410), where locking the trigger first
// deadlocked (PostgreSQL aborted one of them: a 500, or a takeover to redo), as right after a
// restart, when every shard is taken over while cancels arrive. A trigger that comes near its time
// while a cancel reads it restarts the cancel's transaction, which then holds the mark.
import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Wakeups } from "../../src/cluster/wakeups.ts"
import { cancelTrigger } from "../../src/commands/cancel.ts"
import { Gone } from "../../src/domain/errors.ts"
import { triggersTakeOverFired } from "../../src/store/firedTriggers.ts"
import { shardMarkTakeOver } from "../../src/store/shardMarks.ts"
import { withTransaction } from "../../src/store/transaction.ts"
import { triggersFindById } from "../../src/store/triggers.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, insertTrigger, nextId, triggerRow } from "../support/fixtures.ts"
import { waitUntil } from "../support/wait.ts"

const SHARD = 5

/** Sessions of this database waiting for a lock. */
const lockWaiters = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'`).pipe(Effect.map((rows) => rows[0]!.n))

/** A keyless trigger of SHARD due a second ago, fired by the shard's mark, which `gone-node` moved. */
const firedTrigger = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const projectId = nextId()
  yield* ensureProject(projectId)
  yield* sql`DELETE FROM triggers WHERE shard = ${SHARD}`
  const nowMs = Date.now()
  const id = yield* insertTrigger({ projectId, shard: SHARD, status: "registered", scheduledAt: new Date(nowMs - 1_000), dueAt: new Date(nowMs - 1_000) })
  yield* sql`UPDATE shard_marks SET node = 'gone-node', fired_at = ${new Date(nowMs)} WHERE shard = ${SHARD}`
  return { projectId, id, nowMs }
})

/** What a cancel and an edit do first: find the trigger by id (an edit answers 410 unless it is `registered`). */
const commands = {
  cancel: (projectId: string, id: string, nowMs: number) =>
    Effect.map(cancelTrigger(projectId, { _tag: "Id", id }, nowMs), () => "cancelled"),
  edit: (projectId: string, id: string) =>
    Effect.map(withTransaction(triggersFindById({ projectId, id })), (ref) => ref?.status ?? "not found")
} as const

const Services = Layer.merge(TestDatabase, Wakeups.none)

layer(Services, { timeout: "60 seconds" })("a command near a trigger's time against a takeover of its shard", (it) => {
  for (const command of ["cancel", "edit"] as const) {
    it.effect(`${command}: waits for the takeover that holds the mark, then sees the trigger running; no deadlock`, () =>
      Effect.gen(function*() {
        const { projectId, id, nowMs } = yield* firedTrigger
        const markHeld = yield* Deferred.make<void>()
        const commandWaits = yield* Deferred.make<void>()
        // the takeover as a shard actor runs it (shardActor.ts takeOver), paused between its two locks
        const takeover = yield* Effect.forkChild(withTransaction(Effect.gen(function*() {
          yield* shardMarkTakeOver({ shard: SHARD, node: "node-b" })
          yield* Deferred.succeed(markHeld, undefined)
          yield* Deferred.await(commandWaits)
          return yield* triggersTakeOverFired({ shard: SHARD, previousNode: "gone-node", previousAlive: false, nowMs })
        })))
        yield* Deferred.await(markHeld)
        const run = command === "cancel" ? commands.cancel(projectId, id, nowMs) : commands.edit(projectId, id)
        const answer = yield* Effect.forkChild(Effect.exit(run))
        yield* waitUntil("the command to wait for a lock", Effect.map(lockWaiters, (n) => n >= 1))
        yield* Deferred.succeed(commandWaits, undefined)
        assert.strictEqual(yield* Fiber.join(takeover), 1, "the takeover logged the gone node's attempt")
        const exit = yield* Fiber.join(answer)
        if (command === "cancel") {
          assert.deepStrictEqual(exit, Exit.fail(new Gone("Job is no longer cancellable (status=running)")))
        } else {
          assert.deepStrictEqual(exit, Exit.succeed("running"))
        }
        const row = yield* triggerRow(id)
        assert.deepStrictEqual([row.status, row.attempts], ["registered", 1], "still fired, for node-b to send again")
      }))
  }

  it.effect("a trigger moved near its time while a command reads it: the command starts over and holds the mark", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const projectId = nextId()
      yield* ensureProject(projectId)
      const nowMs = Date.now()
      const id = yield* insertTrigger({ projectId, shard: SHARD, status: "registered", scheduledAt: new Date(nowMs + 3_600_000), dueAt: new Date(nowMs + 3_600_000) })
      yield* sql`UPDATE shard_marks SET node = 'node-b', fired_at = ${new Date(nowMs)} WHERE shard = ${SHARD}`
      // another transaction moves it to 5 s from now (near, not fired) and holds it while the command reads
      const moved = yield* Deferred.make<void>()
      const commit = yield* Deferred.make<void>()
      const mover = yield* Effect.forkChild(withTransaction(Effect.gen(function*() {
        yield* sql`UPDATE triggers SET due_at = ${new Date(nowMs + 5_000)}, scheduled_at = ${new Date(nowMs + 5_000)} WHERE id = ${id}`
        yield* Deferred.succeed(moved, undefined)
        yield* Deferred.await(commit)
      })))
      yield* Deferred.await(moved)
      const found = yield* Deferred.make<string | undefined>()
      const done = yield* Deferred.make<void>()
      const reader = yield* Effect.forkChild(withTransaction(Effect.gen(function*() {
        const ref = yield* triggersFindById({ projectId, id })
        yield* Deferred.succeed(found, ref?.status)
        yield* Deferred.await(done)
      })))
      yield* waitUntil("the command to wait for the mover", Effect.map(lockWaiters, (n) => n >= 1))
      yield* Deferred.succeed(commit, undefined)
      yield* Fiber.join(mover)
      assert.strictEqual(yield* Deferred.await(found), "registered")
      // from another session, while the command's transaction is open: the mark it holds for share cannot be locked for update
      const free = yield* Effect.exit(sql.withTransaction(sql`SELECT 1 FROM shard_marks WHERE shard = ${SHARD} FOR UPDATE NOWAIT`))
      yield* Deferred.succeed(done, undefined)
      yield* Fiber.join(reader)
      assert.isTrue(Exit.isFailure(free), "the mark is held until the command's transaction ends")
    }))
})
