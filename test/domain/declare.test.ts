// POST /declare as a pure diff, read like docs/declare-and-bulk.md: the matching table row by row, then
// its rules, changedFields, the operations order and summary, and the writes the store is handed.
import { describe, expect, it } from "vitest"
import { planDeclare } from "../../src/domain/declare.ts"
import type { DeclarePlan } from "../../src/domain/declare.ts"
import { DECLARE_WORDING, decodeDeclareBody, decodeItem, validateDeclareBody, validateItems } from "../../src/domain/item.ts"
import type { Item } from "../../src/domain/item.ts"
import type { StoredTrigger } from "../../src/domain/itemMatch.ts"
import { TRIGGER_DEFAULT_RETRY } from "../../src/domain/retry.ts"
import type { TriggerDefinition } from "../../src/domain/trigger.ts"

const TAG = "billing"
const NOW = Date.parse("2025-06-01T12:00:00.000Z")
const URL = "https://example.com/hook"
const FUTURE = "2030-01-01T00:00:00.000Z"
const FUTURE_MS = Date.parse(FUTURE)
const PAST = "2020-01-01T00:00:00.000Z"
const PAST_MS = Date.parse(PAST)
const CRON = "cron(0 9 * * *)"

const items = (list: ReadonlyArray<Record<string, unknown>>, nowMs = NOW): ReadonlyArray<Item> => {
  const result = validateItems(list.map((json) => decodeItem({ url: URL, ...json })), nowMs, DECLARE_WORDING, TAG)
  if (result._tag === "Invalid") throw new Error(result.message)
  return result.items
}

const definition = (over: Partial<TriggerDefinition> = {}): TriggerDefinition => ({
  url: URL, method: "GET", headers: [], body: null, contentType: null, title: null, tags: [TAG], customKey: null, retry: null, ...over
})

type StoredOver = Partial<Omit<StoredTrigger, "definition">> & { readonly def?: Partial<TriggerDefinition> }

/** A one-shot as the store reads it: registered, carrying the tag, due at FUTURE. */
const job = (id: string, customKey: string | null, over: StoredOver = {}): StoredTrigger => ({
  id, kind: "job", status: "registered", generatorId: null, scheduledAtMs: FUTURE_MS, cron: null, ...over,
  definition: definition({ customKey, ...over.def })
})
/** An active generator `cron(0 9 * * *)` carrying the tag. */
const generator = (id: string, customKey: string | null, over: StoredOver = {}): StoredTrigger => ({
  id, kind: "generator", status: "active", generatorId: null, scheduledAtMs: null, cron: { cronExpr: "0 9 * * *", cronTz: "UTC" }, ...over,
  definition: definition({ customKey, ...over.def })
})
/** An instance of a generator: keyless, its generator's tags. */
const instance = (id: string, generatorId: string, status: StoredTrigger["status"], over: StoredOver = {}): StoredTrigger =>
  job(id, null, { generatorId, status, ...over })

const newIds = () => {
  let n = 0
  return () => `new-${++n}`
}

const declare = (
  list: ReadonlyArray<Record<string, unknown>>,
  triggers: ReadonlyArray<StoredTrigger>,
  options: { readonly runMissed?: boolean; readonly nowMs?: number } = {}
): DeclarePlan =>
  planDeclare({
    tag: TAG,
    items: items(list, options.nowMs ?? NOW),
    runMissed: options.runMissed ?? false,
    nowMs: options.nowMs ?? NOW,
    triggers,
    newId: newIds()
  })

const cancelled = (id: string, customKey: string | null, kind: "job" | "generator" = "job") =>
  ({ operation: "cancelled", customKey, kind, id })

describe("matching of an item with a customKey (docs/declare-and-bulk.md)", () => {
  it("none → added, new id", () => {
    const plan = declare([{ customKey: "a", scheduledAt: FUTURE }], [])
    expect(plan.operations).toEqual([{ operation: "added", customKey: "a", kind: "job", id: "new-1" }])
    expect(plan.itemWrites).toEqual([
      { _tag: "Insert", trigger: { id: "new-1", kind: "job", status: "registered", definition: items([{ customKey: "a", scheduledAt: FUTURE }])[0]!.definition,
        schedule: { _tag: "Once", fireAtMs: FUTURE_MS, nowBased: false } } }
    ])
  })

  it("none → skipped for a past-dated one-shot, new id, stored skipped", () => {
    const plan = declare([{ customKey: "a", scheduledAt: PAST }], [])
    expect(plan.operations).toEqual([{ operation: "skipped", customKey: "a", kind: "job", id: "new-1" }])
    expect(plan.itemWrites[0]).toMatchObject({ _tag: "Insert", trigger: { status: "skipped" } })
  })

  it("none → added for a generator, stored active", () => {
    const plan = declare([{ customKey: "g", scheduledAt: CRON }], [])
    expect(plan.operations).toEqual([{ operation: "added", customKey: "g", kind: "generator", id: "new-1" }])
    expect(plan.itemWrites[0]).toMatchObject({
      _tag: "Insert", trigger: { kind: "generator", status: "active", schedule: { _tag: "Cron", cronExpr: "0 9 * * *", cronTz: "UTC" } }
    })
  })

  it("same kind, all fields equal → unchanged, same id, nothing written", () => {
    const plan = declare([{ customKey: "a", scheduledAt: FUTURE }, { customKey: "g", scheduledAt: CRON }],
      [job("j1", "a"), generator("g1", "g")])
    expect(plan.operations.slice(0, 2)).toEqual([
      { operation: "unchanged", customKey: "a", kind: "job", id: "j1" },
      { operation: "unchanged", customKey: "g", kind: "generator", id: "g1" }
    ])
    expect(plan.itemWrites).toEqual([])
  })

  it.each(["registered", "skipped"] as const)("one-shot %s, something differs → updated in place, same id", (status) => {
    const plan = declare([{ customKey: "a", scheduledAt: FUTURE, title: "new" }], [job("j1", "a", { status })])
    expect(plan.operations).toEqual([{ operation: "updated", customKey: "a", kind: "job", id: "j1", changedFields: ["title"] }])
    expect(plan.itemWrites).toEqual([{ _tag: "Update", trigger: expect.objectContaining({ id: "j1", status: "registered" }) }])
    expect(plan.cancelIds).toEqual([])
  })

  it("one-shot retrying, something differs → updated, new id; old trigger cancelled with no entry of its own", () => {
    const plan = declare([{ customKey: "a", scheduledAt: FUTURE, url: "https://example.com/v2" }], [job("j1", "a", { status: "retrying" })])
    expect(plan.operations).toEqual([{ operation: "updated", customKey: "a", kind: "job", id: "new-1", changedFields: ["url"] }])
    expect(plan.itemWrites).toEqual([
      { _tag: "Replace", cancelIds: ["j1"], trigger: expect.objectContaining({ id: "new-1", status: "registered" }) }
    ])
    expect(plan.summary).toEqual({ unchanged: 0, added: 0, skipped: 0, updated: 1, cancelled: 0 })
  })

  it("one-shot retrying, nothing differs → unchanged (its retry goes on)", () => {
    const plan = declare([{ customKey: "a", scheduledAt: FUTURE }], [job("j1", "a", { status: "retrying" })])
    expect(plan.operations).toEqual([{ operation: "unchanged", customKey: "a", kind: "job", id: "j1" }])
    expect(plan.itemWrites).toEqual([])
  })

  it("generator, something differs → updated in place, same id; upcoming instance replaced", () => {
    const plan = declare([{ customKey: "g", scheduledAt: "cron(0 10 * * *)" }], [generator("g1", "g"), instance("i1", "g1", "registered")])
    expect(plan.operations).toEqual([
      { operation: "updated", customKey: "g", kind: "generator", id: "g1", changedFields: ["cronExpr"] },
      cancelled("i1", null)
    ])
    expect(plan.itemWrites).toEqual([{ _tag: "Update", trigger: expect.objectContaining({ id: "g1", status: "active" }) }])
    expect(plan.cancelIds).toEqual(["i1"])
    expect(plan.refreshGeneratorIds).toEqual(["g1"])
  })

  it("other kind (job → generator) → updated with the kind switch only; old cancelled, new id", () => {
    const plan = declare([{ customKey: "a", scheduledAt: CRON, title: "changed too" }], [job("j1", "a")])
    expect(plan.operations).toEqual([
      { operation: "updated", customKey: "a", kind: "generator", id: "new-1", changedFields: ["kind:job→generator"] }
    ])
    expect(plan.itemWrites).toEqual([
      { _tag: "Replace", cancelIds: ["j1"], trigger: expect.objectContaining({ id: "new-1", kind: "generator", status: "active" }) }
    ])
  })

  it("other kind (generator → job) → kind switch; the generator and its live instances cancelled with it", () => {
    const triggers = [
      generator("g1", "g"),
      instance("i-up", "g1", "registered"),
      instance("i-retry", "g1", "retrying"),
      instance("i-queued", "g1", "queued"),
      instance("i-done", "g1", "completed")
    ]
    const plan = declare([{ customKey: "g", scheduledAt: FUTURE }], triggers)
    expect(plan.operations).toEqual([
      { operation: "updated", customKey: "g", kind: "job", id: "new-1", changedFields: ["kind:generator→job"] },
      // rule 5: the generator carried the tag, its upcoming (and retrying) instance show as cancelled
      cancelled("i-up", null),
      cancelled("i-retry", null)
    ])
    expect(plan.itemWrites).toEqual([
      { _tag: "Replace", cancelIds: ["g1", "i-up", "i-retry", "i-queued"], trigger: expect.objectContaining({ id: "new-1", kind: "job" }) }
    ])
    // already cancelled by the item's own write
    expect(plan.cancelIds).toEqual([])
    expect(plan.refreshGeneratorIds).toEqual([])
  })
})

describe("rule 1: fields compared, changedFields names", () => {
  const oneShot: ReadonlyArray<readonly [name: string, item: Record<string, unknown>, stored: StoredOver, changed: ReadonlyArray<string>]> = [
    ["scheduledAt", { scheduledAt: "2030-01-01T00:00:01Z" }, {}, ["scheduledAt"]],
    ["scheduledAt to the millisecond", { scheduledAt: "2030-01-01T00:00:00.001Z" }, {}, ["scheduledAt"]],
    ["same instant, other notation", { scheduledAt: "2030-01-01T01:00:00+01:00" }, {}, []],
    ["url", { url: "https://example.com/other" }, {}, ["url"]],
    ["method", { method: "post" }, {}, ["method"]],
    ["method compared upper-cased", { method: "get" }, {}, []],
    ["headers", { headers: { a: "1" } }, {}, ["headers"]],
    ["header value", { headers: { a: "2" } }, { def: { headers: [["a", "1"]] } }, ["headers"]],
    ["header order does not count", { headers: { b: "2", a: "1" } }, { def: { headers: [["a", "1"], ["b", "2"]] } }, []],
    ["header name case does not count", { headers: { "X-A": "1" } }, { def: { headers: [["X-A", "1"]] } }, []],
    ["a stored content type counts as a header", { headers: { "Content-Type": "text/plain" } }, { def: { contentType: "text/plain" } }, []],
    ["a stored content type the item lacks", {}, { def: { contentType: "application/json" } }, ["headers"]],
    ["body", { body: { a: 1 } }, {}, ["body"]],
    ["same body bytes", { body: { _tag: "text", value: '{"a":1}' } }, { def: { body: new TextEncoder().encode('{"a":1}') } }, []],
    ["body removed", {}, { def: { body: new Uint8Array([1]) } }, ["body"]],
    ["title", { title: "x" }, {}, ["title"]],
    ["tags", { tags: ["urgent"] }, {}, ["tags"]],
    ["tag order does not count", { tags: ["b", "a"] }, { def: { tags: ["a", TAG, "b"] } }, []],
    ["retry set", { retry: {} }, {}, ["retry"]],
    ["retry same values", { retry: { strategy: "exponential" } }, { def: { retry: TRIGGER_DEFAULT_RETRY } }, []],
    ["retry changed", { retry: { maxAttempts: 5 } }, { def: { retry: TRIGGER_DEFAULT_RETRY } }, ["retry"]],
    ["retry omitted clears it", {}, { def: { retry: TRIGGER_DEFAULT_RETRY } }, ["retry"]],
    ["status not compared (skipped, future item)", {}, { status: "skipped" }, []],
    ["all, in the documented order",
      { scheduledAt: "2031-01-01", url: "x", method: "PUT", headers: { a: "1" }, body: 1, title: "t", tags: ["x"], retry: {} }, {},
      ["scheduledAt", "url", "method", "headers", "body", "title", "tags", "retry"]]
  ]
  it.each(oneShot)("one-shot: %s", (_name, item, stored, changed) => {
    const plan = declare([{ customKey: "a", scheduledAt: FUTURE, ...item }], [job("j1", "a", stored)])
    expect(plan.operations[0]).toEqual(
      changed.length === 0
        ? { operation: "unchanged", customKey: "a", kind: "job", id: "j1" }
        : { operation: "updated", customKey: "a", kind: "job", id: "j1", changedFields: changed }
    )
  })

  const recurring: ReadonlyArray<readonly [name: string, item: Record<string, unknown>, changed: ReadonlyArray<string>]> = [
    ["same value", { scheduledAt: CRON }, []],
    ["same expression, spaces", { scheduledAt: "cron( 0 9 * * * , UTC )" }, []],
    ["cronExpr", { scheduledAt: "cron(0 10 * * *)" }, ["cronExpr"]],
    ["tz", { scheduledAt: "cron(0 9 * * *, Europe/Paris)" }, ["tz"]],
    ["all, in the documented order",
      { scheduledAt: "cron(0 10 * * *, Asia/Tokyo)", url: "x", method: "PUT", headers: { a: "1" }, body: 1, title: "t", tags: ["x"], retry: {} },
      ["cronExpr", "tz", "url", "method", "headers", "body", "title", "tags", "retry"]]
  ]
  it.each(recurring)("generator: %s", (_name, item, changed) => {
    const plan = declare([{ customKey: "g", ...item }], [generator("g1", "g")])
    expect(plan.operations[0]).toEqual(
      changed.length === 0
        ? { operation: "unchanged", customKey: "g", kind: "generator", id: "g1" }
        : { operation: "updated", customKey: "g", kind: "generator", id: "g1", changedFields: changed }
    )
  })

  it("runMissed is not compared: a skipped trigger, item unchanged, runMissed true alone → stays skipped", () => {
    const plan = declare([{ customKey: "a", scheduledAt: PAST }], [job("j1", "a", { status: "skipped", scheduledAtMs: PAST_MS })], {
      runMissed: true
    })
    expect(plan.operations).toEqual([{ operation: "unchanged", customKey: "a", kind: "job", id: "j1" }])
    expect(plan.itemWrites).toEqual([])
  })

  it("…changing another field revives it: status follows runMissed again", () => {
    const plan = declare([{ customKey: "a", scheduledAt: PAST, title: "x" }], [job("j1", "a", { status: "skipped", scheduledAtMs: PAST_MS })], {
      runMissed: true
    })
    expect(plan.itemWrites).toEqual([{ _tag: "Update", trigger: expect.objectContaining({ id: "j1", status: "registered" }) }])
  })
})

describe("rule 2 and 6: what gets no entry", () => {
  it("a replaced trigger, and the queued instances of a cancelled generator, get none", () => {
    const triggers = [
      job("j1", "a", { status: "retrying" }),
      generator("g1", "gone"),
      instance("q1", "g1", "queued")
    ]
    const plan = declare([{ customKey: "a", scheduledAt: FUTURE, title: "x" }], triggers)
    expect(plan.operations).toEqual([
      { operation: "updated", customKey: "a", kind: "job", id: "new-1", changedFields: ["title"] },
      cancelled("g1", "gone", "generator")
    ])
    expect(plan.cancelIds).toEqual(["g1", "q1"])
  })
})

describe("rule 3: a now-based scheduledAt is recomputed on every call", () => {
  const stored = job("j1", "a", { scheduledAtMs: NOW - 60_000 })

  it.each(["now", "now | add 1h"])("%s while pending: a later call reports it updated (scheduledAt)", (scheduledAt) => {
    const plan = declare([{ customKey: "a", scheduledAt }], [stored])
    expect(plan.operations).toEqual([{ operation: "updated", customKey: "a", kind: "job", id: "j1", changedFields: ["scheduledAt"] }])
    // now-based: never skipped, even when in the past
    expect(plan.itemWrites[0]).toMatchObject({ _tag: "Update", trigger: { status: "registered" } })
  })

  it("scheduledAt absent is now", () => {
    expect(declare([{ customKey: "a" }], [stored]).operations[0]).toMatchObject({ operation: "updated", changedFields: ["scheduledAt"] })
  })

  it("once due (queued), the next call adds a new one", () => {
    const plan = declare([{ customKey: "a" }], [job("j1", "a", { status: "queued" })])
    expect(plan.operations).toEqual([{ operation: "added", customKey: "a", kind: "job", id: "new-1" }])
    expect(plan.cancelIds).toEqual([])
  })
})

describe("rule 4: cancelled by each call", () => {
  it("triggers with the tag whose key is not in items (one-shots and generators)", () => {
    const plan = declare([{ customKey: "keep", scheduledAt: FUTURE }], [
      job("j-keep", "keep"),
      job("j-gone", "gone"),
      job("j-skipped", "old", { status: "skipped" }),
      job("j-retrying", "older", { status: "retrying" }),
      generator("g-gone", "gen")
    ])
    expect(plan.operations.slice(1)).toEqual([
      cancelled("j-gone", "gone"),
      cancelled("j-skipped", "old"),
      cancelled("j-retrying", "older"),
      cancelled("g-gone", "gen", "generator")
    ])
    expect(plan.cancelIds).toEqual(["j-gone", "j-skipped", "j-retrying", "g-gone"])
  })

  it("every keyless pending trigger with the tag; keyless items are re-created with new ids", () => {
    const plan = declare([{ scheduledAt: FUTURE }], [job("j-keyless", null), generator("g-keyless", null)])
    expect(plan.operations).toEqual([
      { operation: "added", customKey: null, kind: "job", id: "new-1" },
      cancelled("j-keyless", null),
      cancelled("g-keyless", null, "generator")
    ])
  })

  it("queued one-shots whose key is not in items (keyless ones too); a queued one whose key is in items stays (rule 8)", () => {
    const plan = declare([{ customKey: "present", scheduledAt: FUTURE }], [
      job("q-absent", "absent", { status: "queued" }),
      job("q-keyless", null, { status: "queued" }),
      job("q-present", "present", { status: "queued" })
    ])
    expect(plan.operations).toEqual([
      { operation: "added", customKey: "present", kind: "job", id: "new-1" },
      cancelled("q-absent", "absent"),
      cancelled("q-keyless", null)
    ])
    expect(plan.cancelIds).toEqual(["q-absent", "q-keyless"])
  })

  it("the upcoming and queued instances of a cancelled generator", () => {
    const plan = declare([], [generator("g1", "g"), instance("up", "g1", "registered"), instance("q", "g1", "queued")])
    expect(plan.operations).toEqual([cancelled("up", null), cancelled("g1", "g", "generator")])
    expect(plan.cancelIds).toEqual(["g1", "up", "q"])
  })

  it("[] cancels every cancellable trigger with the tag", () => {
    const plan = declare([], [job("a", "a"), job("b", null, { status: "skipped" }), job("c", "c", { status: "retrying" })])
    expect(plan.summary).toEqual({ unchanged: 0, added: 0, skipped: 0, updated: 0, cancelled: 3 })
  })

  it("running, completed and cancelled triggers, and triggers without the tag, are never touched", () => {
    const plan = declare([], [
      job("r", "r", { status: "running" }),
      job("c", "c", { status: "completed" }),
      job("x", "x", { status: "cancelled" }),
      generator("gx", "gx", { status: "cancelled" }),
      job("other", "o", { def: { tags: ["other"] } }),
      job("other-queued", null, { status: "queued", def: { tags: ["other"] } }),
      generator("g-other", "go", { def: { tags: ["other"] } })
    ])
    expect(plan.operations).toEqual([])
    expect(plan.cancelIds).toEqual([])
  })
})

describe("rule 5: every generator carrying the tag has its upcoming instance cancelled and re-created", () => {
  it("unchanged generators too; a retrying instance too; entries kind job, customKey null", () => {
    const triggers = [
      generator("g1", "g1"),
      instance("g1-up", "g1", "registered"),
      instance("g1-retry", "g1", "retrying"),
      instance("g1-queued", "g1", "queued"),
      instance("g1-running", "g1", "running")
    ]
    const plan = declare([{ customKey: "g1", scheduledAt: CRON }], triggers)
    expect(plan.operations).toEqual([
      { operation: "unchanged", customKey: "g1", kind: "generator", id: "g1" },
      cancelled("g1-up", null),
      cancelled("g1-retry", null)
    ])
    // queued and running instances of a kept generator stay (Recurring behaviour 4)
    expect(plan.cancelIds).toEqual(["g1-up", "g1-retry"])
    expect(plan.refreshGeneratorIds).toEqual(["g1"])
    expect(plan.summary.cancelled).toBe(2)
  })

  it("an instance that does not carry the tag (its generator got it later) is still replaced", () => {
    const triggers = [generator("g1", "g"), instance("up", "g1", "registered", { def: { tags: [] } })]
    const plan = declare([{ customKey: "g", scheduledAt: CRON }], triggers)
    expect(plan.operations[1]).toEqual(cancelled("up", null))
  })

  it("a queued instance carrying the tag whose generator is not declared here (no longer tagged or active) is a queued keyless one-shot: cancelled", () => {
    const plan = declare([], [instance("orphan", "g-elsewhere", "queued")])
    expect(plan.operations).toEqual([cancelled("orphan", null)])
  })
})

describe("rule 7: past-dated one-shots", () => {
  const rows: ReadonlyArray<readonly [name: string, scheduledAt: string, runMissed: boolean, operation: string, status: string]> = [
    ["past absolute", PAST, false, "skipped", "skipped"],
    ["the current instant counts as past (milliseconds dropped)", "2025-06-01T12:00:00.999Z", false, "skipped", "skipped"],
    ["one second later is future", "2025-06-01T12:00:01.000Z", false, "added", "registered"],
    ["past with runMissed", PAST, true, "added", "registered"],
    ["now-based in the past", "now | subtract 1h", false, "added", "registered"],
    ["now", "now", false, "added", "registered"],
    ["generators are not affected", CRON, false, "added", "active"]
  ]
  it.each(rows)("%s → %s", (_name, scheduledAt, runMissed, operation, status) => {
    const plan = declare([{ customKey: "a", scheduledAt }], [], { runMissed })
    expect(plan.operations[0]!.operation).toBe(operation)
    expect(plan.itemWrites[0]!.trigger.status).toBe(status)
  })

  it("moving a trigger into the past without runMissed makes it skipped but its entry says updated", () => {
    const plan = declare([{ customKey: "a", scheduledAt: PAST }], [job("j1", "a")])
    expect(plan.operations).toEqual([{ operation: "updated", customKey: "a", kind: "job", id: "j1", changedFields: ["scheduledAt"] }])
    expect(plan.itemWrites).toEqual([{ _tag: "Update", trigger: expect.objectContaining({ id: "j1", status: "skipped" }) }])
  })

  it("moving it into the past with runMissed keeps it registered (fires right away)", () => {
    const plan = declare([{ customKey: "a", scheduledAt: PAST }], [job("j1", "a")], { runMissed: true })
    expect(plan.itemWrites[0]!.trigger.status).toBe("registered")
  })

  it("a kind switch into a past one-shot is updated and stored skipped", () => {
    const plan = declare([{ customKey: "g", scheduledAt: PAST }], [generator("g1", "g")])
    expect(plan.operations[0]).toMatchObject({ operation: "updated", changedFields: ["kind:generator→job"] })
    expect(plan.itemWrites[0]!.trigger.status).toBe("skipped")
  })
})

describe("rule 8: a customKey matches only pending triggers", () => {
  const rows: ReadonlyArray<readonly [status: StoredTrigger["status"], scheduledAt: string, runMissed: boolean, operation: string]> = [
    ["queued", FUTURE, false, "added"],
    ["running", FUTURE, false, "added"],
    ["completed", "now", false, "added"],
    ["cancelled", PAST, true, "added"],
    ["completed", PAST, false, "skipped"]
  ]
  it.each(rows)("old trigger %s, item %s (runMissed %s) → %s with a new id; the old one is not cancelled", (status, scheduledAt, runMissed, operation) => {
    const plan = declare([{ customKey: "a", scheduledAt }], [job("old", "a", { status })], { runMissed })
    expect(plan.operations).toEqual([{ operation, customKey: "a", kind: "job", id: "new-1" }])
    expect(plan.cancelIds).toEqual([])
  })
})

describe("rule 9: keys are matched only among triggers that carry the tag", () => {
  it("a pending trigger with the same key outside the tag is not seen: a second trigger is created", () => {
    const plan = declare([{ customKey: "a", scheduledAt: FUTURE }], [
      generator("g-outside", "a", { def: { tags: ["other"] } }),
      job("j-outside", "a", { def: { tags: [] } })
    ])
    expect(plan.operations).toEqual([{ operation: "added", customKey: "a", kind: "job", id: "new-1" }])
    expect(plan.cancelIds).toEqual([])
  })

  // two pending owners carrying the tag: one created outside any tag (later given the tag), one
  // created by /declare in this tag (keyScope): at most one of each (schema.ts migration 3)
  const rows: ReadonlyArray<readonly [name: string, item: string, outside: StoredTrigger, inTag: StoredTrigger, match: string, others: ReadonlyArray<string>]> = [
    ["same kind first (the unscoped one)", FUTURE, job("u", "a"), generator("s", "a", { keyScope: TAG }), "u", ["unchanged job a", "cancelled generator a"]],
    ["same kind first (the scoped one)", CRON, job("u", "a"), generator("s", "a", { keyScope: TAG }), "s", ["unchanged generator a", "cancelled job a"]],
    ["both of the kind: the one created in this tag", "2031-01-01T00:00:00Z", job("u", "a"), job("s", "a", { keyScope: TAG }), "s", ["updated job a [scheduledAt]", "cancelled job a"]],
    ["neither of the kind: the one created in this tag is replaced (its place in the tag is taken)", CRON, job("u", "a"), job("s", "a", { keyScope: TAG }), "",
      ["updated generator a [kind:job→generator]", "cancelled job a"]]
  ]
  it.each(rows)("%s", (_, scheduledAt, outside, inTag, match, lines) => {
    const plan = declare([{ customKey: "a", scheduledAt }], [outside, inTag])
    expect(plan.operations.map((e) => `${e.operation} ${e.kind} ${e.customKey}${e.changedFields ? ` [${e.changedFields.join(",")}]` : ""}`)).toEqual(lines)
    if (match !== "") expect(plan.operations[0]!.id).toBe(match)
    else expect(plan.itemWrites).toEqual([expect.objectContaining({ _tag: "Replace", cancelIds: ["s"] })])
  })
})

describe("rule 10: an empty-string key is never matched later", () => {
  it("an item with an empty key is keyless; a stored empty key is keyless, so cancelled", () => {
    const plan = declare([{ customKey: "", scheduledAt: FUTURE }], [job("j-empty", "")])
    expect(plan.operations).toEqual([
      { operation: "added", customKey: null, kind: "job", id: "new-1" },
      cancelled("j-empty", null)
    ])
  })
})

describe("rule 11: errors in any item are found before anything is planned", () => {
  it("a bad last item rejects the whole call", () => {
    const decoded = decodeDeclareBody({
      tag: TAG,
      items: [{ url: URL, customKey: "ok" }, { url: URL, customKey: "bad", scheduledAt: "later" }]
    })
    if (decoded._tag !== "Ok") throw new Error("shape")
    expect(validateDeclareBody(decoded.value, NOW)).toEqual({ _tag: "Invalid", message: "Item bad: Invalid date: later" })
  })

  it("resending the same call after it was applied changes nothing but the upcoming instances (rule 5)", () => {
    const list = [
      { customKey: "a", scheduledAt: FUTURE, headers: { "X-A": "1" }, body: { x: 1 }, tags: ["z"], retry: {} },
      { customKey: "p", scheduledAt: PAST },
      { customKey: "g", scheduledAt: "cron(*/5 * * * *, Europe/Paris)", title: "café" }
    ]
    const first = declare(list, [])
    const applied: ReadonlyArray<StoredTrigger> = first.itemWrites.map(({ trigger }) => ({
      id: trigger.id,
      kind: trigger.kind,
      status: trigger.status,
      generatorId: null,
      definition: trigger.definition,
      scheduledAtMs: trigger.schedule._tag === "Once" ? trigger.schedule.fireAtMs : null,
      cron: trigger.schedule._tag === "Cron" ? { cronExpr: trigger.schedule.cronExpr, cronTz: trigger.schedule.cronTz } : null
    }))
    const second = declare(list, [...applied, instance("up", "new-3", "registered")])
    expect(second.operations).toEqual([
      { operation: "unchanged", customKey: "a", kind: "job", id: "new-1" },
      { operation: "unchanged", customKey: "p", kind: "job", id: "new-2" },
      { operation: "unchanged", customKey: "g", kind: "generator", id: "new-3" },
      cancelled("up", null)
    ])
    expect(second.itemWrites).toEqual([])
  })
})

describe("rule 12 and the response: no quota in the plan; summary and operations order", () => {
  it("items in request order, then cancelled one-shots and instances, then cancelled generators", () => {
    const triggers = [
      generator("g-old", "g-old"),
      job("j-old", "j-old"),
      generator("g-keep", "g-keep"),
      instance("g-keep-up", "g-keep", "registered"),
      job("j-upd", "j-upd"),
      job("keyless", null)
    ]
    const plan = declare([
      { customKey: "new", scheduledAt: FUTURE },
      { customKey: "g-keep", scheduledAt: CRON },
      { customKey: "past", scheduledAt: PAST },
      { customKey: "j-upd", scheduledAt: FUTURE, method: "DELETE" }
    ], triggers)
    expect(plan.operations).toEqual([
      { operation: "added", customKey: "new", kind: "job", id: "new-1" },
      { operation: "unchanged", customKey: "g-keep", kind: "generator", id: "g-keep" },
      { operation: "skipped", customKey: "past", kind: "job", id: "new-2" },
      { operation: "updated", customKey: "j-upd", kind: "job", id: "j-upd", changedFields: ["method"] },
      cancelled("j-old", "j-old"),
      cancelled("g-keep-up", null),
      cancelled("keyless", null),
      cancelled("g-old", "g-old", "generator")
    ])
    expect(plan.summary).toEqual({ unchanged: 1, added: 1, skipped: 1, updated: 1, cancelled: 4 })
    expect(Object.keys(plan).sort()).toEqual(["cancelIds", "itemWrites", "operations", "refreshGeneratorIds", "summary"])
  })

  it("triggers read twice (by tag and as instances) count once", () => {
    const up = instance("up", "g1", "registered")
    const plan = declare([{ customKey: "g", scheduledAt: CRON }], [generator("g1", "g"), up, up])
    expect(plan.operations).toEqual([{ operation: "unchanged", customKey: "g", kind: "generator", id: "g1" }, cancelled("up", null)])
  })
})
