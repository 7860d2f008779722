// PostgreSQL itself crashes (`pg_ctl stop -m immediate` of the test's own cluster, never the machine's
// server) while the service holds deliveries it has sent: what each send depended on (its shard's
// mark for a keyless trigger, its claim for a keyed one) was committed durably before the send, so
// after the restart a cancel of a sent trigger is `410`, never `204`, and every sent trigger ends
// `completed` with its one execution, never `cancelled` with one (docs/internals.md, "The delivery
// engine"). The cluster's WAL writer is slowed to 10 s, so that only a synchronous commit flushes
// the WAL before the crash: the crash then loses every asynchronous commit made since the triggers
// were scheduled — the worst moment for a crash, made certain.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { CrashableDatabase, serviceOnPrivateCluster } from "../support/privateCluster.ts"
import { TestServer, type TestResponse } from "../support/server.ts"
import { target } from "../support/target.ts"
import { pollUntil, realSleep } from "../support/wait.ts"

/** Triggers, half of them with a custom key (claimed one by one rather than fired by the mark). */
const TRIGGERS = 40
/** The target answers each request this long after it arrived: past the crash, the restart and the cancels. */
const HOLD_MS = 9_000

const iso = (ms: number) => new Date(ms).toISOString()

layer(serviceOnPrivateCluster({ wal_writer_delay: "10s" }), { timeout: "120 seconds" })("PostgreSQL crashed under deliveries", (it) => {
  it.effect("a trigger sent before the crash answers 410 to a cancel after it, and ends completed with its execution", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const { cluster, database } = yield* CrashableDatabase
      const t = yield* target
      t.reply("/held", { status: 200, delayMs: HOLD_MS })
      const auth = { "ttr-api-key": yield* server.newKey() }
      const dueMs = Date.now() + 1_500
      const ids: Array<string> = []
      for (let i = 0; i < TRIGGERS; i++) {
        const response = yield* server.call("POST", "/schedule", {
          headers: {
            ...auth, "ttr-url": `${t.origin}/held?n=${i}`, "ttr-scheduled-at": iso(dueMs + i * 5),
            ...(i % 2 === 0 ? {} : { "ttr-custom-key": `key-${i}` })
          }
        })
        assert.strictEqual(response.status, 200, response.text)
        ids.push(response.json().triggerId)
      }
      // every request reached the target, which holds it: sent, nothing of it recorded yet
      yield* pollUntil("every request at the target", Effect.sync(() => (t.at("/held").length >= TRIGGERS ? true : undefined)))

      yield* Effect.promise(() => cluster.stop("immediate"))
      yield* Effect.promise(() => cluster.start())

      // each trigger is cancelled as soon as the API answers (503 while the service reconnects)
      const cancel = (id: string) =>
        pollUntil(`an answer to the cancel of ${id}`, Effect.map(
          server.call("DELETE", "/cancel", { headers: { ...auth, "ttr-trigger-id": id } }),
          (response): TestResponse | undefined => (response.status === 503 ? undefined : response)
        ), { deadlineMs: 30_000, everyMs: 10 })
      const answers = yield* Effect.forEach(ids, cancel, { concurrency: "unbounded" })
      assert.deepStrictEqual(
        answers.map((response, i) => [ids[i], response.status]).filter(([, status]) => status !== 410),
        [],
        "a cancel of a sent trigger is 410 (it is running)"
      )

      // the target answers; each outcome is recorded on its trigger
      const states = yield* pollUntil("every outcome recorded", Effect.promise(async () => {
        const rows = await cluster.query<{ id: string; status: string; attempts: number; executions: number; succeeded: number }>(database,
          `SELECT t.id, t.status, t.attempts, count(x.id)::int AS executions, count(x.id) FILTER (WHERE x.status = 'succeeded')::int AS succeeded
           FROM triggers t LEFT JOIN executions x ON x.trigger_id = t.id GROUP BY t.id`)
        return rows.every((row) => row.status !== "running" && row.status !== "registered") ? rows : undefined
      }).pipe(Effect.catchCause(() => Effect.succeed(undefined))), { deadlineMs: HOLD_MS + 20_000, everyMs: 200 })
      const wrong = states.filter((row) => row.status !== "completed" || row.attempts !== 1 || row.executions !== 1 || row.succeeded !== 1)
      assert.deepStrictEqual(wrong, [], "every trigger completed, one attempt, one succeeded execution; none cancelled with an execution")
      // the window of silence is the assertion here: nothing is sent a second time once recorded
      yield* realSleep(500)
      assert.strictEqual(t.at("/held").length, TRIGGERS, "each request was sent once")
    }))
})
