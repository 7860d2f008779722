// Wall-clock matching: the first local date-time (as local milliseconds) at or after a given one
// that the compiled expression allows. Jumps field by field (month -> day -> hour -> minute ->
// second) with carry-over, using lookup tables and a per-month day bitmask; it never scans seconds.

import { civilFromDays, daysInMonth, localMs, MS_PER_DAY, weekday } from "./calendar.ts"
import type { CompiledCron } from "./parse.ts"

/** Bits 1..31: the days of `month` in `year` the day-of-month and day-of-week fields allow. */
export const dayMask = (c: CompiledCron, year: number, month: number): number => {
  const length = daysInMonth(year, month)
  const allDays = length === 31 ? 0xfffffffe | 0 : ((1 << (length + 1)) - 2) | 0
  if (!c.domRestricted && !c.dowRestricted) return allDays
  let byDom = 0
  if (c.domRestricted) {
    byDom = c.domMask & allDays
    if (c.domLast) byDom |= 1 << length
  }
  let byDow = 0
  if (c.dowRestricted) {
    const first = weekday(year, month, 1)
    for (let w = 0; w < 7; w++) {
      const bit = 1 << w
      if ((c.dowMask | c.dowLastMask) & bit || c.dowNthWeekday === w) {
        const firstDay = 1 + ((w - first + 7) % 7)
        if (c.dowMask & bit) {
          for (let d = firstDay; d <= length; d += 7) byDow |= 1 << d
        }
        if (c.dowLastMask & bit) byDow |= 1 << (firstDay + 7 * Math.floor((length - firstDay) / 7))
        if (c.dowNthWeekday === w) {
          const nth = firstDay + 7 * (c.dowNthOccurrence - 1)
          if (nth <= length) byDow |= 1 << nth
        }
      }
    }
  }
  if (c.domRestricted && c.dowRestricted) return byDom | byDow
  return c.domRestricted ? byDom : byDow
}

/** Smallest set bit of `mask` at position >= `from` (1..32), or -1. */
const nextDay = (mask: number, from: number): number => {
  if (from > 31) return -1
  const rest = mask >>> from
  if (rest === 0) return -1
  return from + 31 - Math.clz32(rest & -rest)
}

/**
 * The first local time >= `from` (local ms, whole seconds) the expression allows, or null when
 * there is none up to the end of local year `lastYear`.
 */
export const nextLocalMatch = (c: CompiledCron, from: number, lastYear: number): number | null => {
  const days = Math.floor(from / MS_PER_DAY)
  const date = civilFromDays(days)
  let year = date.year
  let month = date.month
  let day = date.day
  let rest = Math.floor((from - days * MS_PER_DAY) / 1000)
  let hour = Math.floor(rest / 3600)
  rest -= hour * 3600
  let minute = Math.floor(rest / 60)
  let second = rest - minute * 60
  let maskKey = -1
  let mask = 0

  for (;;) {
    if (year > lastYear) return null
    const nextMonth = c.nextMonth[month]
    if (nextMonth === -1) {
      year++
      month = 1
      day = 1
      hour = minute = second = 0
      continue
    }
    if (nextMonth !== month) {
      month = nextMonth
      day = 1
      hour = minute = second = 0
    }
    const key = year * 16 + month
    if (key !== maskKey) {
      mask = dayMask(c, year, month)
      maskKey = key
    }
    const nextDayOfMonth = nextDay(mask, day)
    if (nextDayOfMonth === -1) {
      month++
      day = 1
      hour = minute = second = 0
      continue
    }
    if (nextDayOfMonth !== day) {
      day = nextDayOfMonth
      hour = minute = second = 0
    }
    const nextHour = c.nextHour[hour]
    if (nextHour === -1) {
      day++
      hour = minute = second = 0
      continue
    }
    if (nextHour !== hour) {
      hour = nextHour
      minute = second = 0
    }
    const nextMinute = c.nextMinute[minute]
    if (nextMinute === -1) {
      hour++
      minute = second = 0
      continue
    }
    if (nextMinute !== minute) {
      minute = nextMinute
      second = 0
    }
    const nextSecond = c.nextSecond[second]
    if (nextSecond === -1) {
      minute++
      second = 0
      continue
    }
    return localMs(year, month, day, hour, minute, nextSecond)
  }
}
