// The overview's per-minute rollup of recorded attempts (migration 6 in store/migrations: delivery_minutes),
// computed where the attempts are recorded instead of by a statement trigger that joined every
// execution with its trigger. Per project and minute of the attempt's start: attempts by outcome,
// and histograms of first attempts' lateness (start minus scheduled time, domain/lateness.ts
// buckets); the scheduler's own in one, that of triggers admitted by a tag gate (time they waited
// for its limits) in another (migration 11). Here what one attempt adds; the store sums the attempts
// it records (store/executions.ts). Pure.
import { latenessBucket } from "./lateness.ts"

export interface RecordedAttempt {
  readonly projectId: string
  readonly startedAtMs: number
  readonly succeeded: boolean
  readonly isDeadLetter: boolean
  /** Lateness counts only for a first attempt the scheduler made (not a replay). */
  readonly attempt: number
  readonly triggeredBy: string | null
  /** The trigger's scheduled time; null for a generator's attempt or when unknown. */
  readonly scheduledAtMs: number | null
  /** Admitted by a tag gate: its lateness is counted apart. */
  readonly gated: boolean
}

/** One minute's attempts: what the overview reads per minute (delivery_minutes). */
export interface MinuteCounts {
  readonly minuteMs: number
  readonly succeeded: number
  /** Failed attempts that will be retried. */
  readonly failed: number
  readonly deadLetters: number
  /**
   * First attempts of triggers without a gated tag (the scheduler's own lateness): counts per
   * lateness bucket, index 0 first, up to the highest non-empty bucket.
   */
  readonly lateness: ReadonlyArray<number>
  /** The same for attempts admitted by a tag gate (also the time held by their tags' limits). */
  readonly gatedLateness: ReadonlyArray<number>
}

/** What one recorded attempt adds to its project's minute (the store sums them: store/executions.ts). */
export interface AttemptRollup {
  readonly projectId: string
  readonly minuteMs: number
  readonly succeeded: boolean
  /** Failed, and to be retried. */
  readonly failed: boolean
  readonly deadLetter: boolean
  /** The lateness bucket of a first attempt the scheduler made; null for any other attempt. */
  readonly latenessBucket: number | null
  /** Its lateness goes to the histogram of gated attempts. */
  readonly gated: boolean
}

export const attemptRollup = (a: RecordedAttempt): AttemptRollup => ({
  projectId: a.projectId,
  minuteMs: Math.floor(a.startedAtMs / 60_000) * 60_000,
  succeeded: a.succeeded,
  failed: !a.succeeded && !a.isDeadLetter,
  deadLetter: a.isDeadLetter,
  latenessBucket: a.attempt === 1 && a.triggeredBy === null && a.scheduledAtMs !== null
    ? latenessBucket(a.startedAtMs - a.scheduledAtMs)
    : null,
  gated: a.gated
})
