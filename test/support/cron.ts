// Shared helpers for the cron tests: parse-or-throw and "next N fire times as ISO strings".
import { nextFireAfter, parseCronValue } from "../../src/domain/cron/index.ts"
import type { CronSchedule } from "../../src/domain/cron/index.ts"

export const schedule = (value: string, hashSeed?: string): CronSchedule => {
  const parsed = parseCronValue(value, hashSeed === undefined ? undefined : { hashSeed })
  if (parsed._tag === "Err") throw new Error(`expected ${value} to parse, got: ${parsed.message}`)
  return parsed.schedule
}

/** The next `count` fire times after `fromIso`, each strictly after the previous one. */
export const fires = (value: string | CronSchedule, fromIso: string, count: number): Array<string> => {
  const parsed = typeof value === "string" ? schedule(value) : value
  const out: Array<string> = []
  let after = Date.parse(fromIso)
  for (let i = 0; i < count; i++) {
    const next = nextFireAfter(parsed, after)
    if (next === null) break
    out.push(new Date(next).toISOString())
    after = next
  }
  return out
}

export const errorOf = (value: string): string => {
  const parsed = parseCronValue(value)
  return parsed._tag === "Err" ? parsed.message : `accepted as ${parsed.schedule.expression} (${parsed.schedule.timeZone})`
}
