// The dashboard's overview of a project (issue 15), from the rollup (store/deliveryStats.ts), never
// from a scan of executions: per minute over the last `hours`, attempts by outcome and first attempts'
// lateness p50/p99; the dead letters of the last 24 h; and the queued and in-flight triggers per tag
// policy, sampled each minute, with their live counts now. Series are columns (times in seconds), as
// time-series charts take them; a minute without attempts is 0 (lateness: null).
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { addHistograms, percentile } from "../domain/lateness.ts"
import { statsMinutes, statsTagPolicySamples } from "../store/deliveryStats.ts"
import { orUnavailable } from "../store/unavailable.ts"
import { listTagPolicies } from "./tagPolicies.ts"

export const OVERVIEW_HOURS = [1, 6, 24] as const
const DAY_MS = 86_400_000

/** Dead letters per hour over the last 24 h (the last hour ends with the current minute). */
const deadLettersByHour = (rows: ReadonlyArray<{ readonly minuteMs: number; readonly deadLetters: number }>, endMinute: number) => {
  const endMs = endMinute + 60_000
  const t = Array.from({ length: 24 }, (_, i) => (endMs - (24 - i) * 3_600_000) / 1000)
  const count = t.map(() => 0)
  for (const row of rows) {
    const slot = 23 - Math.floor((endMs - 1 - row.minuteMs) / 3_600_000)
    if (slot >= 0 && slot < 24) count[slot]! += row.deadLetters
  }
  return { t, count }
}

export const projectOverview = (projectId: string, hours: number) =>
  orUnavailable(Effect.gen(function*() {
    const nowMs = yield* Clock.currentTimeMillis
    const endMinute = Math.floor(nowMs / 60_000) * 60_000
    const fromMs = endMinute - hours * 3_600_000 + 60_000
    const rows = yield* statsMinutes({ projectId, fromMs: Math.min(fromMs, endMinute - DAY_MS + 60_000) })
    const byMinute = new Map(rows.map((row) => [row.minuteMs, row]))
    const minutes = Array.from({ length: Math.round((endMinute - fromMs) / 60_000) + 1 }, (_, i) => fromMs + i * 60_000)
    const column = <A>(f: (row: (typeof rows)[number] | undefined) => A) => minutes.map((minute) => f(byMinute.get(minute)))
    let all: Array<number> = []
    for (const row of rows) if (row.minuteMs >= fromMs) all = addHistograms(all, row.lateness)
    const samples = yield* statsTagPolicySamples({ projectId, fromMs })
    const policies = yield* listTagPolicies(projectId)
    return {
      hours,
      deliveries: {
        t: minutes.map((minute) => minute / 1000),
        succeeded: column((row) => row?.succeeded ?? 0),
        failed: column((row) => row?.failed ?? 0),
        deadLetters: column((row) => row?.deadLetters ?? 0)
      },
      lateness: {
        t: minutes.map((minute) => minute / 1000),
        p50: column((row) => (row === undefined ? null : percentile(row.lateness, 0.5))),
        p99: column((row) => (row === undefined ? null : percentile(row.lateness, 0.99)))
      },
      totals: {
        succeeded: rows.filter((row) => row.minuteMs >= fromMs).reduce((sum, row) => sum + row.succeeded, 0),
        failed: rows.filter((row) => row.minuteMs >= fromMs).reduce((sum, row) => sum + row.failed, 0),
        deadLetters: rows.filter((row) => row.minuteMs >= fromMs).reduce((sum, row) => sum + row.deadLetters, 0),
        latenessP50: percentile(all, 0.5),
        latenessP99: percentile(all, 0.99)
      },
      deadLetters24h: rows.filter((row) => row.minuteMs > endMinute - DAY_MS).reduce((sum, row) => sum + row.deadLetters, 0),
      deadLettersByHour: deadLettersByHour(rows, endMinute),
      tagPolicies: policies.map((policy) => {
        const own = samples.filter((sample) => sample.tag === policy.tag)
        return {
          id: policy.id,
          tag: policy.tag,
          queued: policy.queued,
          inFlight: policy.inFlight,
          t: own.map((sample) => sample.minuteMs / 1000),
          queuedSeries: own.map((sample) => sample.queued),
          inFlightSeries: own.map((sample) => sample.inFlight)
        }
      })
    }
  }))
