// The Timewheel-Warning of a list read with query parameters it does not take
// (domain/unknownParameters.ts): each named, with the one it likely meant, else the list taken.
import { describe, expect, it } from "vitest"
import { unknownParametersWarning } from "../../src/domain/unknownParameters.ts"

const JOBS = ["status", "outcome", "kind", "tag", "customKey", "deadLetter", "scheduledFrom", "scheduledTo", "limit", "cursor"]
const EXECUTIONS = ["jobId", "customKey", "executionStatus", "httpStatus", "deadLetterOnly", "limit", "cursor"]
const TAKES = (known: ReadonlyArray<string>) => `it takes ${known.join(", ")}`

const CASES: ReadonlyArray<readonly [string, ReadonlyArray<string>, ReadonlyArray<string>, string | undefined]> = [
  ["GET /jobs", ["status", "limit"], JOBS, undefined],
  ["GET /jobs", ["isDeadLetter"], JOBS, `GET /jobs ignored the unknown query parameter isDeadLetter (did you mean deadLetter?); ${TAKES(JOBS)}`],
  ["GET /jobs", ["deadLetterOnly"], JOBS, `GET /jobs ignored the unknown query parameter deadLetterOnly (did you mean deadLetter?); ${TAKES(JOBS)}`],
  ["GET /executions", ["isDeadLetter"], EXECUTIONS, `GET /executions ignored the unknown query parameter isDeadLetter (did you mean deadLetterOnly?); ${TAKES(EXECUTIONS)}`],
  ["GET /executions", ["deadLetter"], EXECUTIONS, `GET /executions ignored the unknown query parameter deadLetter (did you mean deadLetterOnly?); ${TAKES(EXECUTIONS)}`],
  ["GET /jobs", ["custom_key", "_"], JOBS, `GET /jobs ignored the unknown query parameters custom_key (did you mean customKey?), _; ${TAKES(JOBS)}`],
  ["GET /jobs", ["Status"], JOBS, `GET /jobs ignored the unknown query parameter Status (did you mean status?); ${TAKES(JOBS)}`]
]

describe("unknownParametersWarning", () => {
  it.each(CASES)("%s with %j", (endpoint, given, known, warning) => {
    expect(unknownParametersWarning(endpoint, given, known)).toBe(warning)
  })
})
