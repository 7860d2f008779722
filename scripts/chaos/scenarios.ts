// The faults. Each scenario gets a fresh world (database, nodes, key), loads triggers, injects one
// fault while deliveries are in flight, waits (bounded) until every trigger arrived or its bound is
// reached, keeps watching for late duplicates for at least one crash-recovery period (15 s) after the
// fault, then reads the target's arrivals and the database's execution log.
//
// - kill9 / sigterm / sigterm-fast: a burst of N triggers due at one instant T plus a trickle of N/5
//   due over the 6 s after it; node 0 gets SIGKILL or SIGTERM while it holds deliveries (slow target:
//   at least 0.5 s after T, once half its share, at most 230, is open at the target; fast target: once
//   half its share is claimed and unfinished in the database).
// - pg-restart-fast / pg-restart-immediate: N triggers spread over 15 s (20 s); 3 s in,
//   `pg_ctl stop -m fast|immediate`, 3 s of outage, start on the same port; the immediate variant then
//   kills node 0 with SIGKILL 10 s after T and checks that the survivors deliver the rest.
// - pg-crash-cancel: N triggers due over 2 s; 1 s in, `pg_ctl stop -m immediate`, 3 s of outage, start;
//   then every trigger is cancelled by id as soon as the API answers (a cancel answered 503 is sent
//   again). No cancel may answer 204 for a trigger that was delivered (it holds a succeeded execution,
//   or the target received it), and no cancelled trigger may hold an execution.
import { sleep } from "../bench/common.ts"
import { analyse, type ArrivalBuckets, arrivalBuckets, type Counts, type FaultContext } from "./analysis.ts"
import { claimedBy, type Ownership, shardCounts, takenBySql, triggerRecords, type TriggerRecord } from "./inspect.ts"
import { type CancelAnswer, cancelTriggers, measureIngestRate, type Scheduled, scheduleTriggers, type TriggerSpec } from "./load.ts"
import type { LogSummary } from "./logs.ts"
import type { StopMode } from "./postgres.ts"
import { type Histogram, histogram, lastStaleness } from "./probes.ts"
import type { Arrival, ScanStats } from "./target.ts"
import type { World } from "./world.ts"

export const SCENARIOS = ["kill9", "sigterm", "sigterm-fast", "pg-restart-fast", "pg-restart-immediate", "pg-crash-cancel"] as const
export type ScenarioName = (typeof SCENARIOS)[number]

export const SLOW_TARGET_MS = 2_000
/** Hard bound of one scenario, setup and teardown included. */
export const SCENARIO_BOUND_MS = 120_000
/** After the fault, duplicates are watched for at least one crash-recovery period (15 s) and a margin. */
const OBSERVE_AFTER_FAULT_MS = 17_000
const OUTAGE_MS = 3_000
const TRICKLE_FROM_MS = 200
const TRICKLE_SPAN_MS = 6_000

export interface ScenarioDefinition {
  readonly name: ScenarioName
  readonly description: string
  readonly defaultNodes: number
  readonly targetDelayMs: number
  /** Triggers this scenario schedules for a given --n (the target expects their numbers). */
  readonly triggers: (n: number) => number
  readonly run: (world: World, n: number, deadlineMs: number) => Promise<Measured>
}

/** What a scenario measured, beyond the counts. */
export interface Measured {
  readonly counts: Counts
  readonly load: { readonly durationMs: number; readonly failures: Readonly<Record<string, number>>; readonly overranDue: boolean }
  /** kill9/sigterm: first delivery by another node of a trigger of the victim's shards, after the fault. */
  readonly takeoverMs?: number | undefined
  /** From the fault until every shard the victim held was locked by another node (pg_locks). */
  readonly shardsReownedMs?: number | undefined
  /** pg restarts: from PostgreSQL accepting connections again to the first delivery after it. */
  readonly resumeMs?: number | undefined
  /** pg restarts: from PostgreSQL back to the first arrival of the last trigger that came due during the outage. */
  readonly backlogDeliveredMs?: number | undefined
  /** From the signal to the victim's exit; undefined if it had not exited within 30 s (then SIGKILLed). */
  readonly exitMs?: number | undefined
  readonly victimExit?: string | undefined
  /** The victim's unfinished claims (database) and its requests open at the target, at the fault. */
  readonly inFlightAtFault?: { readonly claimed: number; readonly openAtTarget: number } | undefined
  readonly outageMs?: number | undefined
  readonly codes: {
    readonly before: Histogram
    readonly during: Histogram
    readonly after: Histogram
  }
  /** Last schedulerStaleMs seen in each node's /health answers. */
  readonly schedulerStaleMsAtEnd: Readonly<Record<string, number>>
  /** Probe answers other than 200 (seconds after the fault or the stop; at most 300). */
  readonly probeFailures: ReadonlyArray<{ readonly atS: number; readonly node: number; readonly endpoint: string; readonly outcome: string }>
  /** Time the target's /proc scans took (asynchronous: they do not delay the arrivals' timestamps). */
  readonly targetScans: ScanStats
  /** Arrivals per 100 ms and sender around the fault (node faults: from 2 s before to 6 s after it; pg: from the stop to 5 s after the restart). */
  readonly arrivalTimeline: ArrivalBuckets
  /** Shard lock counts after a node fault, at each change, until the victim's shards were re-owned (at most 20 s). */
  readonly ownershipTrace?: ReadonlyArray<OwnershipChange> | undefined
  /** pg-crash-cancel: the cancels sent after the restart, and the invariants they must keep. */
  readonly cancels?: CancelCheck | undefined
  /** Raw data: see perTrigger(). */
  readonly triggers: ReadonlyArray<unknown>
  readonly ownership: Readonly<Record<string, unknown>>
  readonly notes: ReadonlyArray<string>
}

export interface CancelCheck {
  /** Each cancel's final answer (status → count; "unanswered": still 503 or unreachable at the bound). */
  readonly answers: Readonly<Record<string, number>>
  /** Tries answered 503 or not connected, sent again. */
  readonly retries: number
  /** From PostgreSQL accepting connections again to the first final answer, and to the last. */
  readonly firstAnswerMs: number | undefined
  readonly lastAnswerMs: number | undefined
  /** Invariants, each 0 when kept: a 204 for a trigger holding a succeeded execution, or received by the target. */
  readonly cancelledButSucceeded: number
  readonly cancelledButArrived: number
  /** Invariant: a trigger whose final status is `cancelled` holding an execution row. */
  readonly executionsOnCancelled: number
  /** Up to 20 offenders: trigger number, cancel answer, final status, executions, succeeded ones, arrivals. */
  readonly violations: ReadonlyArray<readonly [number, string, string, number, number, number]>
}

export interface ScenarioResult extends Partial<Measured> {
  readonly scenario: ScenarioName
  readonly description: string
  readonly nodes: number
  readonly targetDelayMs: number
  readonly n: number
  readonly timeline: ReadonlyArray<{ readonly atS: number; readonly event: string }>
  readonly logs: Readonly<Record<string, LogSummary>>
  readonly error?: string
}

const sleepUntil = (atMs: number) => sleep(Math.max(0, atMs - Date.now()))

/**
 * Time left for loading before the first due instant: 2 s plus twice what `count` calls take at the
 * rate measured just before (a one-shot dated in the past when it is accepted is skipped: docs/scheduling.md).
 */
const leadFor = async (world: World, count: number) => {
  const rate = await measureIngestRate(world.nodes, world.key, world.context.target)
  world.mark(`/schedule rate before loading: ${Math.round(rate)}/s`)
  return Math.round(2_000 + (2 * count * 1000) / Math.max(50, rate))
}

const loadTriggers = async (world: World, specs: ReadonlyArray<TriggerSpec>, firstDueMs: number) => {
  world.mark("first trigger due (T)", firstDueMs)
  // calls still running at the deadline have a second to finish before T
  const load = await scheduleTriggers(world.nodes, world.key, world.context.target, specs, firstDueMs - 1_000)
  // a trigger accepted after its time is skipped (never sent): waiting for it would only run into the bound
  const skipped = await world.context.cluster.query<{ count: number }>(world.database, "SELECT count(*)::int AS count FROM triggers WHERE status = 'skipped'")
    .then((rows) => Number(rows[0]?.count ?? 0), () => 0)
  const accepted = load.scheduled.filter((s) => s.triggerId !== undefined).length - skipped
  world.mark(`loaded: ${accepted + skipped} of ${specs.length} accepted${skipped > 0 ? `, ${skipped} of them skipped (dated in the past when accepted)` : ""}`, load.endedAt)
  return {
    load,
    accepted,
    summary: { durationMs: load.endedAt - load.startedAt, failures: load.failures, overranDue: load.endedAt > firstDueMs }
  }
}

/**
 * Waits until `accepted` distinct triggers arrived (at most until lastDueMs + 30 s), then keeps
 * watching for late duplicates until 3 s after that, and at least until `observeUntilMs`.
 */
const settle = async (world: World, accepted: number, lastDueMs: number, observeUntilMs: number, deadlineMs: number) => {
  const waitUntil = Math.min(lastDueMs + 30_000, deadlineMs)
  let complete = false
  while (Date.now() < waitUntil) {
    const stats = await world.context.target.stats()
    if (stats.distinct >= accepted) {
      complete = true
      world.mark("every accepted trigger arrived at least once", stats.lastFirstArrivalMs)
      break
    }
    await sleep(100)
  }
  if (!complete) world.mark("stopped waiting for arrivals (bound reached)")
  await sleepUntil(Math.min(Math.max(Date.now() + 3_000, observeUntilMs), deadlineMs))
}

const collect = async (world: World): Promise<{
  arrivals: ReadonlyArray<Arrival>
  scans: ScanStats
  records: Map<string, TriggerRecord> | undefined
}> => {
  const { arrivals, scans } = await world.context.target.collect()
  const records = await triggerRecords(world.context.cluster, world.database).catch(() => undefined)
  return { arrivals, scans, records }
}

/** Probe answers other than 200, with their instant relative to `originMs` (at most 300). */
const probeFailures = (world: World, originMs: number) =>
  world.prober.records().filter((record) => record.outcome !== "200").slice(0, 300).map((record) => ({
    atS: Math.round(record.atMs - originMs) / 1000,
    node: record.node,
    endpoint: record.endpoint,
    outcome: record.outcome
  }))

export interface OwnershipChange {
  /** Seconds after the fault. */
  readonly atS: number
  /** Shards locked per node index ("?": unattributed). */
  readonly counts: Readonly<Record<string, number>>
  /** How many of the victim's shards no node locked. */
  readonly victimShardsUnowned: number
}

/**
 * Polls every 100 ms until every shard in `shards` is locked by a node other than `victim`; returns
 * the ms after `fromMs`, and each change of the lock counts seen meanwhile.
 */
const waitReowned = async (world: World, shards: ReadonlySet<number>, victim: number, fromMs: number, untilMs: number) => {
  const trace: Array<OwnershipChange> = []
  if (shards.size === 0) return { ms: undefined, trace }
  let last = ""
  while (Date.now() < untilMs) {
    const snapshot = await world.ownership()
    if (snapshot !== undefined) {
      const held = new Set<number>()
      const all = new Set<number>(snapshot.unattributedShards)
      for (const [index, entry] of Object.entries(snapshot.nodes)) {
        for (const shard of entry.shards) {
          all.add(shard)
          if (Number(index) !== victim) held.add(shard)
        }
      }
      const counts = shardCounts(snapshot)
      const key = JSON.stringify(counts)
      if (key !== last) {
        last = key
        trace.push({ atS: Math.round(snapshot.atMs - fromMs) / 1000, counts, victimShardsUnowned: [...shards].filter((shard) => !all.has(shard)).length })
      }
      if ([...shards].every((shard) => held.has(shard))) return { ms: snapshot.atMs - fromMs, trace }
    }
    await sleep(100)
  }
  return { ms: undefined, trace }
}

/**
 * Every sent trigger: [n, due instant, shard, final status, [[arrival instant, sender node], …]], the
 * instants in ms relative to `referenceMs` (the fault, or the stop of PostgreSQL).
 */
const perTrigger = (
  scheduled: ReadonlyArray<Scheduled>, arrivals: ReadonlyArray<Arrival>, records: ReadonlyMap<string, TriggerRecord> | undefined, referenceMs: number
) => {
  const byN = new Map<number, Array<readonly [number, number]>>()
  for (const [n, atMs, node] of arrivals) {
    const list = byN.get(n) ?? []
    list.push([atMs - referenceMs, node])
    byN.set(n, list)
  }
  return scheduled.filter((s) => s.triggerId !== undefined).map((s) => {
    const record = records?.get(s.triggerId!)
    return [s.n, s.dueMs - referenceMs, record?.shard ?? -1, record?.status ?? "?", byN.get(s.n) ?? []] as const
  })
}

const describeOwnership = (snapshot: Ownership | undefined) =>
  snapshot === undefined
    ? "no answer"
    : Object.entries(snapshot.nodes).map(([index, entry]) =>
      `node${index}: ${entry.shards.length} shards, ${entry.sessions} sessions (${entry.nodeIds.length} named timewheel-node:)`
    ).join("; ") + (snapshot.unattributedShards.length > 0 ? `; unattributed: ${snapshot.unattributedShards.length} shards` : "")

// ---------------------------------------------------------------------------------------------------------
// A node stops: SIGKILL or SIGTERM

/**
 * When node 0 gets its signal (its share of the burst is about n / nodes). With a slow target: once
 * `openFraction` of its share is open at the target (at most 90 % of MAX_IN_FLIGHT, 256, can be). With
 * a fast one, whose requests are open for about a millisecond: once `claimedFraction` of its share is
 * claimed and unfinished in the database (claimed, not yet sent or not yet recorded), polled every
 * 10 ms from `notBeforeMs` on. Never later than 4 s after T.
 */
type FaultMoment =
  | { readonly notBeforeMs: number; readonly openFraction: number }
  | { readonly notBeforeMs: number; readonly claimedFraction: number }

const MAX_IN_FLIGHT = 256

const waitForMoment = async (world: World, moment: FaultMoment, dueMs: number, n: number) => {
  const share = n / world.nodes.length
  const victimId = world.nodeIds.get(0)
  await sleepUntil(dueMs + moment.notBeforeMs)
  const until = dueMs + 4_000
  while (Date.now() < until) {
    if ("openFraction" in moment) {
      const stats = await world.context.target.stats()
      if ((stats.openByNode[0] ?? 0) >= Math.min(MAX_IN_FLIGHT * 0.9, moment.openFraction * share)) return
      await sleep(5)
    } else {
      if (victimId === undefined) return
      const rows = await world.context.cluster.query<{ count: number }>(world.database, takenBySql(victimId, "count(*)::int AS count"))
        .catch(() => [])
      if (Number(rows[0]?.count ?? 0) >= moment.claimedFraction * share) return
      await sleep(10)
    }
  }
  world.mark("the fault moment's condition was not met by T + 4 s")
}

const nodeFault = (signal: "SIGKILL" | "SIGTERM", moment: FaultMoment) =>
async (world: World, n: number, deadlineMs: number): Promise<Measured> => {
  const { target, cluster } = world.context
  const trickle = Math.max(20, Math.round(n / 5))
  const total = n + trickle
  const lead = await leadFor(world, total)
  const dueMs = Date.now() + lead
  const specs: Array<TriggerSpec> = []
  for (let i = 0; i < n; i++) specs.push({ n: i, dueMs })
  for (let i = 0; i < trickle; i++) specs.push({ n: n + i, dueMs: dueMs + TRICKLE_FROM_MS + Math.round((i * TRICKLE_SPAN_MS) / trickle) })
  const { load, accepted, summary } = await loadTriggers(world, specs, dueMs)

  await waitForMoment(world, moment, dueMs, n)
  const victim = world.nodes[0]!
  const victimId = world.nodeIds.get(victim.index)
  const [before, claimed, stats] = await Promise.all([
    world.ownership(),
    victimId === undefined ? Promise.resolve([]) : claimedBy(cluster, world.database, victimId).catch(() => []),
    target.stats()
  ])
  const victimShards = new Set(before?.nodes[victim.index]?.shards ?? [])
  const faultMs = world.mark(`${signal} to node 0 (${victimShards.size} shards, ${claimed.length} claimed, ${stats.openByNode[victim.index] ?? 0} open at the target)`, victim.signal(signal))

  const [exited, reowned] = await Promise.all([
    victim.waitExit(faultMs + 30_000),
    waitReowned(world, victimShards, victim.index, faultMs, faultMs + 20_000)
  ])
  const shardsReownedMs = reowned.ms
  if (exited) world.mark(`node 0 exited (${victim.exitStatus()})`, victim.exitedAt())
  else {
    world.mark("node 0 still running 30 s after the signal: SIGKILL")
    victim.signal("SIGKILL")
  }
  if (shardsReownedMs !== undefined) world.mark("every shard of node 0 locked by another node", faultMs + shardsReownedMs)
  const after = await world.ownership()

  await settle(world, accepted, dueMs + TRICKLE_FROM_MS + TRICKLE_SPAN_MS, faultMs + OBSERVE_AFTER_FAULT_MS, deadlineMs)
  const end = await world.ownership()
  const { arrivals, scans, records } = await collect(world)
  const fault: FaultContext = {
    atMs: faultMs,
    victim: victim.index,
    victimDead: signal === "SIGKILL",
    victimShards,
    inFlightIds: new Set(claimed)
  }
  const counts = analyse(load.scheduled, arrivals, records, fault)
  const probes = world.prober.records()
  const notes: Array<string> = []
  if (counts.skipped > 0) notes.push(`${counts.skipped} accepted triggers were skipped (accepted after their due time: loading overran); they are not counted as sent`)
  if (summary.overranDue) notes.push("loading ended after the first due instant")
  if (counts.duplicatedOutsideInFlight !== undefined && counts.duplicatedOutsideInFlight > 0) {
    notes.push(`${counts.duplicatedOutsideInFlight} duplicated triggers were not among node 0's claims at the fault`)
  }
  return {
    counts,
    load: summary,
    takeoverMs: counts.takeoverMs,
    shardsReownedMs,
    exitMs: exited ? victim.exitedAt()! - faultMs : undefined,
    victimExit: victim.exitStatus(),
    inFlightAtFault: { claimed: claimed.length, openAtTarget: stats.openByNode[victim.index] ?? 0 },
    codes: {
      before: histogram(probes, 0, faultMs),
      during: histogram(probes, faultMs, faultMs + 5_000),
      after: histogram(probes, faultMs + 5_000, Infinity)
    },
    schedulerStaleMsAtEnd: lastStaleness(probes),
    probeFailures: probeFailures(world, faultMs),
    targetScans: scans,
    arrivalTimeline: arrivalBuckets(load.scheduled, arrivals, faultMs, -2_000, 6_000),
    ownershipTrace: reowned.trace,
    triggers: perTrigger(load.scheduled, arrivals, records, faultMs),
    ownership: {
      beforeFault: before === undefined ? undefined : shardCounts(before),
      afterExit: after === undefined ? undefined : shardCounts(after),
      end: end === undefined ? undefined : shardCounts(end),
      endDetail: describeOwnership(end)
    },
    notes
  }
}

// ---------------------------------------------------------------------------------------------------------
// PostgreSQL stops and starts again

const pgRestart = (mode: StopMode, killAfterRestart: boolean) =>
async (world: World, n: number, deadlineMs: number): Promise<Measured> => {
  const { cluster, target } = world.context
  const spreadMs = killAfterRestart ? 20_000 : 15_000
  const lead = await leadFor(world, n)
  const dueMs = Date.now() + lead
  const specs: Array<TriggerSpec> = Array.from({ length: n }, (_, i) => ({ n: i, dueMs: dueMs + Math.round((i * spreadMs) / n) }))
  const { load, accepted, summary } = await loadTriggers(world, specs, dueMs)

  await sleepUntil(dueMs + 3_000)
  const before = await world.ownership()
  const stopAt = world.mark(`pg_ctl stop -m ${mode}`)
  await cluster.stop(mode)
  world.mark("PostgreSQL stopped")
  await sleepUntil(stopAt + OUTAGE_MS)
  world.mark("PostgreSQL starting")
  const readyAt = world.mark("PostgreSQL accepts connections", await cluster.start())

  // does every node lock shards again, and under its node session?
  const reacquired: Record<string, { shardsAfterMs?: number; namedSessionAfterMs?: number }> = {}
  for (const node of world.nodes) reacquired[node.index] = {}
  const watchUntil = killAfterRestart ? dueMs + 10_000 : readyAt + 10_000
  let afterRestart: Ownership | undefined
  while (Date.now() < watchUntil) {
    const snapshot = await world.ownership()
    if (snapshot !== undefined) {
      afterRestart = snapshot
      for (const [index, entry] of Object.entries(snapshot.nodes)) {
        const seen = reacquired[index]!
        if (entry.shards.length > 0) seen.shardsAfterMs ??= snapshot.atMs - readyAt
        if (entry.nodeIds.length > 0) seen.namedSessionAfterMs ??= snapshot.atMs - readyAt
      }
    }
    await sleep(250)
  }
  world.mark(`ownership ${Math.round((Date.now() - readyAt) / 1000)} s after the restart: ${afterRestart === undefined ? "no answer" : JSON.stringify(shardCounts(afterRestart))}`)

  let fault: FaultContext | undefined
  let killedAt: number | undefined
  let shardsReownedMs: number | undefined
  let claimedAtKill = 0
  let ownershipTrace: ReadonlyArray<OwnershipChange> | undefined
  if (killAfterRestart) {
    await sleepUntil(dueMs + 10_000)
    const victim = world.nodes[0]!
    const victimId = world.nodeIds.get(victim.index)
    const [now, claimed] = await Promise.all([
      world.ownership(),
      victimId === undefined ? Promise.resolve([]) : claimedBy(cluster, world.database, victimId).catch(() => [])
    ])
    // the shards node 0 runs actors for: what it locks now, else what it locked before the restart
    const locked = now?.nodes[victim.index]?.shards ?? []
    const victimShards = new Set(locked.length > 0 ? locked : before?.nodes[victim.index]?.shards ?? [])
    claimedAtKill = claimed.length
    killedAt = world.mark(`SIGKILL to node 0 (${locked.length} shards locked, ${victimShards.size} counted as its own, ${claimed.length} claimed)`, victim.signal("SIGKILL"))
    await victim.waitExit(killedAt + 5_000)
    const reowned = await waitReowned(world, victimShards, victim.index, killedAt, killedAt + 15_000)
    shardsReownedMs = reowned.ms
    ownershipTrace = reowned.trace
    if (shardsReownedMs !== undefined) world.mark("every shard of node 0 locked by another node", killedAt + shardsReownedMs)
    else world.mark("node 0's shards not all locked by another node within 15 s")
    fault = { atMs: killedAt, victim: victim.index, victimDead: true, victimShards, inFlightIds: new Set(claimed) }
  }

  // long enough after the restart for /health to show a scheduler loop that stopped (stale after 30 s)
  await settle(world, accepted, dueMs + spreadMs, Math.max(readyAt + 32_000, (killedAt ?? 0) + OBSERVE_AFTER_FAULT_MS), deadlineMs)
  const end = await world.ownership()
  const { arrivals, scans, records } = await collect(world)
  const counts = analyse(load.scheduled, arrivals, records, fault)

  const sentByN = new Map(load.scheduled.filter((s) => s.triggerId !== undefined).map((s) => [s.n, s]))
  const firstArrival = new Map<number, number>()
  for (const [arrivedN, atMs] of arrivals) {
    if (sentByN.has(arrivedN)) firstArrival.set(arrivedN, Math.min(firstArrival.get(arrivedN) ?? Infinity, atMs))
  }
  let resumeAt: number | undefined
  for (const atMs of firstArrival.values()) if (atMs >= readyAt) resumeAt = Math.min(resumeAt ?? Infinity, atMs)
  let backlogAt: number | undefined
  let backlogMissing = 0
  for (const spec of sentByN.values()) {
    if (spec.dueMs < stopAt || spec.dueMs >= readyAt) continue
    const atMs = firstArrival.get(spec.n)
    if (atMs === undefined) backlogMissing++
    else backlogAt = Math.max(backlogAt ?? -Infinity, atMs)
  }
  const probes = world.prober.records()
  const notes: Array<string> = []
  if (counts.skipped > 0) notes.push(`${counts.skipped} accepted triggers were skipped (accepted after their due time: loading overran); they are not counted as sent`)
  if (summary.overranDue) notes.push("loading ended after the first due instant")
  for (const node of world.nodes) {
    const seen = reacquired[node.index]!
    if (killAfterRestart && node.index === 0) continue
    notes.push(`node${node.index} after the restart: ${seen.shardsAfterMs === undefined ? "locked no shard" : `locked shards again after ${(seen.shardsAfterMs / 1000).toFixed(1)} s`}, ${seen.namedSessionAfterMs === undefined ? "no session named timewheel-node:" : `a session named timewheel-node: after ${(seen.namedSessionAfterMs / 1000).toFixed(1)} s`}`)
  }
  if (backlogMissing > 0) notes.push(`${backlogMissing} triggers due during the outage never arrived`)
  return {
    counts,
    load: summary,
    outageMs: readyAt - stopAt,
    resumeMs: resumeAt === undefined ? undefined : resumeAt - readyAt,
    backlogDeliveredMs: backlogAt === undefined || backlogMissing > 0 ? undefined : Math.max(0, backlogAt - readyAt),
    ...(killAfterRestart
      ? {
        takeoverMs: counts.takeoverMs,
        shardsReownedMs,
        exitMs: world.nodes[0]!.exitedAt() === undefined ? undefined : world.nodes[0]!.exitedAt()! - killedAt!,
        victimExit: world.nodes[0]!.exitStatus(),
        inFlightAtFault: { claimed: claimedAtKill, openAtTarget: 0 }
      }
      : {}),
    codes: {
      before: histogram(probes, 0, stopAt),
      during: histogram(probes, stopAt, readyAt),
      after: histogram(probes, readyAt, Infinity)
    },
    schedulerStaleMsAtEnd: lastStaleness(probes),
    probeFailures: probeFailures(world, stopAt),
    targetScans: scans,
    arrivalTimeline: arrivalBuckets(load.scheduled, arrivals, stopAt, -1_000, readyAt - stopAt + 5_000),
    ownershipTrace,
    triggers: perTrigger(load.scheduled, arrivals, records, stopAt),
    ownership: {
      beforeStop: before === undefined ? undefined : shardCounts(before),
      afterRestart: afterRestart === undefined ? undefined : shardCounts(afterRestart),
      afterRestartDetail: describeOwnership(afterRestart),
      reacquired,
      end: end === undefined ? undefined : shardCounts(end),
      endDetail: describeOwnership(end)
    },
    notes
  }
}

// ---------------------------------------------------------------------------------------------------------
// PostgreSQL crashes, then every trigger is cancelled

const CRASH_SPREAD_MS = 2_000
const CRASH_AFTER_MS = 1_000

/** The cancels against the database's final state and the target's arrivals: the invariants' counts. */
const checkCancels = (
  answers: ReadonlyArray<CancelAnswer>, accepted: ReadonlyArray<Scheduled>, arrivals: ReadonlyArray<Arrival>,
  records: ReadonlyMap<string, TriggerRecord> | undefined, readyAt: number
): CancelCheck => {
  const arrivalsOf = new Map<number, number>()
  for (const [n] of arrivals) arrivalsOf.set(n, (arrivalsOf.get(n) ?? 0) + 1)
  const answerOf = new Map(answers.map((answer) => [answer.n, answer.status]))
  const counted: Record<string, number> = {}
  for (const answer of answers) counted[answer.status] = (counted[answer.status] ?? 0) + 1
  let cancelledButSucceeded = 0
  let cancelledButArrived = 0
  let executionsOnCancelled = 0
  const violations: Array<readonly [number, string, string, number, number, number]> = []
  for (const trigger of accepted) {
    const record = records?.get(trigger.triggerId!)
    const answer = answerOf.get(trigger.n) ?? "not sent"
    const arrived = arrivalsOf.get(trigger.n) ?? 0
    const succeeded = answer === "204" && (record?.succeeded ?? 0) > 0
    const received = answer === "204" && arrived > 0
    const executed = record?.status === "cancelled" && record.executions > 0
    if (succeeded) cancelledButSucceeded++
    if (received) cancelledButArrived++
    if (executed) executionsOnCancelled++
    if ((succeeded || received || executed) && violations.length < 20) {
      violations.push([trigger.n, answer, record?.status ?? "?", record?.executions ?? 0, record?.succeeded ?? 0, arrived])
    }
  }
  const answered = answers.filter((answer) => answer.status !== "unanswered").map((answer) => answer.answeredMs - readyAt)
  return {
    answers: counted,
    retries: answers.reduce((sum, answer) => sum + answer.retries, 0),
    firstAnswerMs: answered.length === 0 ? undefined : Math.min(...answered),
    lastAnswerMs: answered.length === 0 ? undefined : Math.max(...answered),
    cancelledButSucceeded,
    cancelledButArrived,
    executionsOnCancelled,
    violations
  }
}

const pgCrashThenCancel = async (world: World, n: number, deadlineMs: number): Promise<Measured> => {
  const { cluster, target } = world.context
  const lead = await leadFor(world, n)
  const dueMs = Date.now() + lead
  const specs: Array<TriggerSpec> = Array.from({ length: n }, (_, i) => ({ n: i, dueMs: dueMs + Math.round((i * CRASH_SPREAD_MS) / n) }))
  const { load, accepted, summary } = await loadTriggers(world, specs, dueMs)

  await sleepUntil(dueMs + CRASH_AFTER_MS)
  const stopAt = world.mark("pg_ctl stop -m immediate")
  await cluster.stop("immediate")
  world.mark("PostgreSQL stopped")
  await sleepUntil(stopAt + OUTAGE_MS)
  world.mark("PostgreSQL starting")
  const readyAt = world.mark("PostgreSQL accepts connections", await cluster.start())

  // every trigger, at once: what was sent before the crash must answer 410, what was not may be cancelled
  const scheduled = load.scheduled.filter((s) => s.triggerId !== undefined)
  const answers = await cancelTriggers(world.nodes, world.key, scheduled, Math.min(readyAt + 30_000, deadlineMs - 25_000))
  const lastAnswer = Math.max(readyAt, ...answers.map((answer) => answer.answeredMs))
  world.mark(`${answers.length} cancels answered: ${JSON.stringify(Object.fromEntries([...new Set(answers.map((a) => a.status))].map((status) => [status, answers.filter((a) => a.status === status).length])))}`, lastAnswer)
  const cancelled = new Set(answers.filter((answer) => answer.status === "204").map((answer) => answer.n))
  // the rest arrives; sends that a lost precondition would repeat are watched for a crash-recovery period
  await settle(world, Math.max(0, accepted - cancelled.size), dueMs + CRASH_SPREAD_MS, readyAt + OBSERVE_AFTER_FAULT_MS, deadlineMs)
  const { arrivals, scans, records } = await collect(world)
  const left = load.scheduled.filter((s) => !cancelled.has(s.n))
  const counts = analyse(left, arrivals, records, undefined)
  const cancels = checkCancels(answers, scheduled, arrivals, records, readyAt)

  let resumeAt: number | undefined
  for (const [arrivedN, atMs] of arrivals) if (arrivedN >= 0 && atMs >= readyAt) resumeAt = Math.min(resumeAt ?? Infinity, atMs)
  const probes = world.prober.records()
  const notes: Array<string> = []
  if (records === undefined) notes.push("the database's final state could not be read: the invariants on executions were not checked")
  if (counts.skipped > 0) notes.push(`${counts.skipped} accepted triggers were skipped (accepted after their due time: loading overran)`)
  if (summary.overranDue) notes.push("loading ended after the first due instant")
  const failed = Object.entries(cancels.answers).filter(([status]) => !["204", "404", "410"].includes(status))
  if (failed.length > 0) notes.push(`cancels answered other than 204, 404 or 410: ${failed.map(([status, count]) => `${status} ×${count}`).join(", ")}`)
  notes.push(`sent counts the triggers left to deliver: ${scheduled.length} accepted, ${cancelled.size} of them cancelled (204)`)
  return {
    counts,
    load: summary,
    outageMs: readyAt - stopAt,
    resumeMs: resumeAt === undefined ? undefined : resumeAt - readyAt,
    codes: {
      before: histogram(probes, 0, stopAt),
      during: histogram(probes, stopAt, readyAt),
      after: histogram(probes, readyAt, Infinity)
    },
    schedulerStaleMsAtEnd: lastStaleness(probes),
    probeFailures: probeFailures(world, stopAt),
    targetScans: scans,
    arrivalTimeline: arrivalBuckets(load.scheduled, arrivals, stopAt, -1_000, readyAt - stopAt + 5_000),
    triggers: perTrigger(load.scheduled, arrivals, records, stopAt),
    ownership: {},
    cancels,
    notes
  }
}

export const DEFINITIONS: Record<ScenarioName, ScenarioDefinition> = {
  kill9: {
    name: "kill9",
    description: "kill -9 of node 0 while a slow target (2 s) holds its deliveries",
    defaultNodes: 3,
    targetDelayMs: SLOW_TARGET_MS,
    triggers: (n) => n + Math.max(20, Math.round(n / 5)),
    run: nodeFault("SIGKILL", { notBeforeMs: 500, openFraction: 0.5 })
  },
  sigterm: {
    name: "sigterm",
    description: "SIGTERM to node 0 while a slow target (2 s) holds its deliveries",
    defaultNodes: 3,
    targetDelayMs: SLOW_TARGET_MS,
    triggers: (n) => n + Math.max(20, Math.round(n / 5)),
    run: nodeFault("SIGTERM", { notBeforeMs: 500, openFraction: 0.5 })
  },
  "sigterm-fast": {
    name: "sigterm-fast",
    description: "SIGTERM to node 0 during a burst to a fast target (0 ms)",
    defaultNodes: 3,
    targetDelayMs: 0,
    triggers: (n) => n + Math.max(20, Math.round(n / 5)),
    run: nodeFault("SIGTERM", { notBeforeMs: -50, claimedFraction: 0.5 })
  },
  "pg-restart-fast": {
    name: "pg-restart-fast",
    description: "pg_ctl stop -m fast under load, 3 s outage, start (fast target)",
    defaultNodes: 2,
    targetDelayMs: 0,
    triggers: (n) => n,
    run: pgRestart("fast", false)
  },
  "pg-restart-immediate": {
    name: "pg-restart-immediate",
    description: "pg_ctl stop -m immediate under load, 3 s outage, start; then kill -9 of node 0",
    defaultNodes: 2,
    targetDelayMs: 0,
    triggers: (n) => n,
    run: pgRestart("immediate", true)
  },
  "pg-crash-cancel": {
    name: "pg-crash-cancel",
    description: "pg_ctl stop -m immediate while triggers come due, 3 s outage, start; then every trigger cancelled at once",
    defaultNodes: 2,
    targetDelayMs: 0,
    triggers: (n) => n,
    run: pgCrashThenCancel
  }
}
