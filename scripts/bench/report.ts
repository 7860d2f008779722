// The benchmark's output: one Markdown table per workload (each figure, and timewheel/peer ratios from
// the same run), a memory table, and the whole run as JSON in bench-results/<timestamp>.json.
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { REPO_ROOT } from "./common.ts"
import { type SystemName, type WorkloadName, WORKLOADS } from "./contenders.ts"
import type { DeliveryCeilingMetrics } from "./deliveryCeiling.ts"
import { DELIVERY_CEILING_SETTINGS } from "./deliveryCeiling.ts"
import type { BareCeilingMetrics, IngestWrkMetrics } from "./ingestWrk.ts"
import type { RedriveMetrics } from "./redrive.ts"
import { WRK_TITLE } from "./ingestWrk.ts"
import { GATED, type GatedMetrics } from "./gated.ts"
import { TARGETS } from "./gatedTargets.ts"
import type { BatchMetrics, DeliveryMetrics, IngestMetrics, PrecisionMetrics } from "./workloads.ts"
import { BATCH_CONCURRENCY, BATCH_SIZE } from "./workloads.ts"

export type Metrics = IngestMetrics | IngestWrkMetrics | DeliveryMetrics | PrecisionMetrics | BatchMetrics | GatedMetrics | RedriveMetrics

export interface Entry {
  readonly workload: WorkloadName
  readonly system: SystemName
  readonly label: string
  readonly settings: Readonly<Record<string, unknown>>
  /** Undefined when the run failed; `error` says why. */
  readonly metrics: Metrics | undefined
  readonly error?: string
}

/** A measurement beside a workload's table, not a contender: what the machine allows the same client. */
export interface CeilingEntry {
  /** ingest: the bare node:https server under wrk; delivery: undici alone against the sink. */
  readonly workload: "ingest" | "delivery"
  readonly label: string
  readonly settings: Readonly<Record<string, unknown>>
  readonly metrics: BareCeilingMetrics | DeliveryCeilingMetrics | undefined
  readonly error?: string
}

/** One row of the ingest ceilings: a target under the same wrk client, and its rate against the bare server's. */
export interface IngestCeilingRow {
  readonly target: string
  readonly ratePerS: number | undefined
  readonly latencyP50Ms: number | undefined
  readonly latencyP99Ms: number | undefined
  readonly latencyMaxMs: number | undefined
  readonly errors: number | undefined
  readonly peakRssMiB: number | undefined
  readonly vsBare: number | undefined
}

export interface Machine {
  readonly cpus: number
  readonly cpuModel: string
  readonly memoryGiB: number
  readonly kernel: string
  readonly node: string
  readonly postgres: string
  readonly database: string
  readonly packages: Readonly<Record<string, string>>
  readonly commit: string
}

interface Row {
  readonly label: string
  readonly key: string
  /** Which way is better; undefined rows get no ratio. */
  readonly better?: "higher" | "lower"
}

const PRECISION_ROWS: ReadonlyArray<Row> = [
  { label: "lateness p50 (ms)", key: "latenessP50Ms", better: "lower" },
  { label: "lateness p99 (ms)", key: "latenessP99Ms", better: "lower" },
  { label: "lateness max (ms)", key: "latenessMaxMs", better: "lower" },
  { label: "lateness min (ms)", key: "latenessMinMs" },
  { label: "CPU of the working process per delivery (µs)", key: "costs.workerCpuUs", better: "lower" },
  { label: "CPU of PostgreSQL per delivery (µs)", key: "costs.postgresCpuUs", better: "lower" },
  { label: "WAL flushes per delivery", key: "costs.walSyncs", better: "lower" },
  { label: "transactions per delivery", key: "costs.commits", better: "lower" },
  { label: "peak RSS (MiB)", key: "peakRssMiB", better: "lower" },
  { label: "missing", key: "missing" }
]

const ROWS: Record<WorkloadName, ReadonlyArray<Row>> = {
  ingest: [
    { label: "calls/s", key: "ratePerS", better: "higher" },
    { label: "call latency p50 (ms)", key: "latencyP50Ms", better: "lower" },
    { label: "call latency p99 (ms)", key: "latencyP99Ms", better: "lower" },
    { label: "peak RSS (MiB)", key: "peakRssMiB", better: "lower" },
    { label: "errors", key: "errors" }
  ],
  delivery: [
    { label: "time to last arrival (s)", key: "lastArrivalS", better: "lower" },
    { label: "deliveries/s", key: "ratePerS", better: "higher" },
    { label: "first arrival after due (ms)", key: "firstArrivalMs", better: "lower" },
    { label: "CPU of the working process per delivery (µs)", key: "costs.workerCpuUs", better: "lower" },
    { label: "CPU of PostgreSQL per delivery (µs)", key: "costs.postgresCpuUs", better: "lower" },
    { label: "WAL per delivery (bytes)", key: "costs.walBytes", better: "lower" },
    { label: "WAL flushes per delivery", key: "costs.walSyncs", better: "lower" },
    { label: "transactions per delivery", key: "costs.commits", better: "lower" },
    { label: "peak RSS (MiB)", key: "peakRssMiB", better: "lower" },
    { label: "missing", key: "missing" }
  ],
  precision: PRECISION_ROWS,
  "precision-fast": PRECISION_ROWS,
  batch: [
    { label: "unkeyed: jobs/s", key: "unkeyed.ratePerS", better: "higher" },
    { label: `— call of ${BATCH_SIZE} p50 (ms)`, key: "unkeyed.callP50Ms", better: "lower" },
    { label: `— call of ${BATCH_SIZE} p99 (ms)`, key: "unkeyed.callP99Ms", better: "lower" },
    { label: "— CPU per job, working process (µs)", key: "unkeyed.costs.workerCpuUs", better: "lower" },
    { label: "— CPU per job, PostgreSQL (µs)", key: "unkeyed.costs.postgresCpuUs", better: "lower" },
    { label: "keyed (every key new): jobs/s", key: "keyed.ratePerS", better: "higher" },
    { label: `— call of ${BATCH_SIZE} p50 (ms)`, key: "keyed.callP50Ms", better: "lower" },
    { label: `— call of ${BATCH_SIZE} p99 (ms)`, key: "keyed.callP99Ms", better: "lower" },
    { label: "— CPU per job, working process (µs)", key: "keyed.costs.workerCpuUs", better: "lower" },
    { label: "— CPU per job, PostgreSQL (µs)", key: "keyed.costs.postgresCpuUs", better: "lower" },
    { label: "peak RSS (MiB)", key: "peakRssMiB", better: "lower" },
    { label: "errors", key: "errors" },
    { label: "/declare, first call: all added (ms)", key: "declare.firstMs" },
    { label: "/declare, same call again: all unchanged (ms)", key: "declare.againMs" },
    { label: "/declare changing every item (ms)", key: "declare.declareUpdateMs" },
    { label: "longest claim wait behind it (ms)", key: "declare.declareLockWaitMs" },
    { label: "/bulk changing every item, one call (ms)", key: "declare.bulkUpdateMs" },
    { label: "longest claim wait behind it (ms)", key: "declare.bulkLockWaitMs" }
  ],
  gated: gatedRows(),
  redrive: [
    { label: "POST /actions: the set fixed (ms)", key: "startMs", better: "lower" },
    { label: "action, POST to completed (ms)", key: "actionMs", better: "lower" },
    { label: "triggers processed/s", key: "ratePerS", better: "higher" },
    { label: "longest claim wait behind it (ms; batch: behind a /bulk of 10,000)", key: "lockWaitMs", better: "lower" },
    { label: "claim probes during the action", key: "probes" },
    { label: "POST to the last replay at the sink (ms)", key: "lastArrivalMs", better: "lower" },
    { label: "replayed", key: "replayed" },
    { label: "peak RSS (MiB)", key: "peakRssMiB", better: "lower" },
    { label: "missing", key: "missing" }
  ]
}

/** The gated workload's rows (gated.ts): each run, and the goals it is held to beside them. */
function gatedRows(): ReadonlyArray<Row> {
  const c = GATED.concurrency
  const b = GATED.binding
  const h = GATED.hold
  const windows = Object.entries(GATED.throughput.policy)
  const policy = JSON.stringify(GATED.throughput.policy)
  return [
    { label: `ungated, sink answering after ${c.sinkDelayMs} ms: deliveries/s, first to last arrival`, key: "ungated.ratePerS", better: "higher" },
    { label: `maxConcurrent ${c.maxConcurrent}, same sink: deliveries/s (the limit allows ${(c.maxConcurrent * 1000) / c.sinkDelayMs})`, key: "concurrency.ratePerS", better: "higher" },
    { label: "— against ungated (goal ≥ 0.9)", key: "concurrency.vsUngated", better: "higher" },
    { label: `— most in flight at the sink (≤ ${c.maxConcurrent})`, key: "concurrency.peakInFlight" },
    { label: "— attempts' mean duration as the service timed them (ms)", key: "concurrency.attemptMs" },
    { label: "— in flight on average, of the limit (1: the limit binds, attempts slower than the sink's 10 ms)", key: "concurrency.limitUsed" },
    { label: "— first arrival after due (ms)", key: "concurrency.firstArrivalMs", better: "lower" },
    { label: `maxConcurrent ${b.maxConcurrent}, sink answering after ${b.sinkDelayMs} ms: deliveries/s`, key: "binding.ratePerS", better: "higher" },
    { label: `— of the ${(b.maxConcurrent * 1000) / b.sinkDelayMs}/s allowed (goal ≥ 0.95)`, key: "binding.ofIdeal", better: "higher" },
    { label: `— most in flight at the sink (≤ ${b.maxConcurrent})`, key: "binding.peakInFlight" },
    { label: "— attempts' mean duration as the service timed them (ms)", key: "binding.attemptMs" },
    { label: "— in flight on average, of the limit", key: "binding.limitUsed", better: "higher" },
    ...windows.map(([label, rate]): Row => ({
      label: `throughput ${policy} with a background load: most starts in any ${label} window at the sink (≤ ${rate})`,
      key: `throughput.windows.${label}.maxInWindow`
    })),
    { label: "— rate over whole windows (/s)", key: "throughput.wholeWindowsRatePerS", better: "higher" },
    { label: "— of the rate (goal ≥ 0.95)", key: "throughput.ofRate", better: "higher" },
    { label: "— background load: the second tag's deliveries at the sink during the run", key: "throughput.background.deliveriesArrived" },
    { label: "— the sink's event-loop delay p99 / max (ms): its stamps may be that late", key: "throughput.sinkLoopDelayMaxMs" },
    { label: `hold: 429 with Retry-After: ${h.retryAfterSeconds} for ${h.refuseForMs / 1000} s: refusals`, key: "hold.refusals" },
    { label: "— starts seen during the hold (goal 0)", key: "hold.startsDuringHold" },
    { label: `— starts in the ${GATED.holdGraceMs} ms after the first refusal (already on their way)`, key: "hold.startsInGrace" },
    { label: "— first start after the hold's end (ms)", key: "hold.resumedAfterMs", better: "lower" },
    { label: `— shortest wait of a refused trigger's retry (ms, ≥ ${h.retryAfterSeconds * 1000})`, key: "hold.retryWaitMinMs" },
    ...targetRows(),
    { label: "peak RSS (MiB), the largest node", key: "peakRssMiB", better: "lower" },
    { label: "missing", key: "missing" }
  ]
}

/** The target-policy runs of the gated workload (gatedTargets.ts). */
function targetRows(): ReadonlyArray<Row> {
  const o = TARGETS.outage
  const many = TARGETS.origins.flatMap((count, i): Array<Row> => [
    { label: `${count} origins, ungated, sink answering after ${TARGETS.sinkDelayMs} ms: deliveries/s`, key: `targets.manyOrigins.${i}.ungated.ratePerS`, better: "higher" },
    { label: "— CPU of the node per delivery (ms)", key: `targets.manyOrigins.${i}.ungated.cpuMsPerDelivery`, better: "lower" },
    { label: "— PostgreSQL CPU per delivery, loading included (µs)", key: `targets.manyOrigins.${i}.ungated.costs.postgresCpuUs`, better: "lower" },
    { label: "— WAL per delivery, loading included (bytes)", key: `targets.manyOrigins.${i}.ungated.costs.walBytes`, better: "lower" },
    { label: "— commits per delivery, loading included", key: `targets.manyOrigins.${i}.ungated.costs.commits`, better: "lower" },
    { label: `${count} origins under \`*\` maxConcurrent ${TARGETS.maxConcurrent}: deliveries/s`, key: `targets.manyOrigins.${i}.star.ratePerS`, better: "higher" },
    { label: `— against ungated over the same ${count} origins`, key: `targets.manyOrigins.${i}.star.vsUngated`, better: "higher" },
    { label: "— against ungated to one origin", key: `targets.manyOrigins.${i}.star.vsOneOrigin`, better: "higher" },
    { label: `— most in flight at one origin (≤ ${TARGETS.maxConcurrent})`, key: `targets.manyOrigins.${i}.star.peakInFlightPerOrigin` },
    { label: "— CPU of the node per delivery (ms)", key: `targets.manyOrigins.${i}.star.cpuMsPerDelivery`, better: "lower" },
    { label: "— PostgreSQL CPU per delivery, loading included (µs)", key: `targets.manyOrigins.${i}.star.costs.postgresCpuUs`, better: "lower" },
    { label: "— WAL per delivery, loading included (bytes)", key: `targets.manyOrigins.${i}.star.costs.walBytes`, better: "lower" },
    { label: "— commits per delivery, loading included", key: `targets.manyOrigins.${i}.star.costs.commits`, better: "lower" }
  ])
  const outage = (which: "withoutBreaker" | "withBreaker", name: string): Array<Row> => [
    { label: `origin down ${o.downForMs / 1000} s (${o.status}), ${o.jobs} jobs over ${o.spreadMs / 1000} s, ${name}: requests it received while down`, key: `targets.outage.${which}.receivedWhileDown`, better: "lower" },
    { label: "— dead letters", key: `targets.outage.${which}.deadLetters`, better: "lower" },
    { label: "— attempts in all", key: `targets.outage.${which}.attempts`, better: "lower" },
    { label: "— first request after it recovered (ms)", key: `targets.outage.${which}.resumedAfterMs`, better: "lower" },
    { label: "— last request after it recovered (ms)", key: `targets.outage.${which}.drainedAfterMs`, better: "lower" }
  ]
  return [
    ...many,
    ...outage("withoutBreaker", `retries fixed ${o.retry.retryInitialDelaySeconds} s × ${o.retry.retryMaxAttempts}, no circuit breaker`),
    ...outage("withBreaker", `circuit breaker ${o.circuitBreaker.failures} failures, ${o.circuitBreaker.cooldownSeconds} s cooldown`)
  ]
}

const TITLES: Record<WorkloadName, (n: number) => string> = {
  ingest: (n) => `ingest: one-shot requests 1 h ahead, 32 concurrent callers (timewheel: ${WRK_TITLE}; node client and peers: ${n} calls)`,
  delivery: (n) => `delivery: ${n} requests due at one instant, POSTed to a loopback sink`,
  precision: (n) => `precision: ${n} requests at instants spread evenly over 10 s`,
  "precision-fast": (n) => `precision at ten times the rate: ${n} requests at instants spread evenly over 10 s`,
  batch: (n) => `batch: ${n} one-shot requests 1 h ahead, unkeyed then keyed, ${BATCH_SIZE} per call, ${BATCH_CONCURRENCY} concurrent callers`,
  gated: (n) => `gated: ${n} requests due at one instant on a tag of their own per case (timewheel only, one node and three)`,
  redrive: (n) => `redrive: ${n} dead letters replayed by one bulk action, POSTed to a loopback sink (timewheel only)`
}

const valueOf = (metrics: Metrics | undefined, key: string): number | undefined => {
  if (metrics === undefined) return undefined
  if (key === "lastArrivalS") {
    const ms = (metrics as DeliveryMetrics).lastArrivalMs
    return ms === undefined ? undefined : Math.round(ms) / 1000
  }
  // `a.b`: a field of a nested object (the batch workload's variants and /declare figures)
  const value = key.split(".").reduce<unknown>((object, part) => (object as Record<string, unknown> | undefined)?.[part], metrics)
  return typeof value === "number" ? value : undefined
}

const format = (value: number | undefined): string => {
  if (value === undefined || Number.isNaN(value)) return "—"
  if (!Number.isFinite(value)) return String(value)
  const abs = Math.abs(value)
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3
  return value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 })
}

const ratio = (tw: number | undefined, peer: number | undefined): string => {
  if (tw === undefined || peer === undefined || !Number.isFinite(tw) || !Number.isFinite(peer) || peer === 0) return "—"
  const r = tw / peer
  return `${r >= 10 ? r.toFixed(0) : r >= 1 ? r.toFixed(2) : r.toPrecision(2)}×`
}

const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) =>
  [
    `| ${header.join(" | ")} |`,
    `| ${header.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`,
    ...rows.map((row) => `| ${row.join(" | ")} |`)
  ].join("\n")

/** Some of a metrics object's warnings, shown under its table. */
const notesOf = (entry: Entry): Array<string> => {
  if (entry.error !== undefined) return [`${entry.label}: failed: ${entry.error.split("\n")[0]}`]
  const m = entry.metrics as unknown as Record<string, unknown>
  const notes: Array<string> = []
  if (typeof m.missing === "number" && m.missing > 0) notes.push(`${entry.label}: ${m.missing} never arrived within the bound`)
  // the batch workload's figures are per variant
  const variants = ["unkeyed", "keyed"].filter((name) => typeof m[name] === "object")
  const runs = variants.length === 0
    ? [{ label: entry.label, run: m }]
    : variants.map((name) => ({ label: `${entry.label}, ${name}`, run: m[name] as Record<string, unknown> }))
  for (const { label, run } of runs) {
    if (typeof run.errors === "number" && run.errors > 0) notes.push(`${label}: ${run.errors} calls failed (${String(run.firstError)})`)
    if (run.timedOut === true) notes.push(`${label}: stopped by the time bound`)
  }
  if (typeof m.duplicates === "number" && m.duplicates > 0) notes.push(`${entry.label}: ${m.duplicates} duplicate deliveries`)
  if (m.client === "wrk") {
    notes.push(`${entry.label}: calls made by ${WRK_TITLE}; ${String(m.triggers)} triggers in the database for ${String(m.ok)} 2xx answers ` +
      `(${Number(m.sent) - Number(m.n)} built and never answered)${m.triggersConsistent === true ? "" : ": INCONSISTENT"}`)
  }
  return notes
}

export const workloadTable = (workload: WorkloadName, entries: ReadonlyArray<Entry>): string => {
  const mine = entries.filter((entry) => entry.workload === workload)
  if (mine.length === 0) return ""
  const tw = mine.find((entry) => entry.system === "timewheel")
  const peers = mine.filter((entry) => entry.system !== "timewheel")
  const ratioHeaders = tw === undefined ? [] : peers.map((peer) => `timewheel / ${peer.label}`)
  const rows = ROWS[workload].map((row) => {
    const values = mine.map((entry) => format(valueOf(entry.metrics, row.key)))
    const ratios = tw === undefined
      ? []
      : peers.map((peer) => (row.better === undefined ? "" : ratio(valueOf(tw.metrics, row.key), valueOf(peer.metrics, row.key))))
    return [`${row.label}${row.better === undefined ? "" : row.better === "higher" ? " ↑" : " ↓"}`, ...values, ...ratios]
  })
  const n = mine.find((entry) => entry.metrics !== undefined && !isWrk(entry.metrics))?.metrics?.n ?? 0
  const notes = mine.flatMap(notesOf)
  return [
    `### ${TITLES[workload](n)}`,
    "",
    table(["", ...mine.map((entry) => entry.label), ...ratioHeaders], rows),
    ...(notes.length === 0 ? [] : ["", ...notes.map((note) => `- ${note}`)])
  ].join("\n")
}

/** Peak RSS of every contender in every workload that ran, with ratios against timewheel. */
export const memoryTable = (entries: ReadonlyArray<Entry>): string => {
  const labels = [...new Set(entries.map((entry) => entry.label))]
  const workloads = [...new Set(entries.map((entry) => entry.workload))]
  if (labels.length === 0) return ""
  const peers = labels.filter((label) => entries.find((entry) => entry.label === label)?.system !== "timewheel")
  const hasTw = labels.includes("timewheel")
  const rows = workloads.map((workload) => {
    const rss = (label: string) => entries.find((e) => e.workload === workload && e.label === label)?.metrics?.peakRssMiB
    return [
      workload,
      ...labels.map((label) => format(rss(label))),
      ...(hasTw ? peers.map((label) => ratio(rss("timewheel"), rss(label))) : [])
    ]
  })
  return [
    "### memory: peak RSS (MiB) of the process doing the work",
    "",
    table(["workload", ...labels, ...(hasTw ? peers.map((label) => `timewheel / ${label}`) : [])], rows)
  ].join("\n")
}

const isWrk = (metrics: Metrics | undefined): metrics is IngestWrkMetrics => (metrics as { client?: string } | undefined)?.client === "wrk"

/** The ingest ceilings: the bare server, timewheel's GET /health and POST /schedule, all under the same wrk client. */
export const ingestCeilingRows = (entries: ReadonlyArray<Entry>, ceilings: ReadonlyArray<CeilingEntry>): Array<IngestCeilingRow> => {
  const bare = ceilings.find((c) => c.workload === "ingest")
  const tw = entries.find((e) => e.workload === "ingest" && isWrk(e.metrics))?.metrics as IngestWrkMetrics | undefined
  if (bare === undefined && tw === undefined) return []
  const bareMetrics = bare?.metrics as BareCeilingMetrics | undefined
  const row = (target: string, figures: { ratePerS: number; latencyP50Ms: number; latencyP99Ms: number; latencyMaxMs: number; non2xx: number; socketErrors: number } | undefined, peakRssMiB: number | undefined): IngestCeilingRow => ({
    target,
    ratePerS: figures?.ratePerS,
    latencyP50Ms: figures?.latencyP50Ms,
    latencyP99Ms: figures?.latencyP99Ms,
    latencyMaxMs: figures?.latencyMaxMs,
    errors: figures === undefined ? undefined : figures.non2xx + figures.socketErrors,
    peakRssMiB,
    vsBare: figures === undefined || bareMetrics === undefined ? undefined : Math.round((figures.ratePerS / bareMetrics.ratePerS) * 1000) / 1000
  })
  return [
    row("bare node:https, 200 + tiny JSON", bareMetrics, bareMetrics?.peakRssMiB),
    row("timewheel GET /health", tw?.health, undefined),
    row("timewheel POST /schedule", tw?.schedule, tw?.peakRssMiB)
  ]
}

const ingestCeilingTable = (entries: ReadonlyArray<Entry>, ceilings: ReadonlyArray<CeilingEntry>): string => {
  const rows = ingestCeilingRows(entries, ceilings)
  if (rows.length === 0) return ""
  const bareError = ceilings.find((c) => c.workload === "ingest")?.error
  return [
    `### ingest ceilings: the same client (${WRK_TITLE}) against each target`,
    "",
    table(
      ["", "requests/s ↑", "p50 (ms)", "p99 (ms)", "max (ms)", "errors", "server peak RSS (MiB)", "requests/s vs bare"],
      rows.map((r) => [
        r.target, format(r.ratePerS), format(r.latencyP50Ms), format(r.latencyP99Ms), format(r.latencyMaxMs), format(r.errors),
        format(r.peakRssMiB), r.vsBare === undefined ? "—" : `${r.vsBare.toFixed(2)}×`
      ])
    ),
    ...(bareError === undefined ? [] : ["", `- bare node:https: failed: ${bareError.split("\n")[0]}`])
  ].join("\n")
}

/** Each system's deliveries/s as a share of undici alone against the same sink (JSON). */
export const deliveryCeilingShares = (entries: ReadonlyArray<Entry>, ceilings: ReadonlyArray<CeilingEntry>): Record<string, number> => {
  const ceiling = (ceilings.find((c) => c.workload === "delivery")?.metrics as DeliveryCeilingMetrics | undefined)?.ratePerS
  const shares: Record<string, number> = {}
  for (const entry of entries) {
    const rate = entry.workload === "delivery" ? (entry.metrics as DeliveryMetrics | undefined)?.ratePerS : undefined
    if (rate !== undefined && ceiling !== undefined && ceiling > 0) shares[entry.label] = Math.round((rate / ceiling) * 1000) / 1000
  }
  return shares
}

/** The delivery ceiling beside the delivery rows: undici alone against the same sink, and each system against it. */
const deliveryCeilingTable = (entries: ReadonlyArray<Entry>, ceilings: ReadonlyArray<CeilingEntry>): string => {
  const ceiling = ceilings.find((c) => c.workload === "delivery")
  if (ceiling === undefined) return ""
  const m = ceiling.metrics as DeliveryCeilingMetrics | undefined
  const systems = entries.filter((e) => e.workload === "delivery")
  const rate = (e: Entry) => (e.metrics as DeliveryMetrics | undefined)?.ratePerS
  const s = DELIVERY_CEILING_SETTINGS
  return [
    `### delivery ceiling: the same sink driven by undici alone (another process, no database; ${s.connections} connections, ${s.inFlight} in flight)`,
    "",
    table(
      ["", "undici alone", ...systems.map((e) => e.label)],
      [
        ["deliveries/s ↑", format(m?.ratePerS), ...systems.map((e) => format(rate(e)))],
        ["share of the ceiling", "1×", ...systems.map((e) => ratio(rate(e), m?.ratePerS))],
        ["time to last arrival (s)", format(m === undefined ? undefined : Math.round(m.lastArrivalMs) / 1000), ...systems.map((e) => format(valueOf(e.metrics, "lastArrivalS")))]
      ]
    ),
    ...(ceiling.error === undefined ? [] : ["", `- undici alone: failed: ${ceiling.error.split("\n")[0]}`]),
    ...(m !== undefined && (m.missing > 0 || m.failures > 0) ? ["", `- undici alone: ${m.missing} missing, ${m.failures} failed (${String(m.firstFailure)})`] : [])
  ].join("\n")
}

export const markdown = (entries: ReadonlyArray<Entry>, ceilings: ReadonlyArray<CeilingEntry>, machine: Machine): string =>
  [
    ...WORKLOADS.flatMap((workload) => [
      workloadTable(workload, entries),
      workload === "ingest" ? ingestCeilingTable(entries, ceilings) : workload === "delivery" ? deliveryCeilingTable(entries, ceilings) : ""
    ]).filter((t) => t !== ""),
    memoryTable(entries),
    `↑ higher is better, ↓ lower is better; ratios are timewheel / peer in this run.\n` +
      `Machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.kernel}; ` +
      `PostgreSQL ${machine.postgres}, ${machine.database}; Node ${machine.node}; ` +
      Object.entries(machine.packages).map(([name, version]) => `${name} ${version}`).join(", ") +
      `; commit ${machine.commit}.`
  ].join("\n\n")

/** A package's installed version: the benchmark's own packages (scripts/bench), else timewheel's. */
const packageVersion = (name: string): string => {
  for (const root of [path.join(REPO_ROOT, "scripts", "bench"), REPO_ROOT]) {
    try {
      const file = path.join(root, "node_modules", name, "package.json")
      return (JSON.parse(fs.readFileSync(file, "utf8")) as { version: string }).version
    } catch {
      // not installed there
    }
  }
  return "?"
}

export const describeMachine = (postgres: string, database: string): Machine => {
  const cpuinfo = fs.readFileSync("/proc/cpuinfo", "utf8")
  let commit = "unknown"
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: REPO_ROOT, encoding: "utf8" }).trim()
    const dirty = execFileSync("git", ["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"], { cwd: REPO_ROOT, encoding: "utf8" }).trim()
    if (dirty !== "") commit += " (with uncommitted changes)"
  } catch { /* not a git checkout */ }
  return {
    cpus: os.availableParallelism(),
    cpuModel: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? "unknown",
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    postgres,
    database,
    packages: Object.fromEntries(["graphile-worker", "pg-boss", "undici", "effect"].map((name) => [name, packageVersion(name)])),
    commit
  }
}

/** Writes bench-results/<timestamp>.json; returns its path. */
export const writeJson = (
  startedAt: Date,
  options: Readonly<Record<string, unknown>>,
  machine: Machine,
  entries: ReadonlyArray<Entry>,
  ceilings: ReadonlyArray<CeilingEntry>,
  /** The lateness-against-load curve's runs (latenessCurve.ts), when it ran. */
  curve?: unknown
): string => {
  const dir = path.join(REPO_ROOT, "bench-results")
  fs.mkdirSync(dir, { recursive: true })
  const file = path.join(dir, `${startedAt.toISOString().replace(/[:.]/g, "-")}.json`)
  fs.writeFileSync(file, JSON.stringify({
    startedAt: startedAt.toISOString(),
    options,
    machine,
    results: entries,
    ceilings: { runs: ceilings, ingest: ingestCeilingRows(entries, ceilings), deliveryShares: deliveryCeilingShares(entries, ceilings) },
    ...(curve === undefined ? {} : { latenessCurve: curve })
  }, null, 2) + "\n")
  return file
}
