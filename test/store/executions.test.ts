// executionsRecord: one statement records a batch of attempts, and it is idempotent: a batch
// recorded twice (a commit whose answer was lost, then retried) leaves one execution per attempt and
// the outcome it already wrote. Each trigger's next state is a compare-and-set on the state the
// attempt was made from: a claimed trigger still running under the recording node with that attempt
// counted, or a fired one (store/shardMarks.ts) still pending exactly as it was fetched. An attempt
// whose trigger moved meanwhile (taken over, recovered, cancelled) records nothing at all: no
// execution, no rollup, its trigger and gate places left alone. The batch also adds its per-minute
// rollup (domain/deliveryRollup.ts), once however often it is retried.
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

  it.effect("every column is stored as given: instants to the millisecond, absent values NULL, text with NUL and quotes", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const projectId = nextId()
      yield* ensureProject(projectId)
      const ok = yield* insertTrigger({ projectId, status: "running", claimedBy: NODE, attempts: 1 })
      const failed = yield* insertTrigger({ projectId, status: "running", claimedBy: NODE, attempts: 1 })
      const started = Date.UTC(2030, 0, 1, 12, 34, 56, 789)
      yield* record([
        {
          ...execution(ok, projectId), startedAtMs: started, finishedAtMs: started + 1_001, durationMs: 1_001.4,
          responseHeaders: { "set-cookie": "a=1, b=2", "x-q": "\"quoted\"\u0000" }, responseBody: "body \"x\" \u0000 é",
          triggeredBy: "replay:\"r\"", timeoutSeconds: 2.5
        },
        {
          ...execution(failed, projectId), succeeded: false, httpStatus: null, responseHeaders: null, responseBody: null,
          errorKind: "connection_refused", errorCode: "ECONNREFUSED", errorMessage: "Connection refused by 127.0.0.1:9"
        }
      ], [claimed(ok), claimed(failed, NOW + 60_000)])
      const rows = yield* sql<Record<string, unknown>>`SELECT trigger_id, status,
          (extract(epoch FROM started_at) * 1000)::bigint::text AS started_ms, (extract(epoch FROM finished_at) * 1000)::bigint::text AS finished_ms,
          duration_ms, http_status, response_headers, response_body, error_kind, error_code, error_message, is_dead_letter,
          connect_timeout_seconds, timeout_seconds, triggered_by, url
        FROM executions WHERE trigger_id IN (${ok}, ${failed}) ORDER BY status DESC`
      assert.deepStrictEqual(rows.map((r) => ({ ...r })), [
        {
          trigger_id: ok, status: "succeeded", started_ms: String(started), finished_ms: String(started + 1_001), duration_ms: 1_001,
          http_status: 200, response_headers: { "set-cookie": "a=1, b=2", "x-q": "\"quoted\"\uFFFD" }, response_body: "body \"x\" \uFFFD é",
          error_kind: null, error_code: null, error_message: null, is_dead_letter: false, connect_timeout_seconds: 10,
          timeout_seconds: 3, triggered_by: "replay:\"r\"", url: "http://127.0.0.1:9/x"
        },
        {
          trigger_id: failed, status: "failed", started_ms: String(NOW - 5), finished_ms: String(NOW), duration_ms: 5,
          http_status: null, response_headers: null, response_body: null, error_kind: "connection_refused",
          error_code: "ECONNREFUSED", error_message: "Connection refused by 127.0.0.1:9", is_dead_letter: false,
          connect_timeout_seconds: 10, timeout_seconds: 30, triggered_by: null, url: "http://127.0.0.1:9/x"
        }
      ])
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

  it.effect("an outcome whose compare-and-set fails records nothing: no execution, no rollup, no gate place given up", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const projectId = nextId()
      yield* ensureProject(projectId)
      // fired, then changed before its outcome came (its updated_at moved): e.g. taken over by another node
      const moved = yield* insertTrigger({ projectId, status: "registered", dueAt: new Date(NOW - 10) })
      const seen = yield* updatedUs(moved)
      yield* sql`UPDATE triggers SET updated_at = updated_at + interval '1 ms' WHERE id = ${moved}`
      // fired, then cancelled (a cancel that should never have succeeded: the outcome must not log an attempt on it)
      const cancelled = yield* insertTrigger({ projectId, status: "registered", dueAt: new Date(NOW - 10) })
      const cancelledSeen = yield* updatedUs(cancelled)
      yield* sql`UPDATE triggers SET status = 'cancelled', due_at = NULL WHERE id = ${cancelled}`
      // claimed by another node (recovered from this one), and waiting at its gate again there
      const elsewhere = yield* insertTrigger({ projectId, status: "running", claimedBy: "other-node", attempts: 1 })
      yield* sql`INSERT INTO gate_slots (trigger_id, tag, project_id, scheduled_at, not_before) VALUES (${elsewhere}, 'g', ${projectId}, now(), now())`
      // claimed by this node, but its attempt count is not the one the outcome is for
      const recounted = yield* insertTrigger({ projectId, status: "running", claimedBy: NODE, attempts: 2 })
      const changed = yield* executionsRecord({
        executions: [execution(moved, projectId), execution(cancelled, projectId), execution(elsewhere, projectId), execution(recounted, projectId)],
        outcomes: [
          { id: moved, attempt: 1, firedSeenUs: seen, retryAtMs: null },
          { id: cancelled, attempt: 1, firedSeenUs: cancelledSeen, retryAtMs: null },
          claimed(elsewhere),
          claimed(recounted)
        ],
        gated: [elsewhere],
        node: NODE,
        nowMs: NOW
      })
      assert.strictEqual(changed, 0)
      for (const id of [moved, cancelled, elsewhere, recounted]) assert.strictEqual((yield* executionsOf(id)).length, 0, id)
      assert.deepStrictEqual([(yield* triggerRow(moved)).status, (yield* triggerRow(moved)).attempts], ["registered", 0])
      assert.deepStrictEqual([(yield* triggerRow(cancelled)).status, (yield* triggerRow(cancelled)).attempts], ["cancelled", 0])
      assert.strictEqual((yield* triggerRow(elsewhere)).status, "running")
      assert.strictEqual((yield* triggerRow(recounted)).status, "running")
      assert.strictEqual((yield* sql`SELECT 1 FROM gate_slots WHERE trigger_id = ${elsewhere}`).length, 1, "the other node's gate place stays")
      assert.deepStrictEqual(yield* sql`SELECT 1 FROM delivery_minutes_pending WHERE project_id = ${projectId}`, [])
    }))

  it.effect("in a batch, only the attempts whose trigger changed state are recorded and counted", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const projectId = nextId()
      yield* ensureProject(projectId)
      const ok = yield* insertTrigger({ projectId, status: "running", claimedBy: NODE, attempts: 1 })
      const elsewhere = yield* insertTrigger({ projectId, status: "running", claimedBy: "other-node", attempts: 1 })
      const batch = [execution(ok, projectId, 1, NOW - 20), execution(elsewhere, projectId, 1, NOW - 20)]
      assert.strictEqual(yield* record(batch, [claimed(ok), claimed(elsewhere)]), 1)
      assert.strictEqual(yield* record(batch, [claimed(ok), claimed(elsewhere)]), 0, "the retry of a commit whose answer was lost")
      assert.deepStrictEqual([(yield* executionsOf(ok)).length, (yield* executionsOf(elsewhere)).length], [1, 0])
      const rows = yield* sql<{ succeeded: string; lateness: Array<string> }>`
        SELECT succeeded::text, lateness::text[] FROM delivery_minutes_pending WHERE project_id = ${projectId}`
      assert.deepStrictEqual(rows.map((row) => [row.succeeded, row.lateness.reduce((sum, n) => sum + Number(n), 0)]), [["1", 1]],
        "counted once, for the recorded attempt only")
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
