// A stored generator's schedule: its cron expression and zone re-parsed with the generator id as the
// seed of `H` (so `H` is stable across runs and updates), and the next instance time after an instant.
import { nextFireAfter, parseCronValue } from "./cron/index.ts"

export interface StoredCron {
  readonly id: string
  readonly cronExpr: string
  readonly cronTz: string
}

/** The next fire time strictly after `afterMs`, or null when the schedule never fires again. */
export const nextInstanceAfter = (generator: StoredCron, afterMs: number): number | null => {
  const parsed = parseCronValue(`cron(${generator.cronExpr}, ${generator.cronTz})`, { hashSeed: generator.id })
  return parsed._tag === "Ok" ? nextFireAfter(parsed.schedule, afterMs) : null
}
