// The overview's per-minute rollup of recorded attempts (schema.ts migration 6: delivery_minutes),
// computed where the attempts are recorded instead of by a statement trigger that joined every
// execution with its trigger. Per project and minute of the attempt's start: attempts by outcome,
// and histograms of first attempts' lateness (start minus scheduled time): bucket i holds lateness
// in [2^(i/4) - 1, 2^((i+1)/4) - 1) ms, i up to 127; the scheduler's own in one, that of triggers
// admitted by a tag gate (time they waited for its limits) in another (migration 11). Pure.

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

export interface MinuteRollup extends MinuteCounts {
  readonly projectId: string
}

const MAX_BUCKET = 127

/** The histogram bucket of a lateness in milliseconds (negative counts as 0). */
export const latenessBucket = (latenessMs: number): number =>
  Math.min(MAX_BUCKET, Math.floor((4 * Math.log(1 + Math.max(0, latenessMs))) / Math.LN2))

export const rollupOf = (attempts: ReadonlyArray<RecordedAttempt>): Array<MinuteRollup> => {
  const groups = new Map<string, {
    projectId: string; minuteMs: number; succeeded: number; failed: number; deadLetters: number
    lateness: Array<number>; gatedLateness: Array<number>
  }>()
  for (const a of attempts) {
    const minuteMs = Math.floor(a.startedAtMs / 60_000) * 60_000
    const key = `${a.projectId}/${minuteMs}`
    let group = groups.get(key)
    if (group === undefined) {
      group = { projectId: a.projectId, minuteMs, succeeded: 0, failed: 0, deadLetters: 0, lateness: [], gatedLateness: [] }
      groups.set(key, group)
    }
    if (a.succeeded) group.succeeded++
    if (a.isDeadLetter) group.deadLetters++
    else if (!a.succeeded) group.failed++
    if (a.attempt === 1 && a.triggeredBy === null && a.scheduledAtMs !== null) {
      const bucket = latenessBucket(a.startedAtMs - a.scheduledAtMs)
      const histogram = a.gated ? group.gatedLateness : group.lateness
      while (histogram.length <= bucket) histogram.push(0)
      histogram[bucket]!++
    }
  }
  return [...groups.values()]
}
