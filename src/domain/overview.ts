// The dashboard's overview as columns (docs/dashboard.md): the rollup's minutes gathered into
// buckets wide enough to draw (1 min over 1 h, 5 min over 6 h, 15 min over 24 h: 60 to 96 bars,
// never 1-pixel slivers), every series on the same bucket times across the whole chosen range
// (so the charts' axes are the range, whatever the data), the scheduler's own lateness apart from
// that of triggers held by their tags' limits, and the tag policies' samples as the peak of each
// bucket. Pure: the rows and the moment are parameters; times in the answer are in seconds.
import type { MinuteCounts } from "./deliveryRollup.ts"
import { addHistograms, percentile } from "./lateness.ts"

export const OVERVIEW_HOURS = [1, 6, 24] as const
export type OverviewHours = (typeof OVERVIEW_HOURS)[number]

/** Bucket width in minutes per range. */
export const BUCKET_MINUTES: Readonly<Record<OverviewHours, number>> = { 1: 1, 6: 5, 24: 15 }

const MINUTE_MS = 60_000
const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000

export type MinuteStats = MinuteCounts

export interface TagPolicySample {
  readonly tag: string
  readonly minuteMs: number
  readonly queued: number
  readonly inFlight: number
}

export interface TagPolicyNow {
  readonly id: string
  readonly tag: string
  readonly queued: number
  readonly inFlight: number
}

/** The buckets of a range ending with the current minute: starts aligned on the bucket width. */
export const bucketsOf = (hours: OverviewHours, nowMs: number) => {
  const bucketMs = BUCKET_MINUTES[hours] * MINUTE_MS
  const endMinute = Math.floor(nowMs / MINUTE_MS) * MINUTE_MS
  const fromMs = endMinute - hours * HOUR_MS + MINUTE_MS
  const first = Math.floor(fromMs / bucketMs) * bucketMs
  const last = Math.floor(endMinute / bucketMs) * bucketMs
  const starts = Array.from({ length: (last - first) / bucketMs + 1 }, (_, i) => first + i * bucketMs)
  return { bucketMs, fromMs, endMinute, starts }
}

/** Dead letters per hour over the last 24 h (the last hour ends with the current minute). */
const deadLettersByHour = (rows: ReadonlyArray<MinuteStats>, endMinute: number) => {
  const endMs = endMinute + MINUTE_MS
  const t = Array.from({ length: 24 }, (_, i) => (endMs - (24 - i) * HOUR_MS) / 1000)
  const count = t.map(() => 0)
  for (const row of rows) {
    const slot = 23 - Math.floor((endMs - 1 - row.minuteMs) / HOUR_MS)
    if (slot >= 0 && slot < 24) count[slot]! += row.deadLetters
  }
  return { t, count }
}

const sum = (rows: ReadonlyArray<MinuteStats>, f: (row: MinuteStats) => number) => rows.reduce((total, row) => total + f(row), 0)
const merged = (rows: ReadonlyArray<MinuteStats>, f: (row: MinuteStats) => ReadonlyArray<number>) =>
  rows.reduce<Array<number>>((histogram, row) => addHistograms(histogram, f(row)), [])

/**
 * The overview: `rows` are the project's minutes from at least 24 h back (for the dead letters of
 * 24 h), `samples` its tag policy samples of the range, `policies` its policies with their counts now.
 */
export const overviewOf = (input: {
  readonly hours: OverviewHours
  readonly nowMs: number
  readonly rows: ReadonlyArray<MinuteStats>
  readonly samples: ReadonlyArray<TagPolicySample>
  readonly policies: ReadonlyArray<TagPolicyNow>
}) => {
  const { hours, rows } = input
  const { bucketMs, fromMs, endMinute, starts } = bucketsOf(hours, input.nowMs)
  const inRange = rows.filter((row) => row.minuteMs >= fromMs)
  const byBucket = new Map<number, Array<MinuteStats>>()
  for (const row of inRange) {
    const start = Math.floor(row.minuteMs / bucketMs) * bucketMs
    byBucket.set(start, [...(byBucket.get(start) ?? []), row])
  }
  const column = <A>(f: (bucket: ReadonlyArray<MinuteStats>) => A) => starts.map((start) => f(byBucket.get(start) ?? []))
  const quantile = (f: (row: MinuteStats) => ReadonlyArray<number>, p: number) => column((bucket) => percentile(merged(bucket, f), p))
  const t = starts.map((start) => start / 1000)
  const peak = (samples: ReadonlyArray<TagPolicySample>, f: (sample: TagPolicySample) => number) => {
    const byStart = new Map<number, number>()
    for (const sample of samples) {
      const start = Math.floor(sample.minuteMs / bucketMs) * bucketMs
      byStart.set(start, Math.max(byStart.get(start) ?? 0, f(sample)))
    }
    return starts.map((start) => byStart.get(start) ?? null)
  }
  return {
    hours,
    bucketSeconds: bucketMs / 1000,
    /** The charts' x range, seconds: the first bucket's start to the last one's end. */
    range: { from: starts[0]! / 1000, to: (starts.at(-1)! + bucketMs) / 1000 },
    deliveries: {
      t,
      succeeded: column((bucket) => sum(bucket, (row) => row.succeeded)),
      failed: column((bucket) => sum(bucket, (row) => row.failed)),
      deadLetters: column((bucket) => sum(bucket, (row) => row.deadLetters))
    },
    lateness: {
      t,
      p50: quantile((row) => row.lateness, 0.5),
      p99: quantile((row) => row.lateness, 0.99),
      gatedP50: quantile((row) => row.gatedLateness, 0.5),
      gatedP99: quantile((row) => row.gatedLateness, 0.99)
    },
    totals: {
      succeeded: sum(inRange, (row) => row.succeeded),
      failed: sum(inRange, (row) => row.failed),
      deadLetters: sum(inRange, (row) => row.deadLetters),
      latenessP50: percentile(merged(inRange, (row) => row.lateness), 0.5),
      latenessP99: percentile(merged(inRange, (row) => row.lateness), 0.99),
      gatedLatenessP50: percentile(merged(inRange, (row) => row.gatedLateness), 0.5),
      gatedLatenessP99: percentile(merged(inRange, (row) => row.gatedLateness), 0.99)
    },
    deadLetters24h: sum(rows.filter((row) => row.minuteMs > endMinute - DAY_MS), (row) => row.deadLetters),
    deadLettersByHour: deadLettersByHour(rows, endMinute),
    tagPolicies: input.policies.map((policy) => {
      const own = input.samples.filter((sample) => sample.tag === policy.tag && sample.minuteMs >= starts[0]!)
      return {
        id: policy.id,
        tag: policy.tag,
        queued: policy.queued,
        inFlight: policy.inFlight,
        sampled: own.length > 0,
        t,
        queuedSeries: peak(own, (sample) => sample.queued),
        inFlightSeries: peak(own, (sample) => sample.inFlight)
      }
    })
  }
}

export type Overview = ReturnType<typeof overviewOf>
