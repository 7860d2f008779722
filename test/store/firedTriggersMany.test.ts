// The first pages of several shards' fires read in one statement (triggersFetchFiredMany, the node's
// shards firing at the same grid instant): each shard gets exactly what its own range and limit
// cover, in (due_at, id) order, and a shard with nothing due gets an empty page.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { triggersFetchFiredMany } from "../../src/store/firedTriggers.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, insertTrigger } from "../support/fixtures.ts"

const PROJECT = "00000000-0000-7000-8000-0000000000f1"

layer(TestDatabase, { timeout: "60 seconds" })("triggersFetchFiredMany", (it) => {
  it.effect("reads each shard's own range and limit in one statement, in due order", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`DELETE FROM triggers WHERE shard IN (5, 6, 7)`
      yield* ensureProject(PROJECT)
      const base = Date.UTC(2030, 0, 1)
      const at = (shard: number, offsetMs: number, status = "registered") =>
        insertTrigger({ projectId: PROJECT, shard, status, scheduledAt: new Date(base + offsetMs), dueAt: new Date(base + offsetMs) })
      // inserted out of order: the page is in due order all the same
      const s5c = yield* at(5, 30)
      yield* at(5, 10) // at the old mark: already fired
      const s5b = yield* at(5, 20)
      yield* at(5, 40) // beyond the limit of 2
      const s6 = yield* at(6, 10)
      yield* at(6, 500) // beyond the reach
      const pages = yield* triggersFetchFiredMany({
        fetches: [
          { shard: 5, afterMs: base + 10, untilMs: base + 40, limit: 2 },
          { shard: 6, afterMs: -Infinity, untilMs: base + 100, limit: 10 },
          { shard: 7, afterMs: base, untilMs: base + 100, limit: 10 }
        ],
        nowMs: base
      })
      assert.deepStrictEqual(pages.get(5)!.map((fired) => fired.row.id), [s5b, s5c])
      assert.deepStrictEqual(pages.get(5)!.map((fired) => fired.row.dueAtMs), [base + 20, base + 30])
      assert.deepStrictEqual(pages.get(6)!.map((fired) => fired.row.id), [s6])
      assert.deepStrictEqual(pages.get(7), [])
      assert.isFalse(pages.get(6)![0]!.claimNeeded)
    }))
})
