// A fired trigger as a fetch reads it (firedTriggers.ts: the rows read as values, by position) is the
// row the named columns give (deliveryRows.ts toDeliveryRow), field by field, in both fetches; and
// the project's retry policy it carries (as JSON text) reads as the stored policy.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { projectPolicyFromStored } from "../../src/domain/retry.ts"
import { type DeliveryRecord, deliveryColumns, toDeliveryRow } from "../../src/store/deliveryRows.ts"
import { triggersFetchFired, triggersFetchFiredMany } from "../../src/store/firedTriggers.ts"
import { EncryptionKeys } from "../../src/store/sealedRequests.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, insertTrigger } from "../support/fixtures.ts"

const PROJECT = "00000000-0000-7000-8000-0000000000f2"
const SHARD = 9

layer(TestDatabase, { timeout: "60 seconds" })("fired rows", (it) => {
  it.effect("each field of a fetched row is the named column's, in both fetches", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`DELETE FROM triggers WHERE shard = ${SHARD}`
      yield* ensureProject(PROJECT)
      yield* sql`UPDATE projects SET retry_policy = '{"retryMaxAttempts": 7, "retryOn": "non_2xx"}'::jsonb WHERE id = ${PROJECT}`
      const base = Date.UTC(2030, 0, 2)
      const id = yield* insertTrigger({
        projectId: PROJECT, shard: SHARD, status: "retrying", attempts: 2, scheduledAt: new Date(base - 5_000),
        dueAt: new Date(base + 10), url: "https://example.test/hook?a=1", method: "PUT",
        headers: [["X-One", "1"], ["X-One", "2"]], body: new Uint8Array([0, 1, 2, 255]), contentType: "application/x-test",
        tags: ["a", "b"], customKey: "key-1", retry: { strategy: "fixed", maxAttempts: 4, initialDelaySeconds: 2 },
        triggeredBy: "retry"
      })
      const keys = yield* EncryptionKeys
      const [named] = yield* sql<DeliveryRecord & { due_ms: string; due_text: string; updated_us: string }>`
        SELECT ${deliveryColumns(sql, new Date(base))}, (extract(epoch FROM t.due_at) * 1000)::bigint::text AS due_ms,
          t.due_at::text AS due_text, (extract(epoch FROM t.updated_at) * 1000000)::bigint::text AS updated_us
        FROM triggers t JOIN projects p ON p.id = t.project_id WHERE t.id = ${id}`
      const expected = toDeliveryRow(named!, keys, [], { seenUs: named!.updated_us }, Number(named!.due_ms))

      const page = yield* triggersFetchFired({
        shard: SHARD, afterMs: -Infinity, untilMs: base + 100, lateIds: [], cursor: null, limit: 10, nowMs: base
      })
      assert.strictEqual(page.length, 1)
      assert.deepStrictEqual(page[0]!.row, expected)
      assert.deepStrictEqual(page[0]!.cursor, { dueAt: named!.due_text, id })
      assert.isTrue(page[0]!.claimNeeded)
      assert.strictEqual(page[0]!.row.attempt, 3)
      assert.deepStrictEqual(page[0]!.row.headers, [["X-One", "1"], ["X-One", "2"]])
      assert.deepStrictEqual([...page[0]!.row.body!], [0, 1, 2, 255])
      assert.strictEqual(page[0]!.row.dueAtMs, base + 10)
      assert.strictEqual(page[0]!.row.scheduledAtMs, base - 5_000)

      const many = yield* triggersFetchFiredMany({ fetches: [{ shard: SHARD, afterMs: -Infinity, untilMs: base + 100, limit: 10 }], nowMs: base })
      assert.deepStrictEqual(many.get(SHARD), page)

      const policy = projectPolicyFromStored(page[0]!.row.projectRetry)
      assert.strictEqual(policy.maxAttempts, 7)
      assert.strictEqual(policy.retryOn, "non_2xx")
      assert.deepStrictEqual(policy, projectPolicyFromStored({ retryMaxAttempts: 7, retryOn: "non_2xx" }))
    }))
})
