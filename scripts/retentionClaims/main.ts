// Claims while retention deletes (docs/operations.md "Retention"): on a fresh database, N finished
// triggers past the retention cutoff (each with two executions) and a steady stream of due triggers; a
// claimer takes 200 due triggers every 50 ms with the scheduler's own claim statement and times each
// claim. Phases of 15 s: no retention, retention as the service runs it (batches of 500, paced to RETENTION_BUSY_PERCENT),
// no retention again, then retention in one-shot batches of 20,000 with no pause (what the batching
// avoids). Prints claim p50/p99/max per phase and the deletion rate. Bounded: it stops by itself.
//   DATABASE_URL=postgres://… npx node scripts/retentionClaims/main.ts [--finished 200000]
import { PgClient } from "@effect/sql-pg"
import { Effect, Fiber, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as crypto from "node:crypto"
import { sweep } from "../../src/scheduler/housekeeping.ts"
import { migrate } from "../../src/store/db.ts"
import { triggersClaim } from "../../src/store/schedulerQueries.ts"

const serverUrl = process.env.DATABASE_URL
if (serverUrl === undefined || serverUrl === "") throw new Error("set DATABASE_URL (a server where this role may CREATE DATABASE)")
const finishedArg = process.argv.indexOf("--finished")
const FINISHED = finishedArg > 0 ? Number(process.argv[finishedArg + 1]) : 200_000
const PHASE_MS = 15_000
const CLAIM_EVERY_MS = 50
const CLAIM_SIZE = 200

const name = `tw_retention_${crypto.randomBytes(4).toString("hex")}`
const admin = (statement: string) =>
  Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(statement)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(serverUrl), maxConnections: 1 }))))

const quantile = (sorted: ReadonlyArray<number>, q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0

const program = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const nowMs = Date.now()
  yield* migrate({ shards: 64, nowMs })
  const project = "00000000-0000-7000-8000-000000000001"
  yield* sql`INSERT INTO projects (id, name, monthly_quota, retry_policy, created_at, updated_at)
    VALUES (${project}, 'retention', 0, '{}'::jsonb, now(), now())`
  // finished triggers 40 to 31 days old, two executions each
  yield* sql`INSERT INTO triggers (id, project_id, kind, shard, status, scheduled_at, url, method, headers, body, created_at, updated_at)
    SELECT gen_random_uuid(), ${project}, 'job', g % 64, (ARRAY['completed','cancelled','skipped'])[1 + g % 3],
      now() - interval '35 days', 'http://127.0.0.1:9/hook', 'POST', '[["content-type","application/json"]]'::jsonb,
      convert_to(repeat('x', 200), 'UTF8'), now() - interval '40 days',
      now() - interval '31 days' - (g || ' seconds')::interval
    FROM generate_series(1, ${FINISHED}) g`
  yield* sql`INSERT INTO executions (id, trigger_id, project_id, attempt, status, started_at, finished_at, duration_ms,
      http_status, response_body, connect_timeout_seconds, timeout_seconds, url)
    SELECT gen_random_uuid(), t.id, t.project_id, a, 'succeeded', t.updated_at, t.updated_at, 12, 200, 'ok', 10, 300, t.url
    FROM triggers t CROSS JOIN generate_series(1, 2) a`
  // the due stream: enough registered triggers for every claim of the run
  const due = Math.ceil((4 * PHASE_MS) / CLAIM_EVERY_MS) * CLAIM_SIZE
  yield* sql`INSERT INTO triggers (id, project_id, kind, shard, status, scheduled_at, due_at, url, method, headers, body, created_at, updated_at)
    SELECT gen_random_uuid(), ${project}, 'job', g % 64, 'registered', now(), now(), 'http://127.0.0.1:9/hook', 'POST',
      '[]'::jsonb, convert_to('{}', 'UTF8'), now(), now()
    FROM generate_series(1, ${due}) g`
  yield* sql`VACUUM ANALYZE triggers`
  yield* sql`VACUUM ANALYZE executions`
  const ids = (yield* sql<{ id: string }>`SELECT id FROM triggers WHERE status = 'registered'`).map((row) => row.id)
  let next = 0

  const claimFor = (ms: number) =>
    Effect.gen(function*() {
      const latencies: Array<number> = []
      const end = Date.now() + ms
      while (Date.now() < end) {
        const batch = ids.slice(next, next + CLAIM_SIZE)
        next += CLAIM_SIZE
        const started = performance.now()
        yield* triggersClaim({ ids: batch, untilMs: Date.now() + 10, node: "measure", nowMs: Date.now() })
        latencies.push(performance.now() - started)
        yield* Effect.sleep(CLAIM_EVERY_MS)
      }
      return latencies.sort((a, b) => a - b)
    })
  const countFinished = Effect.map(
    sql<{ n: string }>`SELECT count(*)::text AS n FROM triggers WHERE status IN ('completed', 'cancelled', 'skipped')`,
    (rows) => Number(rows[0]!.n)
  )
  const phase = (label: string, retention?: { readonly batchSize?: number; readonly busyPercent?: number }) =>
    Effect.gen(function*() {
      const before = yield* countFinished
      const deleting = retention === undefined
        ? undefined
        : yield* Effect.forkChild(Effect.forever(sweep({ retentionDays: 30, ...retention })))
      const latencies = yield* claimFor(PHASE_MS)
      if (deleting !== undefined) yield* Fiber.interrupt(deleting)
      const deleted = before - (yield* countFinished)
      console.log(JSON.stringify({
        phase: label, claims: latencies.length, claimRows: CLAIM_SIZE,
        claimMs: { p50: +quantile(latencies, 0.5).toFixed(1), p99: +quantile(latencies, 0.99).toFixed(1), max: +latencies.at(-1)!.toFixed(1) },
        deletedTriggers: deleted, deletedPerSecond: Math.round(deleted / (PHASE_MS / 1000))
      }))
    })
  console.log(JSON.stringify({ finishedTriggers: FINISHED, executionsEach: 2, dueTriggers: due, phaseSeconds: PHASE_MS / 1000 }))
  yield* phase("no retention")
  yield* phase("retention: batches of 500, paced (the service's)", {})
  yield* phase("no retention")
  yield* phase("retention: batches of 20000, no pause", { batchSize: 20_000, busyPercent: 100 })
})

await admin(`CREATE DATABASE ${name}`)
try {
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  await Effect.runPromise(program.pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url.toString()), maxConnections: 4 }))))
} finally {
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
}
