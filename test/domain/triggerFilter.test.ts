// The trigger filter of GET /jobs and the bulk actions (docs/bulk-actions.md "The filter") as a pure
// decoder: each field's rule and message in both forms (query text, JSON values), the order of the
// checks, the half-open range, and the JSON an action shows of it.
import { describe, expect, it } from "vitest"
import { decodeFilterObject, decodeTriggerFilter, filterJson, isEmptyFilter } from "../../src/domain/triggerFilter.ts"

const FROM = "2030-01-01T00:00:00.000Z"
const TO = "2030-02-01T00:00:00.000Z"

describe("decodeTriggerFilter: each field, JSON and query forms", () => {
  const cases: ReadonlyArray<readonly [input: Record<string, unknown>, form: "query" | "json", expected: unknown]> = [
    [{}, "json", {}],
    [{ status: "completed", kind: "job" }, "query", { status: "completed", kind: "job" }],
    [{ status: "done" }, "json", "status must be one of registered, skipped, queued, running, retrying, completed, cancelled, active"],
    [{ status: 3 }, "json", "status must be one of registered, skipped, queued, running, retrying, completed, cancelled, active"],
    [{ kind: "cron" }, "query", "kind must be one of job, generator"],
    [{ tag: "billing", customKey: "order-1" }, "json", { tag: "billing", customKey: "order-1" }],
    [{ tag: "" }, "query", "tag must not be empty"],
    [{ tag: 7 }, "json", "tag must be a string"],
    [{ customKey: "a\u0000b" }, "json", "customKey must not contain U+0000"],
    [{ deadLetter: true }, "json", { deadLetter: true }],
    [{ deadLetter: false }, "json", { deadLetter: false }],
    [{ deadLetter: "true" }, "query", { deadLetter: true }],
    [{ deadLetter: "false" }, "query", { deadLetter: false }],
    [{ deadLetter: "true" }, "json", "deadLetter must be true or false"],
    [{ deadLetter: true }, "query", "deadLetter must be true or false"],
    [{ deadLetter: "yes" }, "query", "deadLetter must be true or false"],
    [{ scheduledFrom: FROM, scheduledTo: TO }, "json", { scheduledFromMs: Date.parse(FROM), scheduledToMs: Date.parse(TO) }],
    // no offset: UTC; a date alone is midnight UTC (docs/bulk-actions.md "The filter")
    [{ scheduledFrom: "2030-01-01" }, "query", { scheduledFromMs: Date.parse(FROM) }],
    [{ scheduledTo: "2030-01-01T01:00:00+01:00" }, "query", { scheduledToMs: Date.parse(FROM) }],
    [{ scheduledFrom: "tomorrow" }, "query", "Invalid date: tomorrow"],
    [{ scheduledFrom: "0000-01-01" }, "json", "Invalid date: 0000-01-01"],
    [{ scheduledTo: 1_900_000_000_000 }, "json", "scheduledTo must be an ISO 8601 date"],
    [{ scheduledFrom: TO, scheduledTo: FROM }, "json", "scheduledFrom must be before scheduledTo"],
    [{ scheduledFrom: FROM, scheduledTo: FROM }, "json", "scheduledFrom must be before scheduledTo"],
    // the first bad field, in the order status, kind, tag, customKey, deadLetter, scheduledFrom, scheduledTo
    [{ scheduledTo: "x", tag: "", status: "nope" }, "json", "status must be one of registered, skipped, queued, running, retrying, completed, cancelled, active"],
    [{ scheduledTo: "x", deadLetter: 1, customKey: "" }, "json", "customKey must not be empty"],
    [{ scheduledTo: "x", deadLetter: 1 }, "json", "deadLetter must be true or false"]
  ]
  for (const [input, form, expected] of cases) {
    it(`${form} ${JSON.stringify(input)} → ${JSON.stringify(expected)}`, () => {
      const decoded = decodeTriggerFilter(input, form)
      if (typeof expected === "string") expect(decoded).toEqual({ _tag: "Err", message: expected })
      else {
        expect(decoded._tag).toBe("Ok")
        if (decoded._tag === "Ok") expect(Object.fromEntries(Object.entries(decoded.filter).filter(([, v]) => v !== undefined))).toEqual(expected)
      }
    })
  }
})

describe("decodeFilterObject: a JSON filter", () => {
  it.each([
    [null, "filter must be a JSON object"],
    [[], "filter must be a JSON object"],
    ["tag=x", "filter must be a JSON object"],
    [{ tags: "billing" }, "Unknown filter field: tags"],
    [{ status: "completed", limit: 10 }, "Unknown filter field: limit"]
  ])("%j → %s", (json, message) => {
    expect(decodeFilterObject(json)).toEqual({ _tag: "Err", message })
  })

  it("a filter of every field", () => {
    const decoded = decodeFilterObject({
      status: "completed", kind: "job", tag: "eu", customKey: "k", deadLetter: true, scheduledFrom: FROM, scheduledTo: "2030-02-01"
    })
    expect(decoded._tag).toBe("Ok")
    if (decoded._tag !== "Ok") return
    // shown in field order, times as ISO with milliseconds
    expect(JSON.stringify(filterJson(decoded.filter))).toBe(JSON.stringify({
      status: "completed", kind: "job", tag: "eu", customKey: "k", deadLetter: true, scheduledFrom: FROM, scheduledTo: TO
    }))
    expect(isEmptyFilter(decoded.filter)).toBe(false)
  })

  it("empty: no field given; deadLetter false alone is a field", () => {
    const empty = decodeFilterObject({})
    const notDead = decodeFilterObject({ deadLetter: false })
    expect(empty._tag === "Ok" && isEmptyFilter(empty.filter)).toBe(true)
    expect(notDead._tag === "Ok" && isEmptyFilter(notDead.filter)).toBe(false)
  })
})
