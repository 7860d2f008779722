// What a caller asks of /schedule (and of /declare and /bulk items): the scheduling value — a
// one-shot time or a `cron(...)` value — read from `ttr-scheduled-at` or an item's `scheduledAt`
// with the documented messages, and the command the schedule use case carries out.
import { isCronValue, nextFireAfter, parseCronValue } from "./cron/index.ts"
import { parseDateValue } from "./scheduledAt.ts"
import type { TriggerDefinition } from "./trigger.ts"

export type ScheduleValue =
  | { readonly _tag: "Once"; readonly fireAtMs: number; readonly nowBased: boolean }
  | { readonly _tag: "Cron"; readonly cronExpr: string; readonly cronTz: string }

export type ParsedScheduleValue =
  | { readonly _tag: "Ok"; readonly value: ScheduleValue }
  | { readonly _tag: "Err"; readonly message: string }

/**
 * A date (with operations) or a `cron(...)` value, with its 400 message: `Invalid date: …`,
 * `Unknown pipe operation: …`, `Invalid duration: …` or `Invalid cron expression: …` (a cron value
 * that never fires again is one).
 */
export const parseScheduleValue = (text: string, nowMs: number): ParsedScheduleValue => {
  if (isCronValue(text)) {
    const parsed = parseCronValue(text)
    if (parsed._tag === "Err") return parsed
    if (nextFireAfter(parsed.schedule, nowMs) === null) {
      return { _tag: "Err", message: `Invalid cron expression: ${parsed.schedule.expression} never fires` }
    }
    return { _tag: "Ok", value: { _tag: "Cron", cronExpr: parsed.schedule.expression, cronTz: parsed.schedule.timeZone } }
  }
  const parsed = parseDateValue(text, nowMs)
  if (parsed._tag === "Err") return parsed
  return { _tag: "Ok", value: { _tag: "Once", fireAtMs: parsed.fireAtMs, nowBased: parsed.nowBased } }
}

/** /schedule as a use case: create or edit a trigger (by custom key or `triggerId`) of a project. */
export interface ScheduleCommand {
  readonly projectId: string
  readonly value: ScheduleValue
  readonly definition: TriggerDefinition
  readonly triggerId: string | null
  readonly runMissed: boolean
}
