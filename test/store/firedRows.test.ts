// The rows the statements handing triggers to delivery read by position (deliveryRows.ts
// deliveryRowOfValues over `.values`) carry, field by field, what the same columns read by name
// hold: for a fired trigger (both fetches: its attempt the next one, its due time and the updated_at
// it was seen with), a claim (its attempt the one the claim counted, its due time) and a start of a
// queued trigger (its attempt the counted one, no due time); and the project's retry policy it
// carries (as JSON text) reads as the stored policy.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { projectPolicyFromStored } from "../../src/domain/retry.ts"
import type { DeliveryRow } from "../../src/domain/trigger.ts"
import { type DeliveryRecord, deliveryColumns } from "../../src/store/deliveryRows.ts"
import { triggersFetchFired, triggersFetchFiredMany } from "../../src/store/firedTriggers.ts"
import { triggersClaim, triggersStartDelivery } from "../../src/store/schedulerQueries.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, insertTrigger, type TriggerFixture } from "../support/fixtures.ts"

const PROJECT = "00000000-0000-7000-8000-0000000000f2"
const SHARD = 9
const BASE = Date.UTC(2030, 0, 2)

/** A trigger with every column the row reads set to a value of its own. */
const fixture = (status: string): TriggerFixture => ({
  projectId: PROJECT, shard: SHARD, status, attempts: 2, scheduledAt: new Date(BASE - 5_000),
  dueAt: new Date(BASE + 10), url: "https://example.test/hook?a=1", method: "PUT",
  headers: [["X-One", "1"], ["X-One", "2"]], body: new Uint8Array([0, 1, 2, 255]), contentType: "application/x-test",
  tags: ["a", "b"], customKey: `key-${status}`, retry: { strategy: "fixed", maxAttempts: 4, initialDelaySeconds: 2 },
  triggeredBy: "retry"
})

/** Inserts `fixture(status)` with a trace context of its own (the fixture does not set one). */
const insertFull = (status: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const id = yield* insertTrigger(fixture(status))
    yield* sql`UPDATE triggers SET traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate = 'tw=1' WHERE id = ${id}`
    return id
  })

/** The trigger's columns read by name (after a statement, so as it left them). */
const readByName = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [named] = yield* sql<DeliveryRecord & { due_ms: string; due_text: string; updated_us: string }>`
      SELECT ${deliveryColumns(sql, new Date(BASE))}, (extract(epoch FROM t.due_at) * 1000)::bigint::text AS due_ms,
        t.due_at::text AS due_text, (extract(epoch FROM t.updated_at) * 1000000)::bigint::text AS updated_us
      FROM triggers t JOIN projects p ON p.id = t.project_id WHERE t.id = ${id}`
    return named!
  })

/** The row to send, from the named columns (the stored requests are plain: no keys). */
const expectedOf = (
  named: DeliveryRecord,
  attempt: number,
  fired: DeliveryRow["fired"],
  dueAtMs: number | undefined
) => ({
  id: named.id, shard: named.shard, generatorId: named.generator_id, projectId: named.project_id, url: named.url,
  method: named.method, headers: named.headers, body: named.body, contentType: named.content_type, tags: named.tags,
  attempt, retry: named.retry, projectRetry: named.retry_policy, triggeredBy: named.triggered_by,
  signingSecrets: named.signing_secrets, gateTags: [], scheduledAtMs: named.scheduled_ms === null ? null : Number(named.scheduled_ms),
  fired, traceparent: named.traceparent, tracestate: named.tracestate, dueAtMs
})

layer(TestDatabase, { timeout: "60 seconds" })("rows handed to delivery", (it) => {
  it.effect("each field of a fetched row is the named column's, in both fetches", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`DELETE FROM triggers WHERE shard = ${SHARD}`
      yield* ensureProject(PROJECT)
      yield* sql`UPDATE projects SET retry_policy = '{"retryMaxAttempts": 7, "retryOn": "non_2xx"}'::jsonb WHERE id = ${PROJECT}`
      const id = yield* insertFull("retrying")
      const named = yield* readByName(id)

      const page = yield* triggersFetchFired({
        shard: SHARD, afterMs: -Infinity, untilMs: BASE + 100, lateIds: [], cursor: null, limit: 10, nowMs: BASE
      })
      assert.strictEqual(page.length, 1)
      assert.deepStrictEqual<unknown>(page[0]!.row, expectedOf(named, 3, { seenUs: named.updated_us }, Number(named.due_ms)))
      assert.deepStrictEqual(page[0]!.cursor, { dueAt: named.due_text, id })
      assert.isTrue(page[0]!.claimNeeded)
      assert.strictEqual(page[0]!.row.attempt, 3)
      assert.deepStrictEqual(page[0]!.row.headers, [["X-One", "1"], ["X-One", "2"]])
      assert.deepStrictEqual([...page[0]!.row.body!], [0, 1, 2, 255])
      assert.strictEqual(page[0]!.row.dueAtMs, BASE + 10)
      assert.strictEqual(page[0]!.row.scheduledAtMs, BASE - 5_000)
      assert.strictEqual(page[0]!.row.url, "https://example.test/hook?a=1")
      assert.strictEqual(page[0]!.row.method, "PUT")
      assert.strictEqual(page[0]!.row.triggeredBy, "retry")
      assert.strictEqual(page[0]!.row.tracestate, "tw=1")

      const many = yield* triggersFetchFiredMany({ fetches: [{ shard: SHARD, afterMs: -Infinity, untilMs: BASE + 100, limit: 10 }], nowMs: BASE })
      assert.deepStrictEqual(many.get(SHARD), page)

      const policy = projectPolicyFromStored(page[0]!.row.projectRetry)
      assert.strictEqual(policy.maxAttempts, 7)
      assert.strictEqual(policy.retryOn, "non_2xx")
      assert.deepStrictEqual(policy, projectPolicyFromStored({ retryMaxAttempts: 7, retryOn: "non_2xx" }))
    }))

  it.effect("a claimed row and a started one are the named columns', with the attempt each statement counted", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`DELETE FROM triggers WHERE shard = ${SHARD}`
      yield* ensureProject(PROJECT)
      const due = yield* insertFull("retrying")
      const claimed = yield* triggersClaim({ ids: [due], untilMs: BASE + 100, node: "node-r", nowMs: BASE })
      const afterClaim = yield* readByName(due)
      assert.strictEqual(afterClaim.attempts, 3)
      assert.deepStrictEqual<unknown>(claimed, [expectedOf(afterClaim, 3, null, BASE + 10)])

      const queued = yield* insertFull("queued")
      const started = yield* triggersStartDelivery({ ids: [queued], node: "node-r", nowMs: BASE })
      const afterStart = yield* readByName(queued)
      assert.strictEqual(afterStart.attempts, 3)
      assert.deepStrictEqual<unknown>(started, [expectedOf(afterStart, 3, null, undefined)])
      assert.isUndefined((started[0] as { dueAtMs?: number }).dueAtMs)
    }))
})
