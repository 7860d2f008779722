// Triggers waiting for a tag gate in PostgreSQL (store/gates.ts): a release from a node's memory is a
// compare-and-set — a fired trigger still as it was fetched, or one this node took — making it
// `queued`, claimed by no node, its attempt not counted, with a gate row per tag; takes bring the
// oldest into one node's memory (claimed by it, still `queued`), never the same ones to two nodes; a
// start marks a taken one `running`; and an outcome recorded before that start committed is still
// recorded (executions.ts accepts a trigger queued under the recording node).
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../../src/domain/ids.ts"
import { executionsRecord } from "../../src/store/executions.ts"
import { gateBacklogRelease, gateBacklogStart, gateBacklogTake } from "../../src/store/gates.ts"
import { triggersRecover } from "../../src/store/schedulerQueries.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, insertTrigger, nextId, triggerRow } from "../support/fixtures.ts"

const NOW = Date.UTC(2030, 0, 1)
const A = "node-a"
const B = "node-b"

/** The trigger's updated_at in µs, as a fetch of fired triggers reads it. */
const updatedUs = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ us: string }>`SELECT (extract(epoch FROM updated_at) * 1000000)::bigint::text AS us FROM triggers WHERE id = ${id}`
  ).pipe(Effect.map((rows) => rows[0]!.us))

const slotsOf = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ tag: string; running: boolean }>`SELECT tag, running FROM gate_slots WHERE trigger_id = ${id} ORDER BY tag`)

/** A project with a policy for each tag. */
const projectWithPolicies = (tags: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const projectId = nextId()
    yield* ensureProject(projectId)
    for (const tag of tags) {
      yield* sql`INSERT INTO tag_policies (id, project_id, tag, max_concurrent, created_at, updated_at)
        VALUES (${nextId()}, ${projectId}, ${tag}, 5, now(), now())`
    }
    return projectId
  })

layer(TestDatabase, { timeout: "60 seconds" })("gate backlog in PostgreSQL", (it) => {
  it.effect("a fired trigger released waits queued with a row per gated tag; a changed one is left alone", () =>
    Effect.gen(function*() {
      const projectId = yield* projectWithPolicies(["a", "b"])
      const fired = yield* insertTrigger({ projectId, status: "registered", dueAt: new Date(NOW - 10), tags: ["a", "b", "x"] })
      const moved = yield* insertTrigger({ projectId, status: "registered", dueAt: new Date(NOW - 10), tags: ["a"] })
      const firedSeen = yield* updatedUs(fired)
      const movedSeen = yield* updatedUs(moved)
      yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE triggers SET updated_at = updated_at + interval '1 ms' WHERE id = ${moved}`)
      const released = yield* gateBacklogRelease({
        triggers: [
          { id: fired, attempt: 1, firedSeenUs: firedSeen, gateTags: ["a", "b"] },
          { id: moved, attempt: 1, firedSeenUs: movedSeen, gateTags: ["a"] }
        ],
        node: A,
        nowMs: NOW
      })
      assert.deepStrictEqual(released, [fired])
      const row = yield* triggerRow(fired)
      assert.deepStrictEqual([row.status, row.claimed_by, row.attempts], ["queued", null, 0])
      assert.deepStrictEqual(yield* slotsOf(fired), [{ tag: "a", running: false }, { tag: "b", running: false }])
      assert.strictEqual((yield* triggerRow(moved)).status, "registered")
    }))

  it.effect("takes bring the oldest into one node's memory, never the same ones to two nodes; a start marks them running", () =>
    Effect.gen(function*() {
      const projectId = yield* projectWithPolicies(["t"])
      const ids: Array<string> = []
      for (let i = 0; i < 5; i++) {
        const id = yield* insertTrigger({ projectId, status: "registered", dueAt: new Date(NOW - 10), scheduledAt: new Date(NOW - 1_000 + i), tags: ["t"] })
        // released now (a take takes none before the time it is released for)
        yield* gateBacklogRelease({ triggers: [{ id, attempt: 1, firedSeenUs: yield* updatedUs(id), gateTags: ["t"] }], node: A, nowMs: Date.now() - 1_000 })
        ids.push(id)
      }
      const [toA, toB] = yield* Effect.all([
        gateBacklogTake({ projectId, tag: "t", limit: 2, node: A, nowMs: NOW }),
        gateBacklogTake({ projectId, tag: "t", limit: 2, node: B, nowMs: NOW })
      ], { concurrency: 2 })
      const taken = [...toA!, ...toB!].map((row) => row.id)
      assert.strictEqual(new Set(taken).size, 4, "four different triggers")
      assert.sameMembers(taken, ids.slice(0, 4), "the oldest four")
      for (const row of toA!) {
        assert.deepStrictEqual([row.attempt, row.gateTags, row.fired], [1, ["t"], null])
        const stored = yield* triggerRow(row.id)
        assert.deepStrictEqual([stored.status, stored.claimed_by], ["queued", A])
      }
      // the last one is left for the next take
      assert.deepStrictEqual((yield* gateBacklogTake({ projectId, tag: "t", limit: 10, node: A, nowMs: NOW })).map((row) => row.id), [ids[4]])

      yield* gateBacklogStart({ ids: [toA![0]!.id], node: A, nowMs: NOW })
      const started = yield* triggerRow(toA![0]!.id)
      assert.deepStrictEqual([started.status, started.attempts], ["running", 1])
      assert.deepStrictEqual(yield* slotsOf(toA![0]!.id), [{ tag: "t", running: true }])
      // another node's start does not touch this node's
      yield* gateBacklogStart({ ids: [toA![1]!.id], node: B, nowMs: NOW })
      assert.strictEqual((yield* triggerRow(toA![1]!.id)).status, "queued")

      // an outcome recorded before the start committed: still recorded, its attempt counted
      const early = toA![1]!
      yield* executionsRecord({
        executions: [{
          id: uuidv7(NOW), triggerId: early.id, projectId, attempt: 1, succeeded: true, startedAtMs: NOW - 5, finishedAtMs: NOW,
          durationMs: 5, httpStatus: 200, responseHeaders: {}, responseBody: "ok", errorKind: null, errorCode: null, errorMessage: null,
          isDeadLetter: false, connectTimeoutSeconds: 10, timeoutSeconds: 30, triggeredBy: null, url: "http://127.0.0.1:9/x", scheduledAtMs: null,
          gated: true
        }],
        outcomes: [{ id: early.id, attempt: 1, firedSeenUs: null, retryAtMs: null }],
        gated: [early.id],
        node: A,
        nowMs: NOW
      })
      const done = yield* triggerRow(early.id)
      assert.deepStrictEqual([done.status, done.attempts, done.claimed_by], ["completed", 1, null])
      assert.deepStrictEqual(yield* slotsOf(early.id), [])

      // a taken trigger given back (a stopping node) waits for any node again
      assert.deepStrictEqual(yield* gateBacklogRelease({ triggers: [{ id: toB![0]!.id, attempt: 1, firedSeenUs: null, gateTags: ["t"] }], node: B, nowMs: Date.now() - 1_000 }), [toB![0]!.id])
      assert.deepStrictEqual((yield* gateBacklogTake({ projectId, tag: "t", limit: 10, node: A, nowMs: NOW })).map((row) => row.id), [toB![0]!.id])
    }))

  it.effect("a gated trigger a gone node held in memory (running, no gate row yet) is recovered to wait at its gates, not sent", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* projectWithPolicies(["g"])
      const gone = "node-gone"
      const shard = 7
      const gated = yield* insertTrigger({ projectId, shard, status: "running", attempts: 1, claimedBy: gone, dueAt: new Date(NOW - 10), tags: ["g", "x"] })
      const plain = yield* insertTrigger({ projectId, shard, status: "running", attempts: 1, claimedBy: gone, dueAt: new Date(NOW - 10), tags: ["x"] })
      // recovered at a real instant: a gate row is taken once its not_before has passed
      const recovered = yield* triggersRecover({ shard, node: A, liveNodes: [A, B], nowMs: Date.now() - 1_000 })
      // the ungated one is this node's to send; the gated one waits for any node's gate with room
      assert.deepStrictEqual(recovered.ids, [plain])
      assert.deepStrictEqual(recovered.gated, [{ projectId, gateTags: ["g"] }])
      assert.deepStrictEqual(yield* slotsOf(gated), [{ tag: "g", running: false }])
      const [row] = yield* sql<{ status: string; claimed_by: string | null }>`SELECT status, claimed_by FROM triggers WHERE id = ${gated}`
      assert.deepStrictEqual(row, { status: "queued", claimed_by: null })
      assert.deepStrictEqual((yield* gateBacklogTake({ projectId, tag: "g", limit: 10, node: B, nowMs: NOW })).map((taken) => taken.id), [gated])
    }))
})
