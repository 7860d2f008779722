// Retention's batches on a real database (docs/operations.md "Retention"): the batches of one session
// (one sweep) read on from the newest last change the batch before deleted, all rows of that same
// instant included; a row older than that, passed over meanwhile, is the next session's (the next sweep's).
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { retentionSessionOpen } from "../../src/store/retention.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, insertTrigger } from "../support/fixtures.ts"

const PROJECT = "00000000-0000-7000-8000-0000000000ad"
const CUTOFF_MS = Date.UTC(2020, 5, 1)

const left = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(sql<{ id: string }>`SELECT id FROM triggers ORDER BY updated_at, id`, (rows) => rows.map((r) => r.id)))

/** No triggers left from an earlier test; the project exists. */
const emptied = Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DELETE FROM triggers`).pipe(Effect.andThen(ensureProject(PROJECT)))

const finishedAt = (ms: number) => insertTrigger({ projectId: PROJECT, status: "completed", updatedAt: new Date(ms) })

layer(TestDatabase, { timeout: "60 seconds" })("retention's batches", (it) => {
  it.effect("a session's next batch starts at the newest last change the batch before deleted; an older row waits for the next session", () =>
    Effect.gen(function*() {
      yield* emptied
      yield* finishedAt(CUTOFF_MS - 50_000)
      yield* finishedAt(CUTOFF_MS - 40_000)
      const third = yield* finishedAt(CUTOFF_MS - 30_000)
      yield* Effect.scoped(Effect.gen(function*() {
        const session = (yield* retentionSessionOpen)!
        assert.strictEqual(yield* session.deleteBatch({ beforeMs: CUTOFF_MS, limit: 2 }), 2)
        assert.deepStrictEqual(yield* left, [third])
        // a row older than what the batch before deleted (as one held by another transaction then would be)
        const passedOver = yield* finishedAt(CUTOFF_MS - 45_000)
        assert.strictEqual(yield* session.deleteBatch({ beforeMs: CUTOFF_MS, limit: 2 }), 1)
        assert.deepStrictEqual(yield* left, [passedOver])
        assert.strictEqual(yield* session.deleteBatch({ beforeMs: CUTOFF_MS, limit: 2 }), 0)
      }))
      // the next sweep's session reads from the oldest again
      assert.strictEqual(yield* Effect.scoped(Effect.flatMap(retentionSessionOpen, (session) =>
        session!.deleteBatch({ beforeMs: CUTOFF_MS, limit: 2 }))), 1)
      assert.deepStrictEqual(yield* left, [])
    }))

  it.effect("rows of the same last change as the batch before's newest are not left behind", () =>
    Effect.gen(function*() {
      yield* emptied
      for (let i = 0; i < 5; i++) yield* finishedAt(CUTOFF_MS - 10_000)
      const kept = yield* finishedAt(CUTOFF_MS + 1)
      yield* Effect.scoped(Effect.gen(function*() {
        const session = (yield* retentionSessionOpen)!
        assert.strictEqual(yield* session.deleteBatch({ beforeMs: CUTOFF_MS, limit: 2 }), 2)
        assert.strictEqual(yield* session.deleteBatch({ beforeMs: CUTOFF_MS, limit: 2 }), 2)
        assert.strictEqual(yield* session.deleteBatch({ beforeMs: CUTOFF_MS, limit: 2 }), 1)
      }))
      assert.deepStrictEqual(yield* left, [kept])
    }))

  it.effect("a batch for another cutoff starts from the oldest", () =>
    Effect.gen(function*() {
      yield* emptied
      yield* finishedAt(CUTOFF_MS - 20_000)
      yield* Effect.scoped(Effect.gen(function*() {
        const session = (yield* retentionSessionOpen)!
        assert.strictEqual(yield* session.deleteBatch({ beforeMs: CUTOFF_MS, limit: 2 }), 1)
        yield* finishedAt(CUTOFF_MS - 30_000)
        assert.strictEqual(yield* session.deleteBatch({ beforeMs: CUTOFF_MS + 1_000, limit: 2 }), 1)
      }))
      assert.deepStrictEqual(yield* left, [])
    }))
})
