// The retention workload (timewheel's store, with the service delivering; docs/operations.md
// "Retention"): a database holding HISTORY_DAYS days of history, made in SQL (per day, `perDay`
// finished triggers made that day with EXECUTIONS_PER_TRIGGER attempts each, UUIDv7-shaped ids of that
// day), copied once (CREATE DATABASE … TEMPLATE) so both ways of removing the oldest DROP_DAYS days
// start from the same rows:
// - drop: executionPartitionsDropBefore, as housekeeping does it (whole day partitions dropped), then
//   those days' finished triggers deleted as housekeeping does it (batches of RETENTION_BATCH paced to
//   RETENTION_BUSY_PERCENT, read from the environment as the service reads it);
// - delete: one plain DELETE of the same executions (by id, the same range), the reference.
// Meanwhile the service runs on the database and delivers DELIVERY_RATE requests a second to the sink
// (scheduled by /bulk a second ahead); a request's lateness = its arrival - its due instant. Reported
// per way: the time and WAL bytes of the executions' removal and of the triggers' (all the server's WAL
// meanwhile, the deliveries' included; for the triggers also less the deliveries' at their rate before), the deliveries'
// lateness p99 before the removal (due in the WINDOW_MS before it) and during it (due from its start for as long
// as it ran, and at least WINDOW_MS: two windows of the same length at the least, a short removal's included
// whole), and the tables' size (with indexes) before and after; the bytes per stored trigger and per execution.
//   npm run bench -- --only retention [--retention-per-day 6250]   (the issue's full scale: 125000)
// With --retention-database NAME the history is made once, in NAME and NAME_copy, kept, and the run stops there;
// the next run with the same flag finds them, measures on them and drops them: the making can run apart from
// the measured phase.
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { percentile, sleep, sortedCopy } from "./common.ts"
import { type DatabaseServer, freshDatabase, query } from "./database.ts"
import type { Sink } from "./sink.ts"
import { startTimewheel } from "./timewheel.ts"
import { newRun } from "./workloads.ts"
import { uuidFloor } from "../../src/domain/executionDays.ts"
import { migrate } from "../../src/store/db.ts"
import { executionPartitionsDropBefore } from "../../src/store/executionPartitions.ts"
import { retentionSessionOpen } from "../../src/store/retention.ts"
import { deletePaced, RETENTION_BATCH, RETENTION_MIN_PAUSE_MS } from "../../src/scheduler/housekeeping.ts"
import { DEFAULTS } from "../../src/config.ts"

export const RETENTION_DEFAULT_PER_DAY = 6_250
export const HISTORY_DAYS = 40
const DROP_DAYS = 10
const EXECUTIONS_PER_TRIGGER = 4
const DAY_MS = 86_400_000
const PROJECT = "00000000-0000-7000-8000-00000000be0c"
/** Deliveries a second, scheduled a second at a time this far ahead. */
const DELIVERY_RATE = 1_000
const FEED_AHEAD_MS = 3_000
/** At most this many deliveries in a run (15 minutes of them). */
const DELIVERY_CAPACITY = DELIVERY_RATE * 900
/** The first deliveries, not counted; then those of the load alone, before the removal starts. */
const WARM_UP_MS = 10_000
/** The windows the lateness p99 before and during the removal are taken over (during: at least this long). */
const WINDOW_MS = 30_000
/** The load goes on this long after the during window; the last deliveries are given DRAIN_MS to arrive. */
const AFTER_MS = 2_000
const DRAIN_MS = 5_000

export interface RetentionWay {
  readonly way: "drop" | "delete"
  readonly executionsMs: number
  readonly executionsWalBytes: number
  /** Finished triggers deleted after the drop (none after the DELETE), in triggersMs. */
  readonly triggers: number
  readonly triggersMs: number
  /** All the WAL written while the triggers went, and that less the deliveries' (at their rate before the removal). */
  readonly triggersWalBytes: number
  readonly triggersNetWalBytes: number
  /** Requests the service was given to deliver during the run, and how many never arrived. */
  readonly deliveries: number
  readonly missing: number
  /** Delivery lateness (arrival - due instant). */
  readonly latenessBeforeP99Ms: number
  readonly latenessDuringP99Ms: number
  readonly latenessDuringMaxMs: number
  /** The during window's length (the before window's is WINDOW_MS). */
  readonly duringWindowMs: number
  readonly executionsBytesBefore: number
  readonly executionsBytesAfter: number
  readonly triggersBytesBefore: number
  readonly triggersBytesAfter: number
}

export interface RetentionMetrics {
  readonly perDay: number
  readonly busyPercent: number
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

/**
 * --history-database NAME (with --history-per-day): the delivery and precision runs' history made once in NAME
 * and kept, its database comment recording `perDay` once the making has finished. Returns NAME when it holds
 * that history already (each run then starts on a copy of it); else makes it and returns `undefined`: the run
 * stops there, so that the making stays apart from measured runs. NAME is never dropped here.
 */
export const historyTemplate = async (server: DatabaseServer, name: string, perDay: number, say: (line: string) => void): Promise<string | undefined> => {
  const database = await namedDatabase(server, name)
  if (database.exists && database.comment !== null) {
    const made = JSON.parse(database.comment) as { readonly perDay?: number; readonly madeMs?: number }
    if (made.perDay !== perDay) throw new Error(`${name} holds another history (${database.comment}): drop it or name another`)
    say(`history: ${name}, ${HISTORY_DAYS} days of ${perDay} finished triggers (made in ${made.madeMs} ms), copied for each run`)
    return name
  }
  // (one without its comment: a making that did not finish)
  if (database.exists) await database.drop()
  await query(server.adminUrl, `CREATE DATABASE ${name}`)
  const madeMs = await historyPrepare(database.url, perDay)
  await query(server.adminUrl, `COMMENT ON DATABASE ${name} IS '${JSON.stringify({ perDay, madeMs })}'`)
  say(`history: ${HISTORY_DAYS} days of ${perDay} finished triggers made in ${madeMs} ms and kept in ${name}: the next run `
    + `with --history-database ${name} copies it for each delivery and precision run (DROP DATABASE ${name} when done)`)
  return undefined
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

/**
 * The delivery load: the service on the database, fed one /bulk call a second of the next second's
 * DELIVERY_RATE requests (each due 1 ms after the previous, FEED_AHEAD_MS ahead), POSTed to the sink.
 * `stop` ends the feeding and waits for the last due instant plus DRAIN_MS: each scheduled request's
 * due instant and arrival (NaN: missing).
 */
const startDeliveries = async (url: string, sink: Sink) => {
  const system = await startTimewheel(url, { RETENTION_DAYS: String(HISTORY_DAYS + 2) })
  const run = newRun()
  await sink.expect(run, DELIVERY_CAPACITY)
  const t = Math.ceil(Date.now() + FEED_AHEAD_MS)
  const dueOf = (i: number) => t + Math.floor(i * 1000 / DELIVERY_RATE)
  let scheduled = 0
  let stopped = false
  const feeding = (async () => {
    while (!stopped && scheduled + DELIVERY_RATE <= DELIVERY_CAPACITY) {
      const jobs = Array.from({ length: DELIVERY_RATE }, (_, k) => {
        const id = scheduled + k
        return { id, url: sink.url(run, id), runAtMs: dueOf(id), body: JSON.stringify({ n: id }) }
      })
      const batch = await system.batch(jobs, DELIVERY_RATE, 1, Date.now() + 10_000, false)
      if (batch.errors > 0 || batch.timedOut) throw new Error(`scheduling the deliveries failed: ${batch.firstError ?? "timed out"}`)
      scheduled += DELIVERY_RATE
      // the next second's requests FEED_AHEAD_MS before the first of them is due
      await sleep(Math.max(0, dueOf(scheduled) - FEED_AHEAD_MS - Date.now()))
    }
  })()
  // a failure is thrown by `stop`
  feeding.catch(() => undefined)
  return {
    /** The due instant of the first request. */
    firstDueMs: t,
    stop: async () => {
      stopped = true
      try {
        await feeding
        await sleep(Math.max(0, dueOf(scheduled) + DRAIN_MS - Date.now()))
        const { arrivals } = await sink.collect()
        return Array.from({ length: scheduled }, (_, i) => ({ dueMs: dueOf(i), arrivedMs: arrivals[i]! }))
      } finally {
        await system.stop()
      }
    }
  }
}

const p99Of = (values: ReadonlyArray<number>) => Math.round(percentile(sortedCopy(values), 99) * 10) / 10

/** The retention session, taken from the service's housekeeping if it holds it for a moment. */
const retentionSession = Effect.gen(function*() {
  for (let i = 0; i < 100; i++) {
    const session = yield* retentionSessionOpen
    if (session !== undefined) return session
    yield* Effect.sleep(100)
  }
  return yield* Effect.die(new Error("the retention lock stayed taken"))
})

/**
 * Removes the oldest DROP_DAYS days one way under the delivery load; its figures. The drop is followed
 * by the deletion of those days' finished triggers as housekeeping paces it (`busyPercent`); the
 * DELETE, the reference for the executions, is not (the same deletion would follow).
 */
const removeOldest = async (url: string, sink: Sink, way: "drop" | "delete", cutoffMs: number, busyPercent: number): Promise<RetentionWay> => {
  const before = await run(url, 1, sizes)
  const deliveries = await startDeliveries(url, sink)
  // the deliveries' own WAL, before the removal: their share of the WAL written while the triggers go
  await sleep(Math.max(0, deliveries.firstDueMs + WARM_UP_MS - Date.now()))
  const baselineLsn = await run(url, 1, walLsn)
  const b0 = performance.now()
  await sleep(Math.max(0, deliveries.firstDueMs + WARM_UP_MS + WINDOW_MS - Date.now()))
  const deliveriesWalBytesPerMs = (await run(url, 1, walSince(baselineLsn))) / (performance.now() - b0)
  const t0 = Date.now()
  const removal = await run(url, 2, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lsn0 = yield* walLsn
    const s0 = performance.now()
    if (way === "drop") yield* executionPartitionsDropBefore(cutoffMs)
    else yield* sql`DELETE FROM executions WHERE id < ${uuidFloor(cutoffMs)}::uuid`
    const executionsMs = performance.now() - s0
    const executionsWalBytes = yield* walSince(lsn0)
    if (way === "delete") return { executionsMs, executionsWalBytes, triggers: 0, triggersMs: 0, triggersWalBytes: 0 }
    const lsn1 = yield* walLsn
    const s1 = performance.now()
    const triggers = yield* Effect.scoped(Effect.gen(function*() {
      const session = yield* retentionSession
      return yield* deletePaced((limit) => session.deleteBatch({ beforeMs: cutoffMs, limit }), {
        batchSize: RETENTION_BATCH,
        busyPercent,
        minPauseMs: RETENTION_MIN_PAUSE_MS
      })
    }))
    return { executionsMs, executionsWalBytes, triggers, triggersMs: performance.now() - s1, triggersWalBytes: yield* walSince(lsn1) }
  }))
  const t1 = Math.max(Date.now(), t0 + WINDOW_MS)
  await sleep(Math.max(0, t1 - Date.now()) + AFTER_MS)
  const outcomes = await deliveries.stop()
  await run(url, 1, Effect.flatMap(SqlClient.SqlClient, (sql) => sql`VACUUM triggers`).pipe(Effect.andThen(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql`VACUUM executions`))))
  const after = await run(url, 1, sizes)
  const latenessOf = (from: number, until: number) =>
    outcomes.filter((o) => o.dueMs >= from && o.dueMs < until && !Number.isNaN(o.arrivedMs)).map((o) => o.arrivedMs - o.dueMs)
  const baseline = latenessOf(t0 - WINDOW_MS, t0)
  const during = latenessOf(t0, t1)
  return {
    way,
    executionsMs: Math.round(removal.executionsMs),
    executionsWalBytes: removal.executionsWalBytes,
    triggers: removal.triggers,
    triggersMs: Math.round(removal.triggersMs),
    triggersWalBytes: removal.triggersWalBytes,
    triggersNetWalBytes: Math.max(0, Math.round(removal.triggersWalBytes - deliveriesWalBytesPerMs * removal.triggersMs)),
    deliveries: outcomes.length,
    missing: outcomes.filter((o) => Number.isNaN(o.arrivedMs)).length,
    latenessBeforeP99Ms: p99Of(baseline),
    latenessDuringP99Ms: p99Of(during),
    latenessDuringMaxMs: Math.round(during.reduce((a, b) => Math.max(a, b), 0)),
    duringWindowMs: t1 - t0,
    executionsBytesBefore: before.executions,
    executionsBytesAfter: after.executions,
    triggersBytesBefore: before.triggers,
    triggersBytesAfter: after.triggers
  }
}

/** RETENTION_BUSY_PERCENT as the service would read it (config.ts). */
const busyPercentOf = (env: NodeJS.ProcessEnv): number => {
  const text = env.RETENTION_BUSY_PERCENT
  const value = text === undefined || text === "" ? DEFAULTS.RETENTION_BUSY_PERCENT : Number(text)
  if (!Number.isInteger(value) || value < 1 || value > 100) throw new Error(`RETENTION_BUSY_PERCENT must be an integer between 1 and 100, got "${text}"`)
  return value
}

/** The database `name` on `server`: its URL, whether it exists, its comment (JSON) and a function dropping it. */
const namedDatabase = async (server: DatabaseServer, name: string) => {
  const url = new URL(server.adminUrl)
  url.pathname = `/${name}`
  const rows = await query<{ comment: string | null }>(server.adminUrl,
    `SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = '${name}'`)
  return {
    url: url.toString(),
    exists: rows.length === 1,
    comment: rows[0]?.comment ?? null,
    drop: () => query(server.adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => undefined)
  }
}

interface History {
  readonly todayMs: number
  readonly generateMs: number
  readonly triggers: number
  readonly executions: number
  readonly triggersBytes: number
  readonly executionsBytes: number
}

/** HISTORY_DAYS days of history in `source`, then `copyName` made from it (the source must have no connection meanwhile). */
const makeHistory = async (server: DatabaseServer, source: string, sourceName: string, copyName: string, perDay: number, say: (line: string) => void): Promise<History> => {
  const todayMs = Math.floor(Date.now() / DAY_MS) * DAY_MS
  const g0 = performance.now()
  await run(source, 1, Effect.andThen(migrate({ shards: 4, nowMs: Date.now() }), historyFill(todayMs, perDay)))
  const generateMs = Math.round(performance.now() - g0)
  const made = await run(source, 1, sizes)
  say(`  history: ${made.t} triggers, ${made.e} executions in ${HISTORY_DAYS} days, made in ${generateMs} ms`)
  await query(server.adminUrl, `DROP DATABASE IF EXISTS ${copyName}`)
  await query(server.adminUrl, `CREATE DATABASE ${copyName} TEMPLATE ${sourceName}`)
  return { todayMs, generateMs, triggers: made.t, executions: made.e, triggersBytes: made.triggers, executionsBytes: made.executions }
}

/**
 * The workload on fresh databases, or with `keep` (--retention-database) on NAME and NAME_copy: made
 * there and kept when absent (then `undefined`: nothing measured), else measured on and dropped.
 */
export const runRetention = async (server: DatabaseServer, sink: Sink, perDay: number, say: (line: string) => void, keep?: string): Promise<RetentionMetrics | undefined> => {
  const busyPercent = busyPercentOf(process.env)
  const source = keep === undefined ? { ...await freshDatabase(server, "retention"), comment: null } : await namedDatabase(server, keep)
  const copy = keep === undefined ? await freshDatabase(server, "retention_copy") : await namedDatabase(server, `${keep}_copy`)
  const sourceName = new URL(source.url).pathname.slice(1)
  const copyName = new URL(copy.url).pathname.slice(1)
  let kept = false
  try {
    let history: History
    if (keep !== undefined && source.comment !== null) {
      history = JSON.parse(source.comment) as History
      say(`  history from ${sourceName} and ${copyName}: ${history.triggers} triggers, ${history.executions} executions (made in ${history.generateMs} ms)`)
    } else {
      // (a source without its comment: a making that did not finish)
      if (keep !== undefined) await source.drop().then(() => query(server.adminUrl, `CREATE DATABASE ${sourceName}`))
      history = await makeHistory(server, source.url, sourceName, copyName, perDay, say)
      if (keep !== undefined) {
        await query(server.adminUrl, `COMMENT ON DATABASE ${sourceName} IS '${JSON.stringify(history)}'`)
        kept = true
        say(`  kept in ${sourceName} and ${copyName}: the next run with --retention-database ${keep} measures on them`)
        return undefined
      }
    }
    const cutoffMs = history.todayMs - (HISTORY_DAYS - DROP_DAYS) * DAY_MS
    const ways: Array<RetentionWay> = []
    for (const [way, url] of [["drop", source.url], ["delete", copy.url]] as const) {
      say(`  ${way} …`)
      ways.push(await removeOldest(url, sink, way, cutoffMs, busyPercent))
      say(`  ${JSON.stringify(ways[ways.length - 1])}`)
    }
    return {
      perDay,
      busyPercent,
      triggers: history.triggers,
      executions: history.executions,
      generateMs: history.generateMs,
      bytesPerTrigger: Math.round(history.triggersBytes / history.triggers),
      bytesPerExecution: Math.round(history.executionsBytes / history.executions),
      ways
    }
  } finally {
    if (!kept) {
      await copy.drop().catch(() => undefined)
      await source.drop().catch(() => undefined)
    }
  }
}

const mb = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MB`

/** The figures as a Markdown table. */
export const retentionMarkdown = (m: RetentionMetrics): string => [
  `retention: ${m.triggers.toLocaleString("en")} finished triggers, ${m.executions.toLocaleString("en")} executions over ${HISTORY_DAYS} days `
  + `(${m.bytesPerTrigger} B per trigger, ${m.bytesPerExecution} B per execution, with indexes); the oldest ${DROP_DAYS} days removed `
  + `while the service delivers ${DELIVERY_RATE.toLocaleString("en")} requests/s; triggers deleted in batches of ${RETENTION_BATCH} `
  + `at RETENTION_BUSY_PERCENT ${m.busyPercent}`,
  "",
  "| way | executions removed in | WAL | then their triggers | WAL (less the deliveries') | delivery lateness p99 before → during (max; windows) | deliveries (missing) | executions size before → after | triggers size before → after |",
  "|---|---|---|---|---|---|---|---|---|",
  ...m.ways.map((w) =>
    `| ${w.way === "drop" ? "partition drop" : "plain DELETE"} | ${w.executionsMs} ms | ${mb(w.executionsWalBytes)} `
    + `| ${w.way === "drop" ? `${w.triggers.toLocaleString("en")} in ${w.triggersMs} ms (${Math.round(w.triggers / (w.triggersMs / 1000))}/s)` : "—"} `
    + `| ${w.way === "drop" ? `${mb(w.triggersWalBytes)} (${mb(w.triggersNetWalBytes)})` : "—"} `
    + `| ${w.latenessBeforeP99Ms} → ${w.latenessDuringP99Ms} ms (${w.latenessDuringMaxMs} ms; ${WINDOW_MS / 1000} s → ${(w.duringWindowMs / 1000).toFixed(0)} s) | ${w.deliveries} (${w.missing}) | ${mb(w.executionsBytesBefore)} → ${mb(w.executionsBytesAfter)} `
    + `| ${mb(w.triggersBytesBefore)} → ${mb(w.triggersBytesAfter)} |`)
].join("\n")
