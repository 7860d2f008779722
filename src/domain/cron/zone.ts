// IANA time zones through Intl: name validation, UTC offsets, and the zone's offset transitions.
// Transitions are found once per zone and UTC year (weekly samples, then a binary search to the
// second) and cached, so offset look-ups and clock-change handling need no Intl call afterwards.
// Limitation: two transitions less than a week apart that cancel out would go unnoticed.

import { localMs, MS_PER_DAY, MS_PER_SECOND, yearOf, yearStartMs } from "./calendar.ts"

/** A change of UTC offset: from `at` (an instant, ms) on the offset is `after` instead of `before`. */
export interface Transition {
  readonly at: number
  readonly before: number
  readonly after: number
}

interface YearTransitions {
  /** Offset at January 1st 00:00 UTC. */
  readonly startOffset: number
  /** Transitions in (start of the year, start of the next year], in order. */
  readonly transitions: ReadonlyArray<Transition>
}

export interface TimeZone {
  readonly name: string
  /** UTC offset (ms, local = instant + offset) in effect at `instant`. */
  readonly offsetAt: (instant: number) => number
  /** The latest transition at or before `instant`, if it happened after `notBefore`. */
  readonly transitionAtOrBefore: (instant: number, notBefore: number) => Transition | null
  /** The first transition strictly after `instant` and at or before `notAfter`. */
  readonly transitionAfter: (instant: number, notAfter: number) => Transition | null
}

const WEEK_MS = 7 * MS_PER_DAY

const UTC_ZONE: TimeZone = {
  name: "UTC",
  offsetAt: () => 0,
  transitionAtOrBefore: () => null,
  transitionAfter: () => null
}

const makeIntlOffset = (name: string): ((instant: number) => number) => {
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone: name,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric"
  })
  const pattern = /^(\d+)\/(\d+)\/(\d+),? (\d+):(\d+):(\d+)$/
  return (instant) => {
    const whole = Math.floor(instant / MS_PER_SECOND) * MS_PER_SECOND
    const match = pattern.exec(format.format(whole))
    if (match === null) throw new Error(`unexpected date format for time zone ${name}`)
    const local = localMs(+match[3], +match[1], +match[2], +match[4] % 24, +match[5], +match[6])
    return local - whole
  }
}

const makeZone = (name: string): TimeZone => {
  const intlOffset = makeIntlOffset(name)
  const years = new Map<number, YearTransitions>()

  const findTransition = (low: number, lowOffset: number, high: number): Transition => {
    // invariant: offset(low) === lowOffset, offset(high) !== lowOffset; both whole seconds
    while (high - low > MS_PER_SECOND) {
      const mid = low + Math.floor((high - low) / 2 / MS_PER_SECOND) * MS_PER_SECOND
      if (intlOffset(mid) === lowOffset) low = mid
      else high = mid
    }
    return { at: high, before: lowOffset, after: intlOffset(high) }
  }

  const yearTransitions = (year: number): YearTransitions => {
    const cached = years.get(year)
    if (cached !== undefined) return cached
    const start = yearStartMs(year)
    const end = yearStartMs(year + 1)
    const startOffset = intlOffset(start)
    const transitions: Array<Transition> = []
    let previous = start
    let previousOffset = startOffset
    while (previous < end) {
      const sample = Math.min(previous + WEEK_MS, end)
      const offset = intlOffset(sample)
      if (offset !== previousOffset) transitions.push(findTransition(previous, previousOffset, sample))
      previous = sample
      previousOffset = offset
    }
    const entry = { startOffset, transitions }
    years.set(year, entry)
    return entry
  }

  const offsetAt = (instant: number): number => {
    const entry = yearTransitions(yearOf(instant))
    let offset = entry.startOffset
    for (const transition of entry.transitions) {
      if (transition.at > instant) break
      offset = transition.after
    }
    return offset
  }

  const transitionAtOrBefore = (instant: number, notBefore: number): Transition | null => {
    for (let year = yearOf(instant); year >= yearOf(notBefore) - 1; year--) {
      const list = yearTransitions(year).transitions
      for (let i = list.length - 1; i >= 0; i--) {
        if (list[i].at <= instant) return list[i].at > notBefore ? list[i] : null
      }
    }
    return null
  }

  const transitionAfter = (instant: number, notAfter: number): Transition | null => {
    const lastYear = yearOf(notAfter)
    for (let year = yearOf(instant); year <= lastYear; year++) {
      for (const transition of yearTransitions(year).transitions) {
        if (transition.at > notAfter) return null
        if (transition.at > instant) return transition
      }
    }
    return null
  }

  return { name, offsetAt, transitionAtOrBefore, transitionAfter }
}

/** IANA names only (letters first; no bare offsets such as "+01:00"). */
const NAME_SHAPE = /^[A-Za-z][A-Za-z0-9_+\-/]*$/

interface Resolution {
  /** Spelling to keep: Intl's when it differs only in case, else the name as written (a link such as US/Eastern). */
  readonly spelling: string
  /** Intl's identifier, shared by links and case variants (one zone object each). */
  readonly id: string
}

/** Asking Intl costs ~50 µs; answers are remembered (bounded, since names come from requests). */
const resolutions = new Map<string, Resolution | null>()
const RESOLUTIONS_CAP = 2000

const resolve = (name: string): Resolution | null => {
  const cached = resolutions.get(name)
  if (cached !== undefined) return cached
  let result: Resolution | null = null
  if (NAME_SHAPE.test(name)) {
    try {
      const id = new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone
      result = { spelling: id.toLowerCase() === name.toLowerCase() ? id : name, id }
    } catch {
      result = null
    }
  }
  if (resolutions.size >= RESOLUTIONS_CAP) resolutions.clear()
  resolutions.set(name, result)
  return result
}

/** The spelling to keep for a time zone name ("europe/paris" -> "Europe/Paris"), or null when unknown. */
export const resolveTimeZoneName = (name: string): string | null => resolve(name)?.spelling ?? null

const zones = new Map<string, TimeZone>([["UTC", UTC_ZONE]])

/** The zone for a name accepted by `resolveTimeZoneName`. */
export const getTimeZone = (name: string): TimeZone => {
  const resolution = resolve(name)
  if (resolution === null) throw new Error(`unknown time zone ${name}`)
  let zone = zones.get(resolution.id)
  if (zone === undefined) {
    zone = makeZone(resolution.id)
    zones.set(resolution.id, zone)
  }
  return zone
}
