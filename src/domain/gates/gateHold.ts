// Backpressure from the target (docs/tag-policies.md, the section of that name): a `429` or `503` holds
// every gated tag of the refused trigger until the time `Retry-After` names (seconds or an HTTP
// date), at most an hour after the response; without it, for a backoff of 1 s that doubles on each
// refusal while held or within a minute after the last hold, up to 60 s, and that a 2xx of the tag
// clears. A refusal of a request that left before the current hold began (it was already on its way
// when the first refusal came) is the same refusal: it changes nothing. Pure: times in ms.

/** The statuses that hold a tag. */
export const isRefusal = (httpStatus: number | null): boolean => httpStatus === 429 || httpStatus === 503

/** The most a hold (and the delay of a refused trigger's retry) lasts from the response. */
export const MAX_HOLD_MS = 3_600_000
export const FIRST_BACKOFF_MS = 1_000
export const MAX_BACKOFF_MS = 60_000
/** A refusal this long after the last hold ended starts the backoff again from FIRST_BACKOFF_MS. */
export const BACKOFF_MEMORY_MS = 60_000

const DELTA_SECONDS = /^\s*(\d+)\s*$/

/**
 * The time a `Retry-After` value names, capped at MAX_HOLD_MS after `nowMs`: a number of seconds,
 * or an HTTP date (IMF-fixdate, or the obsolete forms Date.parse reads). Null when absent or
 * unreadable, or when it names no time after now (`0`, a date in the past).
 */
export const retryAfterUntilMs = (value: string | undefined, nowMs: number): number | null => {
  if (value === undefined) return null
  const seconds = DELTA_SECONDS.exec(value)
  const atMs = seconds !== null ? nowMs + Number(seconds[1]) * 1000 : Date.parse(value)
  if (!Number.isFinite(atMs) || atMs <= nowMs) return null
  return Math.min(atMs, nowMs + MAX_HOLD_MS)
}

/** The Retry-After of an attempt's response when it is a refusal (429, 503), as retryAfterUntilMs reads it. */
export const refusalRetryAfterMs = (
  response: { readonly httpStatus: number | null; readonly responseHeaders: Readonly<Record<string, string>> | null },
  nowMs: number
): number | null => (isRefusal(response.httpStatus) ? retryAfterUntilMs(response.responseHeaders?.["retry-after"], nowMs) : null)

/** A tag's hold as stored. */
export interface HoldState {
  /** When the current (or last) hold began. */
  readonly heldSinceMs: number
  readonly heldUntilMs: number
  /** The last backoff without Retry-After (0: none, or cleared by a 2xx). */
  readonly backoffMs: number
}

/** One refusal: the Retry-After time it named (null: none), and when its request left. */
export interface Refusal {
  readonly retryAfterUntilMs: number | null
  readonly leftAtMs: number
}

/** The hold after a refusal at `nowMs`, or null when it changes nothing. */
export const holdAfterRefusal = (previous: HoldState | null, refusal: Refusal, nowMs: number): HoldState | null => {
  const held = previous !== null && previous.heldUntilMs > nowMs
  const heldSinceMs = held ? previous.heldSinceMs : nowMs
  const keepUntil = held ? previous.heldUntilMs : -Infinity
  if (refusal.retryAfterUntilMs !== null) {
    const untilMs = Math.min(refusal.retryAfterUntilMs, nowMs + MAX_HOLD_MS)
    if (untilMs <= keepUntil) return null
    return { heldSinceMs, heldUntilMs: untilMs, backoffMs: previous?.backoffMs ?? 0 }
  }
  if (held && refusal.leftAtMs < previous.heldSinceMs) return null
  const recent = previous !== null && previous.backoffMs > 0 && nowMs < previous.heldUntilMs + BACKOFF_MEMORY_MS
  const backoffMs = recent ? Math.min(2 * previous.backoffMs, MAX_BACKOFF_MS) : FIRST_BACKOFF_MS
  return { heldSinceMs, heldUntilMs: Math.max(keepUntil, nowMs + backoffMs), backoffMs }
}

/** After a 2xx of the tag: the backoff starts again from FIRST_BACKOFF_MS (null: nothing to clear). */
export const holdAfterSuccess = (previous: HoldState | null): HoldState | null =>
  previous === null || previous.backoffMs === 0 ? null : { ...previous, backoffMs: 0 }
