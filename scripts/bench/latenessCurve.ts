// The lateness-against-load curve (`npm run bench -- --only lateness-curve`): the precision workload's
// steady stream (instants spread evenly) at rising rates — 500, 1,000, 2,000, 4,000, 8,000, 16,000
// due/s, `--curve-seconds` (default 3) of them at each — for timewheel and graphile-worker at its lowest
// polling (1 ms), each on a fresh database. A system stops at the first rate it does not keep up with
// (p99 over a second, or some never arriving within the bound): higher rates are not run for it.
// Draws p50 and p99 against the rate, both systems, as one SVG (svgChart.ts), written beside the JSON
// and to `--curve-svg` when given (BENCHMARKS.md shows docs/lateness-curve.svg).
import * as fs from "node:fs"
import type { Contender } from "./system.ts"
import { lineChart } from "./svgChart.ts"
import type { Sink } from "./sink.ts"
import { LoadOverrun, type PrecisionMetrics, runPrecision } from "./workloads.ts"

export const CURVE_RATES = [500, 1_000, 2_000, 4_000, 8_000, 16_000] as const
export const CURVE_DEFAULT_SECONDS = 3
/** Past this p99 a system no longer keeps up: its triggers leave a second or more after their time. */
export const BEHIND_P99_MS = 1_000

export interface CurvePoint {
  readonly ratePerS: number
  readonly n: number
  readonly metrics?: PrecisionMetrics
  readonly error?: string
  /** p99 over BEHIND_P99_MS, some never arrived, or the run failed. */
  readonly behind: boolean
}

export interface CurveRun {
  readonly label: string
  readonly points: ReadonlyArray<CurvePoint>
  /** The highest rate it kept up with (none: not even the lowest). */
  readonly keptUpToPerS: number | null
  /** The first rate it did not keep up with (none: it kept up with every rate run). */
  readonly behindAtPerS: number | null
}

const say = (line: string) => process.stderr.write(`${line}\n`)

/** Time to load before the first instant: timewheel's /schedule at about 2,500/s, the peers' bulk add at 10,000/s. */
const leadFor = (contender: Contender, n: number) =>
  contender.system === "timewheel" ? Math.ceil(4_000 + n * 0.4) : Math.ceil(3_000 + n * 0.1)

export const runCurve = async (
  contenders: ReadonlyArray<Contender>,
  sink: Sink,
  freshDatabase: (name: string) => Promise<{ readonly url: string; readonly drop: () => Promise<void> }>,
  seconds: number
): Promise<Array<CurveRun>> => {
  const runs: Array<CurveRun> = []
  for (const contender of contenders) {
    const points: Array<CurvePoint> = []
    for (const rate of CURVE_RATES) {
      const n = rate * seconds
      say(`lateness-curve · ${contender.label} · ${rate}/s (${n} over ${seconds} s) …`)
      const attempt = async (leadMs: number) => {
        const database = await freshDatabase(`curve_${rate}_${contender.label}`)
        try {
          return await runPrecision(contender, database.url, sink, n, leadMs, seconds * 1000)
        } finally {
          await database.drop().catch(() => {})
        }
      }
      let point: CurvePoint
      try {
        const lead = leadFor(contender, n)
        const metrics = await attempt(lead).catch((error: unknown) => {
          if (!(error instanceof LoadOverrun)) throw error
          say(`  ${error.message}; retrying with a longer lead`)
          return attempt(Math.ceil(Math.max(2 * lead, 1.5 * error.loadMs) + 3_000))
        })
        point = { ratePerS: rate, n, metrics, behind: metrics.latenessP99Ms > BEHIND_P99_MS || metrics.missing > 0 }
        say(`  p50 ${metrics.latenessP50Ms} / p99 ${metrics.latenessP99Ms} / max ${metrics.latenessMaxMs} ms, ${metrics.missing} missing`)
      } catch (error) {
        point = { ratePerS: rate, n, error: error instanceof Error ? error.message : String(error), behind: true }
        say(`  failed: ${point.error}`)
      }
      points.push(point)
      if (point.behind) break
    }
    const kept = points.filter((p) => !p.behind)
    runs.push({
      label: contender.label,
      points,
      keptUpToPerS: kept.length === 0 ? null : kept[kept.length - 1]!.ratePerS,
      behindAtPerS: points.find((p) => p.behind)?.ratePerS ?? null
    })
  }
  return runs
}

const fmt = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? "—" : x.toLocaleString("en-US"))

export const curveMarkdown = (runs: ReadonlyArray<CurveRun>, seconds: number): string => {
  const lines = [
    `### lateness against load: a steady stream for ${seconds} s at each rate`,
    "",
    `| due/s | ${runs.map((r) => `${r.label} p50 / p99 / max (ms)`).join(" | ")} |`,
    `| ---: | ${runs.map(() => "---:").join(" | ")} |`
  ]
  for (const rate of CURVE_RATES) {
    const cells = runs.map((r) => {
      const p = r.points.find((point) => point.ratePerS === rate)
      if (p === undefined) return "not run"
      if (p.metrics === undefined) return `failed: ${p.error ?? ""}`.slice(0, 60)
      const m = p.metrics
      return `${fmt(m.latenessP50Ms)} / ${fmt(m.latenessP99Ms)} / ${fmt(m.latenessMaxMs)}${m.missing > 0 ? `, ${m.missing} missing` : ""}${p.behind ? " (behind)" : ""}`
    })
    if (cells.every((c) => c === "not run")) continue
    lines.push(`| ${fmt(rate)} | ${cells.join(" | ")} |`)
  }
  lines.push("")
  for (const r of runs) {
    lines.push(`- ${r.label}: keeps up to ${r.keptUpToPerS === null ? "no rate run" : `${fmt(r.keptUpToPerS)}/s`}` +
      (r.behindAtPerS === null ? " (the highest rate run)" : `, behind at ${fmt(r.behindAtPerS)}/s (p99 over ${fmt(BEHIND_P99_MS)} ms or triggers missing)`))
  }
  return lines.join("\n")
}

const COLORS = ["#1f5fbf", "#d9822b", "#2a9d4b", "#8e44ad"]

/** p50 (dashed) and p99 (solid) of every run against the rate, on log-scale axes. */
export const curveSvg = (runs: ReadonlyArray<CurveRun>, seconds: number): string =>
  lineChart(
    runs.flatMap((r, i) => {
      const ok = r.points.filter((p) => p.metrics !== undefined)
      return [
        { label: `${r.label} p99`, color: COLORS[i % COLORS.length]!, points: ok.map((p) => ({ x: p.ratePerS, y: Math.max(0.1, p.metrics!.latenessP99Ms) })) },
        { label: `${r.label} p50`, color: COLORS[i % COLORS.length]!, dashed: true, points: ok.map((p) => ({ x: p.ratePerS, y: Math.max(0.1, p.metrics!.latenessP50Ms) })) }
      ]
    }),
    {
      title: `Lateness against load (steady stream, ${seconds} s per rate)`,
      xLabel: "triggers due per second",
      yLabel: "lateness at the target (ms)",
      width: 860,
      marks: [{ y: BEHIND_P99_MS, label: "1 s: behind" }]
    }
  )

export const writeCurveSvg = (file: string, runs: ReadonlyArray<CurveRun>, seconds: number) => fs.writeFileSync(file, curveSvg(runs, seconds))
