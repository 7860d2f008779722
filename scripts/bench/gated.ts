// The gated workload (timewheel only: the peers have nothing like a tag policy; BENCHMARKS.md). On one
// started system — one node, or three sharing the database — jobs due at one instant (loaded
// beforehand through /schedule, spread over the nodes), a run per case, each on a tag of its own
// whose policy is created first:
// - ungated: the reference, no tag, against a sink answering after GATED.concurrency.sinkDelayMs;
// - concurrency: maxConcurrent 100 against that sink (the limit allows 10,000/s, more than the
//   service sends): deliveries/s, against the ungated run's (goal ≥ 0.9×), and the most in flight;
// - binding: maxConcurrent 20 against a sink answering after 50 ms (400/s allowed; goal ≥ 0.95×);
// - throughput: {"1s": 1000} over n jobs (10 windows with the default n) while a background load
//   runs (steady /schedule calls of jobs an hour ahead, and a second tag's deliveries): the most
//   starts the sink saw in any sliding window of every window of the policy (goal: never above the
//   rate), and the rate over whole windows (goal ≥ 0.95×);
// - hold: jobs due over 6 s on a tag whose target answers 429 with `Retry-After: 2` for a second:
//   starts the sink saw while the tag was held (goal 0), how soon they resumed, how long the
//   refused ones waited to be retried (at least Retry-After);
// - targets: the target-policy runs (gatedTargets.ts): `*` maxConcurrent 10 over 200 and 1,000
//   origins against ungated, and an origin down for 10 s with and without a circuit breaker.
// Every run reports how late the sink's own event loop ran (its stamps may be that late).
import * as crypto from "node:crypto"
import { nowMs, sleep, sortedCopy } from "./common.ts"
import type { JobSpec } from "./common.ts"
import { query } from "./database.ts"
import type { Arrivals, ExpectOptions, Sink } from "./sink.ts"
import type { Contender, StartedSystem } from "./system.ts"
import { runTargetCases, type TargetFigures } from "./gatedTargets.ts"
import { LoadOverrun, type TimedCommon } from "./workloads.ts"

export const GATED_DEFAULT_N = 10_000
export const GATED = {
  concurrency: { maxConcurrent: 100, sinkDelayMs: 10 },
  binding: { maxConcurrent: 20, sinkDelayMs: 50, seconds: 10 },
  throughput: { policy: { "1s": 1_000 } as Readonly<Record<string, number>> },
  hold: { maxConcurrent: 50, jobs: 3_000, spreadMs: 6_000, refuseAfterMs: 2_000, refuseForMs: 1_000, retryAfterSeconds: 2 },
  /** Starts arriving this soon after the first refusal were already on their way when it came back. */
  holdGraceMs: 50,
  background: { schedulePerS: 100, deliveriesPerS: 200, maxConcurrent: 50, callsInFlight: 32 }
} as const

const WINDOW_UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
const windowMsOf = (label: string) => Number(label.slice(0, -1)) * WINDOW_UNIT_MS[label.slice(-1) as keyof typeof WINDOW_UNIT_MS]

/** What every run reports: arrivals at the sink of n jobs due from T on. */
export interface GatedRun extends Omit<TimedCommon, "peakRssMiB"> {
  /** From T to the first / last arrival; between them. */
  readonly firstArrivalMs: number
  readonly lastArrivalMs: number
  readonly spanMs: number
  /** Arrivals per second over [first, last arrival]. */
  readonly ratePerS: number
  /** The most requests the sink held at once, and on average from the first arrival to the last answer. */
  readonly peakInFlight: number
  readonly meanInFlight: number
  /** Arrivals in each second after T (JSON only). */
  readonly perSecond: ReadonlyArray<number>
  /** The sink's event-loop delay: its stamps may be this late. */
  readonly sinkLoopDelayP99Ms: number
  readonly sinkLoopDelayMaxMs: number
}

export interface GatedMetrics {
  readonly n: number
  readonly nodes: number
  readonly missing: number
  readonly duplicates: number
  readonly strays: number
  readonly peakRssMiB: number
  readonly ungated: GatedRun
  /** Absent with --gated-origins. */
  readonly concurrency?: GatedRun & {
    readonly maxConcurrent: number
    readonly idealPerS: number
    readonly vsUngated: number
  } & LimitUse
  /** Absent with --gated-origins. */
  readonly binding?: GatedRun & {
    readonly maxConcurrent: number
    readonly idealPerS: number
    readonly ofIdeal: number
  } & LimitUse
  /** Absent with --gated-origins. */
  readonly throughput?: GatedRun & {
    readonly policy: Readonly<Record<string, number>>
    /** Per window of the policy: the most starts the sink saw in any sliding window of it, and where windows held more (JSON). */
    readonly windows: Readonly<Record<string, {
      readonly rate: number
      readonly maxInWindow: number
      readonly over: ReadonlyArray<{ readonly endMs: number; readonly most: number }>
    }>>
    /** The first window's: what the report shows. */
    readonly maxInWindow: number
    /** (n − rate) / (arrival n − rate + 1 − arrival 1): the rate over whole windows (the last one's tail left out). */
    readonly wholeWindowsRatePerS: number
    readonly ofRate: number
    readonly background: BackgroundFigures
  }
  /** Absent with --gated-origins. */
  readonly hold?: GatedRun & {
    readonly refusals: number
    /** From T to the first refusal; the hold ends Retry-After after the last one. */
    readonly firstRefusalMs: number
    readonly holdMs: number
    /** Starts the sink saw after the first refusal (and the grace) until the hold's end: 0. */
    readonly startsDuringHold: number
    /** Starts within the grace after the first refusal (already on their way). */
    readonly startsInGrace: number
    /** From the hold's end to the first start after it. */
    readonly resumedAfterMs: number
    /** The shortest time from a refusal to that trigger's next attempt (at least Retry-After). */
    readonly retryWaitMinMs: number
    /** When each start seen during the hold came, from the first refusal (ms; JSON only). */
    readonly startsDuringHoldAtMs: ReadonlyArray<number>
  }
  readonly targets: TargetFigures
}

/** How much of maxConcurrent the run used, as the service timed its attempts. */
export interface LimitUse {
  /** The attempts' mean duration (send to outcome): the sink's delay and the service's own time. */
  readonly attemptMs: number
  /** Attempts in flight on average: deliveries/s × attemptMs. */
  readonly inFlight: number
  /** inFlight / maxConcurrent: 1 when the limit binds (the service's own time per attempt counts too). */
  readonly limitUsed: number
}

export interface BackgroundFigures {
  readonly scheduleCalls: number
  readonly deliveriesScheduled: number
  readonly deliveriesArrived: number
  readonly errors: number
  /** Ticks skipped because GATED.background.callsInFlight calls were open (the service slower than the load). */
  readonly skipped: number
}

export const round = (x: number, digits = 1) => (Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : x)
const mib = (kib: number) => Math.round((kib / 1024) * 10) / 10
const newRun = () => crypto.randomBytes(4).toString("hex")

/** The most instants in any half-open window (t − windowMs, t], the way the gate counts; `sorted` ascending. */
export const maxInWindow = (sorted: ArrayLike<number>, windowMs: number): number => {
  let best = 0
  let from = 0
  for (let to = 0; to < sorted.length; to++) {
    while (sorted[from]! <= sorted[to]! - windowMs) from++
    best = Math.max(best, to - from + 1)
  }
  return best
}

/** Where windows held more than `limit`: the end of each such stretch (ms after `t`) and its most (at most 20). */
const overWindows = (sorted: ArrayLike<number>, windowMs: number, limit: number, t: number) => {
  const out: Array<{ readonly endMs: number; readonly most: number }> = []
  let from = 0
  for (let to = 0; to < sorted.length; to++) {
    while (sorted[from]! <= sorted[to]! - windowMs) from++
    const count = to - from + 1
    if (count <= limit) continue
    const last = out.at(-1)
    if (last !== undefined && sorted[to]! - t - last.endMs < windowMs) out[out.length - 1] = { endMs: Math.round(sorted[to]! - t), most: Math.max(last.most, count) }
    else if (out.length < 20) out.push({ endMs: Math.round(sorted[to]! - t), most: count })
  }
  return out
}

export interface SinkRun extends Arrivals {
  readonly run: string
  readonly t: number
  readonly loadMs: number
  readonly leadMs: number
}

/**
 * Loads n jobs due at T + offsetOf(i) (T = now + lead) with these tags, arms the sink, waits for
 * every id (at most `waitMs` after the last instant), then `settleMs` more, and collects.
 */
export const timedRun = async (
  system: StartedSystem,
  sink: Sink,
  input: {
    readonly n: number
    readonly leadMs: number
    readonly offsetOf?: (i: number) => number
    /** Where job i goes (default: the sink's main port). */
    readonly urlOf?: (run: string, i: number) => string
    readonly tags?: ReadonlyArray<string>
    readonly sink?: (t: number) => ExpectOptions
    readonly during?: (t: number) => Promise<() => Promise<void>>
    readonly settleMs?: number
  }
): Promise<SinkRun> => {
  const run = newRun()
  const t = Math.ceil(Date.now() + input.leadMs)
  await sink.expect(run, input.n, input.sink?.(t) ?? {})
  const offsetOf = input.offsetOf ?? (() => 0)
  const tags = input.tags === undefined ? {} : { tags: input.tags }
  const jobs: Array<JobSpec> = Array.from({ length: input.n }, (_, i) => ({
    id: i, url: (input.urlOf ?? sink.url)(run, i), runAtMs: t + offsetOf(i), body: JSON.stringify({ n: i }), ...tags
  }))
  const loadStart = nowMs()
  await system.load(jobs, t)
  const loadMs = nowMs() - loadStart
  if (nowMs() >= t) throw new LoadOverrun(loadMs, input.leadMs)
  const stopDuring = input.during === undefined ? undefined : await input.during(t)
  try {
    await sink.waitComplete(t + offsetOf(input.n - 1) + Math.max(60_000, input.n * 10))
    if (input.settleMs !== undefined) await sleep(input.settleMs)
  } finally {
    await stopDuring?.()
  }
  return { ...(await sink.collect()), run, t, loadMs, leadMs: input.leadMs }
}

/** What every run reports, from what the sink saw. */
export const common = (n: number, result: SinkRun): { readonly run: GatedRun; readonly sorted: Float64Array } => {
  const sorted = sortedCopy([...result.arrivals.filter((at) => !Number.isNaN(at)), ...result.repeatArrivals])
  const arrived = result.arrivals.reduce((count, at) => (Number.isNaN(at) ? count : count + 1), 0)
  const first = sorted[0] ?? Number.NaN
  const last = sorted[sorted.length - 1] ?? Number.NaN
  const perSecond: Array<number> = []
  for (const at of sorted) {
    const second = Math.max(0, Math.floor((at - result.t) / 1000))
    while (perSecond.length <= second) perSecond.push(0)
    perSecond[second]! += 1
  }
  return {
    sorted,
    run: {
      n,
      arrived,
      missing: n - arrived,
      duplicates: result.duplicates,
      strays: result.strays,
      leadMs: result.leadMs,
      loadMs: round(result.loadMs),
      firstArrivalMs: round(first - result.t),
      lastArrivalMs: round(last - result.t),
      spanMs: round(last - first),
      ratePerS: round(arrived / ((last - first) / 1000)),
      peakInFlight: result.peakInFlight,
      meanInFlight: round(result.meanInFlight, 2),
      perSecond,
      sinkLoopDelayP99Ms: round(result.loopDelayP99Ms),
      sinkLoopDelayMaxMs: round(result.loopDelayMaxMs)
    }
  }
}

/**
 * The background load: /schedule calls of jobs an hour ahead (never delivered in the run) and of
 * jobs due at once on a second gated tag (delivered to the sink's background path), each at a
 * steady rate, at most GATED.background.callsInFlight calls open at once. Returns its stop.
 */
const startBackground = (system: StartedSystem, sink: Sink, tag: string) => {
  const { schedulePerS, deliveriesPerS, callsInFlight } = GATED.background
  const figures = { scheduleCalls: 0, deliveriesScheduled: 0, errors: 0, skipped: 0 }
  let open = 0
  let stopped = false
  const loop = async (perS: number, job: () => JobSpec, done: () => void) => {
    let next = Date.now()
    while (!stopped) {
      next += 1000 / perS
      if (open >= callsInFlight) figures.skipped++
      else {
        open++
        system.scheduleOne!(job()).then(done, () => figures.errors++).finally(() => open--)
      }
      const wait = next - Date.now()
      if (wait > 0) await sleep(wait)
    }
  }
  let i = 0
  const loops = [
    loop(schedulePerS, () => ({ id: i++, url: sink.backgroundUrl, runAtMs: Date.now() + 3_600_000, body: "{}" }), () => figures.scheduleCalls++),
    // due a second later: a time already past when the call arrives is skipped (docs/scheduling.md)
    loop(deliveriesPerS, () => ({ id: i++, url: sink.backgroundUrl, runAtMs: Date.now() + 1_000, body: "{}", tags: [tag] }), () => figures.deliveriesScheduled++)
  ]
  return async (): Promise<Omit<BackgroundFigures, "deliveriesArrived">> => {
    stopped = true
    await Promise.all(loops)
    while (open > 0) await sleep(10)
    return figures
  }
}

/**
 * How long the run's attempts took as the service timed them (its executions, from the send to the
 * outcome: the sink's delay plus the service's own time), and so how many were in flight on average.
 */
const attemptsOf = async (databaseUrl: string, result: SinkRun, ratePerS: number) => {
  const rows = await query<{ ms: number | null }>(databaseUrl,
    `SELECT avg(duration_ms)::float8 AS ms FROM executions WHERE url LIKE '%run=${result.run}&%'`)
  const attemptMs = rows[0]?.ms ?? Number.NaN
  return { attemptMs: round(attemptMs), inFlight: round((ratePerS * attemptMs) / 1000) }
}

/** One system's runs (its nodes started already). */
const runAll = async (
  system: StartedSystem, sink: Sink, n: number, leadMs: number, databaseUrl: string, origins: ReadonlyArray<number> | undefined
): Promise<Omit<GatedMetrics, "n" | "nodes" | "missing" | "duplicates" | "strays" | "peakRssMiB">> => {
  if (system.tagPolicy === undefined || system.scheduleOne === undefined) throw new Error("the gated workload needs timewheel's tag policies")
  const c = GATED.concurrency
  const b = GATED.binding
  const h = GATED.hold

  // a warm-up, not measured: a service just started (connections to open, code not yet compiled) is
  // not what a gate meets in steady use; later runs load as fast as this one did
  const warmUpN = Math.min(n, 2_000)
  const warmUp = await timedRun(system, sink, { n: warmUpN, leadMs: Math.max(5_000, Math.ceil((leadMs * warmUpN) / n)), sink: () => ({ delayMs: c.sinkDelayMs }) })
  const lead = Math.max(5_000, Math.min(leadMs, Math.ceil(5_000 + (2 * warmUp.loadMs * n) / warmUpN)))
  const ungated = common(n, await timedRun(system, sink, { n, leadMs: lead, sink: () => ({ delayMs: c.sinkDelayMs }) })).run
  // --gated-origins: only the `*` runs over these many origins
  if (origins !== undefined) return { ungated, targets: await runTargetCases(system, sink, n, lead, databaseUrl, ungated, origins) }

  await system.tagPolicy({ tag: "gated-concurrency", maxConcurrent: c.maxConcurrent })
  const concurrencyResult = await timedRun(system, sink, {
    n, leadMs: lead, tags: ["gated-concurrency"], sink: () => ({ delayMs: c.sinkDelayMs })
  })
  const concurrency = common(n, concurrencyResult).run
  const concurrencyAttempts = await attemptsOf(databaseUrl, concurrencyResult, concurrency.ratePerS)

  const bindingN = Math.min(n, (b.maxConcurrent * 1000 / b.sinkDelayMs) * b.seconds)
  await system.tagPolicy({ tag: "gated-binding", maxConcurrent: b.maxConcurrent })
  const bindingResult = await timedRun(system, sink, {
    n: bindingN, leadMs: lead, tags: ["gated-binding"], sink: () => ({ delayMs: b.sinkDelayMs })
  })
  const binding = common(bindingN, bindingResult).run
  const bindingAttempts = await attemptsOf(databaseUrl, bindingResult, binding.ratePerS)

  await system.tagPolicy({ tag: "gated-throughput", throughput: GATED.throughput.policy })
  await system.tagPolicy({ tag: "gated-background", maxConcurrent: GATED.background.maxConcurrent })
  let background: Omit<BackgroundFigures, "deliveriesArrived"> | undefined
  const throughputResult = await timedRun(system, sink, {
    n, leadMs: lead, tags: ["gated-throughput"],
    // the background load from a second before T until every job arrived
    during: async (t) => {
      await sleep(Math.max(0, t - 1_000 - Date.now()))
      const stop = startBackground(system, sink, "gated-background")
      return async () => {
        background = await stop()
      }
    }
  })
  const throughput = common(n, throughputResult)
  const windows = Object.fromEntries(Object.entries(GATED.throughput.policy).map(([label, rate]) =>
    [label, {
      rate,
      maxInWindow: maxInWindow(throughput.sorted, windowMsOf(label)),
      over: overWindows(throughput.sorted, windowMsOf(label), rate, throughputResult.t)
    }]))
  const [firstLabel, firstRate] = Object.entries(GATED.throughput.policy)[0]!
  const wholeIndex = throughput.sorted.length - firstRate
  const wholeWindowsRatePerS = wholeIndex > 0
    ? round(wholeIndex / ((throughput.sorted[wholeIndex]! - throughput.sorted[0]!) / 1000))
    : Number.NaN

  const holdN = Math.min(n, h.jobs)
  await system.tagPolicy({
    tag: "gated-hold", maxConcurrent: h.maxConcurrent,
    retryStrategy: "fixed", retryInitialDelaySeconds: 0, retryMaxAttempts: 5, retryOn: "non_2xx"
  })
  const holdResult = await timedRun(system, sink, {
    n: holdN, leadMs: lead, tags: ["gated-hold"], offsetOf: (i) => Math.round((i * h.spreadMs) / holdN),
    sink: (t) => ({ refuse: { fromMs: t + h.refuseAfterMs, untilMs: t + h.refuseAfterMs + h.refuseForMs, retryAfterSeconds: h.retryAfterSeconds } }),
    // the refused ones are retried after the hold
    settleMs: h.retryAfterSeconds * 1000 + 3_000
  })
  const hold = common(holdN, holdResult)
  const refusedAt = [...holdResult.refusedAt]
  const firstRefusal = refusedAt[0] ?? Number.NaN
  const holdEnd = (refusedAt.at(-1) ?? Number.NaN) + h.retryAfterSeconds * 1000
  const starts = hold.sorted
  const inSpan = (fromMs: number, untilMs: number) => starts.filter((at) => at > fromMs && at < untilMs).length
  const firstAfter = starts.find((at) => at >= holdEnd)
  const retryWaits = [...holdResult.repeatIds].map((id, i) => holdResult.repeatArrivals[i]! - holdResult.arrivals[id]!)

  const targets = await runTargetCases(system, sink, n, lead, databaseUrl, ungated, undefined)

  return {
    ungated,
    concurrency: {
      ...concurrency, maxConcurrent: c.maxConcurrent, idealPerS: (c.maxConcurrent * 1000) / c.sinkDelayMs,
      vsUngated: round(concurrency.ratePerS / ungated.ratePerS, 3),
      ...concurrencyAttempts,
      limitUsed: round(concurrencyAttempts.inFlight / c.maxConcurrent, 3)
    },
    binding: {
      ...binding, maxConcurrent: b.maxConcurrent, idealPerS: (b.maxConcurrent * 1000) / b.sinkDelayMs,
      ofIdeal: round(binding.ratePerS / ((b.maxConcurrent * 1000) / b.sinkDelayMs), 3),
      ...bindingAttempts,
      limitUsed: round(bindingAttempts.inFlight / b.maxConcurrent, 3)
    },
    throughput: {
      ...throughput.run,
      policy: GATED.throughput.policy,
      windows,
      maxInWindow: windows[firstLabel]!.maxInWindow,
      wholeWindowsRatePerS,
      ofRate: round(wholeWindowsRatePerS / (firstRate * 1000 / windowMsOf(firstLabel)), 3),
      background: { ...background!, deliveriesArrived: throughputResult.background }
    },
    hold: {
      ...hold.run,
      refusals: refusedAt.length,
      firstRefusalMs: round(firstRefusal - holdResult.t),
      holdMs: round(holdEnd - firstRefusal),
      startsDuringHold: inSpan(firstRefusal + GATED.holdGraceMs, holdEnd),
      startsInGrace: inSpan(firstRefusal, firstRefusal + GATED.holdGraceMs + 0.001),
      resumedAfterMs: round((firstAfter ?? Number.NaN) - holdEnd),
      retryWaitMinMs: round(retryWaits.length === 0 ? Number.NaN : Math.min(...retryWaits)),
      startsDuringHoldAtMs: [...starts].filter((at) => at > firstRefusal + GATED.holdGraceMs && at < holdEnd).map((at) => round(at - firstRefusal))
    },
    targets
  }
}

/** The gated workload on a contender (one node, or a cluster: `contender.nodes`). */
export const runGated = async (
  contender: Contender, databaseUrl: string, sink: Sink, n: number, leadMs: number, origins?: ReadonlyArray<number>
): Promise<GatedMetrics> => {
  const system = await contender.start(databaseUrl, true)
  let runs: Awaited<ReturnType<typeof runAll>>
  try {
    runs = await runAll(system, sink, n, leadMs, databaseUrl, origins)
  } catch (error) {
    await system.stop().catch(() => Number.NaN)
    throw error
  }
  const peakRssMiB = mib(await system.stop())
  const all = [
    runs.ungated, runs.concurrency, runs.binding, runs.throughput, runs.hold, ...runs.targets.manyOrigins.flatMap((many) => [many.ungated, many.star])
  ].filter((run) => run !== undefined)
  return {
    n,
    nodes: contender.nodes ?? 1,
    missing: all.reduce((sum, run) => sum + run.missing, 0),
    duplicates: all.reduce((sum, run) => sum + run.duplicates, 0) - (runs.hold?.duplicates ?? 0),
    strays: all.reduce((sum, run) => sum + run.strays, 0),
    peakRssMiB,
    ...runs
  }
}
