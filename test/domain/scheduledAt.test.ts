// The date language of ttr-scheduled-at, as tables: value, now, expected result or message.
import { describe, expect, it } from "vitest"
import { isPast, MAX_DATE_MS, MIN_DATE_MS, parseDateValue, parseIsoDate, truncateToSecond } from "../../src/domain/scheduledAt.ts"

const NOW = Date.UTC(2026, 10, 22, 10, 15, 30, 250) // 2026-11-22T10:15:30.250Z
const S = 1_000
const M = 60 * S
const H = 60 * M
const D = 24 * H
const W = 7 * D
const utc = (...a: [number, number, number?, number?, number?, number?, number?]) => Date.UTC(...a)

type Row = readonly [value: string, expected: { fireAtMs: number; nowBased: boolean } | string]

const ok = (fireAtMs: number, nowBased = false) => ({ fireAtMs, nowBased })

describe("parseDateValue: now and operations", () => {
  const rows: ReadonlyArray<Row> = [
    ["now", ok(NOW, true)],
    ["  now  ", ok(NOW, true)],
    ["now | add 1d", ok(NOW + D, true)],
    ["now|add 1d", ok(NOW + D, true)],
    ["now |add 1d", ok(NOW + D, true)],
    ["now   |   add   1d   ", ok(NOW + D, true)],
    ["now | add\t1h", ok(NOW + H, true)],
    ["now | add 30s", ok(NOW + 30 * S, true)],
    ["now | add 15m", ok(NOW + 15 * M, true)],
    ["now | add 2h", ok(NOW + 2 * H, true)],
    ["now | add 1w", ok(NOW + W, true)],
    ["now | add 0s", ok(NOW, true)],
    ["now | add 007m", ok(NOW + 7 * M, true)],
    ["now | add -5m", ok(NOW - 5 * M, true)],
    ["now | subtract 5m", ok(NOW - 5 * M, true)],
    ["now | subtract -5m", ok(NOW + 5 * M, true)],
    ["now | add 1d | subtract 2h", ok(NOW + D - 2 * H, true)],
    ["now | subtract 2h | add 1d", ok(NOW + D - 2 * H, true)],
    ["now | add 1s | add 1s | add 1s", ok(NOW + 3 * S, true)],
    ["2026-12-01T10:00:00Z | add 90m", ok(utc(2026, 11, 1, 11, 30))],
    ["2026-12-01 | subtract 1d", ok(utc(2026, 10, 30))],
    ["2026-01-01T00:00:00Z | subtract 1s", ok(utc(2025, 11, 31, 23, 59, 59))]
  ]
  it.each(rows)("%j", (value, expected) => {
    expect(parseDateValue(value, NOW)).toEqual({ _tag: "Ok", ...(expected as object) })
  })
})

describe("parseDateValue: ISO dates", () => {
  const rows: ReadonlyArray<Row> = [
    ["2026-12-01", ok(utc(2026, 11, 1))],
    ["2026-12-01T10:00:00Z", ok(utc(2026, 11, 1, 10))],
    ["2026-12-01T10:00:00", ok(utc(2026, 11, 1, 10))],
    ["2026-12-01T10:00", ok(utc(2026, 11, 1, 10))],
    ["2026-12-01T10:00Z", ok(utc(2026, 11, 1, 10))],
    ["2026-12-01T10:00:00.123Z", ok(utc(2026, 11, 1, 10, 0, 0, 123))],
    ["2026-12-01T10:00:00.5Z", ok(utc(2026, 11, 1, 10, 0, 0, 500))],
    ["2026-12-01T10:00:00.12Z", ok(utc(2026, 11, 1, 10, 0, 0, 120))],
    ["2026-12-01T10:00:00.123456789Z", ok(utc(2026, 11, 1, 10, 0, 0, 123))],
    ["2026-12-01T10:00:00.9999Z", ok(utc(2026, 11, 1, 10, 0, 0, 999))],
    ["2026-12-01T10:00:00+02:00", ok(utc(2026, 11, 1, 8))],
    ["2026-12-01T10:00:00+0200", ok(utc(2026, 11, 1, 8))],
    ["2026-12-01T10:00:00+02", ok(utc(2026, 11, 1, 8))],
    ["2026-12-01T10:00:00-05:30", ok(utc(2026, 11, 1, 15, 30))],
    ["2026-12-01T10:00:00-00:00", ok(utc(2026, 11, 1, 10))],
    ["2026-12-01T00:30:00+01:00", ok(utc(2026, 10, 30, 23, 30))],
    ["2026-12-01 10:00:00Z", ok(utc(2026, 11, 1, 10))],
    ["2026-12-01t10:00:00z", ok(utc(2026, 11, 1, 10))],
    ["2024-02-29", ok(utc(2024, 1, 29))],
    ["2000-02-29", ok(utc(2000, 1, 29))],
    ["2026-04-30", ok(utc(2026, 3, 30))],
    ["2026-12-31T23:59:59.999Z", ok(utc(2026, 11, 31, 23, 59, 59, 999))],
    ["1970-01-01T00:00:00Z", ok(0)],
    ["1969-12-31T23:59:59.999Z", ok(-1)],
    ["0001-01-01", ok(MIN_DATE_MS)],
    ["9999-12-31T23:59:59.999Z", ok(MAX_DATE_MS)],
    ["  2026-12-01T10:00:00Z  ", ok(utc(2026, 11, 1, 10))]
  ]
  it.each(rows)("%j", (value, expected) => {
    expect(parseDateValue(value, NOW)).toEqual({ _tag: "Ok", ...(expected as object) })
  })

  it("agrees with Date.parse on 2000 random ISO instants", () => {
    let seed = 12345
    const rand = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31)
    for (let i = 0; i < 2000; i++) {
      const ms = Math.floor(rand() * utc(2200, 0, 1))
      const iso = new Date(ms).toISOString()
      expect(parseIsoDate(iso)).toBe(ms)
      expect(parseIsoDate(iso.replace("Z", "+05:45"))).toBe(Date.parse(iso.replace("Z", "+05:45")))
    }
  })
})

describe("parseDateValue: errors (docs/scheduling.md)", () => {
  const rows: ReadonlyArray<Row> = [
    // Invalid date: <value>, the whole value as sent
    ["", "Invalid date: "],
    ["   ", "Invalid date:    "],
    ["tomorrow", "Invalid date: tomorrow"],
    ["NOW", "Invalid date: NOW"],
    ["Now | add 1d", "Invalid date: Now | add 1d"],
    ["now1", "Invalid date: now1"],
    ["December 1, 2026", "Invalid date: December 1, 2026"],
    ["Tue, 01 Dec 2026 10:00:00 GMT", "Invalid date: Tue, 01 Dec 2026 10:00:00 GMT"],
    ["1733047200000", "Invalid date: 1733047200000"],
    ["2026-13-01", "Invalid date: 2026-13-01"],
    ["2026-00-10", "Invalid date: 2026-00-10"],
    ["2026-02-30", "Invalid date: 2026-02-30"],
    ["2026-02-29", "Invalid date: 2026-02-29"],
    ["1900-02-29", "Invalid date: 1900-02-29"],
    ["2026-04-31", "Invalid date: 2026-04-31"],
    ["2026-12-00", "Invalid date: 2026-12-00"],
    ["2026-12-1", "Invalid date: 2026-12-1"],
    ["2026-12", "Invalid date: 2026-12"],
    ["2026", "Invalid date: 2026"],
    ["20261201", "Invalid date: 20261201"],
    ["20261201T100000Z", "Invalid date: 20261201T100000Z"],
    ["+012026-12-01", "Invalid date: +012026-12-01"],
    ["2026-W48-2", "Invalid date: 2026-W48-2"],
    ["2026-335", "Invalid date: 2026-335"],
    ["2026-12-01Z", "Invalid date: 2026-12-01Z"],
    ["2026-12-01T10", "Invalid date: 2026-12-01T10"],
    ["2026-12-01T10Z", "Invalid date: 2026-12-01T10Z"],
    ["2026-12-01T24:00:00Z", "Invalid date: 2026-12-01T24:00:00Z"],
    ["2026-12-01T10:60:00Z", "Invalid date: 2026-12-01T10:60:00Z"],
    ["2026-12-01T10:00:60Z", "Invalid date: 2026-12-01T10:00:60Z"],
    ["2026-12-01T10:00:00.Z", "Invalid date: 2026-12-01T10:00:00.Z"],
    ["2026-12-01T10:00:00,5Z", "Invalid date: 2026-12-01T10:00:00,5Z"],
    ["2026-12-01T10:00:00 Z", "Invalid date: 2026-12-01T10:00:00 Z"],
    ["2026-12-01T10:00:00+24:00", "Invalid date: 2026-12-01T10:00:00+24:00"],
    ["2026-12-01T10:00:00+02:60", "Invalid date: 2026-12-01T10:00:00+02:60"],
    ["2026-12-01T10:00:00+2", "Invalid date: 2026-12-01T10:00:00+2"],
    ["2026-12-01T10:00:00UTC", "Invalid date: 2026-12-01T10:00:00UTC"],
    ["2026-12-01T10:00:00Z[Europe/Paris]", "Invalid date: 2026-12-01T10:00:00Z[Europe/Paris]"],
    ["0000-01-01T00:00:00+01:00", "Invalid date: 0000-01-01T00:00:00+01:00"],
    // PostgreSQL has no year 0: UTC years 0001–9999 only (docs/dates.md "The base")
    ["0000-01-01", "Invalid date: 0000-01-01"],
    ["0000-12-31T23:59:59.999Z", "Invalid date: 0000-12-31T23:59:59.999Z"],
    ["0001-01-01T00:30:00+01:00", "Invalid date: 0001-01-01T00:30:00+01:00"],
    ["0001-01-01 | subtract 1d", "Invalid date: 0001-01-01 | subtract 1d"],
    ["0001-01-01 | subtract 1s", "Invalid date: 0001-01-01 | subtract 1s"],
    ["0001-01-02 | subtract 2d | add 5d", "Invalid date: 0001-01-02 | subtract 2d | add 5d"],
    ["cron(* * * * *", "Invalid date: cron(* * * * *"],
    ["| add 1d", "Invalid date: | add 1d"],
    [" | add 1d", "Invalid date:  | add 1d"],
    ["nope | bogus", "Invalid date: nope | bogus"],
    // Unknown pipe operation: <operation>, trimmed
    ["now | ADD 1d", "Unknown pipe operation: ADD 1d"],
    ["now | Add 1d", "Unknown pipe operation: Add 1d"],
    ["now | plus 1d", "Unknown pipe operation: plus 1d"],
    ["now | multiply 2", "Unknown pipe operation: multiply 2"],
    ["now | add", "Unknown pipe operation: add"],
    ["now | subtract   ", "Unknown pipe operation: subtract"],
    ["now | add1d", "Unknown pipe operation: add1d"],
    ["now |", "Unknown pipe operation: "],
    ["now || add 1d", "Unknown pipe operation: "],
    ["now | add 1d |", "Unknown pipe operation: "],
    ["now | bad 1d | add 1y", "Unknown pipe operation: bad 1d"],
    ["2026-12-01 | +1d", "Unknown pipe operation: +1d"],
    // Invalid duration: <amount>
    ["now | add 1y", "Invalid duration: 1y"],
    ["now | add 1D", "Invalid duration: 1D"],
    ["now | add 1ms", "Invalid duration: 1ms"],
    ["now | add 1.5h", "Invalid duration: 1.5h"],
    ["now | add 5 m", "Invalid duration: 5 m"],
    ["now | add h", "Invalid duration: h"],
    ["now | add 5", "Invalid duration: 5"],
    ["now | add +5m", "Invalid duration: +5m"],
    ["now | add --5m", "Invalid duration: --5m"],
    ["now | add - 5m", "Invalid duration: - 5m"],
    ["now | add 1d2h", "Invalid duration: 1d2h"],
    ["now | add 99999999999999999999d", "Invalid duration: 99999999999999999999d"],
    ["now | add 1y | bad", "Invalid duration: 1y"],
    // every operation is read before any is applied, then each step must stay within years 0001–9999
    ["9999-12-31 | add 1d | bogus", "Unknown pipe operation: bogus"],
    ["9999-12-31 | add 1d", "Invalid date: 9999-12-31 | add 1d"],
    ["9999-12-31 | add 1d | subtract 1d", "Invalid date: 9999-12-31 | add 1d | subtract 1d"],
    ["now | add 999999w", "Invalid date: now | add 999999w"],
    ["now | subtract 999999w", "Invalid date: now | subtract 999999w"],
    // an amount beyond 2^53 milliseconds is not a duration at all
    ["now | add 9999999999w", "Invalid duration: 9999999999w"]
  ]
  it.each(rows)("%j", (value, message) => {
    expect(parseDateValue(value, NOW)).toEqual({ _tag: "Err", message })
  })
})

describe("isPast: at or before the request moment, milliseconds dropped", () => {
  const SEC = utc(2026, 10, 22, 10, 15, 30) // NOW without its 250 ms
  const rows: ReadonlyArray<readonly [string, number, number, boolean]> = [
    ["the current instant", NOW, NOW, true],
    ["earlier in the same second", SEC, NOW, true],
    ["later in the same second", NOW + 500, NOW, true],
    ["one millisecond ahead, same second", NOW + 1, NOW, true],
    ["the next whole second", SEC + S, NOW, false],
    ["one second ahead", NOW + S, NOW, false],
    ["one millisecond before", NOW - 1, NOW, true],
    ["a day before", NOW - D, NOW, true],
    ["a day ahead", NOW + D, NOW, false],
    ["now on a whole second, same instant", SEC, SEC, true],
    ["now on a whole second, 999 ms later", SEC + 999, SEC, true],
    ["now on a whole second, next second", SEC + S, SEC, false]
  ]
  it.each(rows)("%s", (_, fireAtMs, nowMs, expected) => {
    expect(isPast(fireAtMs, nowMs)).toBe(expected)
  })

  it("truncateToSecond floors, also before 1970", () => {
    expect(truncateToSecond(NOW)).toBe(SEC)
    expect(truncateToSecond(-1)).toBe(-1000)
    expect(truncateToSecond(0)).toBe(0)
  })

  it("a now-based value is past by the rule; nowBased lets the caller fire it anyway", () => {
    const r = parseDateValue("now", NOW)
    expect(r).toEqual({ _tag: "Ok", fireAtMs: NOW, nowBased: true })
    expect(isPast(NOW, NOW)).toBe(true)
  })
})
