// Diagnostics of lateness, off unless STAGE_TRACE_FILE names a file (the benchmark sets it; see
// BENCHMARKS.md "Precision"): the instants each fired trigger passes on its way from its shard to a
// sender (the shard woke to fire it, its mark moved, it was fetched, released at its time, handed to
// the senders, sent, its outcome known), the event loop's stalls of 3 ms or more and V8's collections,
// written as JSON lines to the file when the process exits. Off, every mark is one comparison with null.
import * as fs from "node:fs"
import { PerformanceObserver, performance } from "node:perf_hooks"

export type Stage = "woke" | "marked" | "fetched" | "released" | "pushed" | "sent" | "done"

const STAGES: ReadonlyArray<Stage> = ["woke", "marked", "fetched", "released", "pushed", "sent", "done"]

/** How often the stall sampler looks; a turn later than this by STALL_MS or more is a stall. */
const SAMPLE_MS = 1
const STALL_MS = 3

export interface StageTrace {
  /** Stamps `stage` at `atMs` for each id (the first stamp of a stage stays). */
  readonly mark: (ids: ReadonlyArray<string>, stage: Stage, atMs: number) => void
  /** Stamps one id (the hot path's form: no array). */
  readonly markOne: (id: string, stage: Stage, atMs: number, dueAtMs?: number, url?: string) => void
}

/** null unless enabled: callers test it before building anything. */
export let stageTrace: StageTrace | null = null

/** Wall-clock ms of a performance-timeline instant. */
const wallOf = (performanceMs: number) => performance.timeOrigin + performanceMs

/** Turns the trace on, written to `file` as the process exits (tests may call it with a temporary file). */
export const enableStageTrace = (file: string): StageTrace => {
  const rows = new Map<string, { due?: number; url?: string; at: Array<number | undefined> }>()
  const gcs: Array<readonly [number, number, number]> = []
  const stalls: Array<readonly [number, number]> = []
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gcs.push([wallOf(entry.startTime), entry.duration, (entry as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0])
    }
  })
  gcObserver.observe({ entryTypes: ["gc"] })
  let last = performance.now()
  const sampler = setInterval(() => {
    const now = performance.now()
    const late = now - last - SAMPLE_MS
    if (late >= STALL_MS) stalls.push([wallOf(last + SAMPLE_MS), late])
    last = now
  }, SAMPLE_MS)
  sampler.unref()
  const row = (id: string) => {
    let r = rows.get(id)
    if (r === undefined) rows.set(id, r = { at: [] })
    return r
  }
  const trace: StageTrace = {
    mark: (ids, stage, atMs) => {
      const i = STAGES.indexOf(stage)
      for (const id of ids) {
        const r = row(id)
        r.at[i] ??= atMs
      }
    },
    markOne: (id, stage, atMs, dueAtMs, url) => {
      const r = row(id)
      const i = STAGES.indexOf(stage)
      r.at[i] ??= atMs
      if (dueAtMs !== undefined) r.due = dueAtMs
      if (url !== undefined) r.url = url
    }
  }
  process.once("exit", () => {
    const lines = [JSON.stringify({ stages: STAGES, gcs, stalls })]
    for (const [id, r] of rows) lines.push(JSON.stringify({ id, due: r.due, url: r.url, at: r.at }))
    fs.writeFileSync(file, lines.join("\n") + "\n")
  })
  stageTrace = trace
  return trace
}
