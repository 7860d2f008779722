// Throughput windows of a tag policy (docs/tag-policies.md "Throughput windows and rates"): an object
// mapping a window label (`<whole number><s|m|h|d>`, e.g. `{"1s": 10, "1h": 500}`) to a rate. This
// module knows the label grammar, a window's length and its effective length at a rate; tagPolicy.ts
// validates with it and gate.ts turns it into admission limits, so both read a window the same way.

/** A policy's throughput as stored and shown: window label → rate (JSON number). */
export type Throughput = Readonly<Record<string, number>>

/** docs/tag-policies.md "Fields": at most 8 windows per policy. */
export const MAX_THROUGHPUT_WINDOWS = 8
/** docs/tag-policies.md "Throughput windows and rates": the effective window may not exceed 30 days. */
export const MAX_EFFECTIVE_WINDOW_MS = 30 * 86_400_000

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
type Unit = keyof typeof UNIT_MS

/**
 * A positive whole number written without leading zeros, then one unit letter. `0s` (an empty
 * window) and `01s` (a second spelling of `1s`) are malformed, as are `1w`, `1.5s`, `s` and ``.
 */
const WINDOW_LABEL = /^([1-9][0-9]*)([smhd])$/

/** Length in ms of a window label such as `1s`, `15m`, `2h`, `7d`; undefined when malformed. */
export const windowLabelMs = (label: string): number | undefined => {
  const match = WINDOW_LABEL.exec(label)
  if (match === null) return undefined
  return Number(match[1]) * UNIT_MS[match[2] as Unit]
}

/** A rate as the API accepts it: a finite number ≥ 0 (JSON's `1e400` parses to Infinity and is refused). */
export const isValidRate = (rate: number): boolean => Number.isFinite(rate) && rate >= 0

/** 0 < rate < 1: the window is stretched by 1/rate and admits one start (`{"1m": 0.5}` = one per 2 min). */
export const isStretchingRate = (rate: number): boolean => rate > 0 && rate < 1

/**
 * The length a rate really spans, in whole ms: the window as written for a rate ≥ 1 (and for 0, a
 * pause, which stretches nothing); windowMs / rate, rounded to the millisecond, below 1. Rounding
 * keeps `{"10d": 0.3333333333333333}` at exactly 30 days instead of 30 days and a fraction of a ms.
 */
export const effectiveWindowMs = (windowMs: number, rate: number): number =>
  isStretchingRate(rate) ? Math.round(windowMs / rate) : windowMs
