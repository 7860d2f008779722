// A node sends again its own claims it has lost track of (docs/internals.md "The delivery engine"): a
// claim whose commit landed while its answer was lost leaves a trigger running (or queued to start)
// under a live node that holds nothing of it; no other node recovers a live node's claims. Here the
// real service's trigger is put in that state by hand, as a crash would leave it, and the node sends
// it within two passes, its started attempt recorded as interrupted. A trigger the node does hold
// (in flight to a slow target across several passes) is not sent twice.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { NodeIdentity } from "../../src/cluster/node.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { arrivalsAt, target } from "../support/target.ts"
import { pollUntil, realSleep } from "../support/wait.ts"

const project = Effect.gen(function*() {
  const server = yield* TestServer
  const headers = { "ttr-api-key": yield* server.newKey() }
  return {
    schedule: (url: string, scheduledAt: string, extra: Record<string, string> = {}) =>
      Effect.map(server.call("POST", "/schedule", { headers: { ...headers, "ttr-url": url, "ttr-scheduled-at": scheduledAt, ...extra } }),
        (response) => {
          assert.strictEqual(response.status, 200, response.text)
          return response.json().triggerId as string
        }),
    executions: (id: string) =>
      Effect.map(server.call("GET", `/jobs/${id}/executions`, { headers }), (r) => r.json().executions as Array<any>)
  }
})

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString()

layer(testServerLayer(), { timeout: "90 seconds", excludeTestServices: true })("claims a live node lost track of", (it) => {
  it.effect("a running claim and a queued one of this node, held by nothing, are sent again; the running one's attempt is recorded as interrupted", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* target
      const p = yield* project
      const sql = yield* SqlClient.SqlClient
      const node = (yield* NodeIdentity).id
      const running = yield* p.schedule(`${t.origin}/running`, inAnHour())
      const queued = yield* p.schedule(`${t.origin}/queued`, inAnHour())
      // as a crash leaves them: the claim (and a recovery's requeue) committed, the answers lost
      yield* sql`UPDATE triggers SET status = 'running', attempts = 1, claimed_by = ${node}, claimed_at = now() WHERE id = ${running}`
      yield* sql`UPDATE triggers SET status = 'queued', claimed_by = ${node}, claimed_at = now() WHERE id = ${queued}`
      yield* arrivalsAt(t, "/running", 1)
      yield* arrivalsAt(t, "/queued", 1)
      const runningLog = yield* pollUntil("the running one's log", Effect.map(p.executions(running), (all) => all.length === 2 ? all : undefined),
        { deadlineMs: 30_000 })
      assert.deepStrictEqual(
        runningLog.map((e) => ({ attempt: e.attempt, status: e.status, errorKind: e.errorKind ?? null, errorCode: e.errorCode ?? null })).sort((a, b) => a.attempt - b.attempt),
        [
          { attempt: 1, status: "failed", errorKind: "unknown", errorCode: "INTERRUPTED" },
          { attempt: 2, status: "succeeded", errorKind: null, errorCode: null }
        ]
      )
      const queuedLog = yield* pollUntil("the queued one's log", Effect.map(p.executions(queued), (all) => all.length === 1 ? all : undefined),
        { deadlineMs: 30_000 })
      assert.deepStrictEqual(queuedLog.map((e) => ({ attempt: e.attempt, status: e.status })), [{ attempt: 1, status: "succeeded" }])
    })), { timeout: 60_000 })

  it.effect("a claim the node holds across several passes (keyed, to a slow target) is sent once", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* target
      const p = yield* project
      t.reply("/slow", { status: 200, delayMs: 12_000 })
      // keyed: claimed (running under this node) rather than covered by its shard's mark
      const id = yield* p.schedule(`${t.origin}/slow`, "now", { "ttr-custom-key": "slow-one" })
      const log = yield* pollUntil("its outcome", Effect.map(p.executions(id), (all) => all.length > 0 ? all : undefined), { deadlineMs: 30_000 })
      // nothing more comes in the window of two more passes
      yield* realSleep(11_000)
      assert.strictEqual(t.at("/slow").length, 1)
      assert.deepStrictEqual(log.map((e) => ({ attempt: e.attempt, status: e.status })), [{ attempt: 1, status: "succeeded" }])
    })), { timeout: 60_000 })
})
