// How long the migration "executions partitioned by day" (docs/operations.md "Upgrading to
// partitioned executions") blocks writes: on a fresh database at the schema before it, N executions
// over the last 30 days (10 per trigger), then a writer inserting one execution at a time on its own
// connection, timed, while the migrations run. Prints the migration's duration, the writer's
// latency before it and its longest insert during it (the time writes were blocked). Bounded.
//   DATABASE_URL=postgres://… npx node scripts/partitionMigration/main.ts [--rows 1000000]
import { PgClient } from "@effect/sql-pg"
import { Effect, Fiber, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as crypto from "node:crypto"
import { uuidv7 } from "../../src/domain/ids.ts"
import { migrate } from "../../src/store/db.ts"
import { MIGRATIONS } from "../../src/store/schema.ts"

/** The migration that partitions executions by day. */
const PARTITIONING = MIGRATIONS.find((m) => m.name === "executions partitioned by day")!.version

const serverUrl = process.env.DATABASE_URL
if (serverUrl === undefined || serverUrl === "") throw new Error("set DATABASE_URL (a server where this role may CREATE DATABASE)")
const rowsArg = process.argv.indexOf("--rows")
const ROWS = rowsArg > 0 ? Number(process.argv[rowsArg + 1]) : 1_000_000
const DAY_MS = 86_400_000

const name = `tw_partmig_${crypto.randomBytes(4).toString("hex")}`
const pool = (url: string, max: number) => PgClient.layer({ url: Redacted.make(url), maxConnections: max })
const admin = (statement: string) =>
  Effect.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)).pipe(Effect.provide(pool(serverUrl, 1))))

const url = new URL(serverUrl)
url.pathname = `/${name}`
const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN
}

await admin(`CREATE DATABASE ${name}`)
try {
  const project = crypto.randomUUID()
  const triggers = Math.ceil(ROWS / 10)
  const setup = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* migrate({ shards: 4, nowMs: Date.now(), migrations: MIGRATIONS.filter((m) => m.version < PARTITIONING) })
    yield* sql`INSERT INTO projects (id, name, monthly_quota, retry_policy, created_at, updated_at)
      VALUES (${project}, 'bench', 0, '{}'::jsonb, now(), now())`
    yield* sql`INSERT INTO triggers (id, project_id, kind, shard, status, url, method, headers, attempts, created_at, updated_at)
      SELECT gen_random_uuid(), ${project}, 'job', g % 4, 'completed', 'https://example.test/hook', 'POST', '[]', 10, now(), now()
      FROM generate_series(1, ${triggers}) AS g`
    const start = Date.now() - 30 * DAY_MS
    yield* sql`INSERT INTO executions (id, trigger_id, project_id, attempt, status, started_at, finished_at, duration_ms, http_status,
        response_headers, response_body, connect_timeout_seconds, timeout_seconds, url)
      SELECT (lpad(to_hex(${start}::bigint + (n::bigint * ${Math.floor(30 * DAY_MS / ROWS)})), 12, '0') || '7' || substr(md5(n::text), 1, 3)
          || '8' || substr(md5(n::text), 4, 15))::uuid,
        t.id, ${project}, a, 'succeeded', now(), now(), 40, 200, '{"content-type":"application/json"}', '{"ok":true}', 10, 30,
        'https://example.test/hook'
      FROM (SELECT id, row_number() OVER () AS r FROM triggers) t, generate_series(1, 10) AS a, LATERAL (SELECT (t.r - 1) * 10 + a AS n) x
      WHERE n <= ${ROWS}`
    yield* sql`VACUUM ANALYZE executions`.pipe(Effect.ignore)
    const size = yield* sql<{ rows: string; bytes: string }>`
      SELECT count(*)::text AS rows, pg_size_pretty(pg_total_relation_size('executions')) AS bytes FROM executions`
    return { trigger: (yield* sql<{ id: string }>`SELECT id FROM triggers LIMIT 1`)[0]!.id, ...size[0]! }
  })
  const made = await Effect.runPromise(setup.pipe(Effect.provide(pool(url.toString(), 2))))
  console.log(`executions: ${made.rows} rows, ${made.bytes} with indexes`)

  // the writer: one insert at a time, as delivery records; timed
  const timings: Array<{ at: number; ms: number }> = []
  let attempt = 0
  const writer = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (;;) {
      const t0 = performance.now()
      yield* sql`INSERT INTO executions (id, trigger_id, project_id, attempt, status, started_at, finished_at, duration_ms,
          connect_timeout_seconds, timeout_seconds, url)
        VALUES (${uuidv7(Date.now())}, ${made.trigger}, ${project}, ${1000 + ++attempt}, 'succeeded', now(), now(), 1, 10, 30, 'https://example.test/hook')`
      timings.push({ at: t0, ms: performance.now() - t0 })
      yield* Effect.sleep(5)
    }
  }).pipe(Effect.provide(pool(url.toString(), 1)))

  const result = await Effect.runPromise(Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(writer)
    yield* Effect.sleep(2_000)
    const t0 = performance.now()
    yield* migrate({ shards: 4, nowMs: Date.now() }).pipe(Effect.provide(pool(url.toString(), 1)))
    const t1 = performance.now()
    yield* Effect.sleep(2_000)
    yield* Fiber.interrupt(fiber)
    return { t0, t1 }
  }))
  const before = timings.filter((x) => x.at < result.t0 - 10).map((x) => x.ms)
  const during = timings.filter((x) => x.at + x.ms >= result.t0 && x.at <= result.t1).map((x) => x.ms)
  const after = timings.filter((x) => x.at > result.t1 + 10).map((x) => x.ms)
  console.log(`migration ${PARTITIONING}: ${(result.t1 - result.t0).toFixed(0)} ms`)
  console.log(`writer before: ${before.length} inserts, p50 ${percentile(before, 0.5).toFixed(1)} ms, max ${Math.max(...before).toFixed(1)} ms`)
  console.log(`writer during: ${during.length} inserts, longest ${Math.max(...during).toFixed(0)} ms (writes blocked)`)
  console.log(`writer after: ${after.length} inserts, p50 ${percentile(after, 0.5).toFixed(1)} ms, max ${Math.max(...after).toFixed(1)} ms`)
} finally {
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
}
