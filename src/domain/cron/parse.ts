// Cron expression text (the part inside cron(...) before the time zone) -> compiled matcher tables.
// Expands the lowercase aliases, checks the field count (5 or 6, never filled in), parses each field,
// rejects day-of-month values no listed month has, and builds "next allowed value" lookup tables.

import { maxDaysInMonth } from "./calendar.ts"
import { CronSyntaxError, FIELD_SPECS, parseField } from "./fields.ts"
import type { FieldKey, FieldValues } from "./fields.ts"

/** Lookup tables used by the matcher. `nextX[v]` is the smallest allowed value >= v, or -1. */
export interface CompiledCron {
  readonly nextSecond: Int8Array
  readonly nextMinute: Int8Array
  readonly nextHour: Int8Array
  readonly nextMonth: Int8Array
  /** Bits 1..31: allowed days of month. */
  readonly domMask: number
  /** Day of month `L` (or `nL`). */
  readonly domLast: boolean
  readonly domRestricted: boolean
  /** Bits 0..6: allowed weekdays (7 folded onto 0). */
  readonly dowMask: number
  /** Bits 0..6: weekdays written `nL` (last such weekday of the month). */
  readonly dowLastMask: number
  /** `n#k`: weekday n (0-6), or -1 when absent. */
  readonly dowNthWeekday: number
  readonly dowNthOccurrence: number
  readonly dowRestricted: boolean
  /** The hour field allows all 24 hours: runs follow elapsed time across clock changes. */
  readonly everyHour: boolean
}

export const ALIASES: Readonly<Record<string, string>> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@hourly": "0 * * * *",
  "@weekdays": "0 0 * * 1-5",
  "@weekends": "0 0 * * 0,6",
  "@minutely": "* * * * *",
  "@secondly": "* * * * * *"
}

const UNSUPPORTED_ALIASES = new Set(["@reboot", "@midnight"])

const fail = (details: string): never => {
  throw new CronSyntaxError(details)
}

/** Alias -> its fields; anything else is split on spaces. */
const splitFields = (text: string): ReadonlyArray<string> => {
  if (text.startsWith("@")) {
    const expanded = ALIASES[text]
    if (expanded !== undefined) return expanded.split(" ")
    if (UNSUPPORTED_ALIASES.has(text)) return fail(`${text} is not supported`)
    if (/\s/.test(text)) return fail(`an alias must be used alone, got "${text}"`)
    return fail(`unknown alias "${text}" (aliases are lowercase: ${Object.keys(ALIASES).join(", ")})`)
  }
  const fields = text.split(/\s+/)
  if (fields.length < 5) {
    return fail(`expected 5 fields (minute hour day-of-month month day-of-week) or 6 with a leading second, got ${fields.length}`)
  }
  if (fields.length === 6 && /^\d{4}$/.test(fields[5])) {
    return fail(`a year field is not supported (got 6 fields ending in ${fields[5]})`)
  }
  if (fields.length > 6) {
    return fail(`expected 5 or 6 fields, got ${fields.length} (a year field is not supported)`)
  }
  return fields
}

/** FNV-1a over the text, finished with a murmur3 mix: a stable non-negative 32-bit number. */
export const stableHash = (text: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

const MONTH_NAMES = ["", "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]

const longestOf = (months: ReadonlyArray<number>): number => Math.max(...months.map(maxDaysInMonth))

/**
 * A day of month that none of the listed months has is rejected (docs/cron.md "The value"). With `H` in
 * either field the check assumes the least favourable pick, so acceptance never depends on the seed.
 */
const checkDaysExist = (dom: FieldValues, month: FieldValues): void => {
  if (dom.unrestricted) return
  let longest = longestOf(month.values)
  let where = month.values.length === 1 ? `in ${MONTH_NAMES[month.values[0]]}` : `in any of ${month.values.map((m) => MONTH_NAMES[m]).join(", ")}`
  if (month.hashedChoices !== null) {
    const worst = month.hashedChoices.reduce((a, b) => (longestOf(b) < longestOf(a) ? b : a))
    longest = longestOf(worst)
    where = `in ${worst.map((m) => MONTH_NAMES[m]).join(", ")}, which the month field's H can pick`
  }
  for (const day of dom.singles) {
    if (day > longest) fail(`day-of-month ${day} does not exist ${where}`)
  }
  if (dom.hashedChoices !== null) {
    const highest = Math.max(...dom.hashedChoices.flat())
    if (highest > longest) fail(`day-of-month H can pick ${highest}, which does not exist ${where}`)
  }
  const anyDay = dom.last || dom.values.some((day) => day <= longest)
  if (!anyDay) fail(`no day of the day-of-month field exists ${where}`)
}

const nextTable = (allowed: ReadonlyArray<number>, size: number): Int8Array => {
  const table = new Int8Array(size + 1).fill(-1)
  const set = new Set(allowed)
  let next = -1
  for (let v = size - 1; v >= 0; v--) {
    if (set.has(v)) next = v
    table[v] = next
  }
  return table
}

const mask = (values: ReadonlyArray<number>): number => values.reduce((m, v) => m | (1 << v), 0)

export interface ParsedExpression {
  /** Normalised text: the 5 or 6 fields separated by single spaces (aliases expanded). */
  readonly expression: string
  readonly compiled: CompiledCron
}

/** Parses the expression part; throws CronSyntaxError with the details of the first problem. */
export const parseExpression = (text: string, hashSeed: string): ParsedExpression => {
  if (text === "") fail("the expression is empty")
  const fields = splitFields(text)
  const texts = fields.length === 6 ? fields : ["0", ...fields]
  const keys: ReadonlyArray<FieldKey> = ["second", "minute", "hour", "dayOfMonth", "month", "dayOfWeek"]
  const parsed = {} as Record<FieldKey, FieldValues>
  keys.forEach((key, index) => {
    parsed[key] = parseField(FIELD_SPECS[key], texts[index], stableHash(`${hashSeed}\u0000${key}`))
  })
  checkDaysExist(parsed.dayOfMonth, parsed.month)

  const dow = parsed.dayOfWeek
  const compiled: CompiledCron = {
    nextSecond: nextTable(parsed.second.values, 60),
    nextMinute: nextTable(parsed.minute.values, 60),
    nextHour: nextTable(parsed.hour.values, 24),
    nextMonth: nextTable(parsed.month.values, 13),
    domMask: mask(parsed.dayOfMonth.values),
    domLast: parsed.dayOfMonth.last,
    domRestricted: !parsed.dayOfMonth.unrestricted,
    dowMask: mask(dow.values.map((d) => d % 7)),
    dowLastMask: mask(dow.lastWeekdays),
    dowNthWeekday: dow.nth === null ? -1 : dow.nth.weekday,
    dowNthOccurrence: dow.nth === null ? 0 : dow.nth.occurrence,
    dowRestricted: !dow.unrestricted,
    everyHour: parsed.hour.values.length === 24
  }
  return { expression: fields.join(" "), compiled }
}
