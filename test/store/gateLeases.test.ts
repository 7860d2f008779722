// Lease rounds' writes in PostgreSQL (store/gateLeases.ts): a round reads with no lock and writes in
// one statement, so what it planned from its read may be stale by then. A take holds at most what
// the other rows leave of the limit when it is written (two nodes planning the whole limit from the
// same read, one after the other or at once, never hold more than the limit together), and nothing
// under a policy changed since its read; a renewal of a row another node found gone meanwhile does
// not make it again; a gone node's row is reclaimed only if it is still gone when written.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { gateLeasesRound, type GateRoundRead, type OwnLease, type RoundRead, type RoundWrites } from "../../src/store/gateLeases.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, nextId } from "../support/fixtures.ts"

const ORIGIN = "https://api.example.com"
const LIMIT = 10

const freshProject = Effect.gen(function*() {
  const projectId = nextId()
  yield* ensureProject(projectId)
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO target_policies (id, project_id, origin, max_concurrent, created_at, updated_at)
    VALUES (${nextId()}, ${projectId}, '*', ${LIMIT}, now(), now())`
  return projectId
})

const NO_WRITES: RoundWrites = { keep: [], drop: [], reclaim: [], purge: [], durable: false }

/** This node's row taking `permits` of the origin's gate (from none), planned as if it were alone. */
const taking = (read: GateRoundRead, permits: number, policy = read.policy!.row): OwnLease => ({
  projectId: read.projectId, tag: read.tag, permits, tokens: {}, demand: { concurrency: permits }, inFlight: 0,
  policySeenMs: read.policy!.updatedAtMs,
  take: { kept: { permits: 0, tokens: {} }, maxConcurrent: read.policy!.maxConcurrent, windows: {}, policy }
})

/** A round of `node` over the origin's gate writing what `plan` says of its read. */
const round = (node: string, projectId: string, plan: (read: GateRoundRead) => Partial<RoundWrites>) =>
  gateLeasesRound({
    node,
    gates: [{ projectId, tag: ORIGIN }],
    ttlMs: 2_000,
    graceMs: 0,
    decide: (read: RoundRead) => ({ writes: { ...NO_WRITES, ...plan(read.gates[0]!) }, result: read.gates[0]! })
  })

const liveRows = (projectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ node: string; permits: number }>`SELECT node, permits FROM gate_leases
      WHERE project_id = ${projectId} AND tag = ${ORIGIN} AND gone_at IS NULL ORDER BY node`)

layer(TestDatabase, { timeout: "60 seconds", excludeTestServices: true })("lease rounds in PostgreSQL", (it) => {
  it.effect("a take holds at most what the others leave of the limit when it is written", () =>
    Effect.gen(function*() {
      const projectId = yield* freshProject
      const a = yield* round("node-a", projectId, (read) => ({ keep: [taking(read, LIMIT)], durable: true }))
      assert.deepStrictEqual(a.written.map((row) => row.permits), [LIMIT])
      // node-b planned the whole limit too (as from a read taken before node-a wrote): it gets none
      const b = yield* round("node-b", projectId, (read) => ({ keep: [taking({ ...read, leases: [] }, LIMIT)], durable: true }))
      assert.deepStrictEqual(b.written.map((row) => row.permits), [0])
      // node-a gives back 4: node-b's next take gets those 4, not more
      yield* round("node-a", projectId, (read) => ({
        keep: [{ ...taking(read, 6), take: null }]
      }))
      const again = yield* round("node-b", projectId, (read) => ({ keep: [taking(read, LIMIT)], durable: true }))
      assert.deepStrictEqual(again.written.map((row) => row.permits), [4])
      assert.deepStrictEqual(yield* liveRows(projectId), [{ node: "node-a", permits: 6 }, { node: "node-b", permits: 4 }])
    }))

  it.effect("takes written at once by many nodes, each planning the whole limit, hold the limit together", () =>
    Effect.gen(function*() {
      const projectId = yield* freshProject
      const nodes = Array.from({ length: 8 }, (_, i) => `node-${i}`)
      const rounds = yield* Effect.all(
        nodes.map((node) => round(node, projectId, (read) => ({ keep: [taking(read, LIMIT)], durable: true }))),
        { concurrency: "unbounded" }
      )
      const held = rounds.map((r) => r.written[0]!.permits)
      assert.strictEqual(held.reduce((sum, n) => sum + n, 0), LIMIT)
      const rows = yield* liveRows(projectId)
      assert.strictEqual(rows.reduce((sum, row) => sum + row.permits, 0), LIMIT)
    }))

  it.effect("a take planned under a policy changed since is not written; its row keeps what it held", () =>
    Effect.gen(function*() {
      const projectId = yield* freshProject
      const stale = yield* round("node-a", projectId, (read) => ({
        keep: [taking(read, LIMIT, { origin: "*", stamp: "2001-02-03 04:05:06.789+00" })],
        durable: true
      }))
      assert.deepStrictEqual(stale.written.map((row) => row.permits), [0])
      const current = yield* round("node-a", projectId, (read) => ({ keep: [taking(read, LIMIT)], durable: true }))
      assert.deepStrictEqual(current.written.map((row) => row.permits), [LIMIT])
    }))

  it.effect("a renewal of a row found gone meanwhile writes nothing: the row is not made again", () =>
    Effect.gen(function*() {
      const projectId = yield* freshProject
      const sql = yield* SqlClient.SqlClient
      yield* round("node-a", projectId, (read) => ({ keep: [taking(read, 4)], durable: true }))
      // another node found node-a gone (as a reclaim renames it)
      yield* sql`UPDATE gate_leases SET node = node || '~gone~1', gone_at = now(), permits = 0
        WHERE project_id = ${projectId} AND node = 'node-a'`
      const renewal = yield* round("node-a", projectId, (read) => ({ keep: [{ ...taking(read, 4), take: null }] }))
      assert.deepStrictEqual(renewal.written, [])
      assert.deepStrictEqual(yield* liveRows(projectId), [])
    }))

  it.effect("a gone node's row is reclaimed only if it is still gone when the round writes", () =>
    Effect.gen(function*() {
      const projectId = yield* freshProject
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO gate_leases (project_id, tag, node, permits, renewed_at)
        VALUES (${projectId}, ${ORIGIN}, 'node-x', 5, now() - interval '10 seconds')`
      const read = yield* round("node-a", projectId, () => ({}))
      assert.deepStrictEqual(read.result.leases.map((row) => row.reclaimable), [true])
      // node-x renews after that read: a write reclaiming it from the read leaves its row
      yield* sql`UPDATE gate_leases SET renewed_at = now() WHERE project_id = ${projectId} AND node = 'node-x'`
      const reclaimX = () => ({ reclaim: [{ projectId, tag: ORIGIN, node: "node-x" }] })
      yield* round("node-a", projectId, reclaimX)
      assert.deepStrictEqual(yield* liveRows(projectId), [{ node: "node-x", permits: 5 }])
      // still gone (no renewal for longer than a lease): reclaimed
      yield* sql`UPDATE gate_leases SET renewed_at = now() - interval '10 seconds' WHERE project_id = ${projectId} AND node = 'node-x'`
      yield* round("node-a", projectId, reclaimX)
      assert.deepStrictEqual(yield* liveRows(projectId), [])
    }))
})
