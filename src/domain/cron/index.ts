// Public API of the cron domain: parse a `cron(<expression>[, <time zone>])` value into a schedule
// and compute its next fire instant. Pure: no I/O, no clock. See docs/cron.md ("The value", "Time
// zones and clock changes") for the rules; the modules next to this one implement them.

import { FIRST_YEAR, LAST_YEAR, nextFire, SEARCH_YEARS } from "./next.ts"
import { parseExpression } from "./parse.ts"
import type { CompiledCron } from "./parse.ts"
import { CronSyntaxError } from "./fields.ts"
import { isCronValue, isDayOfWeekElement, splitCronValue } from "./wrapper.ts"
import { getTimeZone, resolveTimeZoneName } from "./zone.ts"

export { isCronValue } from "./wrapper.ts"
export { ALIASES } from "./parse.ts"
export { FIRST_YEAR, LAST_YEAR, SEARCH_YEARS }

export interface CronSchedule {
  /** Normalised expression: the 5 or 6 fields separated by single spaces, aliases expanded, `H` kept. */
  readonly expression: string
  /** IANA zone name; "UTC" when the value had none. */
  readonly timeZone: string
  /** Matcher tables (internal). */
  readonly compiled: CompiledCron
}

export type CronParse =
  | { readonly _tag: "Ok"; readonly schedule: CronSchedule }
  | { readonly _tag: "Err"; readonly message: string }

export interface CronParseOptions {
  /** Makes `H` stable: the generator id. Without it a fixed seed is used. */
  readonly hashSeed?: string
}

const DEFAULT_HASH_SEED = "timewheel"
const PREFIX = "Invalid cron expression: "

const err = (details: string): CronParse => ({ _tag: "Err", message: PREFIX + details })

/**
 * Parses a full scheduledAt value `cron(<expr>[, <zone>])`. On failure `message` is the whole 400
 * message, "Invalid cron expression: <details>".
 */
export const parseCronValue = (value: string, options?: CronParseOptions): CronParse => {
  if (!isCronValue(value)) return err(`expected cron(<expression>[, <time zone>]), got "${value}"`)
  const parts = splitCronValue(value)
  const zoneText = parts.timeZone
  if (zoneText === "") return err("nothing follows the last comma (expected a time zone or a list element)")
  if (zoneText !== null && /\s/.test(zoneText)) {
    return err(`"${zoneText}" after the last comma is not a time zone (lists take no spaces)`)
  }
  let parsed
  try {
    parsed = parseExpression(parts.expression, options?.hashSeed ?? DEFAULT_HASH_SEED)
  } catch (error) {
    if (error instanceof CronSyntaxError) return err(error.message)
    throw error
  }
  let timeZone = "UTC"
  if (zoneText !== null) {
    const resolved = resolveTimeZoneName(zoneText)
    if (resolved === null) {
      const hint = isDayOfWeekElement(zoneText) ? " (lists take no spaces after their commas)" : ""
      return err(`unknown time zone "${zoneText}"${hint}`)
    }
    timeZone = resolved
  }
  return { _tag: "Ok", schedule: { expression: parsed.expression, timeZone, compiled: parsed.compiled } }
}

/**
 * The first fire instant (epoch ms, whole seconds) strictly after `afterMs`, or null when there is
 * none within SEARCH_YEARS (50) years, or outside the supported local years FIRST_YEAR..LAST_YEAR.
 */
export const nextFireAfter = (schedule: CronSchedule, afterMs: number): number | null =>
  nextFire(schedule.compiled, getTimeZone(schedule.timeZone), afterMs)

/** Up to `count` fire instants in order, the first strictly after `afterMs` (fewer when the schedule ends). */
export const nextFires = (schedule: CronSchedule, afterMs: number, count: number): Array<number> => {
  const fires: Array<number> = []
  let after = afterMs
  while (fires.length < count) {
    const next = nextFireAfter(schedule, after)
    if (next === null) break
    fires.push(next)
    after = next
  }
  return fires
}

/** The two strings to persist; `parseCronValue(formatCronValue(...), { hashSeed })` rebuilds the schedule. */
export const expressionAndZone = (schedule: CronSchedule): { readonly expression: string; readonly timeZone: string } => ({
  expression: schedule.expression,
  timeZone: schedule.timeZone
})

/** `cron(<expression>, <zone>)` for a stored expression and zone. */
export const formatCronValue = (parts: { readonly expression: string; readonly timeZone: string }): string =>
  `cron(${parts.expression}, ${parts.timeZone})`
