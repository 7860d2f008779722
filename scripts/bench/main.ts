// `npm run bench [-- --only ingest,delivery,precision,precision-fast,batch,gated,redrive,lateness-curve] [--systems timewheel,graphile-worker,pg-boss]
// [--n 20000] [--precision-n 2000] [--batch-n 100000] [--gated-nodes 1,3] [--redrive-n 100000] [--lead-ms N] [--curve-seconds 3]
// [--curve-svg FILE] [--history-per-day N [--history-database NAME]] [--encryption] [--tracing]`: runs each workload against each system on one
// PostgreSQL (DATABASE_URL, else an embedded one), a fresh database per run, a sink in its own process;
// prints Markdown tables with timewheel/peer ratios (and, beside ingest and delivery, what the machine allows
// the same client: the ceilings) and writes bench-results/<timestamp>.json.
import { installExitHandlers, killAllChildren } from "./common.ts"
import { contendersFor, SYSTEMS, WORKLOADS } from "./contenders.ts"
import type { SystemName, Variants, WorkloadName } from "./contenders.ts"
import { freshDatabase, openDatabaseServer, serverVersion } from "./database.ts"
import type { DatabaseServer } from "./database.ts"
import { failWith, readFlags } from "./cliFlags.ts"
import { runDeliveryCeiling } from "./deliveryCeiling.ts"
import { DELIVERY_CEILING_SETTINGS } from "./deliveryCeiling.ts"
import type { Costs } from "./costs.ts"
import { runBareCeiling } from "./ingestWrk.ts"
import { REDRIVE_DEFAULT_N, runRedrive } from "./redrive.ts"
import { HISTORY_DAYS, historyPrepare, historyTemplate, RETENTION_DEFAULT_PER_DAY, retentionMarkdown, runRetention } from "./retention.ts"
import { describeMachine, markdown, writeJson } from "./report.ts"
import type { CeilingEntry, Entry, Metrics } from "./report.ts"
import { startSink } from "./sink.ts"
import { WRK_SETTINGS } from "./wrk.ts"
import type { Sink } from "./sink.ts"
import type { Contender } from "./system.ts"
import { GATED_DEFAULT_N, type GatedMetrics, runGated } from "./gated.ts"
import { TARGETS } from "./gatedTargets.ts"
import { BATCH_SIZE, LoadOverrun, runBatch, runDelivery, runIngest, runPrecision } from "./workloads.ts"
import { CURVE_DEFAULT_SECONDS, curveMarkdown, type CurveRun, runCurve, writeCurveSvg } from "./latenessCurve.ts"

const USAGE = `usage: npm run bench -- [--only ingest,delivery,precision,precision-fast,batch,gated,redrive,lateness-curve,retention] [--systems timewheel,graphile-worker,pg-boss]
                        [--n 20000] [--precision-n 2000] [--batch-n 100000] [--gated-nodes 1,3] [--redrive-n ${REDRIVE_DEFAULT_N}]
                        [--retention-per-day ${RETENTION_DEFAULT_PER_DAY}] [--retention-database NAME] [--lead-ms N] [--curve-seconds ${CURVE_DEFAULT_SECONDS}] [--curve-svg FILE]
                        [--history-per-day N [--history-database NAME]] [--encryption] [--tracing]
  --only         workloads to run (default all but lateness-curve and retention, which run only when named; "memory" is
                 measured in every workload; gated, redrive and retention are timewheel only)
                 lateness-curve: the precision workload's steady stream at 500, 1,000, 2,000, 4,000, 8,000 and 16,000 due/s
                 for timewheel and graphile-worker at 1 ms polling, each up to the first rate it falls behind at;
                 p50 and p99 against the rate drawn as one SVG (beside the JSON, and to --curve-svg)
                 retention: 40 days of history, then the oldest 10 removed while the service delivers 1,000/s
                 ingest: timewheel driven by wrk (1 thread, 32 connections, 8 s after a 2 s warm-up; installed
                 with apt-get when missing and root) and by the Node client (n calls, as before); beside it the
                 ceilings: the same wrk against a bare node:https server, timewheel's GET /health and POST /schedule
                 delivery: beside it the ceiling, the same sink driven by undici alone (no database, n requests)
  --systems      systems to run (default all)
  --n            requests in the ingest and delivery workloads (default 20000), and in each run of
                 the gated workload (default ${GATED_DEFAULT_N})
  --precision-n  requests in the precision workload, spread over 10 s (default 2000); precision-fast sends
                 ten times as many in the same 10 s
  --batch-n      requests in the batch workload, a multiple of ${BATCH_SIZE} (default 100000)
  --gated-nodes  the gated workload's timewheel runs: one node, three sharing the database, or both (default 1,3)
  --gated-origins  only the gated workload's ungated run and its \`*\` runs, over these counts of origins (200, 1000)
  --redrive-n    dead letters redriven by one bulk action in the redrive workload (default ${REDRIVE_DEFAULT_N}), with the
                 longest wait of a claim of one of them beside it
  --retention-per-day  finished triggers per day of the retention workload's 40 days of history, 4 executions
                 each (default ${RETENTION_DEFAULT_PER_DAY}: 1M executions; 125000 gives 5M triggers and 20M executions)
  --retention-database  the retention workload's history in the databases NAME and NAME_copy: made and kept
                 when absent (the run stops there), else measured on and dropped: the making apart from the
                 measured phase
  --history-per-day  timewheel's delivery and precision runs start on a database already holding the retention
                 workload's 40 days of history, N finished triggers a day with 4 executions each (25000: 1M
                 triggers, 4M executions), made after the migrations and before the service starts; the
                 service then runs with RETENTION_DAYS ${HISTORY_DAYS + 2}, so that it keeps them
  --history-database  that history made once in the database NAME and kept: made when absent (the run stops
                 there), else each of those runs starts on a copy of it (CREATE DATABASE … TEMPLATE NAME); NAME
                 is never dropped by the bench
  --lead-ms      time between the start of loading and the first due instant (default: estimated)
  --curve-seconds  seconds of steady stream at each rate of lateness-curve (default ${CURVE_DEFAULT_SECONDS})
  --curve-svg    also write lateness-curve's SVG to this file (e.g. docs/lateness-curve.svg)
  --encryption   delivery also runs timewheel with ENCRYPTION_KEYS set (every stored header and body encrypted)
  --tracing      delivery also runs timewheel with tracing on, exporting to a local OTLP receiver that discards the spans`

interface Options {
  readonly workloads: ReadonlyArray<WorkloadName>
  readonly systems: ReadonlyArray<SystemName>
  readonly n: number
  /** Requests in each run of the gated workload: --n when given. */
  readonly gatedN: number
  /** The gated workload's cluster sizes. */
  readonly gatedNodes: ReadonlyArray<number>
  /** Only the gated workload's `*` runs, over these counts of origins. */
  readonly gatedOrigins: ReadonlyArray<number> | undefined
  readonly precisionN: number
  readonly batchN: number
  readonly redriveN: number
  /** The retention workload (named in --only), with this many triggers per day of history. */
  readonly retentionPerDay: number | undefined
  /** The retention workload's databases, kept between a making run and a measured one. */
  readonly retentionDatabase: string | undefined
  /** Finished triggers per day of history in timewheel's delivery and precision databases (none when absent). */
  readonly historyPerDay: number | undefined
  /** The database holding that history, made once and copied for each run (--history-database). */
  readonly historyDatabase: string | undefined
  readonly leadMs: number | undefined
  readonly variants: Variants
  /** The lateness-against-load curve (latenessCurve.ts): run when asked for by --only. */
  readonly curve: { readonly seconds: number; readonly svg: string | undefined } | undefined
}

const fail = failWith(USAGE)

const listOf = <A extends string>(raw: string, allowed: ReadonlyArray<A>, extra: ReadonlyArray<string> = []): Array<A> => {
  const items = raw.split(",").map((item) => item.trim()).filter((item) => item !== "" && !extra.includes(item))
  for (const item of items) if (!allowed.includes(item as A)) fail(`unknown value "${item}" (expected ${allowed.join(", ")})`)
  return items as Array<A>
}

const positiveInt = (raw: string, name: string): number =>
  /^\d+$/.test(raw) && Number(raw) > 0 ? Number(raw) : fail(`${name} must be a positive integer, got "${raw}"`)

const batchCount = (raw: string): number => {
  const n = positiveInt(raw, "--batch-n")
  return n % BATCH_SIZE === 0 ? n : fail(`--batch-n must be a multiple of ${BATCH_SIZE}, got ${n}`)
}

const parseOptions = (args: ReadonlyArray<string>): Options => {
  const { values, switches } = readFlags(
    args, USAGE,
    ["only", "systems", "n", "precision-n", "batch-n", "gated-nodes", "gated-origins", "redrive-n", "retention-per-day", "retention-database", "history-per-day", "history-database", "lead-ms", "curve-seconds", "curve-svg"],
    ["encryption", "tracing"]
  )
  const lead = values.get("lead-ms")
  const only = values.get("only")
  const curve = only !== undefined && only.split(",").map((item) => item.trim()).includes("lateness-curve")
  return {
    workloads: only !== undefined ? listOf(only, WORKLOADS, ["memory", "lateness-curve", "retention"]) : WORKLOADS,
    curve: curve
      ? { seconds: positiveInt(values.get("curve-seconds") ?? String(CURVE_DEFAULT_SECONDS), "--curve-seconds"), svg: values.get("curve-svg") }
      : undefined,
    systems: values.has("systems") ? listOf(values.get("systems")!, SYSTEMS) : SYSTEMS,
    n: positiveInt(values.get("n") ?? "20000", "--n"),
    gatedN: positiveInt(values.get("n") ?? String(GATED_DEFAULT_N), "--n"),
    gatedNodes: listOf(values.get("gated-nodes") ?? "1,3", ["1", "3"]).map(Number),
    gatedOrigins: values.has("gated-origins")
      ? listOf(values.get("gated-origins")!, TARGETS.origins.map(String)).map(Number)
      : undefined,
    precisionN: positiveInt(values.get("precision-n") ?? "2000", "--precision-n"),
    batchN: batchCount(values.get("batch-n") ?? "100000"),
    redriveN: positiveInt(values.get("redrive-n") ?? String(REDRIVE_DEFAULT_N), "--redrive-n"),
    retentionPerDay: (values.get("only") ?? "").split(",").map((w) => w.trim()).includes("retention")
      ? positiveInt(values.get("retention-per-day") ?? String(RETENTION_DEFAULT_PER_DAY), "--retention-per-day")
      : undefined,
    retentionDatabase: values.has("retention-database")
      ? (/^[a-z][a-z0-9_]{0,40}$/.test(values.get("retention-database")!) ? values.get("retention-database") : fail("--retention-database must be a lower-case name"))
      : undefined,
    historyPerDay: values.has("history-per-day") ? positiveInt(values.get("history-per-day")!, "--history-per-day") : undefined,
    historyDatabase: !values.has("history-database") ? undefined
      : !values.has("history-per-day") ? fail("--history-database needs --history-per-day")
      : /^[a-z][a-z0-9_]{0,40}$/.test(values.get("history-database")!) ? values.get("history-database")
      : fail("--history-database must be a lower-case name"),
    leadMs: lead === undefined ? undefined : positiveInt(lead, "--lead-ms"),
    variants: { encryption: switches.has("encryption"), tracing: switches.has("tracing") }
  }
}

/**
 * Time to leave for loading before the first due instant. timewheel loads through /schedule, at the
 * rate its ingest measured in this run (else 500/s), slower on a freshly started service: twice the
 * expected time plus 5 s. Peers load in bulk (about 5,000/s or more): 1.5 times plus 3 s.
 */
const estimateLead = (contender: Contender, n: number, timewheelIngestRate: number | undefined) =>
  contender.system === "timewheel"
    ? Math.ceil(5_000 + (2 * n * 1000) / (timewheelIngestRate ?? 500))
    : Math.ceil(3_000 + (1.5 * n * 1000) / 5_000)

/** Drops the database of the run in progress; called on interruption too. */
let dropCurrent: (() => Promise<void>) | undefined

const say = (line: string) => process.stderr.write(`${line}\n`)

/** The gated workload's target-policy runs in a line. */
const targetsSummary = (g: GatedMetrics): string =>
  g.targets.manyOrigins.map((many) => `${many.origins} origins under *: ${many.star.ratePerS}/s (${many.star.vsUngated}× ungated, ` +
    `peak ${many.star.peakInFlightPerOrigin} per origin)`).join("; ") +
  (g.targets.outage === undefined ? "" : `; origin down 10 s: ${g.targets.outage.withoutBreaker.receivedWhileDown} requests, ${g.targets.outage.withoutBreaker.deadLetters} dead letters ` +
  `without a circuit breaker, ${g.targets.outage.withBreaker.receivedWhileDown} and ${g.targets.outage.withBreaker.deadLetters} with`)

const summary = (workload: WorkloadName, m: Metrics): string => {
  const r = m as unknown as Record<string, number>
  if (workload === "ingest" && r.triggers !== undefined) {
    const h = (m as unknown as { health: Record<string, number> }).health
    return `wrk: ${r.ratePerS}/s, p50 ${r.latencyP50Ms} ms, p99 ${r.latencyP99Ms} ms, ${r.errors} errors, ${r.peakRssMiB} MiB; ` +
      `GET /health ${h.ratePerS}/s, p99 ${h.latencyP99Ms} ms`
  }
  if (workload === "ingest") return `${r.ratePerS}/s, p50 ${r.latencyP50Ms} ms, p99 ${r.latencyP99Ms} ms, ${r.errors} errors, ${r.peakRssMiB} MiB`
  if (workload === "delivery") return `last arrival ${r.lastArrivalMs} ms after due, ${r.ratePerS}/s, ${r.missing} missing, ${r.peakRssMiB} MiB`
  if (workload === "gated") {
    const g = m as unknown as Record<string, Record<string, number>>
    if (g.concurrency === undefined) return `ungated ${g.ungated!.ratePerS}/s; ${targetsSummary(m as unknown as GatedMetrics)}; ${r.missing} missing`
    const windows = (g.throughput as unknown as { windows: Record<string, { maxInWindow: number }> }).windows
    return `ungated ${g.ungated!.ratePerS}/s; maxConcurrent ${g.concurrency!.maxConcurrent}: ${g.concurrency!.ratePerS}/s ` +
      `(${g.concurrency!.vsUngated}× ungated, peak ${g.concurrency!.peakInFlight}); binding ${g.binding!.ratePerS}/s ` +
      `(${g.binding!.ofIdeal}× of ${g.binding!.idealPerS}, peak ${g.binding!.peakInFlight}); throughput: most in a window ` +
      `${Object.entries(windows).map(([label, w]) => `${label} ${w.maxInWindow}`).join(", ")}, ${g.throughput!.wholeWindowsRatePerS}/s ` +
      `(${g.throughput!.ofRate}×); hold: ${g.hold!.startsDuringHold} starts during it, resumed after ${g.hold!.resumedAfterMs} ms; ` +
      `${targetsSummary(m as unknown as GatedMetrics)}; ${r.missing} missing, ${r.peakRssMiB} MiB`
  }
  if (workload === "redrive") {
    return `${r.matched} matched, POST ${r.startMs} ms, action ${r.actionMs} ms (${r.ratePerS}/s), longest claim wait ${r.lockWaitMs} ms ` +
      `(${r.probes} probes), last replay at the sink ${r.lastArrivalMs} ms, ${r.missing} missing, ${r.peakRssMiB} MiB`
  }
  if (workload === "batch") {
    const d = (m as { declare?: Record<string, number> }).declare
    const declare = d === undefined ? "" : `; /declare ${Math.round(d.firstMs!)} ms, again ${Math.round(d.againMs!)} ms, ` +
      `claim waits ${Math.round(d.declareLockWaitMs!)} / ${Math.round(d.bulkLockWaitMs!)} ms`
    const { unkeyed: u, keyed: k } = m as unknown as Record<string, Record<string, number>>
    const costs = (run: Record<string, unknown>) => {
      const c = run.costs as Costs | undefined
      return c === undefined ? "" : `, ${c.workerCpuUs} + ${c.postgresCpuUs} µs CPU/job`
    }
    return `unkeyed ${u!.ratePerS} jobs/s (p50 ${u!.callP50Ms}, p99 ${u!.callP99Ms} ms${costs(u!)}), keyed ${k!.ratePerS} jobs/s ` +
      `(p50 ${k!.callP50Ms}, p99 ${k!.callP99Ms} ms${costs(k!)}), ${r.errors} errors, ${r.peakRssMiB} MiB${declare}`
  }
  return `lateness p50 ${r.latenessP50Ms} / p99 ${r.latenessP99Ms} / max ${r.latenessMaxMs} ms, ${r.missing} missing, ${r.peakRssMiB} MiB`
}

/**
 * A workload's ceiling: for ingest (with timewheel in the run) the bare node:https server under the
 * same wrk client, measured first, so that timewheel's /health and /schedule rows follow it closely;
 * for delivery the same sink driven by undici alone, after the systems.
 */
const ceilingOf = (workload: WorkloadName, options: Options, sink: Sink) => {
  if (workload === "ingest" && options.systems.includes("timewheel")) {
    const settings = { ...WRK_SETTINGS, server: "node:https, self-signed, 200 + tiny JSON" }
    return { workload, label: "bare node:https", settings, first: true, run: runBareCeiling }
  }
  if (workload === "delivery") {
    return { workload, label: "undici alone", settings: DELIVERY_CEILING_SETTINGS, first: false, run: () => runDeliveryCeiling(sink, options.n) }
  }
  return undefined
}

/** The precision workloads' size: --precision-n over 10 s, ten times that in precision-fast. */
const precisionNOf = (workload: WorkloadName, options: Options) => (workload === "precision-fast" ? 10 : 1) * options.precisionN

const runOne = async (
  server: DatabaseServer,
  sink: Sink,
  workload: WorkloadName,
  contender: Contender,
  options: Options,
  timewheelIngestRate: number | undefined,
  historyFrom: string | undefined
): Promise<Metrics> => {
  const history = options.historyPerDay !== undefined && contender.system === "timewheel" && (workload === "delivery" || workload.startsWith("precision"))
  const attempt = async (leadMs: number): Promise<Metrics> => {
    const t0 = performance.now()
    const database = await freshDatabase(server, `${workload}_${contender.label}`, history ? historyFrom : undefined)
    dropCurrent = database.drop
    try {
      if (history && historyFrom !== undefined) say(`  history: copied from ${historyFrom} in ${Math.round(performance.now() - t0)} ms`)
      else if (history) {
        say(`  history: ${HISTORY_DAYS} days of ${options.historyPerDay} finished triggers made in ${await historyPrepare(database.url, options.historyPerDay!)} ms`)
      }
      if (workload === "ingest") return await runIngest(contender, database.url, sink, options.n)
      if (workload === "delivery") return await runDelivery(contender, database.url, sink, options.n, leadMs)
      if (workload === "batch") return await runBatch(contender, database.url, sink, options.batchN)
      if (workload === "redrive") return await runRedrive(contender, database.url, sink, options.redriveN)
      if (workload === "gated") return await runGated(contender, database.url, sink, options.gatedN, leadMs, options.gatedOrigins)
      return await runPrecision(contender, database.url, sink, precisionNOf(workload, options), leadMs)
    } finally {
      dropCurrent = undefined
      await database.drop().catch((error: unknown) => say(`  could not drop the database: ${String(error)}`))
    }
  }
  const n = workload.startsWith("precision") ? precisionNOf(workload, options)
    : workload === "gated" ? options.gatedN : workload === "redrive" ? options.redriveN : options.n
  const lead = options.leadMs ?? estimateLead(contender, n, timewheelIngestRate)
  try {
    return await attempt(lead)
  } catch (error) {
    if (!(error instanceof LoadOverrun) || options.leadMs !== undefined) throw error
    const longer = Math.ceil(Math.max(2 * lead, 1.5 * error.loadMs) + 3_000)
    say(`  ${error.message}; retrying with a ${longer} ms lead`)
    return await attempt(longer)
  }
}

const main = async () => {
  const options = parseOptions(process.argv.slice(2))
  // the service's retention (first sweep a minute after it starts) would otherwise drop the oldest days meanwhile
  if (options.historyPerDay !== undefined) process.env.RETENTION_DAYS = String(HISTORY_DAYS + 2)
  const startedAt = new Date()
  let server: DatabaseServer | undefined
  let sink: Sink | undefined
  installExitHandlers(async () => {
    await dropCurrent?.()
    await server?.stop()
  })
  try {
    server = await openDatabaseServer()
    const machine = describeMachine(await serverVersion(server), server.description)
    sink = await startSink()
    say(`bench: PostgreSQL ${machine.postgres} (${server.description}); sink on 127.0.0.1:${sink.port}`)
    const historyFrom = options.historyDatabase === undefined ? undefined
      : await historyTemplate(server, options.historyDatabase, options.historyPerDay!, say)
    if (options.historyDatabase !== undefined && historyFrom === undefined) return
    if (options.retentionPerDay !== undefined) {
      say("retention · timewheel …")
      const retention = await runRetention(server, sink, options.retentionPerDay, say, options.retentionDatabase)
      if (retention !== undefined) process.stdout.write(`${retentionMarkdown(retention)}\n\n`)
      if (options.workloads.length === 0) return
    }
    const entries: Array<Entry> = []
    const ceilings: Array<CeilingEntry> = []
    let timewheelIngestRate: number | undefined
    const measureCeiling = async (ceiling: NonNullable<ReturnType<typeof ceilingOf>>) => {
      say(`${ceiling.workload} · ceiling: ${ceiling.label} …`)
      try {
        const metrics = await ceiling.run()
        ceilings.push({ workload: ceiling.workload, label: ceiling.label, settings: ceiling.settings, metrics })
        say(`  ${metrics.ratePerS}/s`)
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error)
        ceilings.push({ workload: ceiling.workload, label: ceiling.label, settings: ceiling.settings, metrics: undefined, error: message })
        say(`  failed: ${message}`)
      }
    }
    for (const workload of options.workloads) {
      const ceiling = ceilingOf(workload, options, sink)
      if (ceiling?.first === true) await measureCeiling(ceiling)
      const contenders = contendersFor(workload, options.systems, options.variants)
        .filter((contender) => workload !== "gated" || options.gatedNodes.includes(contender.nodes ?? 1))
      for (const contender of contenders) {
        say(`${workload} · ${contender.label} …`)
        const base = { workload, system: contender.system, label: contender.label, settings: contender.settings }
        try {
          const metrics = await runOne(server, sink, workload, contender, options, timewheelIngestRate, historyFrom)
          // the loading lead is estimated from the rate of the client that loads (the Node one)
          if (workload === "ingest" && contender.system === "timewheel" && contender.client === undefined && "latencyP50Ms" in metrics && metrics.ratePerS > 0) {
            timewheelIngestRate = metrics.ratePerS
          }
          entries.push({ ...base, metrics })
          say(`  ${summary(workload, metrics)}`)
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error)
          entries.push({ ...base, metrics: undefined, error: message })
          say(`  failed: ${message}`)
        }
      }
      if (ceiling !== undefined && !ceiling.first) await measureCeiling(ceiling)
    }
    let curve: Array<CurveRun> | undefined
    if (options.curve !== undefined) {
      const contenders = contendersFor("precision-fast", options.systems)
      curve = await runCurve(contenders, sink, async (label) => {
        const database = await freshDatabase(server!, label)
        dropCurrent = database.drop
        return { url: database.url, drop: async () => { dropCurrent = undefined; await database.drop() } }
      }, options.curve.seconds)
    }
    const file = writeJson(startedAt, { ...options }, machine, entries, ceilings, curve)
    const curveText = curve === undefined ? "" : `${curveMarkdown(curve, options.curve!.seconds)}\n\n`
    if (curve !== undefined) {
      const svg = file.replace(/\.json$/, "-lateness-curve.svg")
      writeCurveSvg(svg, curve, options.curve!.seconds)
      if (options.curve!.svg !== undefined) writeCurveSvg(options.curve!.svg, curve, options.curve!.seconds)
      say(`lateness-curve: ${svg}${options.curve!.svg === undefined ? "" : ` and ${options.curve!.svg}`}`)
    }
    process.stdout.write(`${curveText}${markdown(entries, ceilings, machine)}\n\nJSON: ${file}\n`)
  } finally {
    await sink?.stop()
    killAllChildren()
    await server?.stop()
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    say(`bench: ${error instanceof Error ? error.stack ?? error.message : String(error)}`)
    process.exit(1)
  }
)
