// Building blocks of the cron calculator: calendar arithmetic against Date, zone offsets and
// transitions against Intl, time-zone name resolution.
import { describe, expect, it } from "vitest"
import { civilFromDays, daysFromCivil, daysInMonth, weekday } from "../../../src/domain/cron/calendar.ts"
import { getTimeZone, resolveTimeZoneName } from "../../../src/domain/cron/zone.ts"

const HOUR = 3_600_000

describe("calendar", () => {
  it("matches Date for every day from 1899 to 2101", () => {
    let mismatches = 0
    for (let day = daysFromCivil(1899, 1, 1); day <= daysFromCivil(2101, 12, 31); day++) {
      const date = new Date(day * 86_400_000)
      const civil = civilFromDays(day)
      const expected = { year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() }
      if (civil.year !== expected.year || civil.month !== expected.month || civil.day !== expected.day) mismatches++
      if (weekday(civil.year, civil.month, civil.day) !== date.getUTCDay()) mismatches++
      if (daysFromCivil(expected.year, expected.month, expected.day) !== day) mismatches++
    }
    expect(mismatches).toBe(0)
  })

  it("knows month lengths and leap years", () => {
    expect([2023, 2024, 1900, 2000, 2100].map((y) => daysInMonth(y, 2))).toEqual([28, 29, 28, 29, 28])
    expect([1, 4, 6, 9, 11, 12].map((m) => daysInMonth(2025, m))).toEqual([31, 30, 30, 30, 30, 31])
  })
})

describe("zones", () => {
  it("finds the 2025 transitions of New York to the second", () => {
    const zone = getTimeZone("America/New_York")
    const t = Date.parse("2025-01-01T00:00:00Z")
    const spring = zone.transitionAfter(t, Date.parse("2026-01-01T00:00:00Z"))
    expect(spring).toEqual({ at: Date.parse("2025-03-09T07:00:00Z"), before: -5 * HOUR, after: -4 * HOUR })
    const fall = zone.transitionAfter(spring!.at, Date.parse("2026-01-01T00:00:00Z"))
    expect(fall).toEqual({ at: Date.parse("2025-11-02T06:00:00Z"), before: -4 * HOUR, after: -5 * HOUR })
    expect(zone.transitionAtOrBefore(Date.parse("2025-11-02T07:00:00Z"), Date.parse("2025-11-01T00:00:00Z"))).toEqual(fall)
    expect(zone.transitionAtOrBefore(Date.parse("2025-11-05T07:00:00Z"), Date.parse("2025-11-04T00:00:00Z"))).toBeNull()
  })

  it("gives the same offsets as Intl at 2000 instants in several zones", () => {
    const zones = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu", "America/Santiago", "Africa/Casablanca", "Pacific/Chatham"]
    let mismatches = 0
    let seed = 1
    for (let i = 0; i < 2000; i++) {
      seed = (seed * 48_271) % 2_147_483_647
      const name = zones[i % zones.length]
      const instant = Date.UTC(1990, 0, 1) + (seed % (50 * 365)) * 86_400_000 + (seed % 86_400) * 1000
      const parts = new Intl.DateTimeFormat("en-US", {
        timeZone: name, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric"
      }).formatToParts(instant)
      const get = (type: string) => Number(parts.find((p) => p.type === type)!.value)
      const local = Date.UTC(get("year"), get("month") - 1, get("day"), get("hour"), get("minute"), get("second"))
      if (getTimeZone(name).offsetAt(instant) !== local - instant) mismatches++
    }
    expect(mismatches).toBe(0)
  })

  it("resolves names: case fixed from Intl, links kept, offsets and unknown names refused", () => {
    expect(resolveTimeZoneName("europe/paris")).toBe("Europe/Paris")
    expect(resolveTimeZoneName("UTC")).toBe("UTC")
    expect(resolveTimeZoneName("Etc/UTC")).toBe("Etc/UTC")
    expect(resolveTimeZoneName("Asia/Calcutta")).toBe("Asia/Calcutta")
    expect(resolveTimeZoneName("Etc/GMT+5")).toBe("Etc/GMT+5")
    expect(resolveTimeZoneName("Foo/Bar")).toBeNull()
    expect(resolveTimeZoneName("+01:00")).toBeNull()
    expect(resolveTimeZoneName("")).toBeNull()
  })
})
