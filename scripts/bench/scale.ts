// `npm run bench:scale -- [--n 10000000]`: the scale workload (BENCHMARKS.md). timewheel (one
// process, `node dist/main.js` as `npm start` runs it) on a table of n pending one-shot triggers due
// over the next 30 days:
//  1. a fresh database (tw_scale_<n>_<hex> on the server of DATABASE_URL, else an embedded one); the
//     service started once (migrations), a project and key made with the CLI as the bench does, and one
//     trigger scheduled through /schedule: the template row. The service is stopped.
//  2. n - 1 more rows inserted with SQL (INSERT ... SELECT ... FROM generate_series, --chunk rows per
//     statement): every column copied from the template except the ones that differ per trigger —
//     a UUIDv7 id (creation instants over the last n/10 ms, random tail), the shard derived from it as
//     the service does (domain/trigger.ts shardOf), scheduled_at = due_at (spread evenly over 30 days
//     from 1 h after the load, in an order unrelated to the ids), url and body (the bench's sink URL
//     and `{"n":i}`), created_at = updated_at (the id's instant); the month's quota usage raised by as
//     many. Then VACUUM ANALYZE (autovacuum would otherwise do it while measuring). Not measured: the
//     time is reported.
//  3. sizes: pg_database_size, the triggers table (heap, each index), per trigger.
//  4. restart (--restarts times, default 3; the first is the start after the load, the others stop
//     the service gracefully and start it again): 500 triggers inserted due every 10 ms from 1 s before
//     to 4 s after the planned spawn (the service is down: the first ones are overdue when it starts);
//     the service spawned; time from spawn to the first arrival at the sink, to the first /health
//     answer and to the first 200, the lateness of the 500. Meanwhile pg_stat_activity is sampled
//     every 50 ms: service statements seen running for more than 100 ms are reported.
//  5. /schedule: 500 calls warm-up, then --latency-n calls from 32 callers (the bench's undici client,
//     keep-alive HTTPS), each due at a random instant of the month; precision: --precision-n triggers
//     scheduled through /schedule, due evenly over 10 s from 5 s later, lateness at the sink; last,
//     when wrk is on PATH, /schedule calls from wrk for 5 s (1 thread, 32 connections).
//  6. the service's RSS: VmRSS sampled every 200 ms, VmHWM before the wrk phase and at the end (goal
//     300 MB).
// Prints a report and writes bench-results/scale-<timestamp>.json. The database is dropped (--keep
// keeps it).
import { PgClient } from "@effect/sql-pg"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { execFile, execFileSync } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { Agent, request } from "undici"
import { shardOf } from "../../src/domain/trigger.ts"
import {
  freeLoopbackPort, installExitHandlers, killAllChildren, makeTempDir, nowMs, percentile, REPO_ROOT, removeTempDir, runCalls,
  sleep, sortedCopy, waitForExit
} from "./common.ts"
import { failWith, readFlags } from "./cliFlags.ts"
import type { CallBatch, JobSpec } from "./common.ts"
import { openDatabaseServer, serverVersion } from "./database.ts"
import type { DatabaseServer } from "./database.ts"
import { serviceLaunch } from "../serviceLaunch.ts"
import { startSink } from "./sink.ts"
import type { Sink } from "./sink.ts"
import { CLIENT_CONNECTIONS, cli, scheduleCall, spawnService } from "./timewheel.ts"

const USAGE = `usage: npm run bench:scale -- [--n 10000000] [--chunk 1000000] [--latency-n 5000] [--precision-n 2000] [--restarts 3] [--keep]
  --n            pending triggers in the table (default 10,000,000)
  --chunk        rows per INSERT while loading (default 1,000,000)
  --latency-n    timed /schedule calls (default 5,000; 32 callers, after 500 untimed)
  --precision-n  triggers due over 10 s while the service runs on the table (default 2,000)
  --restarts     restarts measured (default 3; the first is the start after the load)
  --keep         keep the database (its name is printed)`

const PREFIX = "ttr"
const DAY_MS = 86_400_000
const SPREAD_MS = 30 * DAY_MS
/** Background triggers are due from this long after the load started: none fires during the run. */
const SPREAD_START_MS = 3_600_000
/** A prime coprime with any n below it: i * P mod n is a permutation, so due times are unrelated to ids. */
const SCATTER = 1_000_000_007n
const RESTART_N = 500
const RESTART_STEP_MS = 10
const RESTART_FIRST_DUE_MS = -1_000
const WARM_UP_CALLS = 500
const PRECISION_SPREAD_MS = 10_000
const PRECISION_LEAD_MS = 5_000
const SLOW_STATEMENT_MS = 100
const RSS_GOAL_MIB = 300
const WRK_SECONDS = 5

interface Options {
  readonly n: number
  readonly chunk: number
  readonly latencyN: number
  readonly precisionN: number
  readonly restarts: number
  readonly keep: boolean
}

const say = (line: string) => process.stderr.write(`${line}\n`)

const fail = failWith(USAGE)

const positiveInt = (raw: string, name: string): number =>
  /^\d+$/.test(raw.replace(/_/g, "")) && Number(raw.replace(/_/g, "")) > 0
    ? Number(raw.replace(/_/g, ""))
    : fail(`${name} must be a positive integer, got "${raw}"`)

const parseOptions = (args: ReadonlyArray<string>): Options => {
  const { values, switches } = readFlags(args, USAGE, ["n", "chunk", "latency-n", "precision-n", "restarts"], ["keep"])
  const keep = switches.has("keep")
  const n = positiveInt(values.get("n") ?? "10000000", "--n")
  if (BigInt(n) >= SCATTER) fail(`--n must be below ${SCATTER}`)
  return {
    n,
    chunk: positiveInt(values.get("chunk") ?? "1000000", "--chunk"),
    latencyN: positiveInt(values.get("latency-n") ?? "5000", "--latency-n"),
    precisionN: positiveInt(values.get("precision-n") ?? "2000", "--precision-n"),
    restarts: positiveInt(values.get("restarts") ?? "3", "--restarts"),
    keep
  }
}

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits
const mib = (kib: number) => round(kib / 1024)
const loadAverage = () => os.loadavg().map((x) => round(x, 2)) as [number, number, number]

// ---------------------------------------------------------------------------------------------------------
// SQL

interface Sql {
  readonly run: <A extends object>(statement: string) => Promise<ReadonlyArray<A>>
  readonly close: () => Promise<void>
}

const openSql = (url: string, connections = 2): Sql => {
  const runtime = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url), maxConnections: connections }))
  return {
    run: <A extends object>(statement: string) =>
      runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<A>(statement))),
    close: () => runtime.dispose()
  }
}

const timestampOf = (msExpr: string) => `(timestamptz 'epoch' + (${msExpr}) * interval '1 millisecond')`

/**
 * INSERT ... SELECT of the rows i in [from, to] copied from the template row: per row, a UUIDv7 of
 * `createdMs(i)` (48-bit ms, version 7, the rest of gen_random_uuid(): variant and random bits), its
 * shard (last 8 hex digits mod shards, as shardOf), due and scheduled at `dueMs(i)`, the sink URL of
 * `run` and id i, body {"n":i}, created and updated at the id's instant.
 */
const insertCopies = (input: {
  readonly columns: ReadonlyArray<string>
  readonly templateId: string
  readonly from: number
  readonly to: number
  readonly createdMs: string
  readonly dueMs: string
  readonly sinkPort: number
  readonly run: string
  readonly shards: number
}) => {
  const generated: Record<string, string> = {
    id: "h.hex::uuid",
    shard: `(('x' || right(h.hex, 8))::bit(32)::bigint % ${input.shards})::int`,
    scheduled_at: timestampOf("h.dms"),
    due_at: timestampOf("h.dms"),
    url: `'http://127.0.0.1:${input.sinkPort}/hit?run=${input.run}&id=' || h.i`,
    body: `convert_to('{"n":' || h.i || '}', 'UTF8')`,
    created_at: timestampOf("h.cms"),
    updated_at: timestampOf("h.cms")
  }
  const values = input.columns.map((column) => generated[column] ?? `t.${column}`)
  return `
    WITH g AS (
      SELECT i, (${input.createdMs})::bigint AS cms, (${input.dueMs})::bigint AS dms, uuid_send(gen_random_uuid()) AS r
      FROM generate_series(${input.from}::bigint, ${input.to}::bigint) AS i
    ), h AS (
      SELECT i, cms, dms,
        encode(set_byte(overlay(r PLACING substring(int8send(cms) FROM 3 FOR 6) FROM 1 FOR 6), 6, (get_byte(r, 6) & 15) | 112), 'hex') AS hex
      FROM g
    )
    INSERT INTO triggers (${input.columns.join(", ")})
    SELECT ${values.join(", ")} FROM h, triggers t WHERE t.id = '${input.templateId}'`
}

// ---------------------------------------------------------------------------------------------------------
// The service

interface Service {
  readonly child: ChildProcess
  readonly spawnedAtMs: number
  readonly exited: () => string | undefined
  readonly stop: () => Promise<void>
}

const startService = (env: NodeJS.ProcessEnv): Service => {
  const spawnedAtMs = nowMs()
  const { child, errors, exited } = spawnService(env, serviceLaunch(REPO_ROOT).nodeFlags)
  return {
    child,
    spawnedAtMs,
    exited,
    stop: async () => {
      if (errors.length > 0) say(`scale: timewheel stderr (last lines):\n${errors.join("\n")}`)
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
      await waitForExit(child, 15_000)
    }
  }
}

/**
 * Polls GET /health every `pollMs` from the spawn on: the instant of the first answer (any status: the
 * port is open) and of the first 200 (scheduler and materializer loops have run, database reached).
 */
const waitHealth = async (origin: string, agent: Agent, key: string | undefined, service: Service, pollMs: number, wantOk: boolean) => {
  let firstAnswerMs: number | undefined
  const deadline = Date.now() + 120_000
  for (;;) {
    const exit = service.exited()
    if (exit !== undefined) throw new Error(exit)
    try {
      const response = await request(`${origin}/health`, {
        dispatcher: agent,
        headers: key === undefined ? {} : { [`${PREFIX}-api-key`]: key },
        headersTimeout: 2_000,
        bodyTimeout: 2_000
      })
      await response.body.dump()
      const at = nowMs()
      firstAnswerMs ??= at
      if (!wantOk || response.statusCode === 200) return { firstAnswerMs, firstOkMs: at }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error("timewheel did not answer /health with 200 within 120 s")
    await sleep(pollMs)
  }
}

/** VmRSS and VmHWM of a live process, KiB. */
const memoryOf = (pid: number) => {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
    return {
      rss: Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? Number.NaN),
      hwm: Number(/^VmHWM:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? Number.NaN)
    }
  } catch {
    return { rss: Number.NaN, hwm: Number.NaN }
  }
}

/** Samples the process's memory every 200 ms; `peak()` is the largest VmRSS seen and the last VmHWM. */
const memorySampler = (pid: number) => {
  let peakRss = 0
  let hwm = Number.NaN
  const sample = () => {
    const m = memoryOf(pid)
    if (m.rss > peakRss) peakRss = m.rss
    if (!Number.isNaN(m.hwm)) hwm = m.hwm
    return m
  }
  const timer = setInterval(sample, 200)
  return {
    now: () => sample(),
    peak: () => ({ peakRss, hwm }),
    stop: () => clearInterval(timer)
  }
}

interface SlowStatement {
  readonly application: string
  readonly ms: number
  readonly query: string
}

/**
 * Samples pg_stat_activity of the database every 50 ms: statements of other sessions seen active for
 * more than SLOW_STATEMENT_MS, the longest sighting of each (session, start).
 */
const slowStatementSampler = (sql: Sql) => {
  const seen = new Map<string, SlowStatement>()
  let running = true
  const loop = (async () => {
    while (running) {
      try {
        const rows = await sql.run<{ pid: number; started: string; app: string; ms: number; query: string }>(
          `SELECT pid, query_start::text AS started, application_name AS app,
             (extract(epoch FROM clock_timestamp() - query_start) * 1000)::float8 AS ms, left(query, 400) AS query
           FROM pg_stat_activity
           WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
             AND clock_timestamp() - query_start > interval '${SLOW_STATEMENT_MS} milliseconds'`
        )
        for (const row of rows) {
          const key = `${row.pid}/${row.started}`
          const previous = seen.get(key)
          if (previous === undefined || previous.ms < row.ms) {
            seen.set(key, { application: row.app, ms: round(row.ms), query: row.query.replace(/\s+/g, " ").trim() })
          }
        }
      } catch {
        // the sampler never fails the run
      }
      await sleep(50)
    }
  })()
  return {
    stop: async () => {
      running = false
      await loop
      return [...seen.values()].sort((a, b) => b.ms - a.ms)
    }
  }
}

// ---------------------------------------------------------------------------------------------------------

const latencyFigures = (batch: CallBatch) => {
  const sorted = sortedCopy(batch.latenciesMs)
  return {
    calls: batch.latenciesMs.length,
    errors: batch.errors,
    firstError: batch.firstError,
    ratePerS: round(batch.latenciesMs.length / (batch.elapsedMs / 1000)),
    p50Ms: round(percentile(sorted, 50)),
    p90Ms: round(percentile(sorted, 90)),
    p99Ms: round(percentile(sorted, 99)),
    maxMs: round(sorted[sorted.length - 1] ?? Number.NaN)
  }
}

const latenessFigures = (lateness: ReadonlyArray<number>) => {
  const sorted = sortedCopy(lateness)
  return {
    count: sorted.length,
    minMs: round(sorted[0] ?? Number.NaN),
    p50Ms: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
    maxMs: round(sorted[sorted.length - 1] ?? Number.NaN)
  }
}

const commitOf = () => {
  try {
    const git = (args: Array<string>) => execFileSync("git", args, { cwd: REPO_ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
    let commit = git(["rev-parse", "--short", "HEAD"])
    const dirty = git(["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"])
    if (dirty !== "") commit += " (with uncommitted changes)"
    return commit
  } catch {
    return "unknown"
  }
}

/** wrk on PATH, or undefined. */
const wrkPath = (): string | undefined => {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir, "wrk")
    try {
      fs.accessSync(candidate, fs.constants.X_OK)
      return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

/**
 * `/schedule` driven by wrk (1 thread, 32 connections, certificate not verified) for `seconds`: each
 * request is the bench's (key, target URL with the request's number, a JSON body), due at a random
 * instant from 1 h to 30 days ahead. wrk's own latency (write to answer, no correction for coordinated
 * omission) and its counts, from one JSON line its done() prints.
 */
const runWrk = async (wrk: string, input: { origin: string; key: string; sinkUrl: string; seconds: number; dir: string }) => {
  const script = path.join(input.dir, "schedule.lua")
  const lua = (text: string) => JSON.stringify(text) // a JSON string is a valid Lua string for these characters
  fs.writeFileSync(script, `
local counter = 0
local base = ${Date.now() + SPREAD_START_MS}
local span = ${SPREAD_MS - SPREAD_START_MS}
request = function()
  counter = counter + 1
  local due = base + math.floor(math.random() * span)
  local at = os.date("!%Y-%m-%dT%H:%M:%S", math.floor(due / 1000)) .. string.format(".%03dZ", due % 1000)
  return wrk.format("POST", "/schedule", {
    [${lua(`${PREFIX}-api-key`)}] = ${lua(input.key)},
    [${lua(`${PREFIX}-url`)}] = ${lua(input.sinkUrl)} .. counter,
    [${lua(`${PREFIX}-scheduled-at`)}] = at,
    ["content-type"] = "application/json"
  }, '{"n":' .. counter .. '}')
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK {"requests":%d,"durationUs":%d,"p50Us":%d,"p90Us":%d,"p99Us":%d,"maxUs":%d,"socketErrors":%d,"statusErrors":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.connect + e.read + e.write + e.timeout, e.status))
end
`)
  const { stdout, stderr } = await promisify(execFile)(wrk, [
    "-t1", "-c32", `-d${input.seconds}s`, "--timeout", "10s", "-s", script, `${input.origin}/schedule`
  ], { timeout: (input.seconds + 30) * 1000 })
  const line = stdout.split("\n").find((l) => l.startsWith("WRK "))
  if (line === undefined) throw new Error(`wrk printed no figures:\n${stdout}\n${stderr}`)
  const w = JSON.parse(line.slice(4)) as {
    requests: number; durationUs: number; p50Us: number; p90Us: number; p99Us: number; maxUs: number; socketErrors: number; statusErrors: number
  }
  return {
    seconds: input.seconds,
    requests: w.requests,
    ratePerS: round(w.requests / (w.durationUs / 1e6)),
    p50Ms: round(w.p50Us / 1000),
    p90Ms: round(w.p90Us / 1000),
    p99Ms: round(w.p99Us / 1000),
    maxMs: round(w.maxUs / 1000),
    socketErrors: w.socketErrors,
    statusErrors: w.statusErrors
  }
}

let dropDatabase: (() => Promise<void>) | undefined

const main = async () => {
  const options = parseOptions(process.argv.slice(2))
  const startedAt = new Date()
  const loadAverages: Record<string, [number, number, number]> = { start: loadAverage() }
  let server: DatabaseServer | undefined
  let sink: Sink | undefined
  let service: Service | undefined
  installExitHandlers(async () => {
    await dropDatabase?.()
    await server?.stop()
  })
  const cleanups: Array<() => Promise<void>> = []
  try {
    server = await openDatabaseServer()
    const postgres = await serverVersion(server)
    const admin = openSql(server.adminUrl, 1)
    cleanups.push(() => admin.close())
    const database = `tw_scale_${options.n}_${crypto.randomBytes(3).toString("hex")}`
    await admin.run(`CREATE DATABASE ${database}`)
    const databaseUrl = (() => {
      const url = new URL(server.adminUrl)
      url.pathname = `/${database}`
      return url.toString()
    })()
    let sqlForDrop: Sql | undefined
    dropDatabase = async () => {
      await sqlForDrop?.close().catch(() => {})
      sqlForDrop = undefined
      if (!options.keep) await admin.run(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    }
    sink = await startSink()
    say(`scale: n ${options.n.toLocaleString("en")}; PostgreSQL ${postgres} (${server.description}), database ${database}; sink on 127.0.0.1:${sink.port}`)

    // 1. the service once: migrations, project, key, the template trigger
    await promisify(execFile)(process.execPath, [path.join(REPO_ROOT, "scripts/build.ts")], { cwd: REPO_ROOT })
    const dataDir = makeTempDir("scale")
    cleanups.push(async () => removeTempDir(dataDir))
    const port = await freeLoopbackPort()
    const origin = `https://127.0.0.1:${port}`
    const env: NodeJS.ProcessEnv = {
      ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir, LOG_LEVEL: "warn", PREFIX
    }
    const agent = new Agent({ connections: CLIENT_CONNECTIONS, pipelining: 1, keepAliveTimeout: 60_000, connect: { rejectUnauthorized: false } })
    cleanups.push(() => agent.close().catch(() => {}))
    service = startService(env)
    await waitHealth(origin, agent, undefined, service, 100, false)
    await cli(env, ["project", "create", "bench", "--monthly-quota", "100000000"])
    const key = (await cli(env, ["key", "create", "bench"])).split("\n").pop()!.trim()
    if (!key.startsWith(`${PREFIX}_`)) throw new Error(`unexpected key from the CLI: ${key}`)
    const schedule = scheduleCall(origin, agent, key)
    const loadStartMs = Date.now()
    const spreadStartMs = loadStartMs + SPREAD_START_MS
    await schedule({ id: 0, url: sink.url("bg", 0), runAtMs: spreadStartMs, body: JSON.stringify({ n: 0 }) })
    await service.stop()
    service = undefined

    const sql = openSql(databaseUrl, 2)
    sqlForDrop = sql
    const template = (await sql.run<{ id: string; url: string; body: string; shard: number; project_id: string }>(
      `SELECT id, url, convert_from(body, 'UTF8') AS body, shard, project_id FROM triggers`
    ))
    if (template.length !== 1) throw new Error(`expected one trigger after the template's /schedule, found ${template.length}`)
    const row = template[0]!
    if (row.url !== sink.url("bg", 0) || row.body !== JSON.stringify({ n: 0 })) {
      throw new Error(`the template row is not as expected: ${JSON.stringify(row)}`)
    }
    const shards = Number((await sql.run<{ value: string }>(`SELECT value FROM settings WHERE key = 'shards'`))[0]!.value)
    if (shardOf(row.id, shards) !== row.shard) throw new Error("the template's shard is not shardOf(id)")
    const columns = (await sql.run<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'triggers'
       ORDER BY ordinal_position`
    )).map((c) => c.column_name)

    // 2. the load
    say(`scale: loading ${(options.n - 1).toLocaleString("en")} rows copied from the template (${columns.length} columns, ${shards} shards) …`)
    const loadStarted = performance.now()
    const chunks: Array<{ rows: number; ms: number }> = []
    for (let from = 1; from < options.n; from += options.chunk) {
      const to = Math.min(options.n - 1, from + options.chunk - 1)
      const t0 = performance.now()
      await sql.run(insertCopies({
        columns, templateId: row.id, from, to, shards, sinkPort: sink.port, run: "bg",
        // creation instants over the last n/10 ms, ascending with i (ids in creation order)
        createdMs: `${loadStartMs} - ceil((${options.n} - i) / 10.0)`,
        dueMs: `${spreadStartMs} + ((i * ${SCATTER}) % ${options.n}) * ${SPREAD_MS} / ${options.n}`
      }))
      const ms = performance.now() - t0
      chunks.push({ rows: to - from + 1, ms: round(ms) })
      say(`  rows ${from.toLocaleString("en")}–${to.toLocaleString("en")}: ${round(ms / 1000)} s (${Math.round((to - from + 1) / (ms / 1000)).toLocaleString("en")}/s), load ${loadAverage().join(" ")}`)
    }
    await sql.run(`UPDATE quota_usage SET used = used + ${options.n - 1} WHERE project_id = '${row.project_id}'`)
    const insertMs = performance.now() - loadStarted
    const vacuumStarted = performance.now()
    await sql.run(`VACUUM ANALYZE triggers`)
    const vacuumMs = performance.now() - vacuumStarted
    loadAverages.afterLoad = loadAverage()
    say(`scale: loaded in ${round(insertMs / 1000)} s, VACUUM ANALYZE ${round(vacuumMs / 1000)} s`)

    // checks: counts, shards and ids as the service derives them
    const counts = (await sql.run<{ registered: string; total: string; quota_used: string }>(
      `SELECT (SELECT count(*) FROM triggers WHERE status = 'registered')::text AS registered, (SELECT count(*) FROM triggers)::text AS total,
         (SELECT sum(used) FROM quota_usage)::text AS quota_used`
    ))[0]!
    if (Number(counts.registered) !== options.n) throw new Error(`expected ${options.n} registered triggers, found ${counts.registered}`)
    const sample = await sql.run<{ id: string; shard: number; created_ms: string; due_ms: string }>(
      `SELECT id, shard, (extract(epoch FROM created_at) * 1000)::bigint::text AS created_ms,
         (extract(epoch FROM due_at) * 1000)::bigint::text AS due_ms FROM triggers TABLESAMPLE SYSTEM (1) LIMIT 2000`
    )
    for (const s of sample) {
      if (shardOf(s.id, shards) !== s.shard) throw new Error(`row ${s.id}: shard ${s.shard}, shardOf says ${shardOf(s.id, shards)}`)
      if (s.id[14] !== "7" || !"89ab".includes(s.id[19]!)) throw new Error(`row ${s.id} is not a UUIDv7`)
      if (parseInt(s.id.slice(0, 8) + s.id.slice(9, 13), 16) !== Number(s.created_ms)) throw new Error(`row ${s.id}: id time is not created_at`)
    }
    const spread = (await sql.run<{ first: string; last: string; per_shard_min: string; per_shard_max: string }>(
      `SELECT min(due_at)::text AS first, max(due_at)::text AS last,
         (SELECT min(c) FROM (SELECT count(*) c FROM triggers GROUP BY shard) s)::text AS per_shard_min,
         (SELECT max(c) FROM (SELECT count(*) c FROM triggers GROUP BY shard) s)::text AS per_shard_max FROM triggers`
    ))[0]!

    // 3. sizes
    const sizeRows = await sql.run<{ name: string; bytes: string }>(
      `SELECT 'database' AS name, pg_database_size(current_database())::text AS bytes
       UNION ALL SELECT 'triggers (total)', pg_total_relation_size('triggers')::text
       UNION ALL SELECT 'triggers (heap)', pg_relation_size('triggers')::text
       UNION ALL SELECT 'triggers (TOAST)', coalesce(pg_total_relation_size(NULLIF(reltoastrelid, 0)), 0)::text FROM pg_class WHERE oid = 'triggers'::regclass
       UNION ALL SELECT 'triggers (indexes)', pg_indexes_size('triggers')::text
       UNION ALL (SELECT 'index ' || indexrelid::regclass::text, pg_relation_size(indexrelid)::text FROM pg_index
         WHERE indrelid = 'triggers'::regclass ORDER BY pg_relation_size(indexrelid) DESC)`
    )
    const sizes = sizeRows.map((s) => ({
      name: s.name, bytes: Number(s.bytes), mib: round(Number(s.bytes) / 2 ** 20), bytesPerTrigger: round(Number(s.bytes) / options.n)
    }))

    // how full the B-tree leaves are (pgstattuple, when the server has it): an index grown at its left
    // edge splits pages in halves, one grown at its right edge packs them
    let leafDensity: Record<string, number> | string
    try {
      await sql.run(`CREATE EXTENSION IF NOT EXISTS pgstattuple`)
      const rows = await sql.run<{ name: string; density: number }>(
        `SELECT c.relname AS name, (pgstatindex(c.oid::regclass)).avg_leaf_density::float8 AS density
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
         WHERE i.indrelid = 'triggers'::regclass AND a.amname = 'btree' AND pg_relation_size(c.oid) > 8192 * 10`
      )
      leafDensity = Object.fromEntries(rows.map((r) => [r.name, round(r.density)]))
    } catch (error) {
      leafDensity = `pgstattuple not available: ${error instanceof Error ? error.message : String(error)}`
    }

    // plans of the statements that read the table at start, for the report
    const plans: Record<string, { executionMs: number; plan: string }> = {}
    const explain = async (name: string, statement: string) => {
      const lines = (await sql.run<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${statement}`)).map((l) => l["QUERY PLAN"])
      const executionMs = Number(/Execution Time: ([\d.]+) ms/.exec(lines.join("\n"))?.[1] ?? Number.NaN)
      plans[name] = { executionMs, plan: lines.join("\n") }
    }
    const nowIso = new Date().toISOString()
    await explain("first load of a shard (triggersLoadDue, nothing due)",
      `SELECT id, (extract(epoch FROM due_at) * 1000)::bigint::text AS due_ms FROM triggers
       WHERE shard = 0 AND status IN ('registered', 'retrying') AND due_at < '${nowIso}'::timestamptz + interval '60 seconds'
         AND due_at >= timestamptz 'epoch' - interval '3000 years' ORDER BY due_at, id LIMIT 5000`)
    await explain("a later window of a shard, 1 h ahead (triggersLoadDue)",
      `SELECT id, (extract(epoch FROM due_at) * 1000)::bigint::text AS due_ms FROM triggers
       WHERE shard = 0 AND status IN ('registered', 'retrying') AND due_at < '${new Date(spreadStartMs + 60_000).toISOString()}'::timestamptz
         AND due_at >= '${new Date(spreadStartMs).toISOString()}'::timestamptz ORDER BY due_at, id LIMIT 5000`)
    await explain("crash recovery of a shard (triggersRecover's scan)",
      `SELECT id FROM triggers WHERE shard = 0 AND status IN ('queued', 'running') AND claimed_by <> 'x' AND NOT (claimed_by = ANY('{}'::text[]))`)
    await explain("ops gauge: held-back triggers", `SELECT count(*) FROM triggers WHERE status = 'queued' AND claimed_by IS NULL`)
    for (const [name, p] of Object.entries(plans)) say(`  plan: ${name}: ${p.executionMs} ms`)

    // 4. restarts with triggers due around the start (--restarts times: the first is the start after the
    // load; the service stays up after the last one)
    let memory = memorySampler(0)
    const measureRestart = async (k: number) => {
      const run = `restart${k}`
      const plannedSpawnMs = Date.now() + 1_500
      await sql.run(insertCopies({
        columns, templateId: row.id, from: 0, to: RESTART_N - 1, shards, sinkPort: sink!.port, run,
        createdMs: `${Date.now()} - 1000`,
        dueMs: `${plannedSpawnMs + RESTART_FIRST_DUE_MS} + i * ${RESTART_STEP_MS}`
      }))
      await sink!.expect(run, RESTART_N)
      const restartDue = Array.from({ length: RESTART_N }, (_, i) => plannedSpawnMs + RESTART_FIRST_DUE_MS + i * RESTART_STEP_MS)
      await sleep(Math.max(0, plannedSpawnMs - Date.now()))
      const loadAverageAtSpawn = loadAverage()
      const statements = slowStatementSampler(sql)
      const started = startService(env)
      memory.stop()
      memory = memorySampler(started.child.pid!)
      const health = await waitHealth(origin, agent, key, started, 20, true)
      const restartComplete = await sink!.waitComplete(Date.now() + 30_000)
      const restartArrivals = await sink!.collect()
      const slowAtStart = await statements.stop()
      const spawnedAt = started.spawnedAtMs
      let firstArrival = Number.POSITIVE_INFINITY
      const restartLateness: Array<number> = []
      const restartLatenessAfter3s: Array<number> = []
      restartArrivals.arrivals.forEach((at, i) => {
        if (Number.isNaN(at)) return
        firstArrival = Math.min(firstArrival, at)
        restartLateness.push(at - restartDue[i]!)
        if (restartDue[i]! >= spawnedAt + 3_000) restartLatenessAfter3s.push(at - restartDue[i]!)
      })
      const figures = {
        spawnVsPlannedMs: round(spawnedAt - plannedSpawnMs),
        firstFiringAfterSpawnMs: round(firstArrival - spawnedAt),
        firstHealthAnswerAfterSpawnMs: round(health.firstAnswerMs - spawnedAt),
        firstHealthOkAfterSpawnMs: round(health.firstOkMs - spawnedAt),
        triggers: RESTART_N,
        dueFromSpawnMs: [round(restartDue[0]! - spawnedAt), round(restartDue[RESTART_N - 1]! - spawnedAt)],
        complete: restartComplete,
        missing: RESTART_N - restartLateness.length,
        duplicates: restartArrivals.duplicates,
        lateness: latenessFigures(restartLateness),
        latenessDue3sAfterSpawn: latenessFigures(restartLatenessAfter3s),
        rssAfterStartMiB: mib(memory.now().rss),
        loadAverageAtSpawn,
        slowStatements: slowAtStart
      }
      say(`scale: restart ${k + 1}: first firing ${figures.firstFiringAfterSpawnMs} ms after spawn, /health answered at ${figures.firstHealthAnswerAfterSpawnMs} ms, 200 at ${figures.firstHealthOkAfterSpawnMs} ms; lateness of those due ≥ 3 s after spawn p50 ${figures.latenessDue3sAfterSpawn.p50Ms} / max ${figures.latenessDue3sAfterSpawn.maxMs} ms; ${slowAtStart.length} statements over ${SLOW_STATEMENT_MS} ms; load ${loadAverageAtSpawn.join(" ")}`)
      return { figures, started }
    }
    const restarts: Array<Awaited<ReturnType<typeof measureRestart>>["figures"]> = []
    for (let k = 0; k < options.restarts; k++) {
      if (service !== undefined) {
        await service.stop()
        service = undefined
        await sleep(1_000)
      }
      const measured = await measureRestart(k) // on a failure, the exit kills the child
      service = measured.started
      restarts.push(measured.figures)
    }
    const running = service!
    const restart = restarts[0]!
    loadAverages.restart = restart.loadAverageAtSpawn

    // 5. /schedule latency on the table, then precision
    const bgJob = (j: number): JobSpec => ({
      id: options.n + j,
      url: sink!.url("bg", options.n + j),
      runAtMs: Date.now() + SPREAD_START_MS + Math.floor(Math.random() * (SPREAD_MS - SPREAD_START_MS)),
      body: JSON.stringify({ n: options.n + j })
    })
    loadAverages.latency = loadAverage()
    const latencyStatements = slowStatementSampler(sql)
    const warmUp = await runCalls(WARM_UP_CALLS, CLIENT_CONNECTIONS, Date.now() + 120_000, (j) => schedule(bgJob(j)))
    const timed = await runCalls(options.latencyN, CLIENT_CONNECTIONS, Date.now() + 300_000, (j) => schedule(bgJob(WARM_UP_CALLS + j)))
    const slowDuringLatency = await latencyStatements.stop()
    loadAverages.afterLatency = loadAverage()
    const latency = { warmUp: latencyFigures(warmUp), timed: latencyFigures(timed), slowStatements: slowDuringLatency, rssAfterMiB: mib(memory.now().rss) }
    say(`scale: /schedule ×${options.latencyN}, ${CLIENT_CONNECTIONS} callers: p50 ${latency.timed.p50Ms} ms, p99 ${latency.timed.p99Ms} ms, ${latency.timed.ratePerS}/s, ${latency.timed.errors} errors`)

    await sink.expect("precision", options.precisionN)
    const base = Date.now() + PRECISION_LEAD_MS
    const instants = Array.from({ length: options.precisionN }, (_, i) => base + Math.round((i * PRECISION_SPREAD_MS) / options.precisionN))
    const precisionJobs: Array<JobSpec> = instants.map((at, i) => ({ id: i, url: sink!.url("precision", i), runAtMs: at, body: JSON.stringify({ n: i }) }))
    const loadT0 = performance.now()
    const precisionLoad = await runCalls(precisionJobs.length, CLIENT_CONNECTIONS, Date.now() + 60_000, (i) => schedule(precisionJobs[i]!), 1)
    const precisionLoadMs = performance.now() - loadT0
    if (precisionLoad.errors > 0) throw new Error(`scheduling the precision triggers failed: ${precisionLoad.firstError}`)
    loadAverages.precision = loadAverage()
    const precisionComplete = await sink.waitComplete(instants[instants.length - 1]! + 30_000)
    const precisionArrivals = await sink.collect()
    loadAverages.afterPrecision = loadAverage()
    const precisionLateness: Array<number> = []
    precisionArrivals.arrivals.forEach((at, i) => {
      if (!Number.isNaN(at)) precisionLateness.push(at - instants[i]!)
    })
    const precision = {
      triggers: options.precisionN,
      spreadMs: PRECISION_SPREAD_MS,
      leadMs: PRECISION_LEAD_MS,
      scheduleMs: round(precisionLoadMs),
      complete: precisionComplete,
      missing: options.precisionN - precisionLateness.length,
      duplicates: precisionArrivals.duplicates,
      strays: precisionArrivals.strays,
      lateness: latenessFigures(precisionLateness)
    }
    say(`scale: precision ×${options.precisionN} over 10 s: lateness p50 ${precision.lateness.p50Ms} / p99 ${precision.lateness.p99Ms} / max ${precision.lateness.maxMs} ms, ${precision.missing} missing`)

    // the same calls from wrk, a client that takes far less of the shared cores (when it is installed);
    // last, so that the memory figures before it are those of the phases above
    const beforeWrk = memory.now()
    const wrk = wrkPath()
    let wrkLatency: Awaited<ReturnType<typeof runWrk>> | string = "wrk not on PATH"
    if (wrk !== undefined) {
      loadAverages.wrk = loadAverage()
      wrkLatency = await runWrk(wrk, { origin, key, sinkUrl: sink.url("wrk", 0).replace(/0$/, ""), seconds: WRK_SECONDS, dir: dataDir })
      loadAverages.afterWrk = loadAverage()
      say(`scale: /schedule by wrk for ${WRK_SECONDS} s, 32 connections: p50 ${wrkLatency.p50Ms} ms, p99 ${wrkLatency.p99Ms} ms, ${wrkLatency.ratePerS}/s, ${wrkLatency.socketErrors + wrkLatency.statusErrors} errors`)
    }

    // 6. memory
    const end = memory.now()
    memory.stop()
    const memoryFigures = {
      peakRssMiB: mib(end.hwm),
      peakRssBeforeWrkMiB: mib(beforeWrk.hwm),
      sampledPeakRssMiB: mib(memory.peak().peakRss),
      rssAtEndMiB: mib(end.rss),
      goalMiB: RSS_GOAL_MIB
    }
    await running.stop()
    service = undefined
    loadAverages.end = loadAverage()

    const result = {
      workload: "scale",
      startedAt: startedAt.toISOString(),
      options,
      machine: {
        cpus: os.availableParallelism(),
        cpuModel: os.cpus()[0]?.model ?? "unknown",
        memoryGiB: round(os.totalmem() / 2 ** 30),
        kernel: `${os.type()} ${os.release()}`,
        node: process.version,
        postgres,
        database: server.description,
        commit: commitOf()
      },
      settings: {
        service: { LOG_LEVEL: "warn", others: "defaults", shards },
        client: { connections: CLIENT_CONNECTIONS, keepAlive: true, tls: "self-signed, not verified" },
        background: { n: options.n, dueFrom: spread.first, dueUntil: spread.last, perShardMin: Number(spread.per_shard_min), perShardMax: Number(spread.per_shard_max) }
      },
      load: { rows: options.n - 1, chunks, insertMs: round(insertMs), vacuumAnalyzeMs: round(vacuumMs), totalRows: Number(counts.total), quotaUsed: Number(counts.quota_used) },
      sizes,
      leafDensity,
      plans,
      restart,
      restarts,
      latency,
      wrk: wrkLatency,
      precision,
      memory: memoryFigures,
      loadAverages
    }
    const dir = path.join(REPO_ROOT, "bench-results")
    fs.mkdirSync(dir, { recursive: true })
    const file = path.join(dir, `scale-${startedAt.toISOString().replace(/[:.]/g, "-")}.json`)
    fs.writeFileSync(file, JSON.stringify(result, null, 2) + "\n")
    process.stdout.write(`${report(result)}\nJSON: ${file}\n`)
  } finally {
    await service?.stop().catch(() => {})
    await sink?.stop().catch(() => {})
    killAllChildren()
    await dropDatabase?.().catch((error: unknown) => say(`scale: could not drop the database: ${String(error)}`))
    dropDatabase = undefined
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
    await server?.stop()
  }
}

interface Result {
  readonly options: Options
  readonly load: { readonly rows: number; readonly insertMs: number; readonly vacuumAnalyzeMs: number }
  readonly sizes: ReadonlyArray<{ name: string; mib: number; bytesPerTrigger: number }>
  readonly plans: Record<string, { executionMs: number }>
  readonly leafDensity: Record<string, number> | string
  readonly restart: {
    firstFiringAfterSpawnMs: number; firstHealthAnswerAfterSpawnMs: number; firstHealthOkAfterSpawnMs: number; missing: number
    lateness: ReturnType<typeof latenessFigures>; latenessDue3sAfterSpawn: ReturnType<typeof latenessFigures>; rssAfterStartMiB: number
    slowStatements: ReadonlyArray<SlowStatement>
  }
  readonly restarts: ReadonlyArray<{
    firstFiringAfterSpawnMs: number; firstHealthOkAfterSpawnMs: number; latenessDue3sAfterSpawn: ReturnType<typeof latenessFigures>
    loadAverageAtSpawn: ReadonlyArray<number>
  }>
  readonly latency: { timed: ReturnType<typeof latencyFigures>; warmUp: ReturnType<typeof latencyFigures>; slowStatements: ReadonlyArray<SlowStatement> }
  readonly wrk: { p50Ms: number; p99Ms: number; maxMs: number; ratePerS: number; requests: number; socketErrors: number; statusErrors: number } | string
  readonly precision: { lateness: ReturnType<typeof latenessFigures>; missing: number; scheduleMs: number }
  readonly memory: { peakRssMiB: number; peakRssBeforeWrkMiB: number; sampledPeakRssMiB: number; rssAtEndMiB: number }
  readonly loadAverages: Record<string, ReadonlyArray<number>>
}

const report = (r: Result): string => {
  const n = r.options.n.toLocaleString("en")
  const lines = [
    `## Scale: ${n} pending triggers over 30 days`,
    "",
    `Load (setup): ${r.load.rows.toLocaleString("en")} rows in ${round(r.load.insertMs / 1000)} s, VACUUM ANALYZE ${round(r.load.vacuumAnalyzeMs / 1000)} s`,
    "",
    "| size | MiB | bytes per trigger |",
    "| --- | ---: | ---: |",
    ...r.sizes.map((s) => `| ${s.name} | ${s.mib} | ${s.bytesPerTrigger} |`),
    "",
    "| figure | value | goal |",
    "| --- | ---: | ---: |",
    `| first firing after spawn (ms), first restart after the load | ${r.restart.firstFiringAfterSpawnMs} | ≤ 3,000 |`,
    `| each restart: first firing / /health 200 after spawn (ms) | ${r.restarts.map((x) => `${x.firstFiringAfterSpawnMs} / ${x.firstHealthOkAfterSpawnMs}`).join("; ")} | |`,
    `| each restart: lateness of those due ≥ 3 s after spawn, p50 / max (ms) | ${r.restarts.map((x) => `${x.latenessDue3sAfterSpawn.p50Ms} / ${x.latenessDue3sAfterSpawn.maxMs}`).join("; ")} | |`,
    `| first /health answer after spawn (ms) | ${r.restart.firstHealthAnswerAfterSpawnMs} | |`,
    `| first /health 200 after spawn (ms) | ${r.restart.firstHealthOkAfterSpawnMs} | |`,
    `| restart set lateness p50 / p99 / max (ms), all 500 | ${r.restart.lateness.p50Ms} / ${r.restart.lateness.p99Ms} / ${r.restart.lateness.maxMs} | |`,
    `| restart set lateness p50 / p99 / max (ms), due ≥ 3 s after spawn | ${r.restart.latenessDue3sAfterSpawn.p50Ms} / ${r.restart.latenessDue3sAfterSpawn.p99Ms} / ${r.restart.latenessDue3sAfterSpawn.maxMs} | |`,
    `| /schedule p50 / p99 / max (ms), ${r.latency.timed.calls} calls, 32 callers | ${r.latency.timed.p50Ms} / ${r.latency.timed.p99Ms} / ${r.latency.timed.maxMs} | |`,
    `| /schedule calls/s | ${r.latency.timed.ratePerS} | |`,
    typeof r.wrk === "string"
      ? `| /schedule by wrk | ${r.wrk} | |`
      : `| /schedule by wrk, ${WRK_SECONDS} s, 32 connections: p50 / p99 / max (ms), requests/s, errors | ${r.wrk.p50Ms} / ${r.wrk.p99Ms} / ${r.wrk.maxMs}, ${r.wrk.ratePerS}/s, ${r.wrk.socketErrors + r.wrk.statusErrors} | |`,
    `| precision lateness p50 / p99 / max (ms), ${r.precision.lateness.count} over 10 s | ${r.precision.lateness.p50Ms} / ${r.precision.lateness.p99Ms} / ${r.precision.lateness.maxMs} | |`,
    `| missing (restart / precision) | ${r.restart.missing} / ${r.precision.missing} | 0 |`,
    `| peak RSS, VmHWM (MiB), before the wrk phase / at the end | ${r.memory.peakRssBeforeWrkMiB} / ${r.memory.peakRssMiB} | ≤ ${RSS_GOAL_MIB} |`,
    `| RSS after start / at end (MiB) | ${r.restart.rssAfterStartMiB} / ${r.memory.rssAtEndMiB} | |`,
    "",
    "B-tree leaf density (%): " + (typeof r.leafDensity === "string" ? r.leafDensity : Object.entries(r.leafDensity).map(([name, d]) => `${name} ${d}`).join(", ")),
    "",
    "Plans at this size (EXPLAIN ANALYZE): " + Object.entries(r.plans).map(([name, p]) => `${name} ${p.executionMs} ms`).join("; "),
    "",
    `Statements over ${SLOW_STATEMENT_MS} ms at start: ${r.restart.slowStatements.length === 0 ? "none" : ""}`,
    ...r.restart.slowStatements.slice(0, 10).map((s) => `- ${s.ms} ms (${s.application}): ${s.query.slice(0, 200)}`),
    `Statements over ${SLOW_STATEMENT_MS} ms during the /schedule calls: ${r.latency.slowStatements.length === 0 ? "none" : ""}`,
    ...r.latency.slowStatements.slice(0, 10).map((s) => `- ${s.ms} ms (${s.application}): ${s.query.slice(0, 200)}`),
    "",
    "Load averages (1/5/15 min): " + Object.entries(r.loadAverages).map(([at, l]) => `${at} ${l.join(" ")}`).join("; ")
  ]
  return lines.join("\n")
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    say(`scale: ${error instanceof Error ? error.stack ?? error.message : String(error)}`)
    process.exit(1)
  }
)
