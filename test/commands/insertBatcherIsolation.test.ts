// One poisoned row of a group-committed insert fails alone, at the store seam with a real PostgreSQL:
// the domain no longer lets an unstorable value through the API, so rows the domain would never build
// are handed to the InsertBatcher directly (year 0000, which PostgreSQL cannot read; a NUL in a text
// column). Its neighbours in the same statement are created and charged one quota unit each; the
// poisoned call gets PostgreSQL's error and is charged nothing.
import { assert, layer } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { InsertBatcher } from "../../src/commands/insertBatcher.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import type { TriggerDefinition } from "../../src/domain/trigger.ts"
import { projectsCreate } from "../../src/store/projects.ts"
import { monthOf } from "../../src/store/quota.ts"
import type { NewOneShot } from "../../src/store/triggers.ts"
import { TestDatabase } from "../support/database.ts"

const NOW_MS = Date.UTC(2030, 0, 15, 12)
let clock = NOW_MS

const definition = (overrides: Partial<TriggerDefinition> = {}): TriggerDefinition => ({
  url: "http://127.0.0.1:9/hook",
  method: "POST",
  headers: [["content-type", "application/json"]],
  body: new TextEncoder().encode("{}"),
  contentType: "application/json",
  title: null,
  tags: [],
  customKey: null,
  retry: null,
  ...overrides
})

const row = (projectId: string, overrides: { scheduledAtMs?: number; definition?: TriggerDefinition } = {}): NewOneShot => ({
  id: uuidv7(++clock),
  projectId,
  shard: 0,
  status: "registered",
  scheduledAtMs: overrides.scheduledAtMs ?? NOW_MS + 3_600_000,
  definition: overrides.definition ?? definition(),
  nowMs: NOW_MS
})

const newProject = (name: string) =>
  Effect.gen(function*() {
    const id = uuidv7(++clock)
    yield* projectsCreate({ id, name, monthlyQuota: 1_000, retryPolicy: {}, nowMs: NOW_MS })
    return id
  })

const counts = (projectId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const triggers = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM triggers WHERE project_id = ${projectId}`
    const used = yield* sql<{ used: string }>`SELECT used::text AS used FROM quota_usage
      WHERE project_id = ${projectId} AND month = ${monthOf(NOW_MS)}::date`
    return { triggers: Number(triggers[0]!.n), quotaUsed: Number(used[0]?.used ?? 0) }
  })

/** Inserts every row concurrently, so they share statements; each call's outcome. */
const insertAll = (rows: ReadonlyArray<NewOneShot>) =>
  Effect.flatMap(InsertBatcher, (batcher) =>
    Effect.all(rows.map((r) => Effect.exit(batcher.insert(r))), { concurrency: "unbounded" }))

layer(InsertBatcher.layer.pipe(Layer.provideMerge(TestDatabase)), { timeout: "60 seconds" })("insert batcher isolation", (it) => {
  it.effect("a row PostgreSQL cannot store (year 0000) fails alone; the 149 others of its batch are created", () =>
    Effect.gen(function*() {
      const projectId = yield* newProject("isolation-date")
      const yearZero = new Date("0000-01-01T00:00:00.000Z").getTime()
      assert.strictEqual(new Date(yearZero).toISOString(), "0000-01-01T00:00:00.000Z")
      const rows = Array.from({ length: 150 }, () => row(projectId))
      rows.splice(75, 0, row(projectId, { scheduledAtMs: yearZero }))
      const exits = yield* insertAll(rows)
      const failed = exits.flatMap((exit, i) => (Exit.isFailure(exit) ? [i] : []))
      assert.deepStrictEqual(failed, [75])
      assert.include(String((exits[75] as Exit.Failure<unknown, unknown>).cause), "out of range")
      assert.deepStrictEqual(yield* counts(projectId), { triggers: 150, quotaUsed: 150 })
    }))

  it.effect("a NUL in a text column fails alone too, in a batch of several projects' groups", () =>
    Effect.gen(function*() {
      const a = yield* newProject("isolation-nul-a")
      const b = yield* newProject("isolation-nul-b")
      const rows = [
        ...Array.from({ length: 40 }, (_, i) => row(i % 2 === 0 ? a : b)),
        row(a, { definition: definition({ title: "nul\u0000title" }) }),
        ...Array.from({ length: 40 }, (_, i) => row(i % 2 === 0 ? a : b))
      ]
      const exits = yield* insertAll(rows)
      assert.deepStrictEqual(exits.flatMap((exit, i) => (Exit.isFailure(exit) ? [i] : [])), [40])
      assert.deepStrictEqual(yield* counts(a), { triggers: 40, quotaUsed: 40 })
      assert.deepStrictEqual(yield* counts(b), { triggers: 40, quotaUsed: 40 })
    }))
})
