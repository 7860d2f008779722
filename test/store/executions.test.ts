// Recording delivery outcomes (store/executions.ts) on a real database: a batch recorded twice —
// the completer retries a batch until the database takes it, also when the first commit landed and
// only its answer was lost (chaos pg-restart-fast: the retry met executions_pkey and stuck the batch's
// 600 triggers in `running` for good) — leaves one execution per attempt, the same trigger status,
// and takes the next batch as usual.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../../src/domain/ids.ts"
import { type ExecutionRecord, executionsRecord } from "../../src/store/executions.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, insertTrigger, nextId, statusOf } from "../support/fixtures.ts"

const NOW = Date.UTC(2030, 0, 1)

const execution = (triggerId: string, projectId: string): ExecutionRecord => ({
  id: uuidv7(NOW), triggerId, projectId, attempt: 1, succeeded: true, startedAtMs: NOW - 5, finishedAtMs: NOW, durationMs: 5,
  httpStatus: 200, responseHeaders: {}, responseBody: "ok", errorKind: null, errorCode: null, errorMessage: null,
  isDeadLetter: false, connectTimeoutSeconds: 10, timeoutSeconds: 30, triggeredBy: null, url: "http://127.0.0.1:9/x"
})

const executionsOf = (triggerId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ id: string }>`SELECT id FROM executions WHERE trigger_id = ${triggerId}`)

layer(TestDatabase, { timeout: "60 seconds" })("executionsRecord", (it) => {
  it.effect("a batch recorded again is a no-op: one execution per attempt, the outcome kept; the next batch is recorded", () =>
    Effect.gen(function*() {
      const projectId = nextId()
      yield* ensureProject(projectId)
      const first = yield* insertTrigger({ projectId, status: "running", claimedBy: "this-node", attempts: 1 })
      const second = yield* insertTrigger({ projectId, status: "running", claimedBy: "this-node", attempts: 1 })
      const batch = {
        executions: [execution(first, projectId)],
        outcomes: [{ id: first, retryAtMs: null }],
        gated: [],
        nowMs: NOW
      }
      yield* executionsRecord(batch)
      yield* executionsRecord(batch) // the retry of a commit whose answer was lost
      assert.strictEqual((yield* executionsOf(first)).length, 1)
      assert.strictEqual(yield* statusOf(first), "completed")

      // a retried batch holding one recorded execution and one new: the new one is recorded
      const mixed = {
        executions: [batch.executions[0]!, execution(second, projectId)],
        outcomes: [{ id: first, retryAtMs: null }, { id: second, retryAtMs: NOW + 60_000 }],
        gated: [],
        nowMs: NOW
      }
      yield* executionsRecord(mixed)
      assert.strictEqual((yield* executionsOf(first)).length, 1)
      assert.strictEqual((yield* executionsOf(second)).length, 1)
      assert.strictEqual(yield* statusOf(first), "completed")
      assert.strictEqual(yield* statusOf(second), "retrying")
    }))
})
