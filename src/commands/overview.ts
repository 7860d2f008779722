// The dashboard's overview of a project (docs/dashboard.md), from the rollup (store/deliveryStats.ts),
// never from a scan of executions: the rows of the last 24 h (the dead letters of 24 h need them
// whatever the range), the tag policy samples of the range and the policies' live counts, made
// into the chart columns by domain/overview.ts; and how many triggers end in a dead letter now (the
// count of the Dead letters page, commands/deadLetters.ts).
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { bucketsOf, type OverviewHours, overviewOf } from "../domain/overview.ts"
import { statsMinutes, statsTagPolicySamples } from "../store/deliveryStats.ts"
import { orUnavailable } from "../store/unavailable.ts"
import { countDeadLetters } from "./deadLetters.ts"
import { listTagPolicies } from "./tagPolicies.ts"

export { OVERVIEW_HOURS } from "../domain/overview.ts"

const DAY_MS = 86_400_000

export const projectOverview = (projectId: string, hours: OverviewHours) =>
  orUnavailable(Effect.gen(function*() {
    const nowMs = yield* Clock.currentTimeMillis
    const { endMinute, starts } = bucketsOf(hours, nowMs)
    const rows = yield* statsMinutes({ projectId, fromMs: Math.min(starts[0]!, endMinute - DAY_MS + 60_000) })
    const samples = yield* statsTagPolicySamples({ projectId, fromMs: starts[0]! })
    const policies = yield* listTagPolicies(projectId)
    const deadLetterTriggers = yield* countDeadLetters(projectId)
    return { ...overviewOf({ hours, nowMs, rows, samples, policies }), deadLetterTriggers }
  }))
