// The gated workload's target-policy runs (timewheel only; docs/protecting-targets.md), on the
// system the other gated runs used, after them:
// - many origins: n jobs due at one instant spread over `count` origins (200, then 1,000: as many
//   loopback ports of the sink), the sink answering after 10 ms; ungated (no policy), then under `*`
//   with maxConcurrent 10 (the limit binds per origin: n / count jobs each, all due at once):
//   deliveries/s against the ungated run over the same origins and the one-origin ungated run, the
//   most one origin held at once (≤ 10), the node's CPU per delivery (utime + stime), and per delivery
//   PostgreSQL's CPU, WAL and commits (costs.ts);
// - an outage: jobs spread over 20 s to one origin that answers 500 for 10 s from T + 5 s, retried
//   (fixed 2 s, 4 attempts), without a target policy and then with a circuit breaker (5 failures,
//   1 s cooldown; a fresh origin): the requests the origin received while down, the dead letters,
//   and how soon after it recovered the jobs went again.
import { costProbe, type Costs, cpuMsOf } from "./costs.ts"
import { sleep } from "./common.ts"
import { query } from "./database.ts"
import { common, type GatedRun, round, type SinkRun, timedRun } from "./gated.ts"
import type { Sink } from "./sink.ts"
import type { StartedSystem } from "./system.ts"

export const TARGETS = {
  origins: [200, 1_000],
  maxConcurrent: 10,
  sinkDelayMs: 10,
  outage: {
    jobs: 2_000,
    spreadMs: 20_000,
    downAfterMs: 5_000,
    downForMs: 10_000,
    status: 500,
    retry: { retryStrategy: "fixed", retryInitialDelaySeconds: 2, retryMaxAttempts: 4, retryOn: "5xx_and_network" },
    circuitBreaker: { failures: 5, cooldownSeconds: 1 }
  }
} as const

export interface ManyOriginsRun extends GatedRun {
  readonly origins: number
  readonly peakInFlightPerOrigin: number
  /** The (first) node's CPU time per delivery over the run, ms. */
  readonly cpuMsPerDelivery: number
  /** Per delivery: the first node's and PostgreSQL's CPU (µs), WAL (bytes), commits. */
  readonly costs: Costs
}

export interface OutageRun {
  readonly jobs: number
  /** Requests the origin received (and answered 500) while down. */
  readonly receivedWhileDown: number
  readonly deadLetters: number
  readonly attempts: number
  /** From the outage's end to the first request the origin answered after it (ms). */
  readonly resumedAfterMs: number
  /** From the outage's end to the last request of the run (ms). */
  readonly drainedAfterMs: number
}

export interface TargetFigures {
  readonly manyOrigins: ReadonlyArray<{
    readonly origins: number
    readonly ungated: ManyOriginsRun
    readonly star: ManyOriginsRun & { readonly vsUngated: number; readonly vsOneOrigin: number }
  }>
  /** Absent with --gated-origins. */
  readonly outage?: { readonly withoutBreaker: OutageRun; readonly withBreaker: OutageRun }
}

/** A timed run with the node's CPU time around it, and the costs of the whole run (loading included). */
const measured = async (system: StartedSystem, databaseUrl: string, run: () => Promise<SinkRun>) => {
  const probe = await costProbe(databaseUrl, system.pid)
  const before = cpuMsOf(system.pid, false)
  const snapshot = await probe.snapshot()
  const result = await run()
  const cpuMs = cpuMsOf(system.pid, false) - before
  const after = await probe.snapshot()
  return { result, cpuMs, costs: (operations: number) => probe.perOperation(snapshot, after, operations) }
}

/** Every trigger of the run done (completed: delivered or dead-lettered), at most until `deadlineMs`. */
const settled = async (databaseUrl: string, run: string, deadlineMs: number) => {
  while (Date.now() < deadlineMs) {
    const rows = await query<{ n: number }>(databaseUrl,
      `SELECT count(*)::int AS n FROM triggers WHERE url LIKE '%run=${run}&%' AND status <> 'completed'`)
    if (rows[0]?.n === 0) return
    await sleep(250)
  }
}

const outageRun = async (
  system: StartedSystem, sink: Sink, databaseUrl: string, port: number, leadMs: number
): Promise<OutageRun> => {
  const o = TARGETS.outage
  let run = ""
  const result = await timedRun(system, sink, {
    n: o.jobs, leadMs, tags: ["gated-outage"],
    offsetOf: (i) => Math.round((i * o.spreadMs) / o.jobs),
    urlOf: (r, i) => {
      run = r
      return sink.urlAt(port, r, i)
    },
    sink: (t) => ({ refuse: { fromMs: t + o.downAfterMs, untilMs: t + o.downAfterMs + o.downForMs, status: o.status } }),
    settleMs: 0
  })
  // the retries of the last jobs, and the jobs held behind an open circuit, after the sink saw every id once
  await settled(databaseUrl, run, Date.now() + 120_000)
  const after = await sink.collect()
  const downUntil = result.t + o.downAfterMs + o.downForMs
  const all = [...after.arrivals.filter((at) => !Number.isNaN(at)), ...after.repeatArrivals].sort((a, b) => a - b)
  const counts = await query<{ attempts: number; dead: number }>(databaseUrl,
    `SELECT count(*)::int AS attempts, (count(*) FILTER (WHERE is_dead_letter))::int AS dead FROM executions WHERE url LIKE '%run=${run}&%'`)
  return {
    jobs: o.jobs,
    receivedWhileDown: after.refusedAt.length,
    deadLetters: counts[0]?.dead ?? Number.NaN,
    attempts: counts[0]?.attempts ?? Number.NaN,
    resumedAfterMs: round((all.find((at) => at >= downUntil) ?? Number.NaN) - downUntil),
    drainedAfterMs: round((all.at(-1) ?? Number.NaN) - downUntil)
  }
}

/**
 * The target-policy runs; `oneOrigin` is the gated workload's ungated run (one origin). `only`: just
 * the many-origins runs, over these counts of origins.
 */
export const runTargetCases = async (
  system: StartedSystem, sink: Sink, n: number, leadMs: number, databaseUrl: string, oneOrigin: GatedRun,
  only: ReadonlyArray<number> | undefined
): Promise<TargetFigures> => {
  if (system.targetPolicy === undefined || system.deleteTargetPolicy === undefined || system.tagPolicy === undefined) {
    throw new Error("the target-policy runs need timewheel's target policies")
  }
  const counts = only ?? TARGETS.origins
  const ports = await sink.originPorts(Math.max(...counts) + 2)
  const manyOrigins: Array<TargetFigures["manyOrigins"][number]> = []
  for (const count of counts) {
    const spread = (r: string, i: number) => sink.urlAt(ports[i % count]!, r, i)
    const caseOf = async (): Promise<ManyOriginsRun> => {
      const { costs, cpuMs, result } = await measured(system, databaseUrl, () =>
        timedRun(system, sink, { n, leadMs, urlOf: spread, sink: () => ({ delayMs: TARGETS.sinkDelayMs }) }))
      const run = common(n, result).run
      return {
        ...run, origins: count, peakInFlightPerOrigin: result.peakInFlightPerOrigin, cpuMsPerDelivery: round(cpuMs / run.arrived, 3),
        costs: await costs(run.arrived)
      }
    }
    const ungated = await caseOf()
    const policyId = await system.targetPolicy({ origin: "*", maxConcurrent: TARGETS.maxConcurrent })
    const star = await caseOf()
    await system.deleteTargetPolicy(policyId)
    // at the index of its count in TARGETS.origins (the report's rows): with `only`, the others are holes
    manyOrigins[TARGETS.origins.indexOf(count as (typeof TARGETS.origins)[number])] = {
      origins: count,
      ungated,
      star: { ...star, vsUngated: round(star.ratePerS / ungated.ratePerS, 3), vsOneOrigin: round(star.ratePerS / oneOrigin.ratePerS, 3) }
    }
  }

  if (only !== undefined) return { manyOrigins }
  await system.tagPolicy({ tag: "gated-outage", ...TARGETS.outage.retry })
  const withoutBreaker = await outageRun(system, sink, databaseUrl, ports.at(-2)!, leadMs)
  const breakerOrigin = `http://127.0.0.1:${ports.at(-1)!}`
  const breaker = await system.targetPolicy({ origin: breakerOrigin, circuitBreaker: TARGETS.outage.circuitBreaker })
  const withBreaker = await outageRun(system, sink, databaseUrl, ports.at(-1)!, leadMs)
  await system.deleteTargetPolicy(breaker)
  return { manyOrigins, outage: { withoutBreaker, withBreaker } }
}
