// Hints for the headers of /schedule and /cancel (docs/errors.md "Error hints"): the API answers a
// missing required header with an empty 400, so the `Timewheel-Error` header names it, and the
// probable reason when the request shows one — a prefixed header timewheel does not know (a
// misspelling such as `ttr-schedule-at`, or a guess such as `ttr-target`), or a key sent as
// `Authorization: Bearer`, which these two endpoints do not read. Pure.

/** The headers of /schedule, without the prefix (docs/scheduling.md "Headers"). */
export const SCHEDULE_HEADERS = [
  "api-key", "url", "scheduled-at", "custom-key", "trigger-id", "tags", "title", "run-missed",
  "retry-strategy", "retry-max-attempts", "retry-initial-delay", "retry-max-delay", "retry-jitter", "retry-on"
] as const

/** The headers of DELETE /cancel, without the prefix. */
export const CANCEL_HEADERS = ["api-key", "trigger-id", "custom-key"] as const

/** Levenshtein distance, for "did you mean": names are short, the quadratic table is fine. */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      row.push(Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)))
    }
    previous = row
  }
  return previous[b.length]!
}

/** Edits within which an unknown header is taken for a misspelling of the missing one. */
const MISSPELLING_DISTANCE = 3

export interface RequestHeaderNames {
  /** Names of the request's headers, lowercase. */
  readonly names: ReadonlyArray<string>
  /** Whether it carries `Authorization: Bearer …`. */
  readonly bearer: boolean
}

/**
 * `missing header ttr-url`, followed by what the request sent instead: a misspelling of it
 * (`got ttr-schedule-at: a misspelling?`), other prefixed headers timewheel does not know
 * (`unknown header ttr-target`), or, for the key, a Bearer token (`Authorization: Bearer is not
 * read here: it is forwarded to the target`, on /schedule; `… not accepted by /cancel`).
 */
export const missingHeaderHint = (
  prefix: string,
  missing: string,
  known: ReadonlyArray<string>,
  request: RequestHeaderNames,
  endpoint: "/schedule" | "/cancel"
): string => {
  const own = `${prefix}-`
  const name = `${own}${missing}`
  const unknown = request.names.filter((header) => header.startsWith(own) && !known.includes(header.slice(own.length)))
  const misspelt = unknown
    .map((header) => ({ header, edits: distance(header, name) }))
    .filter((candidate) => candidate.edits <= MISSPELLING_DISTANCE)
    .sort((a, b) => a.edits - b.edits)[0]
  const notes: Array<string> = []
  if (missing === "api-key" && request.bearer) {
    notes.push(endpoint === "/schedule"
      ? `Authorization: Bearer is not read by /schedule (it is forwarded to the target); send the key in ${name}`
      : `Authorization: Bearer is not accepted by /cancel; send the key in ${name}`)
  }
  if (misspelt !== undefined) notes.push(`got ${misspelt.header}: a misspelling of ${name}?`)
  else if (unknown.length > 0) notes.push(`unknown header${unknown.length === 1 ? "" : "s"} ${unknown.join(", ")}`)
  return notes.length === 0 ? `missing header ${name}` : `missing header ${name} (${notes.join("; ")})`
}
