// The chunks of a bulk action on a real database (docs/bulk-actions.md: safe to call again after a
// crash or a timeout, a trigger never replayed twice by one action): chunk after chunk with the
// counters, a chunk that fails midway rolled back whole and done again, two nodes working on one action
// at once acting on each trigger once, and the worker giving an action up as `failed` after its chunks
// keep failing. Delivery is a recording Dispatcher; a failure is a PostgreSQL trigger raising on one
// row.
import { assert, layer } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { NodeIdentity } from "../../src/cluster/node.ts"
import { Wakeups } from "../../src/cluster/wakeups.ts"
import { BulkChunkSize, runBulkActionChunk } from "../../src/commands/bulkActionChunk.ts"
import { BulkActionRunner, MAX_CHUNK_FAILURES } from "../../src/commands/bulkActionRunner.ts"
import { startBulkAction } from "../../src/commands/bulkActions.ts"

import { ShardCount } from "../../src/store/db.ts"
import { TestDatabase } from "../support/database.ts"
import { recordingDispatcher } from "../support/dispatcher.ts"
import { ensureProject, insertDeadLetters, nextId } from "../support/fixtures.ts"
import { pollUntil } from "../support/wait.ts"

const NOW_MS = Date.UTC(2030, 6, 1)

/** Ids handed to delivery, in order, by node. */
const submitted: Array<{ readonly node: string; readonly id: string }> = []

const node = (id: string) =>
  Layer.mergeAll(
    Layer.succeed(NodeIdentity)({ id }),
    recordingDispatcher((ids) => Effect.sync(() => void submitted.push(...ids.map((trigger) => ({ node: id, id: trigger })))))
  )

const Env = Layer.mergeAll(TestDatabase, Wakeups.none, Layer.succeed(ShardCount)({ count: 8 }), Layer.succeed(BulkChunkSize)(2))

/** A project with `n` dead letters and a replay action over all of them (started, not run). */
const redrive = (n: number) =>
  Effect.gen(function*() {
    const projectId = nextId()
    yield* ensureProject(projectId)
    const ids = yield* insertDeadLetters(Array.from({ length: n }, () => ({ projectId })))
    const answer = yield* startBulkAction(projectId, { action: "replay", filter: {}, dryRun: false, replay: null }, NOW_MS)
    assert.strictEqual(answer._tag, "Started")
    return { projectId, ids, actionId: answer._tag === "Started" ? answer.action.id : "" }
  }).pipe(Effect.provide(BulkActionRunner.none))

const actionRow = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ status: string; processed: number; acted: number; error: string | null; items: number }>`
      SELECT status, processed, acted, error, (SELECT count(*)::int FROM bulk_action_items WHERE action_id = a.id) AS items
      FROM bulk_actions a WHERE id = ${id}`, (rows) => rows[0]!))

const queuedOf = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ id: string }>`SELECT id FROM triggers WHERE id = ANY(${ids}::uuid[]) AND status = 'queued' AND triggered_by = 'retry'`,
      (rows) => rows.map((row) => row.id).sort()))

/** A PostgreSQL trigger that fails every update of this row of `table` (a chunk cut short), until removed. */
const failUpdatesOf = (table: "triggers" | "bulk_actions", id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(`CREATE OR REPLACE FUNCTION test_fail_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'injected failure'; END $$`)
    yield* sql.unsafe(`CREATE TRIGGER test_fail_update BEFORE UPDATE ON ${table} FOR EACH ROW
      WHEN (OLD.id = '${id}') EXECUTE FUNCTION test_fail_update()`)
    return sql.unsafe(`DROP TRIGGER test_fail_update ON ${table}`)
  })

layer(Env, { timeout: "60 seconds" })("bulk action chunks", (it) => {
  it.effect("chunk after chunk: the counters advance, each trigger is queued once under the running node", () =>
    Effect.gen(function*() {
      submitted.length = 0
      const { ids, actionId } = yield* redrive(5)
      const progress: Array<[number, number, string]> = []
      for (;;) {
        const action = yield* runBulkActionChunk()
        if (action === undefined) break
        progress.push([action.processed, action.acted, action.status])
      }
      assert.deepStrictEqual(progress, [[2, 2, "running"], [4, 4, "running"], [5, 5, "completed"]])
      assert.deepStrictEqual(submitted.map((s) => s.id).sort(), [...ids].sort())
      assert.deepStrictEqual(yield* queuedOf(ids), [...ids].sort())
      assert.deepStrictEqual(yield* actionRow(actionId), { status: "completed", processed: 5, acted: 5, error: null, items: 0 })
    }).pipe(Effect.provide(node("node-a"))))

  it.effect("a chunk that fails midway is rolled back whole, then done again: no trigger acted on twice", () =>
    Effect.gen(function*() {
      submitted.length = 0
      const { ids, actionId } = yield* redrive(4)
      const sorted = [...ids].sort()
      // the chunk's last step (its counters) fails, after its triggers were queued and its items deleted
      const undo = yield* failUpdatesOf("bulk_actions", actionId)
      const failed = yield* Effect.exit(runBulkActionChunk())
      assert.isTrue(Exit.isFailure(failed))
      assert.include(String(Exit.isFailure(failed) ? failed.cause : ""), "ChunkFailed")
      // nothing of the chunk happened: no trigger queued, its items still there
      assert.deepStrictEqual(yield* queuedOf(ids), [])
      assert.deepStrictEqual(yield* actionRow(actionId), { status: "running", processed: 0, acted: 0, error: null, items: 4 })
      assert.deepStrictEqual(submitted, [])
      yield* undo
      while ((yield* runBulkActionChunk()) !== undefined) {
        // until no running action is left
      }
      assert.deepStrictEqual(submitted.map((s) => s.id).sort(), sorted)
      assert.deepStrictEqual(yield* actionRow(actionId), { status: "completed", processed: 4, acted: 4, error: null, items: 0 })
    }).pipe(Effect.provide(node("node-a"))))

  it.effect("two nodes on one action at once: each trigger acted on by one of them, once", () =>
    Effect.gen(function*() {
      submitted.length = 0
      const { ids, actionId } = yield* redrive(30)
      const work = (name: string) =>
        Effect.gen(function*() {
          while ((yield* runBulkActionChunk()) !== undefined) {
            // chunks until every action is done
          }
        }).pipe(Effect.provide(node(name)))
      yield* Effect.all([work("node-a"), work("node-b")], { concurrency: 2 })
      assert.deepStrictEqual(submitted.map((s) => s.id).sort(), [...ids].sort())
      assert.strictEqual(new Set(submitted.map((s) => s.id)).size, 30)
      assert.deepStrictEqual(yield* actionRow(actionId), { status: "completed", processed: 30, acted: 30, error: null, items: 0 })
      // each replay is claimed by the node that queued it (its delivery, or crash recovery's if it dies)
      const sql = yield* SqlClient.SqlClient
      const claims = yield* sql<{ id: string; claimed_by: string }>`SELECT id, claimed_by FROM triggers WHERE id = ANY(${ids}::uuid[])`
      for (const claim of claims) assert.strictEqual(claim.claimed_by, submitted.find((s) => s.id === claim.id)!.node)
    }))

})

layer(Env, { timeout: "60 seconds", excludeTestServices: true })("the bulk actions' worker", (it) => {
  it.effect("the worker gives an action up as failed after its chunks keep failing; the others go on", () =>
    Effect.scoped(Effect.gen(function*() {
      submitted.length = 0
      const stuck = yield* redrive(2)
      const undo = yield* failUpdatesOf("triggers", [...stuck.ids].sort()[0]!)
      const fine = yield* redrive(2)
      yield* Layer.build(BulkActionRunner.layer)
      // the failing action (the older) does not hold the other one up
      yield* pollUntil("the other action", Effect.map(actionRow(fine.actionId), (row) => (row.status === "completed" ? true : undefined)))
      assert.strictEqual((yield* actionRow(stuck.actionId)).status, "running")
      const failed = yield* pollUntil("the stuck action to fail", Effect.map(actionRow(stuck.actionId), (row) => (row.status === "failed" ? row : undefined)), {
        deadlineMs: (MAX_CHUNK_FAILURES + 5) * 1_000
      })
      yield* undo
      assert.deepStrictEqual([failed.processed, failed.items], [0, 0])
      assert.include(failed.error ?? "", "injected failure")
      assert.deepStrictEqual(yield* queuedOf(stuck.ids), [])
      assert.deepStrictEqual(yield* actionRow(fine.actionId), { status: "completed", processed: 2, acted: 2, error: null, items: 0 })
    }).pipe(Effect.provide(node("node-a")))))
})
