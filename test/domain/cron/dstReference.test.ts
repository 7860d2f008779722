// The clock-change rules of docs/cron.md checked against a slow, independent reference: walk every minute
// around real transitions, read the wall clock from Intl, and apply the rules literally:
//   every-hour field (all 24 hours): a minute fires when its wall time matches (both passes of a
//     repeated hour, nothing in a skipped one);
//   other hour fields: a wall time fires at the first instant that shows it; when the clock jumps
//     forward, the first matching skipped wall time fires at (that time + the jump), once.
// Expressions are generated as explicit minute/hour sets so the reference needs no cron parser.
import { describe, expect, it } from "vitest"
import { nextFireAfter, parseCronValue } from "../../../src/domain/cron/index.ts"

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
}

/** Wall clock of an instant as "local ms" (the wall time written as if it were UTC), from Intl. */
const wallClock = (zone: string) => {
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone: zone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric",
    hour: "numeric", minute: "numeric", second: "numeric"
  })
  return (instant: number): number => {
    const [, m, d, y, h, mi, s] = /^(\d+)\/(\d+)\/(\d+), (\d+):(\d+):(\d+)$/.exec(format.format(instant))!.map(Number)
    return Date.UTC(y, m - 1, d, h, mi, s)
  }
}

/** Instants (whole minutes) where the wall clock does not advance by exactly one minute, in [from, to). */
const transitionsBetween = (wall: (t: number) => number, from: number, to: number): Array<number> => {
  const found: Array<number> = []
  for (let t = from; t < to; t += DAY) {
    if (wall(t + DAY) - wall(t) === DAY) continue
    let low = t
    let high = t + DAY
    while (high - low > MINUTE) {
      const mid = low + Math.floor((high - low) / 2 / MINUTE) * MINUTE
      if (wall(mid) - wall(t) === mid - t) low = mid
      else high = mid
    }
    found.push(high)
  }
  return found
}

/** Reference fire instants in (start, end], by walking every minute from start - 1 day. */
const referenceFires = (zone: string, minutes: ReadonlySet<number>, hours: ReadonlySet<number>, start: number, end: number) => {
  const wall = wallClock(zone)
  const everyHour = hours.size === 24
  const matches = (local: number) => minutes.has(new Date(local).getUTCMinutes()) && hours.has(new Date(local).getUTCHours())
  const seen = new Set<number>()
  const fires = new Set<number>()
  let previousLocal = wall(start - DAY - MINUTE)
  for (let t = start - DAY; t <= end; t += MINUTE) {
    const local = wall(t)
    if (everyHour) {
      if (matches(local)) fires.add(t)
    } else {
      if (matches(local) && !seen.has(local)) fires.add(t)
      const jump = local - previousLocal - MINUTE
      if (jump > 0) {
        for (let skipped = previousLocal + MINUTE; skipped < local; skipped += MINUTE) {
          if (matches(skipped)) {
            fires.add(t + (skipped - (previousLocal + MINUTE)))
            break
          }
        }
      }
    }
    seen.add(local)
    previousLocal = local
  }
  return [...fires].filter((t) => t > start && t <= end).sort((a, b) => a - b)
}

const ZONES = ["America/New_York", "Europe/Paris", "Australia/Sydney", "Australia/Lord_Howe", "America/Santiago", "Pacific/Auckland"]

describe("clock changes against a minute-by-minute reference", () => {
  const random = prng(7)
  const pick = <T>(xs: ReadonlyArray<T>): T => xs[Math.floor(random() * xs.length)]
  const cases: Array<readonly [string, string, number, ReadonlySet<number>, ReadonlySet<number>]> = []
  for (const zone of ZONES) {
    const wall = wallClock(zone)
    const year = 2020 + Math.floor(random() * 10)
    const transitions = transitionsBetween(wall, Date.UTC(year, 0, 1), Date.UTC(year + 1, 0, 1))
    for (const transition of transitions) {
      for (let k = 0; k < 4; k++) {
        const minuteList = [...new Set([0, 1, 2].slice(0, 1 + Math.floor(random() * 3)).map(() => pick([0, 5, 15, 20, 30, 35, 45, 59])))].sort((a, b) => a - b)
        const hourText = pick(["*", "0-23", "*/1", "0", "1", "2", "3", "1,2", "2,3", "0-3", "*/2", "1-2"])
        const hours = new Set<number>()
        if (hourText === "*" || hourText === "0-23" || hourText === "*/1") for (let h = 0; h < 24; h++) hours.add(h)
        else if (hourText === "*/2") for (let h = 0; h < 24; h += 2) hours.add(h)
        else if (hourText === "0-3") [0, 1, 2, 3].forEach((h) => hours.add(h))
        else if (hourText === "1-2") [1, 2].forEach((h) => hours.add(h))
        else hourText.split(",").forEach((h) => hours.add(Number(h)))
        const start = transition - Math.floor(random() * 30 * 60) * MINUTE + Math.floor(random() * 4 * 60) * MINUTE
        cases.push([`${minuteList.join(",")} ${hourText} * * *`, zone, start, new Set(minuteList), hours])
      }
    }
  }

  it.each(cases)("%s in %s from %d", (expression, zone, start, minutes, hours) => {
    const end = start + 2 * DAY
    const expected = referenceFires(zone, minutes, hours, start, end)
    const parsed = parseCronValue(`cron(${expression}, ${zone})`)
    if (parsed._tag === "Err") throw new Error(parsed.message)
    const actual: Array<number> = []
    for (let t = nextFireAfter(parsed.schedule, start); t !== null && t <= end; t = nextFireAfter(parsed.schedule, t)) actual.push(t)
    expect(actual.map((t) => new Date(t).toISOString())).toEqual(expected.map((t) => new Date(t).toISOString()))
    expect(expected.length).toBeGreaterThan(0)
  })
})
