// The workloads, each on a started contender and a fresh database, each bounded in time:
// - ingest: n one-shot jobs 1 h ahead, one timed call each, 32 concurrent callers (timewheel's wrk
//   row: wrk with 32 connections for a fixed time instead, see ingestWrk.ts);
// - delivery: n jobs all due at one instant T (loaded beforehand), POSTed to the sink; time from T to
//   the last arrival;
// - precision: n jobs at instants spread evenly over 10 s; lateness = arrival - instant;
// - batch: n one-shot jobs 1 h ahead through the batch API, BATCH_SIZE per call, BATCH_CONCURRENCY
//   callers; for timewheel also /declare of DECLARE_ITEMS keyed items on one tag (see runBatch);
// - gated (timewheel only): gated.ts.
// Peak RSS of the working process is taken at the end of each.
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import { nowMs, percentile, sleep, sortedCopy } from "./common.ts"
import { costProbe, type Costs } from "./costs.ts"
import type { CallBatch, JobSpec } from "./common.ts"
import { runIngestWrk } from "./ingestWrk.ts"
import type { IngestWrkMetrics } from "./ingestWrk.ts"
import type { Arrivals, Sink } from "./sink.ts"
import type { Contender, DeclareFigures, StartedSystem } from "./system.ts"

export const INGEST_CONCURRENCY = 32
export const INGEST_AHEAD_MS = 3_600_000
export const PRECISION_SPREAD_MS = 10_000
export const BATCH_SIZE = 1_000
export const BATCH_CONCURRENCY = 4
export const DECLARE_ITEMS = 10_000
/** Jobs scheduled (the same way) before the timed batch, on every system. */
export const BATCH_WARM_UP = 10_000

export interface IngestMetrics {
  readonly n: number
  readonly ok: number
  readonly errors: number
  readonly firstError: string | null
  readonly timedOut: boolean
  readonly elapsedMs: number
  readonly ratePerS: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  readonly latencyMaxMs: number
  readonly peakRssMiB: number
}

/** One variant of the batch workload (keyed or unkeyed) on one system. */
export interface BatchRun {
  readonly ok: number
  readonly errors: number
  readonly firstError: string | null
  readonly timedOut: boolean
  readonly elapsedMs: number
  /** Jobs scheduled per second over the whole run. */
  readonly ratePerS: number
  readonly callP50Ms: number
  readonly callP99Ms: number
  /** Per job scheduled, over the timed calls (costs.ts): the working process's and PostgreSQL's CPU time, WAL. */
  readonly costs?: Costs
}

export interface BatchMetrics {
  readonly n: number
  /** Jobs without a key: each one added. */
  readonly unkeyed: BatchRun
  /** Each job with its key (peers.ts keyOf), every key new: the system's deduplicating add. */
  readonly keyed: BatchRun
  /** Both variants' errors. */
  readonly errors: number
  readonly peakRssMiB: number
  /** timewheel only. */
  readonly declare?: DeclareFigures
}

export interface TimedCommon {
  readonly n: number
  readonly arrived: number
  readonly missing: number
  readonly duplicates: number
  readonly strays: number
  readonly leadMs: number
  readonly loadMs: number
  readonly peakRssMiB: number
}

export interface DeliveryMetrics extends TimedCommon {
  /** From the due instant T to the first / last arrival. */
  readonly firstArrivalMs: number
  readonly lastArrivalMs: number
  /** Arrivals per second over [T, last arrival]. */
  readonly ratePerS: number
  /** Per delivery, from just before T until the outcomes are recorded (costs.ts); absent when not measurable. */
  readonly costs?: Costs
}

export interface PrecisionMetrics extends TimedCommon {
  readonly latenessMinMs: number
  readonly latenessP50Ms: number
  readonly latenessP99Ms: number
  readonly latenessMaxMs: number
  /** Per delivery, as in the delivery workload. */
  readonly costs?: Costs
}

/** Loading did not finish before the first due instant: the run says nothing, retry with more lead. */
export class LoadOverrun extends Error {
  readonly loadMs: number
  constructor(loadMs: number, leadMs: number) {
    super(`loading took ${Math.round(loadMs)} ms, more than the ${leadMs} ms lead`)
    this.loadMs = loadMs
  }
}

const mib = (kib: number) => Math.round((kib / 1024) * 10) / 10
export const round = (x: number, digits = 1) => (Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : x)
export const newRun = () => crypto.randomBytes(4).toString("hex")
const bodyOf = (i: number) => JSON.stringify({ n: i })

/** Stops the system whatever happened; a stop failure never hides the run's own error. */
export const withSystem = async <A>(system: StartedSystem, body: () => Promise<A>): Promise<{ result: A; peakRssMiB: number }> => {
  let result: A
  try {
    result = await body()
  } catch (error) {
    await system.stop().catch(() => Number.NaN)
    throw error
  }
  return { result, peakRssMiB: mib(await system.stop()) }
}

export const runIngest = async (contender: Contender, databaseUrl: string, sink: Sink, n: number): Promise<IngestMetrics | IngestWrkMetrics> => {
  if (contender.client === "wrk") return runIngestWrk(contender, databaseUrl, sink, newRun(), INGEST_AHEAD_MS)
  const run = newRun()
  const base = Date.now() + INGEST_AHEAD_MS
  const jobs: Array<JobSpec> = Array.from({ length: n }, (_, i) => ({ id: i, url: sink.url(run, i), runAtMs: base + i, body: bodyOf(i) }))
  const system = await contender.start(databaseUrl, false)
  const deadlineMs = Date.now() + Math.max(60_000, n * 10)
  const { result: batch, peakRssMiB } = await withSystem(system, () => system.ingest(jobs, INGEST_CONCURRENCY, deadlineMs))
  const sorted = sortedCopy(batch.latenciesMs)
  const ok = batch.latenciesMs.length
  return {
    n,
    ok,
    errors: batch.errors,
    firstError: batch.firstError ?? null,
    timedOut: batch.timedOut,
    elapsedMs: round(batch.elapsedMs),
    ratePerS: round(ok / (batch.elapsedMs / 1000)),
    latencyP50Ms: round(percentile(sorted, 50), 2),
    latencyP99Ms: round(percentile(sorted, 99), 2),
    latencyMaxMs: round(sorted[sorted.length - 1] ?? Number.NaN, 2),
    peakRssMiB
  }
}

interface TimedRun {
  readonly instants: Float64Array
  readonly arrivals: Float64Array
  readonly common: TimedCommon
  readonly costs: Costs | undefined
}

interface SinkRun extends Arrivals {
  readonly instants: Float64Array
  readonly loadMs: number
  readonly costs?: Costs
}

/** After the last arrival, how long the outcomes are given to be recorded before costs are read. */
const RECORDING_GRACE_MS = 2_000

/**
 * On a started system: loads n jobs due at `instantOf(i, T)` with T = now + lead, then waits for the
 * sink to see all of them, at most `waitMs` after the last instant. `tags` go with every job; the
 * sink answers each request `sinkDelayMs` after reading it.
 */
const timedOnSystem = async (
  system: StartedSystem,
  sink: Sink,
  n: number,
  leadMs: number,
  instantOf: (i: number, t: number) => number,
  waitMs: number,
  options: { readonly tags?: ReadonlyArray<string>; readonly sinkDelayMs?: number; readonly costsOn?: string } = {}
): Promise<SinkRun> => {
  const run = newRun()
  await sink.expect(run, n, { delayMs: options.sinkDelayMs ?? 0 })
  const t = Math.ceil(Date.now() + leadMs)
  const instants = Float64Array.from({ length: n }, (_, i) => instantOf(i, t))
  const tags = options.tags === undefined ? {} : { tags: options.tags }
  const jobs: Array<JobSpec> = Array.from({ length: n }, (_, i) => ({ id: i, url: sink.url(run, i), runAtMs: instants[i]!, body: bodyOf(i), ...tags }))
  const loadStart = nowMs()
  try {
    await system.load(jobs, t)
  } catch (error) {
    if (nowMs() >= t) throw new LoadOverrun(nowMs() - loadStart, leadMs)
    throw error
  }
  const loadMs = nowMs() - loadStart
  if (nowMs() >= t) throw new LoadOverrun(loadMs, leadMs)
  const last = instants.reduce((a, b) => Math.max(a, b), t)
  // costs: from just before T (loading done, the system idle) until the outcomes are recorded
  const probe = options.costsOn === undefined ? undefined : await costProbe(options.costsOn, system.pid)
  if (probe !== undefined) await sleep(Math.max(0, t - 200 - nowMs()))
  const before = await probe?.snapshot()
  await sink.waitComplete(last + waitMs)
  const collected = await sink.collect()
  if (probe === undefined || before === undefined) return { instants, loadMs, ...collected }
  await sleep(RECORDING_GRACE_MS)
  const costs = await probe.perOperation(before, await probe.snapshot(), arrivedCount(collected.arrivals))
  return { instants, loadMs, ...collected, costs }
}

const arrivedCount = (arrivals: Float64Array) => arrivals.reduce((count, at) => (Number.isNaN(at) ? count : count + 1), 0)

/**
 * Loads n jobs due at `instantOf(i, T)` with T = now + lead (after the system is up), then waits for
 * the sink to see all of them, at most `waitMs` after the last instant.
 */
const runTimed = async (
  contender: Contender,
  databaseUrl: string,
  sink: Sink,
  n: number,
  leadMs: number,
  instantOf: (i: number, t: number) => number,
  waitMs: number,
  options: { readonly costs?: boolean } = {}
): Promise<TimedRun> => {
  const system = await contender.start(databaseUrl, true)
  const costsOn = options.costs === true ? { costsOn: databaseUrl } : {}
  const { result, peakRssMiB } = await withSystem(system, () => timedOnSystem(system, sink, n, leadMs, instantOf, waitMs, costsOn))
  const arrived = arrivedCount(result.arrivals)
  return {
    instants: result.instants,
    arrivals: result.arrivals,
    costs: result.costs,
    common: {
      n,
      arrived,
      missing: n - arrived,
      duplicates: result.duplicates,
      strays: result.strays,
      leadMs,
      loadMs: round(result.loadMs),
      peakRssMiB
    }
  }
}

export const runDelivery = async (contender: Contender, databaseUrl: string, sink: Sink, n: number, leadMs: number): Promise<DeliveryMetrics> => {
  const waitMs = Math.max(60_000, n * 10)
  const timed = await runTimed(contender, databaseUrl, sink, n, leadMs, (_, t) => t, waitMs, { costs: true })
  const t = timed.instants[0] ?? 0
  let first = Number.POSITIVE_INFINITY
  let last = Number.NEGATIVE_INFINITY
  for (const at of timed.arrivals) {
    if (Number.isNaN(at)) continue
    first = Math.min(first, at)
    last = Math.max(last, at)
  }
  if (timed.common.arrived === 0) return { ...timed.common, firstArrivalMs: Number.NaN, lastArrivalMs: Number.NaN, ratePerS: 0 }
  const lastArrivalMs = last - t
  return {
    ...timed.common,
    firstArrivalMs: round(first - t),
    lastArrivalMs: round(lastArrivalMs),
    ratePerS: round(timed.common.arrived / (lastArrivalMs / 1000)),
    ...(timed.costs === undefined ? {} : { costs: timed.costs })
  }
}

export const runPrecision = async (
  contender: Contender,
  databaseUrl: string,
  sink: Sink,
  n: number,
  leadMs: number,
  spreadMs: number = PRECISION_SPREAD_MS
): Promise<PrecisionMetrics> => {
  const timed = await runTimed(contender, databaseUrl, sink, n, leadMs, (i, t) => t + Math.round((i * spreadMs) / n), 30_000, { costs: true })
  // BENCH_ARRIVALS_FILE: each id's due instant and arrival, for stageBreakdown.ts ("{run}" in it: the
  // contender's label and n, a file per run)
  const arrivalsFile = process.env.BENCH_ARRIVALS_FILE?.replace("{run}", `${contender.label}-${n}`.replace(/[^\w.-]+/g, "_"))
  if (arrivalsFile !== undefined && arrivalsFile !== "") {
    fs.writeFileSync(arrivalsFile, JSON.stringify({ instants: [...timed.instants], arrivals: [...timed.arrivals].map((at) => Number.isNaN(at) ? null : at) }))
  }
  const lateness: Array<number> = []
  timed.arrivals.forEach((at, i) => {
    if (!Number.isNaN(at)) lateness.push(at - timed.instants[i]!)
  })
  const sorted = sortedCopy(lateness)
  return {
    ...timed.common,
    latenessMinMs: round(sorted[0] ?? Number.NaN),
    latenessP50Ms: round(percentile(sorted, 50)),
    latenessP99Ms: round(percentile(sorted, 99)),
    latenessMaxMs: round(sorted[sorted.length - 1] ?? Number.NaN),
    ...(timed.costs === undefined ? {} : { costs: timed.costs })
  }
}

const batchRun = (batch: CallBatch, costs?: Costs): BatchRun => {
  const ok = batch.latenciesMs.length * BATCH_SIZE
  const sorted = sortedCopy(batch.latenciesMs)
  return {
    ok,
    errors: batch.errors,
    firstError: batch.firstError ?? null,
    timedOut: batch.timedOut,
    elapsedMs: round(batch.elapsedMs),
    ratePerS: round(ok / (batch.elapsedMs / 1000), 0),
    callP50Ms: round(percentile(sorted, 50), 1),
    callP99Ms: round(percentile(sorted, 99), 1),
    ...(costs === undefined ? {} : { costs })
  }
}

/**
 * n jobs 1 h ahead (nothing is delivered) scheduled BATCH_SIZE per call by BATCH_CONCURRENCY callers,
 * twice: unkeyed, then keyed (each job with its key, every key new), each after BATCH_WARM_UP jobs
 * scheduled the same way and not timed. timewheel `/bulk` upserts (each answer checked: all added;
 * keyed: with a custom key), graphile-worker `addJobs` (keyed: `jobKey`), pg-boss `insert` (keyed:
 * `singletonKey` on a queue of policy `short`). Then, on timewheel only, `/declare` of DECLARE_ITEMS
 * keyed items on one tag twice (all added, then all unchanged), then changing every item once by
 * `/declare` and once by `/bulk` while a probe measures how long a claim of one of those rows waits
 * (lockProbe.ts).
 */
export const runBatch = async (contender: Contender, databaseUrl: string, sink: Sink, n: number): Promise<BatchMetrics> => {
  const run = newRun()
  const base = Date.now() + INGEST_AHEAD_MS
  // ids (and so keys and target URLs) apart: [0, n) unkeyed, [n, 2n) keyed, [2n, 3n) /declare, then warm-ups
  const jobsFrom = (first: number, count: number): Array<JobSpec> =>
    Array.from({ length: count }, (_, i) => ({ id: first + i, url: sink.url(run, first + i), runAtMs: base + i, body: bodyOf(first + i) }))
  const system = await contender.start(databaseUrl, false)
  const deadlineMs = Date.now() + Math.max(240_000, n * 4)
  const { result, peakRssMiB } = await withSystem(system, async () => {
    const probe = await costProbe(databaseUrl, system.pid)
    const timed = async (first: number, warmUpFirst: number, keyed: boolean) => {
      // warm-up, not timed: a just-started system (timewheel's shard actors starting, code not yet
      // compiled by V8) is not what a batch API meets in steady use
      await system.batch(jobsFrom(warmUpFirst, BATCH_WARM_UP), BATCH_SIZE, BATCH_CONCURRENCY, deadlineMs, keyed)
      const before = await probe.snapshot()
      const batch = await system.batch(jobsFrom(first, n), BATCH_SIZE, BATCH_CONCURRENCY, deadlineMs, keyed)
      return { batch, costs: await probe.perOperation(before, await probe.snapshot(), n) }
    }
    const unkeyed = await timed(0, 3 * n, false)
    const keyed = await timed(n, 3 * n + BATCH_WARM_UP, true)
    const declare = system.declare === undefined ? undefined : await system.declare(jobsFrom(2 * n, DECLARE_ITEMS), Date.now() + 120_000)
    return { unkeyed, keyed, declare }
  })
  const { unkeyed, keyed, declare } = result
  return {
    n,
    unkeyed: batchRun(unkeyed.batch, unkeyed.costs),
    keyed: batchRun(keyed.batch, keyed.costs),
    errors: unkeyed.batch.errors + keyed.batch.errors,
    peakRssMiB,
    ...(declare === undefined ? {} : { declare })
  }
}
