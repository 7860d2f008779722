// The one-shot date language of `ttr-scheduled-at` and item `scheduledAt` (docs/dates.md):
// `<base> ( "|" <op> )*` where base is `now` or a strict ISO 8601 date and
// each op is `add <amount>` or `subtract <amount>`, applied left to right. Pure: now is a parameter.
// `cron(...)` values are detected and parsed elsewhere before a value reaches this module.

export type ParsedDate =
  | { readonly _tag: "Ok"; readonly fireAtMs: number; readonly nowBased: boolean }
  | { readonly _tag: "Err"; readonly message: string }

const SECOND_MS = 1_000
const UNIT_MS: Readonly<Record<string, number>> = {
  s: SECOND_MS,
  m: 60 * SECOND_MS,
  h: 3_600 * SECOND_MS,
  d: 86_400 * SECOND_MS,
  w: 7 * 86_400 * SECOND_MS
}

const DAY_MS = 86_400_000

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
const daysFromCivil = (year: number, month: number, day: number): number => {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146_097 + doe - 719_468
}

/**
 * Earliest and latest instants we accept: UTC years 0001 to 9999 (docs/errors.md "Text the database
 * cannot store"). Four-digit ISO years, and no year 0000: PostgreSQL has no year 0
 * (1 BC precedes AD 1), so `0000-01-01` used to reach the database and fail there.
 */
export const MIN_DATE_MS = daysFromCivil(1, 1, 1) * DAY_MS
export const MAX_DATE_MS = daysFromCivil(10_000, 1, 1) * DAY_MS - 1

const isLeapYear = (year: number): boolean => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0

const daysInMonth = (year: number, month: number): number =>
  month === 2 ? (isLeapYear(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31

// date [T|t|space time [offset]]; time is HH:mm, HH:mm:ss or HH:mm:ss.fraction;
// offset is Z, z, ±HH, ±HHMM or ±HH:MM. Nothing else (no week/ordinal dates, no basic format).
const ISO_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/

/** Strict ISO 8601 parser: epoch milliseconds, or undefined when the text is not a real date. */
export const parseIsoDate = (text: string): number | undefined => {
  const m = ISO_PATTERN.exec(text)
  if (m === null) return undefined
  const num = (i: number): number => (m[i] === undefined ? 0 : Number(m[i]))
  const year = num(1)
  const month = num(2)
  const day = num(3)
  const hour = num(4)
  const minute = num(5)
  const second = num(6)
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, "0"))
  const offsetHours = num(10)
  const offsetMinutes = num(11)
  if (month < 1 || month > 12) return undefined
  if (day < 1 || day > daysInMonth(year, month)) return undefined
  if (hour > 23 || minute > 59 || second > 59) return undefined
  if (offsetHours > 23 || offsetMinutes > 59) return undefined
  const offsetMs = (m[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000
  const localMs = daysFromCivil(year, month, day) * DAY_MS + ((hour * 60 + minute) * 60 + second) * 1_000 + millis
  const ms = localMs - offsetMs
  return ms < MIN_DATE_MS || ms > MAX_DATE_MS ? undefined : ms
}

const ZERO = 0x30

/** The digits of `text` from `start` to `end` (exclusive) as a number; NaN when one is not a digit. */
const digitsAt = (text: string, start: number, end: number): number => {
  let n = 0
  for (let i = start; i < end; i++) {
    const d = text.charCodeAt(i) - ZERO
    if (d < 0 || d > 9) return Number.NaN
    n = n * 10 + d
  }
  return n
}

/**
 * The form `Date.prototype.toISOString` writes (`2026-01-31T12:00:00.000Z`), the one clients send
 * most, read without the regular expression: epoch milliseconds, or undefined when `text` is not
 * exactly that form or not a real date in range (parseIsoDate reads it the same way).
 */
const canonicalUtcMs = (text: string): number | undefined => {
  if (text.length !== 24 || text[4] !== "-" || text[7] !== "-" || text[10] !== "T" || text[13] !== ":" ||
    text[16] !== ":" || text[19] !== "." || text[23] !== "Z") return undefined
  const year = digitsAt(text, 0, 4)
  const month = digitsAt(text, 5, 7)
  const day = digitsAt(text, 8, 10)
  const hour = digitsAt(text, 11, 13)
  const minute = digitsAt(text, 14, 16)
  const second = digitsAt(text, 17, 19)
  const millis = digitsAt(text, 20, 23)
  // NaN fails every comparison: a non-digit is no date
  if (!(year >= 0 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month))) return undefined
  if (!(hour <= 23 && minute <= 59 && second <= 59 && millis >= 0)) return undefined
  const ms = daysFromCivil(year, month, day) * DAY_MS + ((hour * 60 + minute) * 60 + second) * 1_000 + millis
  return ms < MIN_DATE_MS || ms > MAX_DATE_MS ? undefined : ms
}

const OPERATION_PATTERN = /^(add|subtract)\s+(.+)$/
const AMOUNT_PATTERN = /^(-?\d+)([smhdw])$/

/** Signed milliseconds of an amount such as `30m` or `-5m`; undefined when malformed or absurdly large. */
const parseAmount = (amount: string): number | undefined => {
  const m = AMOUNT_PATTERN.exec(amount)
  if (m === null) return undefined
  const ms = Number(m[1]) * UNIT_MS[m[2]!]!
  return Number.isSafeInteger(ms) ? ms : undefined
}

const err = (message: string): ParsedDate => ({ _tag: "Err", message })

/**
 * Resolves a date-language value at `nowMs`. Whitespace around the value, around each `|` and
 * between an operation and its amount is ignored; the amount itself takes no inner spaces.
 * Messages: `Invalid date: <value>` (the whole value as sent) when the value is empty, the base is
 * neither `now` nor a strict ISO date, or the time (UTC) leaves years 0001–9999, as given or after an operation;
 * `Unknown pipe operation: <operation>` (trimmed) when an operation is not `add`/`subtract` followed
 * by an amount; `Invalid duration: <amount>` when the amount is not a whole number plus s/m/h/d/w.
 */
export const parseDateValue = (value: string, nowMs: number): ParsedDate => {
  const canonicalMs = canonicalUtcMs(value)
  if (canonicalMs !== undefined) return { _tag: "Ok", fireAtMs: canonicalMs, nowBased: false }
  const parts = value.split("|")
  const base = parts[0]!.trim()
  const nowBased = base === "now"
  const baseMs = nowBased ? nowMs : parseIsoDate(base)
  if (baseMs === undefined) return err(`Invalid date: ${value}`)
  const deltas: Array<number> = []
  for (const part of parts.slice(1)) {
    const operation = part.trim()
    const m = OPERATION_PATTERN.exec(operation)
    if (m === null) return err(`Unknown pipe operation: ${operation}`)
    const amount = m[2]!.trim()
    const deltaMs = parseAmount(amount)
    if (deltaMs === undefined) return err(`Invalid duration: ${amount}`)
    deltas.push(m[1] === "add" ? deltaMs : -deltaMs)
  }
  // Syntax first, then range: each intermediate time must stay an exact, representable date.
  let fireAtMs = baseMs
  for (const delta of deltas) {
    fireAtMs += delta
    if (fireAtMs < MIN_DATE_MS || fireAtMs > MAX_DATE_MS) return err(`Invalid date: ${value}`)
  }
  return { _tag: "Ok", fireAtMs, nowBased }
}

/** Milliseconds dropped: 12:00:00.750 becomes 12:00:00.000 (floor, also before 1970). */
export const truncateToSecond = (ms: number): number => Math.floor(ms / SECOND_MS) * SECOND_MS

/**
 * docs/scheduling.md "Past dates": a one-shot is past when its time is at or before the request moment;
 * milliseconds are dropped, so the current instant counts as past. The stored fire time keeps its
 * milliseconds.
 */
export const isPast = (fireAtMs: number, nowMs: number): boolean => truncateToSecond(fireAtMs) <= nowMs

/** Whether a date value's base is an ISO date without an offset, read as UTC (docs/dates.md "The base"). */
export const readAsUtc = (value: string): boolean => {
  const m = ISO_PATTERN.exec(value.split("|", 1)[0]!.trim())
  return m !== null && m[8] === undefined && m[9] === undefined
}

/**
 * The `Timewheel-Warning` of a one-shot stored as skipped (docs/scheduling.md "Past dates"): when it was
 * due, that it never fires, how to fire it anyway (`runMissed` names the header or argument), and,
 * when the date had no offset, that it was read as UTC — the usual reason a local time is past.
 */
export const skippedWarning = (value: string, fireAtMs: number, runMissed: string): string =>
  `skipped: ${new Date(fireAtMs).toISOString()} is not in the future, so the trigger never fires ` +
  `(${runMissed}: true fires a past time at once)` +
  (readAsUtc(value) ? `; "${value.trim()}" has no offset and was read as UTC` : "")
