// Faults of the database under a running service (docs/cluster.md "After a database restart"): the
// shard-lock session killed with pg_terminate_backend is replaced and the shards taken again, while the
// node never recovers the deliveries it still holds; execution records are retried until the database
// takes them (here: their table is away for a while); and no trigger is sent early.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { SHARDS_IN_TESTS } from "../support/database.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { pollUntil, realSleep, target } from "../support/target.ts"

/** First key of the service's two-int advisory locks (store/shardLocks.ts). */
const LOCK_NAMESPACE = 0x7477

/** Backends of this database holding shard locks, with how many each holds. */
const lockHolders = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ pid: number; locks: number }>`
    SELECT pid, count(*)::int AS locks FROM pg_locks
    WHERE locktype = 'advisory' AND classid = ${LOCK_NAMESPACE} AND granted
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    GROUP BY pid`
})

const project = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const schedule = (url: string, scheduledAt: string) =>
    Effect.map(server.call("POST", "/schedule", { headers: { "ttr-api-key": key, "ttr-url": url, "ttr-scheduled-at": scheduledAt } }), (r) => {
      assert.strictEqual(r.status, 200, r.text)
      return r.json() as { triggerId: string; scheduledAt: string }
    })
  const executions = (id: string) =>
    Effect.map(server.call("GET", `/jobs/${id}/executions`, { headers: { "ttr-api-key": key } }), (r) => r.json().executions as Array<any>)
  const job = (id: string) => Effect.map(server.call("GET", `/jobs/${id}`, { headers: { "ttr-api-key": key } }), (r) => r.json())
  return { schedule, executions, job }
})

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("database faults", (it) => {
  describe("the shard-lock session", () => {
    it.effect("killed: a new session takes every shard again, and the deliveries in flight are not sent twice", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const p = yield* project
        const t = yield* target
        t.reply("/hang", "hang")
        const ids = [] as Array<string>
        for (let i = 0; i < 5; i++) ids.push((yield* p.schedule(`${t.origin}/hang?i=${i}`, "now")).triggerId)
        yield* pollUntil("the deliveries to reach the target", Effect.sync(() => (t.at("/hang").length === 5 ? true : undefined)))

        const [holder] = yield* pollUntil("the shards to be locked", Effect.map(lockHolders, (rows) =>
          rows.length === 1 && rows[0]!.locks === SHARDS_IN_TESTS ? rows : undefined))
        yield* sql`SELECT pg_terminate_backend(${holder!.pid})`

        // re-acquisition, on a new session
        yield* pollUntil("a new session to hold every shard", Effect.map(lockHolders, (rows) =>
          rows.length === 1 && rows[0]!.pid !== holder!.pid && rows[0]!.locks === SHARDS_IN_TESTS ? true : undefined), { deadlineMs: 10_000 })
        // the new shard actors ran their recovery at start: nothing of this live node was taken back
        yield* realSleep(500)
        assert.strictEqual(t.at("/hang").length, 5, "no delivery was sent twice")
        for (const id of ids) {
          assert.strictEqual((yield* p.job(id)).status, "running")
          assert.deepStrictEqual(yield* p.executions(id), [])
        }
      }))
  })

  describe("execution records", () => {
    it.effect("are retried until the database takes them: the executions table away for 2 s loses nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const p = yield* project
        const t = yield* target
        yield* sql`ALTER TABLE executions RENAME TO executions_away`
        const restore = sql`ALTER TABLE executions_away RENAME TO executions`
        const { triggerId } = yield* p.schedule(`${t.origin}/recorded`, "now").pipe(Effect.onError(() => Effect.ignore(restore)))
        yield* pollUntil("the delivery", Effect.sync(() => (t.at("/recorded").length === 1 ? true : undefined)))
          .pipe(Effect.onError(() => Effect.ignore(restore)))
        yield* realSleep(2_000) // every attempt to record it fails meanwhile
        assert.strictEqual((yield* p.job(triggerId)).status, "running")
        yield* restore
        const executions = yield* pollUntil("the execution to be recorded", Effect.map(p.executions(triggerId), (rows) =>
          rows.length === 1 ? rows : undefined), { deadlineMs: 15_000 })
        assert.strictEqual(executions[0].status, "succeeded")
        assert.strictEqual(executions[0].attempt, 1)
        assert.strictEqual((yield* p.job(triggerId)).status, "completed")
        assert.strictEqual(t.at("/recorded").length, 1)
      }))
  })

  describe("never early", () => {
    it.effect("200 triggers due at distinct milliseconds over 1.5 s each arrive at or after their time", () =>
      Effect.gen(function*() {
        const p = yield* project
        const t = yield* target
        // far enough ahead that the 200 calls end before the first is due on a loaded machine (a
        // one-shot scheduled past its time is skipped, and would never arrive)
        const t0 = Date.now() + 5_000
        const due = new Map<string, number>()
        for (let i = 0; i < 200; i++) {
          const atMs = t0 + Math.round((i * 1_500) / 200) + (i % 7)
          yield* p.schedule(`${t.origin}/due?i=${i}`, new Date(atMs).toISOString())
          due.set(`/due?i=${i}`, atMs)
        }
        yield* pollUntil("every trigger", Effect.sync(() => (t.at("/due").length === 200 ? true : undefined)), { deadlineMs: 25_000 })
        const early = t.at("/due").filter((arrival) => arrival.arrivedAtMs < due.get(arrival.url)!)
          .map((arrival) => `${arrival.url} ${due.get(arrival.url)! - arrival.arrivedAtMs} ms early`)
        assert.deepStrictEqual(early, [])
      }))
  })
})
