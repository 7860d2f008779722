// Proleptic Gregorian calendar arithmetic on plain numbers (no Date objects): days since the epoch
// <-> civil dates, month lengths, weekdays, and "local milliseconds" (a wall-clock time written as
// if it were a UTC instant) <-> calendar fields. Algorithms after Howard Hinnant's date library.

export const MS_PER_SECOND = 1000
export const MS_PER_MINUTE = 60_000
export const MS_PER_HOUR = 3_600_000
export const MS_PER_DAY = 86_400_000

export const isLeapYear = (year: number): boolean =>
  (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0

const MONTH_LENGTHS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** Days in `month` (1-12) of `year`. */
export const daysInMonth = (year: number, month: number): number =>
  month === 2 && isLeapYear(year) ? 29 : MONTH_LENGTHS[month]

/** Longest length a month can have in any year (February counts 29). */
export const maxDaysInMonth = (month: number): number => (month === 2 ? 29 : MONTH_LENGTHS[month])

/** Days from 1970-01-01 to the civil date (month 1-12, day 1-31). */
export const daysFromCivil = (year: number, month: number, day: number): number => {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const mp = (month + 9) % 12
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146_097 + doe - 719_468
}

export interface CivilDate {
  readonly year: number
  readonly month: number
  readonly day: number
}

/** Civil date of a day count from 1970-01-01. */
export const civilFromDays = (days: number): CivilDate => {
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const doe = z - era * 146_097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day }
}

/** Weekday of a civil date, 0 = Sunday .. 6 = Saturday. */
export const weekday = (year: number, month: number, day: number): number => {
  const w = (daysFromCivil(year, month, day) + 4) % 7 // 1970-01-01 was a Thursday
  return w < 0 ? w + 7 : w
}

/** Milliseconds of a wall-clock time, counted as if the wall clock were UTC. */
export const localMs = (
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number
): number =>
  daysFromCivil(year, month, day) * MS_PER_DAY + hour * MS_PER_HOUR + minute * MS_PER_MINUTE + second * MS_PER_SECOND

/** The UTC calendar year of an instant (or the wall-clock year of a local-ms value). */
export const yearOf = (ms: number): number => civilFromDays(Math.floor(ms / MS_PER_DAY)).year

/** Instant of January 1st, 00:00 UTC of `year`. */
export const yearStartMs = (year: number): number => daysFromCivil(year, 1, 1) * MS_PER_DAY
