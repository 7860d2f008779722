// From what the target recorded and what the database holds to the figures of a scenario: sent
// (accepted by /schedule), delivered (arrived at least once), lost (never arrived), duplicated
// (arrived more than once; split by whether one node sent it twice and whether it was in flight at
// the fault), early arrivals, lateness, takeover, and the execution log's agreement with the arrivals.
import { percentile, sortedCopy } from "../bench/common.ts"
import type { TriggerRecord } from "./inspect.ts"
import type { Scheduled } from "./load.ts"
import type { Arrival } from "./target.ts"

export interface FaultContext {
  readonly atMs: number
  readonly victim: number | undefined
  /** The victim is dead from `atMs` on (kill -9): arrivals of an unknown sender after it are another node's. */
  readonly victimDead: boolean
  readonly victimShards: ReadonlySet<number>
  /** Trigger ids the victim had claimed and not finished at the fault. */
  readonly inFlightIds: ReadonlySet<string>
}

export interface ExecutionLogCheck {
  /** Triggers that arrived at least once and have no execution row. */
  readonly deliveredWithoutExecution: number
  /** Triggers with more execution rows than arrivals, or fewer. */
  readonly moreRowsThanArrivals: number
  readonly fewerRowsThanArrivals: number
  /** Triggers whose attempt numbers are not 1, 2, …, k (e.g. an attempt 2 without attempt 1). */
  readonly attemptGaps: number
  /** Final trigger status → count. */
  readonly statuses: Readonly<Record<string, number>>
}

export interface Counts {
  /** Accepted by /schedule and not skipped (a one-shot accepted after its time is skipped: docs/scheduling.md). */
  readonly sent: number
  /** Accepted after their due time (the load overran): skipped by the service, not counted as sent. */
  readonly skipped: number
  readonly delivered: number
  readonly lost: number
  readonly duplicated: number
  /** Arrivals beyond the first, summed over triggers. */
  readonly extraArrivals: number
  /** Duplicated triggers that one node sent at least twice. */
  readonly duplicatedBySameNode: number
  /** Duplicated triggers that were not in the victim's claimed set at the fault (undefined without a fault). */
  readonly duplicatedOutsideInFlight: number | undefined
  /**
   * Triggers whose first arrival was recorded in a millisecond before their due one (Date.now() truncates
   * and due instants are whole milliseconds, so these arrived before their time); the earliest (ms).
   */
  readonly early: number
  readonly earliestMs: number | undefined
  readonly latenessP50Ms: number | undefined
  readonly latenessP99Ms: number | undefined
  readonly latenessMaxMs: number | undefined
  /** Arrivals by sender node index ("-1": not attributed). */
  readonly arrivalsByNode: Readonly<Record<string, number>>
  /** Arrivals sent by the victim at or after the fault. */
  readonly victimArrivalsAfterFault: number | undefined
  /** From the fault to the first arrival, sent by another node, of a trigger in a shard the victim held. */
  readonly takeoverMs: number | undefined
  /** The arrival that set takeoverMs: trigger number, sender, shard, due instant relative to the fault. */
  readonly takeoverArrival: { readonly n: number; readonly node: number; readonly shard: number; readonly dueAfterFaultMs: number } | undefined
  readonly lostIds: ReadonlyArray<number>
  readonly duplicatedIds: ReadonlyArray<number>
  readonly executionLog: ExecutionLogCheck | undefined
}

const round = (value: number | undefined) => (value === undefined || Number.isNaN(value) ? undefined : Math.round(value * 10) / 10)

export const analyse = (
  scheduled: ReadonlyArray<Scheduled>,
  arrivals: ReadonlyArray<Arrival>,
  records: ReadonlyMap<string, TriggerRecord> | undefined,
  fault: FaultContext | undefined
): Counts => {
  const accepted = scheduled.filter((s) => s.triggerId !== undefined)
  const sent = accepted.filter((s) => records?.get(s.triggerId!)?.status !== "skipped")
  const byN = new Map(sent.map((s) => [s.n, s]))
  const arrivalsOf = new Map<number, Array<Arrival>>()
  const arrivalsByNode: Record<string, number> = {}
  for (const arrival of arrivals) {
    const [n, , node] = arrival
    if (!byN.has(n)) continue
    arrivalsByNode[node] = (arrivalsByNode[node] ?? 0) + 1
    const list = arrivalsOf.get(n)
    if (list === undefined) arrivalsOf.set(n, [arrival])
    else list.push(arrival)
  }
  let extraArrivals = 0
  let duplicatedBySameNode = 0
  let duplicatedOutsideInFlight = 0
  let early = 0
  let earliestMs: number | undefined
  const lateness: Array<number> = []
  const lostIds: Array<number> = []
  const duplicatedIds: Array<number> = []
  let takeoverAt: number | undefined
  let takeoverArrival: Counts["takeoverArrival"]
  let victimArrivalsAfterFault = 0
  for (const spec of sent) {
    const list = arrivalsOf.get(spec.n)
    if (list === undefined) {
      lostIds.push(spec.n)
      continue
    }
    list.sort((a, b) => a[1] - b[1])
    const first = list[0]![1] - spec.dueMs
    lateness.push(first)
    if (first <= -1) early++
    earliestMs = earliestMs === undefined ? first : Math.min(earliestMs, first)
    if (list.length > 1) {
      duplicatedIds.push(spec.n)
      extraArrivals += list.length - 1
      const senders = list.map((a) => a[2]).filter((node) => node >= 0)
      if (new Set(senders).size < senders.length) duplicatedBySameNode++
      if (fault !== undefined && !fault.inFlightIds.has(spec.triggerId!)) duplicatedOutsideInFlight++
    }
    if (fault !== undefined) {
      const shard = records?.get(spec.triggerId!)?.shard
      for (const [, atMs, node] of list) {
        if (atMs < fault.atMs) continue
        if (node === fault.victim) {
          victimArrivalsAfterFault++
          continue
        }
        if (node === -1 && !fault.victimDead) continue
        if (shard !== undefined && fault.victimShards.has(shard) && atMs < (takeoverAt ?? Infinity)) {
          takeoverAt = atMs
          takeoverArrival = { n: spec.n, node, shard, dueAfterFaultMs: spec.dueMs - fault.atMs }
        }
      }
    }
  }
  const sorted = sortedCopy(lateness)
  let executionLog: ExecutionLogCheck | undefined
  if (records !== undefined) {
    let deliveredWithoutExecution = 0
    let moreRowsThanArrivals = 0
    let fewerRowsThanArrivals = 0
    let attemptGaps = 0
    const statuses: Record<string, number> = {}
    for (const spec of sent) {
      const record = records.get(spec.triggerId!)
      const arrived = arrivalsOf.get(spec.n)?.length ?? 0
      if (record === undefined) {
        statuses.missing = (statuses.missing ?? 0) + 1
        continue
      }
      statuses[record.status] = (statuses[record.status] ?? 0) + 1
      if (arrived > 0 && record.executions === 0) deliveredWithoutExecution++
      if (record.executions > arrived) moreRowsThanArrivals++
      if (record.executions < arrived) fewerRowsThanArrivals++
      if (record.attempts.some((attempt, i) => attempt !== i + 1)) attemptGaps++
    }
    executionLog = { deliveredWithoutExecution, moreRowsThanArrivals, fewerRowsThanArrivals, attemptGaps, statuses }
  }
  return {
    sent: sent.length,
    skipped: accepted.length - sent.length,
    delivered: sent.length - lostIds.length,
    lost: lostIds.length,
    duplicated: duplicatedIds.length,
    extraArrivals,
    duplicatedBySameNode,
    duplicatedOutsideInFlight: fault === undefined ? undefined : duplicatedOutsideInFlight,
    early,
    earliestMs: round(earliestMs),
    latenessP50Ms: round(percentile(sorted, 50)),
    latenessP99Ms: round(percentile(sorted, 99)),
    latenessMaxMs: round(sorted.length === 0 ? undefined : sorted[sorted.length - 1]),
    arrivalsByNode,
    victimArrivalsAfterFault: fault?.victim === undefined ? undefined : victimArrivalsAfterFault,
    takeoverMs: fault === undefined || takeoverAt === undefined ? undefined : takeoverAt - fault.atMs,
    takeoverArrival,
    lostIds: lostIds.slice(0, 50),
    duplicatedIds: duplicatedIds.slice(0, 50),
    executionLog
  }
}

export interface ArrivalBuckets {
  /** Start of the first bucket, in ms relative to the reference instant (the fault). */
  readonly fromMs: number
  readonly bucketMs: number
  /** Arrivals (every one, duplicates included) per bucket, by sender node index ("-1": not attributed). */
  readonly byNode: Readonly<Record<string, ReadonlyArray<number>>>
}

/** Arrivals of sent triggers per `bucketMs` and sender, from `referenceMs + fromMs` to `referenceMs + toMs`. */
export const arrivalBuckets = (
  scheduled: ReadonlyArray<Scheduled>, arrivals: ReadonlyArray<Arrival>, referenceMs: number, fromMs: number, toMs: number, bucketMs = 100
): ArrivalBuckets => {
  const sent = new Set(scheduled.filter((s) => s.triggerId !== undefined).map((s) => s.n))
  const count = Math.ceil((toMs - fromMs) / bucketMs)
  const byNode: Record<string, Array<number>> = {}
  for (const [n, atMs, node] of arrivals) {
    if (!sent.has(n)) continue
    const bucket = Math.floor((atMs - referenceMs - fromMs) / bucketMs)
    if (bucket < 0 || bucket >= count) continue
    const row = (byNode[node] ??= new Array<number>(count).fill(0))
    row[bucket]!++
  }
  return { fromMs, bucketMs, byNode }
}
