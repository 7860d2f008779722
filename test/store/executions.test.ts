// executionsRecord: one statement records a batch of attempts, and it is idempotent: a batch
// recorded twice (a commit whose answer was lost, then retried) leaves one execution per attempt and
// the outcome it already wrote. Each trigger's next state is a compare-and-set on the state the
// attempt was made from: a claimed trigger still running under the recording node with that attempt
// counted, or a fired one (store/shardMarks.ts) still pending exactly as it was fetched; an attempt
// whose trigger moved meanwhile is still logged, its trigger left alone. The batch also adds its
// per-minute rollup (domain/deliveryRollup.ts).
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../../src/domain/ids.ts"
import { type ExecutionRecord, executionsRecord, type TriggerOutcome } from "../../src/store/executions.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, insertTrigger, nextId, statusOf, triggerRow } from "../support/fixtures.ts"

const NOW = Date.UTC(2030, 0, 1)
const NODE = "this-node"

const execution = (triggerId: string, projectId: string, attempt = 1, scheduledAtMs: number | null = null): ExecutionRecord => ({
  id: uuidv7(NOW), triggerId, projectId, attempt, succeeded: true, startedAtMs: NOW - 5, finishedAtMs: NOW, durationMs: 5,
  httpStatus: 200, responseHeaders: {}, responseBody: "ok", errorKind: null, errorCode: null, errorMessage: null,
  isDeadLetter: false, connectTimeoutSeconds: 10, timeoutSeconds: 30, triggeredBy: null, url: "http://127.0.0.1:9/x", scheduledAtMs,
  gated: false
})

const claimed = (id: string, retryAtMs: number | null = null, attempt = 1): TriggerOutcome => ({ id, attempt, firedSeenUs: null, retryAtMs })

const executionsOf = (triggerId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ id: string }>`SELECT id FROM executions WHERE trigger_id = ${triggerId}`)

/** The trigger's updated_at in µs, as a fetch of fired triggers reads it. */
const updatedUs = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ us: string }>`SELECT (extract(epoch FROM updated_at) * 1000000)::bigint::text AS us FROM triggers WHERE id = ${id}`
  ).pipe(Effect.map((rows) => rows[0]!.us))

const record = (executions: Array<ExecutionRecord>, outcomes: Array<TriggerOutcome>) =>
  executionsRecord({ executions, outcomes, gated: [], node: NODE, nowMs: NOW })

layer(TestDatabase, { timeout: "60 seconds" })("executionsRecord", (it) => {
  it.effect("a batch recorded again is a no-op: one execution per attempt, the outcome kept; the next batch is recorded", () =>
    Effect.gen(function*() {
      const projectId = nextId()
      yield* ensureProject(projectId)
      const first = yield* insertTrigger({ projectId, status: "running", claimedBy: NODE, attempts: 1 })
      const second = yield* insertTrigger({ projectId, status: "running", claimedBy: NODE, attempts: 1 })
      const batch = [execution(first, projectId)]
      yield* record(batch, [claimed(first)])
      yield* record(batch, [claimed(first)]) // the retry of a commit whose answer was lost
      assert.strictEqual((yield* executionsOf(first)).length, 1)
      assert.strictEqual(yield* statusOf(first), "completed")

      // a retried batch holding one recorded execution and one new: the new one is recorded
      yield* record([batch[0]!, execution(second, projectId)], [claimed(first), claimed(second, NOW + 60_000)])
      assert.strictEqual((yield* executionsOf(first)).length, 1)
      assert.strictEqual((yield* executionsOf(second)).length, 1)
      assert.strictEqual(yield* statusOf(first), "completed")
      assert.strictEqual(yield* statusOf(second), "retrying")
    }))

  it.effect("a fired trigger (still registered, attempt not counted) is completed with its attempt counted, once", () =>
    Effect.gen(function*() {
      const projectId = nextId()
      yield* ensureProject(projectId)
      const id = yield* insertTrigger({ projectId, status: "registered", dueAt: new Date(NOW - 10) })
      const outcome: TriggerOutcome = { id, attempt: 1, firedSeenUs: yield* updatedUs(id), retryAtMs: null }
      yield* record([execution(id, projectId)], [outcome])
      const row = yield* triggerRow(id)
      assert.deepStrictEqual([row.status, row.attempts, row.due_at], ["completed", 1, null])
      yield* record([execution(id, projectId)], [outcome]) // a new execution id: another attempt's record
      assert.strictEqual((yield* triggerRow(id)).attempts, 1, "a completed trigger is not counted twice")
    }))

  it.effect("an attempt whose trigger moved meanwhile is logged and its trigger left alone", () =>
    Effect.gen(function*() {
      const projectId = nextId()
      yield* ensureProject(projectId)
      // fired, then changed before its outcome came (its updated_at moved): e.g. taken over by another node
      const moved = yield* insertTrigger({ projectId, status: "registered", dueAt: new Date(NOW - 10) })
      const seen = yield* updatedUs(moved)
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE triggers SET updated_at = updated_at + interval '1 ms' WHERE id = ${moved}`)
      // claimed by another node (recovered from this one)
      const elsewhere = yield* insertTrigger({ projectId, status: "running", claimedBy: "other-node", attempts: 1 })
      // claimed by this node, but its attempt count is not the one the outcome is for
      const recounted = yield* insertTrigger({ projectId, status: "running", claimedBy: NODE, attempts: 2 })
      yield* record(
        [execution(moved, projectId), execution(elsewhere, projectId), execution(recounted, projectId)],
        [{ id: moved, attempt: 1, firedSeenUs: seen, retryAtMs: null }, claimed(elsewhere), claimed(recounted)]
      )
      for (const id of [moved, elsewhere, recounted]) assert.strictEqual((yield* executionsOf(id)).length, 1)
      assert.deepStrictEqual([(yield* triggerRow(moved)).status, (yield* triggerRow(moved)).attempts], ["registered", 0])
      assert.strictEqual((yield* triggerRow(elsewhere)).status, "running")
      assert.strictEqual((yield* triggerRow(recounted)).status, "running")
    }))

  it.effect("the batch adds its rollup: outcomes per minute and the lateness of first attempts", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const projectId = nextId()
      yield* ensureProject(projectId)
      const a = yield* insertTrigger({ projectId, status: "running", claimedBy: NODE, attempts: 1 })
      const b = yield* insertTrigger({ projectId, status: "running", claimedBy: NODE, attempts: 1 })
      // started 5 ms before NOW, scheduled 20 ms before NOW: 15 ms late, bucket floor(4 log2(16)) = 16
      const late = execution(a, projectId, 1, NOW - 20)
      const failed = { ...execution(b, projectId), id: uuidv7(NOW), succeeded: false, httpStatus: 500 }
      yield* record([late, failed], [claimed(a), claimed(b, NOW + 60_000)])
      const rows = yield* sql<{ succeeded: string; failed: string; dead_letters: string; lateness: Array<string> }>`
        SELECT succeeded::text, failed::text, dead_letters::text, lateness::text[] FROM delivery_minutes_pending
        WHERE project_id = ${projectId} AND minute = ${new Date(Math.floor((NOW - 5) / 60_000) * 60_000)}`
      assert.strictEqual(rows.length, 1)
      assert.deepStrictEqual([rows[0]!.succeeded, rows[0]!.failed, rows[0]!.dead_letters], ["1", "1", "0"])
      assert.strictEqual(rows[0]!.lateness.length, 17)
      assert.strictEqual(rows[0]!.lateness[16], "1")
    }))
})
