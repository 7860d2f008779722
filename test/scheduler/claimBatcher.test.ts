// The ClaimBatcher on a real database: claims queued by several shard actors at once share
// statements, yet each gets back exactly its own rows, with their due times; triggers not due by the
// cutoff, already running or cancelled are not claimed; claimed rows are running under this node.
// A claim commits synchronously: a send depends on it (a claim lost with a crash of PostgreSQL would
// make a sent trigger cancellable again).
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { ClaimBatcher } from "../../src/scheduler/claimBatcher.ts"
import { NodeIdentity } from "../../src/cluster/node.ts"
import { triggersClaim } from "../../src/store/schedulerQueries.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, insertTriggers, type TriggerFixture } from "../support/fixtures.ts"

const PROJECT = "00000000-0000-7000-8000-0000000000c1"
const T = Date.UTC(2026, 10, 22, 12, 0, 0)
const idOf = (i: number) => `00000000-0000-7000-8000-${i.toString(16).padStart(12, "0")}`

/** A one-shot due at `dueAtMs` (a cancelled one has no due time), in a shard taken from its id. */
const triggerFixture = (id: string, status: string, dueAtMs: number): TriggerFixture => ({
  projectId: PROJECT, id, shard: Number.parseInt(id.slice(-2), 16) % 8, status, scheduledAt: new Date(dueAtMs),
  dueAt: status === "cancelled" ? null : new Date(dueAtMs), url: "http://127.0.0.1:9/"
})

const batcher = ClaimBatcher.layer.pipe(Layer.provide(Layer.succeed(NodeIdentity)({ id: "node-c" })))

layer(Layer.provideMerge(batcher, TestDatabase), { timeout: "60 seconds" })("ClaimBatcher", (it) => {
  it.effect("gives 20 concurrent claims each exactly its own due rows, and claims nothing else", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* ensureProject(PROJECT)
      // claim k asks for ids 10k+1..10k+10: the first 5 due, then one due after the cutoff, one
      // running, one cancelled, and two that do not exist
      yield* insertTriggers(Array.from({ length: 20 }, (_, k) => [
        ...Array.from({ length: 5 }, (_, j) => triggerFixture(idOf(10 * k + j + 1), "registered", T + j + 1)),
        triggerFixture(idOf(10 * k + 6), "registered", T + 60_000),
        triggerFixture(idOf(10 * k + 7), "running", T),
        triggerFixture(idOf(10 * k + 8), "cancelled", T)
      ]).flat())
      const claims = yield* ClaimBatcher
      const results = yield* Effect.all(
        Array.from({ length: 20 }, (_, k) =>
          claims.claim(Array.from({ length: 10 }, (_, j) => idOf(10 * k + j + 1)), T + 10)),
        { concurrency: "unbounded" }
      )
      results.forEach((rows, k) => {
        assert.deepStrictEqual(
          rows.map((row) => [row.id, row.dueAtMs]).sort(),
          Array.from({ length: 5 }, (_, j) => [idOf(10 * k + j + 1), T + j + 1]).sort()
        )
      })
      const states = yield* sql<{ status: string; claimed_by: string | null; n: string }>`
        SELECT status, claimed_by, count(*)::text AS n FROM triggers GROUP BY status, claimed_by ORDER BY status, claimed_by NULLS FIRST`
      assert.deepStrictEqual(states.map((s) => [s.status, s.claimed_by, Number(s.n)]), [
        ["cancelled", null, 20],
        ["registered", null, 20],
        ["running", null, 20],
        ["running", "node-c", 100]
      ])
    }))

  it.effect("commits a claim synchronously: it waits for the WAL flush, as a send depends on it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* ensureProject(PROJECT)
      const id = idOf(0xa51c)
      yield* insertTriggers([triggerFixture(id, "registered", T)])
      const setting = sql<{ value: string }>`SELECT current_setting('synchronous_commit') AS value`
      const [claimed, during] = yield* sql.withTransaction(Effect.gen(function*() {
        const rows = yield* triggersClaim({ ids: [id], untilMs: T + 10, node: "node-c", nowMs: T })
        return [rows, (yield* setting)[0]!.value] as const
      }))
      assert.deepStrictEqual(claimed.map((row) => row.id), [id])
      assert.strictEqual(during, "on")
      const [row] = yield* sql<{ status: string }>`SELECT status FROM triggers WHERE id = ${id}`
      assert.strictEqual(row!.status, "running")
    }))
})
