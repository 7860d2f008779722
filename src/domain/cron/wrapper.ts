// The `cron(<expression>[, <time zone>])` wrapper: recognising it and splitting off the time zone.
//
// The zone follows the last comma, but a comma also separates list elements, and lists carry no
// spaces. So the text after the last comma is the zone when
//   - a space touches that comma (`0 0 * * 1,5, Europe/Paris`, `... 1,5 ,UTC`), or
//   - the expression is an alias (`@daily,UTC`), or
//   - it cannot be a day-of-week list element (`MON,FRI,America/New_York`); a bare word of up to
//     three letters counts as a zone only when it is a known one (`...,UTC` yes, `MON,FRX` no:
//     that is reported as a bad day of week).
// Otherwise the comma belongs to the day-of-week list (`0 0 * * 1,5`, `MON,FRI`) and there is no zone.
// Nothing after the last comma (`cron(0 0 * * *,)`) counts as a missing zone.

import { resolveTimeZoneName } from "./zone.ts"

/** docs/cron.md "The value": exactly `cron(` ... `)`. Anything else is a date value. */
export const isCronValue = (value: string): boolean =>
  value.length >= 6 && value.startsWith("cron(") && value.endsWith(")")

export interface CronParts {
  /** Expression text, trimmed. */
  readonly expression: string
  /** Zone text as written (trimmed), or null when none was given. */
  readonly timeZone: string | null
}

const DAY_WORD = /^(SUN|MON|TUE|WED|THU|FRI|SAT)L?$/i

/** Could `text` be one element of a day-of-week list (`5`, `FRI`, `1-5`, `*\/2`, `5L`, `H(1-5)`, ...)? */
export const isDayOfWeekElement = (text: string): boolean => {
  if (!/^[0-9A-Za-z*?#/()-]+$/.test(text)) return false
  const words = text.match(/[A-Za-z]+/g) ?? []
  return words.every((word) => word === "L" || word === "H" || DAY_WORD.test(word))
}

const isZoneTail = (tail: string): boolean => {
  if (tail === "" || /\s/.test(tail) || isDayOfWeekElement(tail)) return false
  if (/^[A-Za-z]{1,3}$/.test(tail)) return resolveTimeZoneName(tail) !== null
  return true
}

/** Splits the inside of a cron(...) value into expression and zone. Call only when isCronValue. */
export const splitCronValue = (value: string): CronParts => {
  const inner = value.slice(5, -1).trim()
  const comma = inner.lastIndexOf(",")
  if (comma < 0) return { expression: inner, timeZone: null }
  const head = inner.slice(0, comma)
  const tail = inner.slice(comma + 1)
  const spaced = /\s$/.test(head) || /^\s/.test(tail)
  if (spaced || tail === "" || head.startsWith("@") || isZoneTail(tail)) {
    return { expression: head.trim(), timeZone: tail.trim() }
  }
  return { expression: inner, timeZone: null }
}
