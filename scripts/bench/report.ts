// The benchmark's output: one Markdown table per workload (each figure, and timewheel/peer ratios from
// the same run), a memory table, and the whole run as JSON in bench-results/<timestamp>.json.
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { REPO_ROOT } from "./common.ts"
import type { SystemName, WorkloadName } from "./contenders.ts"
import type { BatchMetrics, DeliveryMetrics, GatedMetrics, IngestMetrics, PrecisionMetrics } from "./workloads.ts"
import {
  BATCH_CONCURRENCY, BATCH_SIZE, GATED_MAX_CONCURRENT, GATED_RATE, GATED_SINK_DELAY_MS, GATED_WINDOW
} from "./workloads.ts"

export type Metrics = IngestMetrics | DeliveryMetrics | PrecisionMetrics | BatchMetrics | GatedMetrics

export interface Entry {
  readonly workload: WorkloadName
  readonly system: SystemName
  readonly label: string
  readonly settings: Readonly<Record<string, unknown>>
  /** Undefined when the run failed; `error` says why. */
  readonly metrics: Metrics | undefined
  readonly error?: string
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
    { label: "peak RSS (MiB)", key: "peakRssMiB", better: "lower" },
    { label: "missing", key: "missing" }
  ],
  precision: [
    { label: "lateness p50 (ms)", key: "latenessP50Ms", better: "lower" },
    { label: "lateness p99 (ms)", key: "latenessP99Ms", better: "lower" },
    { label: "lateness max (ms)", key: "latenessMaxMs", better: "lower" },
    { label: "lateness min (ms)", key: "latenessMinMs" },
    { label: "peak RSS (MiB)", key: "peakRssMiB", better: "lower" },
    { label: "missing", key: "missing" }
  ],
  batch: [
    { label: "jobs/s", key: "ratePerS", better: "higher" },
    { label: `call of ${BATCH_SIZE} p50 (ms)`, key: "callP50Ms", better: "lower" },
    { label: `call of ${BATCH_SIZE} p99 (ms)`, key: "callP99Ms", better: "lower" },
    { label: "peak RSS (MiB)", key: "peakRssMiB", better: "lower" },
    { label: "errors", key: "errors" },
    { label: "/declare, first call: all added (ms)", key: "declare.firstMs" },
    { label: "/declare, same call again: all unchanged (ms)", key: "declare.againMs" },
    { label: "/declare changing every item (ms)", key: "declare.declareUpdateMs" },
    { label: "longest claim wait behind it (ms)", key: "declare.declareLockWaitMs" },
    { label: "/bulk changing every item, one call (ms)", key: "declare.bulkUpdateMs" },
    { label: "longest claim wait behind it (ms)", key: "declare.bulkLockWaitMs" }
  ],
  gated: [
    { label: `maxConcurrent ${GATED_MAX_CONCURRENT}, sink answering after ${GATED_SINK_DELAY_MS} ms: deliveries/s, first to last arrival`, key: "concurrency.ratePerS", better: "higher" },
    { label: `— the most the limit allows (${GATED_MAX_CONCURRENT} / ${GATED_SINK_DELAY_MS} ms)`, key: "concurrency.idealPerS" },
    { label: `— most requests in flight at the sink (≤ ${GATED_MAX_CONCURRENT})`, key: "concurrency.peakInFlight", better: "lower" },
    { label: "— first arrival after due (ms)", key: "concurrency.firstArrivalMs", better: "lower" },
    { label: "— last arrival after due (ms)", key: "concurrency.lastArrivalMs", better: "lower" },
    { label: `throughput {"${GATED_WINDOW}": ${GATED_RATE}}: most starts in any ${GATED_WINDOW} window at the sink (≤ ${GATED_RATE})`, key: "throughput.maxInWindow" },
    { label: "— mean rate, n / (last − first arrival) (/s)", key: "throughput.meanRatePerS", better: "higher" },
    { label: `— rate over whole windows, (n − ${GATED_RATE}) / (arrival n − ${GATED_RATE - 1} − arrival 1) (/s)`, key: "throughput.wholeWindowsRatePerS", better: "higher" },
    { label: "— first arrival after due (ms)", key: "throughput.firstArrivalMs", better: "lower" },
    { label: "— last arrival after due (ms)", key: "throughput.lastArrivalMs", better: "lower" },
    { label: "peak RSS (MiB)", key: "peakRssMiB", better: "lower" },
    { label: "missing", key: "missing" }
  ]
}

const TITLES: Record<WorkloadName, (n: number) => string> = {
  ingest: (n) => `ingest: ${n} one-shot requests 1 h ahead, 32 concurrent callers`,
  delivery: (n) => `delivery: ${n} requests due at one instant, POSTed to a loopback sink`,
  precision: (n) => `precision: ${n} requests at instants spread evenly over 10 s`,
  batch: (n) => `batch: ${n} one-shot requests 1 h ahead, ${BATCH_SIZE} per call, ${BATCH_CONCURRENCY} concurrent callers`,
  gated: (n) => `gated: ${n} requests due at one instant on one tag, per policy (timewheel only)`
}

const valueOf = (metrics: Metrics | undefined, key: string): number | undefined => {
  if (metrics === undefined) return undefined
  if (key === "lastArrivalS") {
    const ms = (metrics as DeliveryMetrics).lastArrivalMs
    return ms === undefined ? undefined : Math.round(ms) / 1000
  }
  // `a.b`: a field of a nested object (the batch workload's /declare figures)
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
  if (typeof m.errors === "number" && m.errors > 0) notes.push(`${entry.label}: ${m.errors} calls failed (${String(m.firstError)})`)
  if (m.timedOut === true) notes.push(`${entry.label}: stopped by the time bound`)
  if (typeof m.duplicates === "number" && m.duplicates > 0) notes.push(`${entry.label}: ${m.duplicates} duplicate deliveries`)
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
  const n = mine.find((entry) => entry.metrics !== undefined)?.metrics?.n ?? 0
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
  const peers = labels.filter((label) => label !== "timewheel")
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

export const markdown = (entries: ReadonlyArray<Entry>, machine: Machine): string =>
  [
    ...(["ingest", "delivery", "precision", "batch", "gated"] as const).map((workload) => workloadTable(workload, entries)).filter((t) => t !== ""),
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
export const writeJson = (startedAt: Date, options: Readonly<Record<string, unknown>>, machine: Machine, entries: ReadonlyArray<Entry>): string => {
  const dir = path.join(REPO_ROOT, "bench-results")
  fs.mkdirSync(dir, { recursive: true })
  const file = path.join(dir, `${startedAt.toISOString().replace(/[:.]/g, "-")}.json`)
  fs.writeFileSync(file, JSON.stringify({ startedAt: startedAt.toISOString(), options, machine, results: entries }, null, 2) + "\n")
  return file
}
