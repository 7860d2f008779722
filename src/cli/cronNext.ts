// `cron next '<value>' [--from <ISO instant>] [--count N]`: the next N fire times of a cron value,
// as a pure function of the arguments (what follows `cron next`) and the current time.
// The CLI entry point prints `stdout`/`stderr` and exits with `exitCode`.

import { daysInMonth, localMs } from "../domain/cron/calendar.ts"
import { isCronValue, nextFires, parseCronValue, SEARCH_YEARS } from "../domain/cron/index.ts"

export type CronNextResult =
  | { readonly exitCode: 0; readonly stdout: string }
  | { readonly exitCode: 1; readonly stderr: string }

const USAGE = "usage: cron next '<value>' [--from <ISO instant>] [--count N]"
const DEFAULT_COUNT = 5
const MAX_COUNT = 1000

const usageError = (problem: string): CronNextResult => ({ exitCode: 1, stderr: `${problem}; ${USAGE}` })

const ISO_INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/

/** ISO 8601 date or date-time; without an offset it is UTC (docs/dates.md "The base"). */
export const parseIsoInstant = (text: string): number | null => {
  const m = ISO_INSTANT.exec(text)
  if (m === null) return null
  const [year, month, day] = [+m[1], +m[2], +m[3]]
  const [hour, minute, second] = [+(m[4] ?? 0), +(m[5] ?? 0), +(m[6] ?? 0)]
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null
  if (hour > 23 || minute > 59 || second > 59) return null
  const millis = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000)
  let offset = 0
  const zone = m[8]
  if (zone !== undefined && zone.toUpperCase() !== "Z") {
    const digits = zone.replace(":", "")
    const hours = +digits.slice(1, 3)
    const minutes = +digits.slice(3, 5)
    if (hours > 23 || minutes > 59) return null
    offset = (zone[0] === "-" ? -1 : 1) * (hours * 60 + minutes) * 60_000
  }
  return localMs(year, month, day, hour, minute, second) + millis - offset
}

export const cronNext = (args: ReadonlyArray<string>, nowMs: number): CronNextResult => {
  let value: string | undefined
  let from = nowMs
  let count = DEFAULT_COUNT
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined]
    if (flag === "--from" || flag === "--count") {
      const text = inline ?? args[++i]
      if (text === undefined) return usageError(`${flag} needs a value`)
      if (flag === "--from") {
        const parsed = parseIsoInstant(text)
        if (parsed === null) return usageError(`--from "${text}" is not an ISO 8601 instant (e.g. 2025-01-01T00:00:00Z)`)
        from = parsed
      } else {
        if (!/^\d+$/.test(text) || +text < 1 || +text > MAX_COUNT) {
          return usageError(`--count "${text}" must be a whole number from 1 to ${MAX_COUNT}`)
        }
        count = +text
      }
    } else if (arg.startsWith("--")) {
      return usageError(`unknown option ${flag}`)
    } else if (value === undefined) {
      value = arg
    } else {
      return usageError(`unexpected argument "${arg}"`)
    }
  }
  if (value === undefined) return usageError("missing cron value")
  if (!isCronValue(value)) return { exitCode: 1, stderr: `Invalid date: ${value}` }
  const parsed = parseCronValue(value)
  if (parsed._tag === "Err") return { exitCode: 1, stderr: parsed.message }

  const lines = nextFires(parsed.schedule, from, count).map((ms) => new Date(ms).toISOString())
  if (lines.length === 0) {
    return { exitCode: 1, stderr: `No fire time within ${SEARCH_YEARS} years after ${new Date(from).toISOString()}` }
  }
  return { exitCode: 0, stdout: lines.map((line) => `${line}\n`).join("") }
}
