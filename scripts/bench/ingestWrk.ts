// The ingest workload driven by wrk (wrk.ts), and its ceilings: the same client settings against
// (a) a bare node:https server (bareHttps.ts), (b) timewheel's `GET /health`, (c) timewheel's
// `POST /schedule`, each after a warm-up run. (b) and (c) run on one started service; (c) is also
// timewheel's row of the ingest table. Afterwards the measured run's triggers are counted in the
// database and compared with wrk's 2xx answers.
import { startBareHttps } from "./bareHttps.ts"
import { query } from "./database.ts"
import type { Sink } from "./sink.ts"
import type { Contender } from "./system.ts"
import type { IngestMetrics } from "./workloads.ts"
import { ensureWrk, runWrk, WRK_DURATION_S } from "./wrk.ts"
import type { WrkFigures } from "./wrk.ts"

/** The ingest row of a wrk-driven timewheel: the usual figures, how they were checked, and its /health ceiling. */
export interface IngestWrkMetrics extends IngestMetrics {
  readonly client: "wrk"
  /** Responses read in the measured run (`n`); non-2xx answers and socket errors (`errors`). */
  readonly timedOut: false
  /**
   * Requests the script built in the measured run: those beyond the responses read were in flight when
   * wrk stopped, plus one per thread that wrk builds to check the script and never sends.
   */
  readonly sent: number
  /** Triggers of the measured run found in the database afterwards. */
  readonly triggers: number
  /** ok ≤ triggers ≤ sent − responses read (the unanswered ones may have been stored). */
  readonly triggersConsistent: boolean
  /** The same client against `GET /health` of the same service, before the `/schedule` runs. */
  readonly health: WrkFigures
  readonly schedule: WrkFigures
}

/** The bare server's figures under the same client, and its process's peak RSS. */
export interface BareCeilingMetrics extends WrkFigures {
  readonly peakRssMiB: number
}

const mib = (kib: number) => Math.round((kib / 1024) * 10) / 10

const countTriggers = async (databaseUrl: string, urlPrefix: string): Promise<number> => {
  const escaped = urlPrefix.replace(/[\\%_]/g, (c) => `\\${c}`).replace(/'/g, "''")
  const rows = await query<{ count: string }>(databaseUrl, `SELECT count(*)::text AS count FROM triggers WHERE url LIKE '${escaped}%'`)
  return Number(rows[0]?.count ?? Number.NaN)
}

/**
 * timewheel's ingest row: wrk against `GET /health` (the HTTPS layer's ceiling on this service), then
 * `POST /schedule` of one-shot jobs 1 h ahead, each a distinct job for the sink (`run` marks the
 * measured run's target URLs, `run`-w the warm-up's).
 */
export const runIngestWrk = async (
  contender: Contender,
  databaseUrl: string,
  sink: Sink,
  run: string,
  aheadMs: number
): Promise<IngestWrkMetrics> => {
  ensureWrk()
  const system = await contender.start(databaseUrl, false)
  let stopped = false
  try {
    const endpoint = system.endpoint
    if (endpoint === undefined) throw new Error(`${contender.label} has no HTTP endpoint for wrk`)
    // with the key, as a monitor would call it (without one /health answers 401)
    const health = await runWrk({ kind: "static", url: `${endpoint.origin}/health`, headers: { [`${endpoint.headerPrefix}-api-key`]: endpoint.apiKey } })
    const target = (prefix: string) => ({
      kind: "schedule" as const,
      origin: endpoint.origin,
      headerPrefix: endpoint.headerPrefix,
      apiKey: endpoint.apiKey,
      targetUrlPrefix: prefix,
      firstDueMs: Date.now() + aheadMs
    })
    // the sink's URL of job 0 without its id: wrk appends its counter
    const measuredPrefix = sink.url(run, 0).replace(/0$/, "")
    const warmUpPrefix = sink.url(`${run}-w`, 0).replace(/0$/, "")
    const { measured } = await runWrk(target(measuredPrefix), target(warmUpPrefix))
    await new Promise((resolve) => setTimeout(resolve, 1_000)) // calls cut off by wrk's stop finish meanwhile
    const triggers = await countTriggers(databaseUrl, measuredPrefix)
    const ok = measured.requests - measured.non2xx
    const unanswered = (measured.sent ?? measured.requests) - measured.requests
    const triggersConsistent = ok <= triggers && triggers <= ok + unanswered
    process.stderr.write(
      `  check: ${triggers} triggers in the database for ${ok} 2xx answers ` +
        `(${unanswered} built and never answered: in flight when wrk stopped, or wrk's check of the script): ` +
        `${triggersConsistent ? "consistent" : "INCONSISTENT"}\n`
    )
    stopped = true
    const peakRssKiB = await system.stop()
    const errors = measured.non2xx + measured.socketErrors
    return {
      client: "wrk",
      n: measured.requests,
      ok,
      errors,
      firstError: errors === 0 ? null : `${measured.non2xx} non-2xx answers, ${measured.socketErrors} socket errors`,
      timedOut: false,
      elapsedMs: measured.durationS * 1000,
      ratePerS: measured.ratePerS,
      latencyP50Ms: measured.latencyP50Ms,
      latencyP99Ms: measured.latencyP99Ms,
      latencyMaxMs: measured.latencyMaxMs,
      peakRssMiB: mib(peakRssKiB),
      sent: measured.sent ?? measured.requests,
      triggers,
      triggersConsistent,
      health: health.measured,
      schedule: measured
    }
  } finally {
    if (!stopped) await system.stop().catch(() => Number.NaN)
  }
}

/** The ceiling of any Node HTTPS handler here: the same wrk client against a bare node:https server. */
export const runBareCeiling = async (): Promise<BareCeilingMetrics> => {
  ensureWrk()
  const server = await startBareHttps()
  try {
    const { measured } = await runWrk({ kind: "static", url: server.url })
    return { ...measured, peakRssMiB: mib(await server.stop()) }
  } catch (error) {
    await server.stop()
    throw error
  }
}

export const WRK_TITLE = `wrk, 1 thread, 32 connections, ${WRK_DURATION_S} s after a warm-up`
