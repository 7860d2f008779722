// Status probes: while a scenario runs, every live node gets `GET /health` and a `POST /schedule`
// (a probe trigger one hour ahead, never delivered within the scenario) every PROBE_EVERY_MS, each
// bounded to 2 s. Every answer is recorded with its instant, so the harness can show the status codes
// (or connection errors) seen in any window: before, during and after a fault.
import { request } from "undici"
import { sleep } from "../bench/common.ts"
import { Agents, errorBucket, PREFIX, scheduleOne } from "./load.ts"
import type { NodeProcess } from "./nodes.ts"
import type { Target } from "./target.ts"

const PROBE_EVERY_MS = 250
const PROBE_TIMEOUT_MS = 2_000

export type Endpoint = "health" | "schedule"

export interface ProbeRecord {
  readonly atMs: number
  readonly node: number
  readonly endpoint: Endpoint
  /** HTTP status ("200", "503", …) or the error code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, …). */
  readonly outcome: string
  /** `/health` only: the body's schedulerStaleMs, when it had one. */
  readonly schedulerStaleMs?: number
}

export interface Prober {
  readonly records: () => ReadonlyArray<ProbeRecord>
  readonly stop: () => Promise<void>
}

const probeHealth = async (agents: Agents, node: NodeProcess, key: string): Promise<{ outcome: string; staleMs: number | undefined }> => {
  const response = await request(`${node.origin}/health`, {
    dispatcher: agents.get(node.origin),
    headers: { [`${PREFIX}-api-key`]: key },
    headersTimeout: PROBE_TIMEOUT_MS,
    bodyTimeout: PROBE_TIMEOUT_MS
  })
  const text = await response.body.text()
  let staleMs: number | undefined
  try {
    const body = JSON.parse(text) as { schedulerStaleMs?: unknown }
    if (typeof body.schedulerStaleMs === "number") staleMs = body.schedulerStaleMs
  } catch { /* not JSON */ }
  return { outcome: String(response.statusCode), staleMs }
}

const probeSchedule = async (agents: Agents, node: NodeProcess, key: string, target: Target): Promise<string> => {
  await scheduleOne(agents.get(node.origin), node.origin, key, target.url(-1), "now | add 1h", JSON.stringify({ probe: true }), PROBE_TIMEOUT_MS)
  return "200"
}

export const startProber = (nodes: ReadonlyArray<NodeProcess>, key: string, target: Target): Prober => {
  const agents = new Agents(2)
  const records: Array<ProbeRecord> = []
  let stopped = false
  const loop = async (node: NodeProcess, endpoint: Endpoint) => {
    while (!stopped && node.alive()) {
      const started = Date.now()
      let outcome: string
      let staleMs: number | undefined
      try {
        if (endpoint === "health") ({ outcome, staleMs } = await probeHealth(agents, node, key))
        else outcome = await probeSchedule(agents, node, key, target)
      } catch (error) {
        outcome = errorBucket(error)
      }
      if (!stopped) {
        records.push({ atMs: started, node: node.index, endpoint, outcome, ...(staleMs === undefined ? {} : { schedulerStaleMs: staleMs }) })
      }
      await sleep(Math.max(0, PROBE_EVERY_MS - (Date.now() - started)))
    }
  }
  const loops = nodes.flatMap((node) => [loop(node, "health"), loop(node, "schedule")])
  return {
    records: () => records,
    stop: async () => {
      stopped = true
      await Promise.race([Promise.all(loops), sleep(PROBE_TIMEOUT_MS + 500)])
      await agents.close()
    }
  }
}

/** Outcome → count per endpoint, for probes started in [fromMs, toMs). */
export const histogram = (records: ReadonlyArray<ProbeRecord>, fromMs: number, toMs: number) => {
  const result: Record<Endpoint, Record<string, number>> = { health: {}, schedule: {} }
  for (const record of records) {
    if (record.atMs < fromMs || record.atMs >= toMs) continue
    const bucket = result[record.endpoint]
    bucket[record.outcome] = (bucket[record.outcome] ?? 0) + 1
  }
  return result
}

export type Histogram = ReturnType<typeof histogram>

/** The last schedulerStaleMs each node's /health reported (node index → ms). */
export const lastStaleness = (records: ReadonlyArray<ProbeRecord>): Record<string, number> => {
  const last: Record<string, number> = {}
  for (const record of records) if (record.schedulerStaleMs !== undefined) last[record.node] = record.schedulerStaleMs
  return last
}

/** "schedule 500×12 · health 200×10 503×2" */
export const formatHistogram = (h: Histogram): string => {
  const part = (name: Endpoint) => {
    const entries = Object.entries(h[name]).sort((a, b) => b[1] - a[1])
    return entries.length === 0 ? undefined : `${name} ${entries.map(([outcome, count]) => `${outcome}×${count}`).join(" ")}`
  }
  return [part("schedule"), part("health")].filter((p) => p !== undefined).join(" · ") || "—"
}
