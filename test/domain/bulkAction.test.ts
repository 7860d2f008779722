// POST /actions as pure functions (docs/bulk-actions.md): the body's checks in order with their
// messages, a replay's URL and headers (checked like /schedule's request, applied to the attempt
// only), why a trigger is left untouched, and the action as the API shows it.
import { describe, expect, it } from "vitest"
import { actionView, decodeActionBody, untouchedReason } from "../../src/domain/bulkAction.ts"
import { applyReplayOverride } from "../../src/domain/replayOverride.ts"
import type { DeliveryRow } from "../../src/domain/trigger.ts"

const read = (json: unknown) => {
  const decoded = decodeActionBody(json, "ttr")
  return decoded._tag === "Err" ? decoded.message : decoded.request
}

describe("decodeActionBody: the first bad field's message", () => {
  const cases: ReadonlyArray<readonly [body: unknown, message: string]> = [
    [[], "Body must be a JSON object"],
    ["cancel", "Body must be a JSON object"],
    [{ action: "cancel", filter: { tag: "a" }, dry: true }, "Unknown field: dry"],
    [{ filter: { tag: "a" } }, `action must be "cancel" or "replay"`],
    [{ action: "delete", filter: { tag: "a" } }, `action must be "cancel" or "replay"`],
    [{ action: "cancel" }, "filter must be a JSON object"],
    [{ action: "cancel", filter: "tag=a" }, "filter must be a JSON object"],
    [{ action: "cancel", filter: { tags: ["a"] } }, "Unknown filter field: tags"],
    [{ action: "replay", filter: { scheduledFrom: "soon" } }, "Invalid date: soon"],
    [{ action: "cancel", filter: { tag: "a" }, dryRun: "yes" }, "dryRun must be true or false"],
    [{ action: "cancel", filter: { tag: "a" }, replay: { url: "https://b.test" } }, `replay is only for action "replay"`],
    [{ action: "replay", filter: {}, replay: "https://b.test" }, "replay must be a JSON object"],
    [{ action: "replay", filter: {}, replay: { target: "https://b.test" } }, "Unknown replay field: target"],
    [{ action: "replay", filter: {}, replay: { url: 5 } }, "replay.url must be a string"],
    [{ action: "replay", filter: {}, replay: { url: "ftp://b.test/x" } }, "Invalid URL: ftp://b.test/x"],
    [{ action: "replay", filter: {}, replay: { url: "/relative" } }, "Invalid URL: /relative"],
    [{ action: "replay", filter: {}, replay: { headers: ["x-a", "1"] } }, "replay.headers must be an object of strings"],
    [{ action: "replay", filter: {}, replay: { headers: { "x-a": 1 } } }, "replay.headers must be an object of strings"],
    [{ action: "replay", filter: {}, replay: { headers: { "bad name": "1" } } }, "Invalid header name: bad name"],
    [{ action: "replay", filter: {}, replay: { headers: { Host: "b.test" } } }, "replay.headers cannot set host"],
    [{ action: "replay", filter: {}, replay: { headers: { "Transfer-Encoding": "chunked" } } }, "replay.headers cannot set transfer-encoding"],
    [{ action: "replay", filter: {}, replay: { headers: { "ttr-url": "https://b.test" } } }, "replay.headers cannot set ttr-url"],
    [{ action: "replay", filter: {}, replay: { headers: { "x-a": "1\r\nx-b: 2" } } }, "Invalid value of header x-a: line breaks are not allowed"],
    [{ action: "replay", filter: {}, replay: { headers: { "x-a": "\u0000" } } }, "header x-a must not contain U+0000"],
    [{ action: "cancel", filter: {} }, "A cancel needs at least one filter field"],
    [{ action: "cancel", filter: {}, dryRun: true }, "A cancel needs at least one filter field"]
  ]
  for (const [body, message] of cases) {
    it(`${JSON.stringify(body)} → ${message}`, () => expect(read(body)).toBe(message))
  }
})

describe("decodeActionBody: valid bodies", () => {
  it("a cancel, dry run or not", () => {
    expect(read({ action: "cancel", filter: { tag: "gone" } })).toEqual({ action: "cancel", filter: expect.objectContaining({ tag: "gone" }), dryRun: false, replay: null })
    expect(read({ action: "cancel", filter: { deadLetter: false }, dryRun: true })).toMatchObject({ dryRun: true })
  })

  it("a replay with an empty filter (every dead letter); its URL trimmed, its headers in order; an empty replay is none", () => {
    expect(read({ action: "replay", filter: {}, replay: { url: " https://b.test/hook?x=1 ", headers: { Authorization: "Bearer new", "X-Moved": "yes" } } }))
      .toMatchObject({ action: "replay", replay: { url: "https://b.test/hook?x=1", headers: [["Authorization", "Bearer new"], ["X-Moved", "yes"]] } })
    expect(read({ action: "replay", filter: {}, replay: {} })).toMatchObject({ replay: null })
    expect(read({ action: "replay", filter: {}, replay: { headers: { "Content-Type": "text/plain" } } }))
      .toMatchObject({ replay: { url: null, headers: [["Content-Type", "text/plain"]] } })
  })
})

describe("applyReplayOverride: the attempt's request", () => {
  const row: DeliveryRow = {
    id: "t1", shard: 0, generatorId: null, projectId: "p", url: "https://old.test/hook", method: "POST",
    headers: [["Authorization", "Bearer old"], ["X-Keep", "1"], ["x-rep", "a"], ["X-Rep", "b"]], body: null,
    contentType: "application/json", tags: [], attempt: 4, retry: null, projectRetry: null, triggeredBy: "retry",
    signingSecrets: [], gateTags: [], scheduledAtMs: null, fired: null, traceparent: null, tracestate: null
  }

  it("a URL and headers: stored ones of the same name (any case, every repeat) replaced, the others kept", () => {
    expect(applyReplayOverride(row, { url: "https://new.test/hook", headers: [["authorization", "Bearer new"], ["X-REP", "c"], ["X-Added", "2"]] })).toEqual({
      ...row,
      url: "https://new.test/hook",
      headers: [["X-Keep", "1"], ["authorization", "Bearer new"], ["X-REP", "c"], ["X-Added", "2"]]
    })
  })

  it("headers only: the stored URL; a content-type replaces the body's type", () => {
    expect(applyReplayOverride(row, { url: null, headers: [["content-type", "text/plain"]] })).toEqual({ ...row, contentType: "text/plain" })
  })
})

describe("untouchedReason", () => {
  it.each([
    ["cancel", "completed", "completed"],
    ["cancel", "running", "running"],
    ["cancel", undefined, "deleted"],
    ["replay", "completed", "notDeadLetter"],
    ["replay", "registered", "registered"],
    ["replay", "active", "active"],
    ["replay", undefined, "deleted"]
  ] as const)("%s of a trigger %s → %s", (action, status, reason) => {
    expect(untouchedReason(action, status)).toBe(reason)
  })
})

describe("actionView", () => {
  const row = {
    id: "a1", action: "cancel" as const, filter: { tag: "x" }, status: "running" as const, matched: 10, processed: 4, acted: 3,
    untouched: { completed: 1 }, created_at: new Date("2030-01-01T00:00:00.000Z"), finished_at: null
  }
  it("a cancel counts `cancelled`, a replay `replayed`, in the documented field order", () => {
    expect(JSON.stringify(actionView(row))).toBe(JSON.stringify({
      id: "a1", action: "cancel", filter: { tag: "x" }, status: "running", matched: 10, processed: 4, cancelled: 3,
      untouched: { completed: 1 }, createdAt: "2030-01-01T00:00:00.000Z", finishedAt: null
    }))
    const done = actionView({ ...row, action: "replay", status: "completed", finished_at: new Date("2030-01-01T00:00:01.000Z") })
    expect(done).toMatchObject({ replayed: 3, finishedAt: "2030-01-01T00:00:01.000Z" })
    expect(done).not.toHaveProperty("cancelled")
  })
})
