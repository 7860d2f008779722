// The `Timewheel-Error` hint of a scheduling value refused with `Invalid date`, `Unknown pipe
// operation` or `Invalid duration` (the bodies stay the API's): the forms that are accepted, and
// for the usual slips the form meant — `now + 10m` is `now | add 10m`, a bare cron expression is
// written `cron(...)`, words such as `tomorrow 9am` are no date. Pure; docs/dates.md is the grammar.

const FORMS = "use an ISO 8601 date (2030-01-15T09:00:00Z), now, now | add 10m (or subtract; s m h d w), or cron(*/5 * * * *[, Europe/Paris])"

/** Five to six fields of cron characters: a cron expression without its `cron(...)`. */
const BARE_CRON = /^(?:[\d*?/,\-LW#A-Za-z]+\s+){4,5}[\d*?/,\-LW#A-Za-z]+$/

/** `now + 10m`, `2030-01-15T09:00Z - 1h`: an operation written with + or - instead of a pipe. */
const PLUS_MINUS = /^(\S+)\s*([+-])\s*(\d+\s*[smhdw])$/

/** The hint for the value's own message (`Invalid date: …` and the others, without a prefix). */
const hintOf = (message: string): string | undefined => {
  const date = /^Invalid date: (.*)$/s.exec(message)
  if (date !== null) {
    const value = date[1]!.trim()
    if (value === "") return `the scheduling value is empty: ${FORMS}`
    if (BARE_CRON.test(value)) return `a cron schedule is written cron(${value}), with a time zone cron(${value}, Europe/Paris)`
    const operation = PLUS_MINUS.exec(value)
    if (operation !== null) {
      return `date operations follow a pipe: ${operation[1]} | ${operation[2] === "+" ? "add" : "subtract"} ${operation[3]!.replace(/\s/g, "")}`
    }
    return `"${value}" is not a date: ${FORMS}`
  }
  if (message.startsWith("Unknown pipe operation: ")) return `an operation is add or subtract and an amount, e.g. now | add 10m; ${FORMS}`
  if (message.startsWith("Invalid duration: ")) return "an amount is a whole number and one of s m h d w, e.g. now | add 90m (no spaces, no fractions)"
  return undefined
}

/**
 * The hint for a scheduling value's 400 `message`, its prefix kept (`Item <key>: ` of /declare and
 * /bulk); undefined for other messages.
 */
export const scheduledAtHint = (message: string): string | undefined => {
  const at = message.search(/Invalid date: |Unknown pipe operation: |Invalid duration: /)
  if (at < 0) return undefined
  const hint = hintOf(message.slice(at))
  return hint === undefined ? undefined : message.slice(0, at) + hint
}
