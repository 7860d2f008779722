// The retention workload (timewheel's store only, no service; docs/operations.md "Retention"): a
// database holding HISTORY_DAYS days of history, made in SQL (per day, `perDay` finished triggers made that
// day with EXECUTIONS_PER_TRIGGER attempts each, UUIDv7-shaped ids of that day), copied once (CREATE
// DATABASE … TEMPLATE) so both ways of removing the oldest DROP_DAYS days start from the same rows:
// - drop: executionPartitionsDropBefore, as housekeeping does it (whole day partitions dropped);
// - delete: one plain DELETE of the same executions (by id, the same range), the reference.
// Each is followed by the deletion of those days' finished triggers (retention's batches of
// RETENTION_BATCH, without its pauses). Meanwhile a steady write load stands in for delivery: every
// 10 ms, 10 triggers made and their execution recorded in one statement (1,000 a second), each
// batch's lateness = when it finished - when it was due. Reported per way: the time and WAL bytes of
// the executions' removal and of the triggers', the load's lateness p99 before and during them, and
// the tables' size (with indexes) before and after; the bytes per stored trigger and per execution.
//   npm run bench -- --only retention [--retention-per-day 6250]   (the full scale: 125000)
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { percentile, sleep, sortedCopy } from "./common.ts"
import { type DatabaseServer, freshDatabase, query } from "./database.ts"
import { uuidFloor } from "../../src/domain/executionDays.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { migrate } from "../../src/store/db.ts"
import { executionPartitionsDropBefore } from "../../src/store/executionPartitions.ts"
import { retentionSessionOpen } from "../../src/store/retention.ts"
import { RETENTION_BATCH } from "../../src/scheduler/housekeeping.ts"
import { DEFAULTS } from "../../src/config.ts"

export const RETENTION_DEFAULT_PER_DAY = 6_250
export const HISTORY_DAYS = 40
const DROP_DAYS = 10
const EXECUTIONS_PER_TRIGGER = 4
const DAY_MS = 86_400_000
const PROJECT = "00000000-0000-7000-8000-00000000be0c"
const LOAD_EVERY_MS = 10
const LOAD_BATCH = 10
/** Of the load alone, before the removal starts. */
const BASELINE_MS = 10_000

export interface RetentionWay {
  readonly way: "drop" | "delete"
  readonly executionsMs: number
  readonly executionsWalBytes: number
  readonly triggersMs: number
  readonly triggersWalBytes: number
  readonly latenessBeforeP99Ms: number
  readonly latenessDuringP99Ms: number
  readonly latenessDuringMaxMs: number
  readonly executionsBytesBefore: number
  readonly executionsBytesAfter: number
  readonly triggersBytesBefore: number
  readonly triggersBytesAfter: number
}

export interface RetentionMetrics {
  readonly perDay: number
  readonly triggers: number
  readonly executions: number
  readonly generateMs: number
  readonly bytesPerTrigger: number
  readonly bytesPerExecution: number
  readonly ways: ReadonlyArray<RetentionWay>
}

const run = <A>(url: string, max: number, effect: Effect.Effect<A, unknown, SqlClient.SqlClient>) =>
  Effect.runPromise(effect.pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: max }))) as Effect.Effect<A>)

/** A UUIDv7-shaped id at the ms `ms` (an SQL bigint expression), its random bits from `seed` (SQL text). */
const v7 = (ms: string, seed: string) =>
  `(lpad(to_hex(${ms}), 12, '0') || '7' || substr(md5(${seed}), 1, 3) || '8' || substr(md5(${seed}), 4, 15))::uuid`

/** The day partitions from `from` days ago to 3 ahead instead of the one from before partitioning (empty). */
const dayPartitions = (todayMs: number) => `DO $$
DECLARE d int; day bigint; name text;
BEGIN
  FOR name IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'executions'::regclass AND c.relname LIKE 'executions_until_%' LOOP
    EXECUTE format('ALTER TABLE executions DETACH PARTITION %I', name);
    EXECUTE format('DROP TABLE %I', name);
  END LOOP;
  FOR d IN -${HISTORY_DAYS}..3 LOOP
    day := ${todayMs}::bigint + d * ${DAY_MS}::bigint;
    name := 'executions_' || to_char(to_timestamp(day / 1000) AT TIME ZONE 'UTC', 'YYYYMMDD');
    EXECUTE format('CREATE TABLE %I (LIKE executions INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', name);
    EXECUTE format('ALTER TABLE executions ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', name,
      (lpad(to_hex(day), 12, '0') || '00000000000000000000')::uuid, (lpad(to_hex(day + ${DAY_MS}), 12, '0') || '00000000000000000000')::uuid);
  END LOOP;
END $$`

/** One day of history: its triggers (finished a minute after being made) and their attempts, 30 s apart. */
const historyDay = (dayMs: number, perDay: number) => [
  `INSERT INTO triggers (id, project_id, kind, shard, status, url, method, headers, attempts, created_at, updated_at)
    SELECT ${v7("ms", "n::text")}, '${PROJECT}', 'job', n % 4, 'completed', 'https://example.test/hook', 'POST', '[]',
      ${EXECUTIONS_PER_TRIGGER}, to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0 + 60)
    FROM (SELECT n, ${dayMs}::bigint + n::bigint * ${Math.floor((DAY_MS - 200_000) / perDay)} AS ms FROM generate_series(0, ${perDay - 1}) AS n) x`,
  `INSERT INTO executions (id, trigger_id, project_id, attempt, status, started_at, finished_at, duration_ms, http_status,
      response_headers, response_body, connect_timeout_seconds, timeout_seconds, url)
    SELECT ${v7("ms + a * 30000", "n::text || '-' || a")}, ${v7("ms", "n::text")}, '${PROJECT}', a,
      CASE WHEN a = ${EXECUTIONS_PER_TRIGGER} THEN 'succeeded' ELSE 'failed' END,
      to_timestamp((ms + a * 30000) / 1000.0), to_timestamp((ms + a * 30000 + 40) / 1000.0), 40,
      CASE WHEN a = ${EXECUTIONS_PER_TRIGGER} THEN 200 ELSE 503 END, '{"content-type":"application/json"}',
      CASE WHEN a = ${EXECUTIONS_PER_TRIGGER} THEN '{"ok":true}' ELSE '{"error":"unavailable"}' END, 10, 30, 'https://example.test/hook'
    FROM (SELECT n, ${dayMs}::bigint + n::bigint * ${Math.floor((DAY_MS - 200_000) / perDay)} AS ms FROM generate_series(0, ${perDay - 1}) AS n) x,
      generate_series(1, ${EXECUTIONS_PER_TRIGGER}) AS a`
]

/**
 * On a migrated database: the day partitions, a project, and HISTORY_DAYS days of history before `todayMs`
 * (`perDay` finished triggers a day, EXECUTIONS_PER_TRIGGER attempts each), vacuumed and analyzed.
 */
export const historyFill = (todayMs: number, perDay: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(dayPartitions(todayMs))
    yield* sql`INSERT INTO projects (id, name, monthly_quota, retry_policy, created_at, updated_at)
      VALUES (${PROJECT}, 'history', 0, '{}'::jsonb, now(), now())`
    for (let d = HISTORY_DAYS; d >= 1; d--) {
      for (const statement of historyDay(todayMs - d * DAY_MS, perDay)) yield* sql.unsafe(statement)
    }
    yield* sql`VACUUM ANALYZE`
  })

/**
 * The service's database, migrated as the service does it (SHARDS default) and holding HISTORY_DAYS days of
 * history (historyFill), before the service starts on it (the delivery and precision workloads'
 * --history-per-day); the time it took.
 */
export const historyPrepare = async (url: string, perDay: number): Promise<number> => {
  const t0 = performance.now()
  const todayMs = Math.floor(Date.now() / DAY_MS) * DAY_MS
  await run(url, 1, Effect.andThen(migrate({ shards: DEFAULTS.SHARDS, nowMs: Date.now() }), historyFill(todayMs, perDay)))
  return Math.round(performance.now() - t0)
}

const sizes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ executions: string; triggers: string; e: string; t: string }>`
    SELECT (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('executions'))::text AS executions,
      pg_total_relation_size('triggers')::text AS triggers,
      (SELECT count(*) FROM executions)::text AS e, (SELECT count(*) FROM triggers)::text AS t`
  return { executions: Number(rows[0]!.executions), triggers: Number(rows[0]!.triggers), e: Number(rows[0]!.e), t: Number(rows[0]!.t) }
})

const walLsn = Effect.map(
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ lsn: string }>`SELECT pg_current_wal_lsn()::text AS lsn`),
  (rows) => rows[0]!.lsn
)
const walSince = (from: string) =>
  Effect.map(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ bytes: string }>`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), ${from}::pg_lsn)::text AS bytes`),
    (rows) => Number(rows[0]!.bytes)
  )

/** The stand-in for delivery: LOAD_BATCH triggers and their execution every LOAD_EVERY_MS, on a pool of its own. */
const startLoad = (url: string) => {
  const lateness: Array<{ at: number; ms: number }> = []
  let stopped = false
  const done = run(url, 4, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const start = performance.now()
    const inFlight = new Set<Promise<unknown>>()
    for (let i = 0; !stopped; i++) {
      const due = start + i * LOAD_EVERY_MS
      const wait = due - performance.now()
      if (wait > 0) yield* Effect.sleep(wait)
      const now = Date.now()
      const ids = Array.from({ length: LOAD_BATCH }, () => uuidv7(now))
      const executions = ids.map(() => uuidv7(now))
      const batch = Effect.runPromise(sql`WITH t AS (
          INSERT INTO triggers (id, project_id, kind, shard, status, url, method, headers, attempts, created_at, updated_at)
          SELECT id, ${PROJECT}, 'job', 0, 'completed', 'https://example.test/hook', 'POST', '[]', 1, now(), now()
          FROM unnest(${ids}::uuid[]) AS id RETURNING id)
        INSERT INTO executions (id, trigger_id, project_id, attempt, status, started_at, finished_at, duration_ms, http_status,
          connect_timeout_seconds, timeout_seconds, url)
        SELECT e, t, ${PROJECT}, 1, 'succeeded', now(), now(), 40, 200, 10, 30, 'https://example.test/hook'
        FROM unnest(${executions}::uuid[], ${ids}::uuid[]) AS x(e, t)`.pipe(Effect.provideService(SqlClient.SqlClient, sql)))
        .then(() => lateness.push({ at: due, ms: performance.now() - due }))
      inFlight.add(batch)
      void batch.finally(() => inFlight.delete(batch))
    }
    yield* Effect.promise(() => Promise.all([...inFlight]))
  }))
  return { lateness, stop: async () => { stopped = true; await done } }
}

const p99Of = (values: ReadonlyArray<number>) => Math.round(percentile(sortedCopy(values), 99) * 10) / 10

/** Removes the oldest DROP_DAYS days one way, under the load; its figures. */
const removeOldest = async (url: string, way: "drop" | "delete", cutoffMs: number): Promise<RetentionWay> => {
  const before = await run(url, 1, sizes)
  const load = startLoad(url)
  await sleep(BASELINE_MS)
  const t0 = performance.now()
  const removal = await run(url, 2, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lsn0 = yield* walLsn
    const s0 = performance.now()
    if (way === "drop") yield* executionPartitionsDropBefore(cutoffMs)
    else yield* sql`DELETE FROM executions WHERE id < ${uuidFloor(cutoffMs)}::uuid`
    const executionsMs = performance.now() - s0
    const executionsWalBytes = yield* walSince(lsn0)
    const lsn1 = yield* walLsn
    const s1 = performance.now()
    yield* Effect.scoped(Effect.gen(function*() {
      const session = (yield* retentionSessionOpen)!
      while ((yield* session.deleteBatch({ beforeMs: cutoffMs, limit: RETENTION_BATCH })) === RETENTION_BATCH) { /* next batch */ }
    }))
    return { executionsMs, executionsWalBytes, triggersMs: performance.now() - s1, triggersWalBytes: yield* walSince(lsn1) }
  }))
  const t1 = performance.now()
  await sleep(1_000)
  await load.stop()
  await run(url, 1, Effect.flatMap(SqlClient.SqlClient, (sql) => sql`VACUUM triggers`).pipe(Effect.andThen(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql`VACUUM executions`))))
  const after = await run(url, 1, sizes)
  const baseline = load.lateness.filter((x) => x.at < t0).map((x) => x.ms)
  const during = load.lateness.filter((x) => x.at >= t0 && x.at <= t1).map((x) => x.ms)
  return {
    way,
    executionsMs: Math.round(removal.executionsMs),
    executionsWalBytes: removal.executionsWalBytes,
    triggersMs: Math.round(removal.triggersMs),
    triggersWalBytes: removal.triggersWalBytes,
    latenessBeforeP99Ms: p99Of(baseline),
    latenessDuringP99Ms: p99Of(during),
    latenessDuringMaxMs: Math.round(Math.max(0, ...during)),
    executionsBytesBefore: before.executions,
    executionsBytesAfter: after.executions,
    triggersBytesBefore: before.triggers,
    triggersBytesAfter: after.triggers
  }
}

export const runRetention = async (server: DatabaseServer, perDay: number, say: (line: string) => void): Promise<RetentionMetrics> => {
  const source = await freshDatabase(server, "retention")
  const copy = await freshDatabase(server, "retention_copy")
  try {
    const todayMs = Math.floor(Date.now() / DAY_MS) * DAY_MS
    const g0 = performance.now()
    await run(source.url, 1, Effect.andThen(migrate({ shards: 4, nowMs: Date.now() }), historyFill(todayMs, perDay)))
    const generateMs = Math.round(performance.now() - g0)
    const made = await run(source.url, 1, sizes)
    say(`  history: ${made.t} triggers, ${made.e} executions in ${HISTORY_DAYS} days, made in ${generateMs} ms`)
    // the copy from the same rows (the source must have no connection meanwhile)
    const copyName = new URL(copy.url).pathname.slice(1)
    const sourceName = new URL(source.url).pathname.slice(1)
    await query(server.adminUrl, `DROP DATABASE ${copyName}`)
    await query(server.adminUrl, `CREATE DATABASE ${copyName} TEMPLATE ${sourceName}`)
    const cutoffMs = todayMs - (HISTORY_DAYS - DROP_DAYS) * DAY_MS
    const ways: Array<RetentionWay> = []
    for (const [way, url] of [["drop", source.url], ["delete", copy.url]] as const) {
      say(`  ${way} …`)
      ways.push(await removeOldest(url, way, cutoffMs))
      say(`  ${JSON.stringify(ways[ways.length - 1])}`)
    }
    return {
      perDay,
      triggers: made.t,
      executions: made.e,
      generateMs,
      bytesPerTrigger: Math.round(made.triggers / made.t),
      bytesPerExecution: Math.round(made.executions / made.e),
      ways
    }
  } finally {
    await copy.drop().catch(() => undefined)
    await source.drop().catch(() => undefined)
  }
}

const mb = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MB`

/** The figures as a Markdown table. */
export const retentionMarkdown = (m: RetentionMetrics): string => [
  `retention: ${m.triggers.toLocaleString("en")} finished triggers, ${m.executions.toLocaleString("en")} executions over ${HISTORY_DAYS} days `
  + `(${m.bytesPerTrigger} B per trigger, ${m.bytesPerExecution} B per execution, with indexes); the oldest ${DROP_DAYS} days removed `
  + `under a ${(1000 * LOAD_BATCH / LOAD_EVERY_MS).toLocaleString("en")}/s write load`,
  "",
  "| way | executions removed in | WAL | then their triggers in | WAL | load lateness p99 before → during (max) | executions size before → after | triggers size before → after |",
  "|---|---|---|---|---|---|---|---|",
  ...m.ways.map((w) =>
    `| ${w.way === "drop" ? "partition drop" : "plain DELETE"} | ${w.executionsMs} ms | ${mb(w.executionsWalBytes)} | ${w.triggersMs} ms | ${mb(w.triggersWalBytes)} `
    + `| ${w.latenessBeforeP99Ms} → ${w.latenessDuringP99Ms} ms (${w.latenessDuringMaxMs} ms) | ${mb(w.executionsBytesBefore)} → ${mb(w.executionsBytesAfter)} `
    + `| ${mb(w.triggersBytesBefore)} → ${mb(w.triggersBytesAfter)} |`)
].join("\n")
