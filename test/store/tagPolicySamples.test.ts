// The tag policies' samples of the overview (store/deliveryStats.ts, docs/dashboard.md): sampled
// several times a minute, a minute's row keeps the peak of its queued and in-flight counts, so a
// hold of a few seconds between two samples still shows; the next minute starts afresh.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { statsSampleTagPolicies } from "../../src/store/deliveryStats.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, nextId } from "../support/fixtures.ts"

const MINUTE = Date.UTC(2030, 0, 1, 12, 0)

layer(TestDatabase, { timeout: "60 seconds" })("tag policy samples", (it) => {
  it.effect("a minute's row keeps the peak of its samples; the next minute starts from its own", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const projectId = nextId()
      yield* ensureProject(projectId)
      yield* sql`INSERT INTO tag_policies (id, project_id, tag, max_concurrent, created_at, updated_at)
        VALUES (${nextId()}, ${projectId}, 'orders', 5, now(), now())`
      const inFlight = (n: number) =>
        sql`INSERT INTO gate_leases (project_id, tag, node, in_flight, renewed_at) VALUES (${projectId}, 'orders', 'node-a', ${n}, now())
          ON CONFLICT (project_id, tag, node) DO UPDATE SET in_flight = excluded.in_flight`
      const row = (minuteMs: number) =>
        Effect.map(sql<{ queued: number; in_flight: number }>`SELECT queued, in_flight FROM tag_policy_samples
          WHERE project_id = ${projectId} AND tag = 'orders' AND minute = ${new Date(minuteMs)}`, (rows) => rows.map((r) => r.in_flight))

      yield* inFlight(1)
      yield* statsSampleTagPolicies(MINUTE)
      assert.deepStrictEqual(yield* row(MINUTE), [1])
      // a burst between two samples of the minute: its peak stays
      yield* inFlight(4)
      yield* statsSampleTagPolicies(MINUTE)
      yield* inFlight(0)
      yield* statsSampleTagPolicies(MINUTE)
      assert.deepStrictEqual(yield* row(MINUTE), [4])
      // the next minute has its own row
      yield* statsSampleTagPolicies(MINUTE + 60_000)
      assert.deepStrictEqual(yield* row(MINUTE + 60_000), [0])
      assert.deepStrictEqual(yield* row(MINUTE), [4])
    }))
})
