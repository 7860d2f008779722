// The hint of a refused scheduling value (domain/scheduledAtHints.ts): the form meant for the usual
// slips, the accepted forms otherwise, the prefix of an item's message kept, nothing for others.
import { describe, expect, it } from "vitest"
import { scheduledAtHint } from "../../src/domain/scheduledAtHints.ts"

const FORMS = "use an ISO 8601 date (2030-01-15T09:00:00Z), now, now | add 10m (or subtract; s m h d w), or cron(*/5 * * * *[, Europe/Paris])"

const CASES: ReadonlyArray<readonly [string, string | undefined]> = [
  ["Invalid date: tomorrow 9am", `"tomorrow 9am" is not a date: ${FORMS}`],
  ["Invalid date: now + 10m", "date operations follow a pipe: now | add 10m"],
  ["Invalid date: now - 2 h", "date operations follow a pipe: now | subtract 2h"],
  ["Invalid date: 2030-01-15T09:00:00Z+1d", "date operations follow a pipe: 2030-01-15T09:00:00Z | add 1d"],
  ["Invalid date: */5 * * * *", "a cron schedule is written cron(*/5 * * * *), with a time zone cron(*/5 * * * *, Europe/Paris)"],
  ["Invalid date: 0 30 9 * * MON-FRI", "a cron schedule is written cron(0 30 9 * * MON-FRI), with a time zone cron(0 30 9 * * MON-FRI, Europe/Paris)"],
  ["Invalid date: ", `the scheduling value is empty: ${FORMS}`],
  ["Unknown pipe operation: in 10m", `an operation is add or subtract and an amount, e.g. now | add 10m; ${FORMS}`],
  ["Invalid duration: 1.5h", "an amount is a whole number and one of s m h d w, e.g. now | add 90m (no spaces, no fractions)"],
  ["Item order-7: Invalid date: now + 10m", "Item order-7: date operations follow a pipe: now | add 10m"],
  ["Invalid cron expression: 61 is out of range", undefined],
  ["Invalid ttr-retry-max-attempts: abc (an integer from 1 to 2147483647)", undefined]
]

describe("scheduledAtHint", () => {
  it.each(CASES)("%s → %s", (message, hint) => {
    expect(scheduledAtHint(message)).toBe(hint)
  })
})
