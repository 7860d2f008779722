// POST /bulk as pure functions: the body's shape and checks (docs/declare-and-bulk.md "Errors"), what
// the store reads, upserts matched across the project, the cancels forms, silent skips, and the
// response (docs/declare-and-bulk.md "POST /bulk": upserts in request order, then one entry per
// cancelled trigger).
import { describe, expect, it } from "vitest"
import { bulkLookups, decodeBulkBody, planBulk, validateBulkBody } from "../../src/domain/bulk.ts"
import type { BulkPlan, CancelTarget } from "../../src/domain/bulk.ts"
import type { Item } from "../../src/domain/item.ts"
import type { StoredTrigger } from "../../src/domain/itemMatch.ts"
import type { TriggerDefinition } from "../../src/domain/trigger.ts"

const NOW = Date.parse("2025-06-01T12:00:00.000Z")
const URL = "https://example.com/hook"
const FUTURE = "2030-01-01T00:00:00.000Z"
const FUTURE_MS = Date.parse(FUTURE)
const PAST = "2020-01-01T00:00:00.000Z"
const CRON = "cron(0 9 * * *)"
const ID_A = "01890a5d-ac96-774b-bcce-b302099a8057"
const ID_B = "01890a5d-ac96-774b-bcce-b302099a8058"

/** A /bulk body through decoding and validation: the result, "Shape", or the 400 message. */
const read = (json: unknown) => {
  const decoded = decodeBulkBody(json)
  if (decoded._tag === "Shape") return "Shape"
  const validated = validateBulkBody(decoded.value, NOW)
  return validated._tag === "Ok" ? validated : validated.message
}

const valid = (json: unknown): { readonly upserts: ReadonlyArray<Item>; readonly cancels: ReadonlyArray<CancelTarget> } => {
  const result = read(json)
  if (typeof result === "string") throw new Error(result)
  return result
}

const definition = (over: Partial<TriggerDefinition> = {}): TriggerDefinition => ({
  url: URL, method: "GET", headers: [], body: null, contentType: null, title: null, tags: [], customKey: null, retry: null, ...over
})
type StoredOver = Partial<Omit<StoredTrigger, "definition">> & { readonly def?: Partial<TriggerDefinition> }
const job = (id: string, customKey: string | null, over: StoredOver = {}): StoredTrigger => ({
  id, kind: "job", status: "registered", generatorId: null, scheduledAtMs: FUTURE_MS, cron: null, ...over,
  definition: definition({ customKey, ...over.def })
})
const generator = (id: string, customKey: string | null, over: StoredOver = {}): StoredTrigger => ({
  id, kind: "generator", status: "active", generatorId: null, scheduledAtMs: null, cron: { cronExpr: "0 9 * * *", cronTz: "UTC" }, ...over,
  definition: definition({ customKey, ...over.def })
})
const instance = (id: string, generatorId: string, status: StoredTrigger["status"], over: StoredOver = {}): StoredTrigger =>
  job(id, null, { generatorId, status, ...over })

const bulk = (json: { upserts?: ReadonlyArray<Record<string, unknown>>; cancels?: ReadonlyArray<unknown> }, triggers: ReadonlyArray<StoredTrigger>): BulkPlan => {
  const { upserts, cancels } = valid({ ...json, upserts: (json.upserts ?? []).map((u) => ({ url: URL, ...u })) })
  let n = 0
  return planBulk({ upserts, cancels, nowMs: NOW, triggers, newId: () => `new-${++n}` })
}
const cancelled = (id: string, customKey: string | null, kind: "job" | "generator" = "job") =>
  ({ operation: "cancelled", customKey, kind, id })

describe("decodeBulkBody: empty-body 400", () => {
  const shapes: ReadonlyArray<readonly [name: string, body: unknown]> = [
    ["not an object", []],
    ["null", null],
    ["upserts not a list", { upserts: {} }],
    ["upserts null", { upserts: null }],
    ["cancels not a list", { cancels: "id" }],
    ["cancels null", { cancels: null }],
    ["an upsert without url", { upserts: [{ customKey: "k" }] }],
    ["an upsert with a null field", { upserts: [{ url: URL, title: null }] }],
    ["a cancels entry a number", { cancels: [1] }],
    ["a cancels entry null", { cancels: [null] }],
    ["a cancels entry a list", { cancels: [[ID_A]] }],
    ["a cancels entry {}", { cancels: [{}] }],
    ["a cancels entry with only unknown fields", { cancels: [{ key: "k" }] }],
    ["id a number", { cancels: [{ id: 1 }] }],
    ["id null", { cancels: [{ id: null }] }],
    ["customKey a number", { cancels: [{ customKey: 1 }] }],
    ["tag a list", { cancels: [{ tag: ["a"] }] }],
    ["id and tag together", { cancels: [{ id: ID_A, tag: "t" }] }],
    ["customKey and tag together", { cancels: [{ customKey: "k", tag: "t" }] }],
    ["id with a null tag", { cancels: [{ id: ID_A, tag: null }] }]
  ]
  it.each(shapes)("%s", (_name, body) => {
    expect(read(body)).toBe("Shape")
  })

  // the reason is the Timewheel-Error hint of the empty 400 (docs/errors.md "Error hints")
  it.each([
    [{ upserts: {} }, "upserts must be a list"],
    [{ upserts: [{ url: URL }, { customKey: "k" }] }, "upserts[1].url is required (a string)"],
    [{ upserts: [{ url: URL, title: null }] }, "upserts[0].title must be a string, got null"],
    [{ cancels: [ID_A, 1] }, "cancels[1] must be a trigger id, or an object with exactly one of id, customKey, tag"],
    [{ cancels: [{ id: ID_A, tag: "t" }] }, "cancels[0] must be a trigger id, or an object with exactly one of id, customKey, tag"],
    [{ cancels: [{ customKey: 1 }] }, "cancels[0].customKey must be a string, got a number"]
  ] as const)("%j names the value: %s", (body, reason) => {
    expect(decodeBulkBody(body)).toEqual({ _tag: "Shape", reason })
  })

  const accepted: ReadonlyArray<readonly [name: string, body: unknown, cancels: ReadonlyArray<CancelTarget>]> = [
    ["{} is valid", {}, []],
    ["empty lists", { upserts: [], cancels: [] }, []],
    ["a string is an id", { cancels: [ID_A] }, [{ _tag: "Id", id: ID_A }]],
    ["{id}", { cancels: [{ id: ID_A }] }, [{ _tag: "Id", id: ID_A }]],
    ["{customKey}", { cancels: [{ customKey: "k" }] }, [{ _tag: "CustomKey", customKey: "k" }]],
    ["{tag}", { cancels: [{ tag: "t" }] }, [{ _tag: "Tag", tag: "t" }]],
    ["unknown extra fields ignored", { cancels: [{ tag: "t", note: null }], extra: 1 }, [{ _tag: "Tag", tag: "t" }]],
    ["runMissed is no /bulk field: ignored", { runMissed: "yes" }, []]
  ]
  it.each(accepted)("accepted: %s", (_name, body, cancels) => {
    const result = read(body)
    expect(typeof result === "string" ? result : result.cancels).toEqual(cancels)
  })
})

describe("validateBulkBody: messages", () => {
  const rows: ReadonlyArray<readonly [name: string, body: unknown, message: string]> = [
    ["repeated key", { upserts: [{ url: URL, customKey: "a" }, { url: URL, customKey: "a" }] }, "Duplicate customKey in upserts: a"],
    ["repeated tag", { upserts: [{ url: URL, customKey: "a", tags: ["x", "x"] }] }, 'Upsert a: duplicate tag "x" in tags'],
    ["keyless", { upserts: [{ url: URL, scheduledAt: "soon" }] }, "Upsert (no customKey): Invalid date: soon"],
    ["scheduledAt", { upserts: [{ url: URL, customKey: "a", scheduledAt: "now | add 1y" }] }, "Upsert a: Invalid duration: 1y"],
    ["NUL in an upsert", { upserts: [{ url: URL, customKey: "a", headers: { x: "\u0000" } }] }, "Upsert a: headers must not contain NUL characters"],
    ["NUL in a cancel target", { cancels: [{ tag: "ok" }, { customKey: "k\u0000" }] }, "cancels[1].customKey must not contain NUL characters"],
    ["NUL in a string cancel", { cancels: ["\u0000"] }, "cancels[0].id must not contain NUL characters"],
    ["upserts checked before cancels", { upserts: [{ url: URL, scheduledAt: "x" }], cancels: [{ tag: "\u0000" }] },
      "Upsert (no customKey): Invalid date: x"]
  ]
  it.each(rows)("%s", (_name, body, message) => {
    expect(read(body)).toBe(message)
  })

  it("no tag is added to upserts", () => {
    expect(valid({ upserts: [{ url: URL, tags: ["a"] }] }).upserts[0]!.definition.tags).toEqual(["a"])
  })
})

describe("bulkLookups: what the store reads", () => {
  it("UUID ids only, keys of upserts and cancels, tags", () => {
    const { upserts, cancels } = valid({
      upserts: [{ url: URL, customKey: "u1" }, { url: URL }, { url: URL, customKey: "both" }],
      cancels: [ID_A, { id: "not-a-uuid" }, { id: ID_A }, { customKey: "both" }, { customKey: "" }, { tag: "t" }, { tag: "t" }]
    })
    expect(bulkLookups(upserts, cancels)).toEqual({ ids: [ID_A], customKeys: ["u1", "both"], tags: ["t"] })
  })
})

describe("upserts: matched by customKey across the whole project", () => {
  it("none → added / skipped (no runMissed in /bulk)", () => {
    const plan = bulk({ upserts: [{ customKey: "a", scheduledAt: FUTURE }, { customKey: "b", scheduledAt: PAST }, { scheduledAt: CRON }] }, [])
    expect(plan.operations).toEqual([
      { operation: "added", customKey: "a", kind: "job", id: "new-1" },
      { operation: "skipped", customKey: "b", kind: "job", id: "new-2" },
      { operation: "added", customKey: null, kind: "generator", id: "new-3" }
    ])
  })

  it("whatever tags the trigger carries; no tag is needed", () => {
    const plan = bulk({ upserts: [{ customKey: "a", scheduledAt: FUTURE, tags: ["x"] }] }, [job("j1", "a", { def: { tags: ["x"] } })])
    expect(plan.operations).toEqual([{ operation: "unchanged", customKey: "a", kind: "job", id: "j1" }])
  })

  it("differences → updated in place with changedFields", () => {
    const plan = bulk({ upserts: [{ customKey: "a", scheduledAt: FUTURE, method: "post", tags: ["x"] }] }, [job("j1", "a", { status: "skipped" })])
    expect(plan.operations).toEqual([{ operation: "updated", customKey: "a", kind: "job", id: "j1", changedFields: ["method", "tags"] }])
    expect(plan.itemWrites).toEqual([{ _tag: "Update", trigger: expect.objectContaining({ id: "j1", status: "registered" }) }])
  })

  it("retrying → updated with a new id, the old one cancelled without entry", () => {
    const plan = bulk({ upserts: [{ customKey: "a", scheduledAt: FUTURE, title: "x" }] }, [job("j1", "a", { status: "retrying" })])
    expect(plan.operations).toEqual([{ operation: "updated", customKey: "a", kind: "job", id: "new-1", changedFields: ["title"] }])
    expect(plan.itemWrites).toEqual([{ _tag: "Replace", cancelIds: ["j1"], trigger: expect.objectContaining({ id: "new-1" }) }])
  })

  it("a generator edit does NOT replace its upcoming instance", () => {
    const plan = bulk({ upserts: [{ customKey: "g", scheduledAt: "cron(0 10 * * *)" }] }, [generator("g1", "g"), instance("up", "g1", "registered")])
    expect(plan.operations).toEqual([{ operation: "updated", customKey: "g", kind: "generator", id: "g1", changedFields: ["cronExpr"] }])
    expect(plan.itemWrites).toEqual([{ _tag: "Update", trigger: expect.objectContaining({ id: "g1", status: "active" }) }])
    expect(plan.cancelIds).toEqual([])
  })

  it("kind switch generator → job: replaced; its upcoming instance is cancelled with it, queued and retrying ones stay", () => {
    const triggers = [generator("g1", "g"), instance("up", "g1", "registered"), instance("q", "g1", "queued"), instance("r", "g1", "retrying")]
    const plan = bulk({ upserts: [{ customKey: "g", scheduledAt: FUTURE }] }, triggers)
    expect(plan.operations).toEqual([
      { operation: "updated", customKey: "g", kind: "job", id: "new-1", changedFields: ["kind:generator→job"] },
      cancelled("up", null)
    ])
    expect(plan.itemWrites).toEqual([{ _tag: "Replace", cancelIds: ["g1", "up"], trigger: expect.objectContaining({ kind: "job" }) }])
  })

  it("a key owned only by a queued, running or completed trigger matches nothing", () => {
    const plan = bulk({ upserts: [{ customKey: "a", scheduledAt: FUTURE }] }, [job("q", "a", { status: "queued" }), job("c", "a", { status: "completed" })])
    expect(plan.operations).toEqual([{ operation: "added", customKey: "a", kind: "job", id: "new-1" }])
  })

  it("a key with two pending owners of one kind (docs/declare-and-bulk.md): the one created outside any tag, as /schedule edits", () => {
    const triggers = [job("declared", "a", { keyScope: "t" }), job("plain", "a"), generator("g", "a", { keyScope: "t" })]
    const plan = bulk({ upserts: [{ customKey: "a", scheduledAt: PAST }] }, triggers)
    expect(plan.operations).toEqual([{ operation: "updated", customKey: "a", kind: "job", id: "plain", changedFields: ["scheduledAt"] }])
    const generatorItem = bulk({ upserts: [{ customKey: "a", scheduledAt: CRON }] }, triggers)
    expect(generatorItem.operations[0]).toEqual({ operation: "unchanged", customKey: "a", kind: "generator", id: "g" })
  })

  it("keyless upserts never match; nothing else is cancelled by an upsert", () => {
    const plan = bulk({ upserts: [{ scheduledAt: FUTURE }] }, [job("j1", null)])
    expect(plan.operations).toEqual([{ operation: "added", customKey: null, kind: "job", id: "new-1" }])
    expect(plan.cancelIds).toEqual([])
  })
})

describe("cancels", () => {
  const triggers = [
    job("01890a5d-0000-7000-8000-000000000001", "one"),
    job("skipped", "skip", { status: "skipped" }),
    job("retrying", "retry", { status: "retrying", def: { tags: ["t"] } }),
    job("queued", "queued", { status: "queued", def: { tags: ["t"] } }),
    job("running", "run", { status: "running", def: { tags: ["t"] } }),
    job("done", "done", { status: "completed", def: { tags: ["t"] } }),
    job("gone", "gone", { status: "cancelled", def: { tags: ["t"] } }),
    generator("gen", "gen", { def: { tags: ["t"] } }),
    instance("gen-up", "gen", "registered"),
    instance("gen-queued", "gen", "queued", { def: { tags: ["t"] } }),
    instance("gen-retry", "gen", "retrying", { def: { tags: ["t"] } }),
    instance("gen-queued-untagged", "gen", "queued")
  ]
  const rows: ReadonlyArray<readonly [name: string, cancels: ReadonlyArray<unknown>, entries: ReadonlyArray<unknown>, ids: ReadonlyArray<string>]> = [
    ["a string is an id", ["01890a5d-0000-7000-8000-000000000001"],
      [cancelled("01890a5d-0000-7000-8000-000000000001", "one")], ["01890a5d-0000-7000-8000-000000000001"]],
    ["{id} of a skipped one-shot", [{ id: "skipped" }], [cancelled("skipped", "skip")], ["skipped"]],
    ["{id} of a retrying instance", [{ id: "gen-retry" }], [cancelled("gen-retry", null)], ["gen-retry"]],
    ["{id} of a generator: its upcoming instance goes with it, each with an entry", [{ id: "gen" }],
      [cancelled("gen-up", null), cancelled("gen", "gen", "generator")], ["gen", "gen-up"]],
    ["{customKey} of a generator", [{ customKey: "gen" }], [cancelled("gen-up", null), cancelled("gen", "gen", "generator")], ["gen", "gen-up"]],
    ["{customKey} of a retrying one-shot", [{ customKey: "retry" }], [cancelled("retrying", "retry")], ["retrying"]],
    ["{tag}: every cancellable trigger carrying it, a generator's queued and retrying instances included", [{ tag: "t" }],
      [cancelled("retrying", "retry"), cancelled("gen-up", null), cancelled("gen-queued", null), cancelled("gen-retry", null),
        cancelled("gen", "gen", "generator")],
      ["retrying", "gen", "gen-up", "gen-queued", "gen-retry"]],
    ["targets matching nothing are skipped silently", [{ id: ID_B }, "not-a-uuid", { customKey: "nobody" }, { tag: "none" }, { customKey: "" }], [], []],
    ["targets that can no longer be cancelled are skipped silently",
      [{ id: "queued" }, { id: "running" }, { id: "done" }, { id: "gone" }, { customKey: "queued" }, { customKey: "done" }], [], []],
    ["a trigger named twice is cancelled once", [{ id: "skipped" }, { customKey: "skip" }, "skipped"], [cancelled("skipped", "skip")], ["skipped"]],
    ["one-shots and instances first, then generators, each in target order",
      [{ customKey: "gen" }, { customKey: "retry" }, { id: "skipped" }],
      [cancelled("gen-up", null), cancelled("retrying", "retry"), cancelled("skipped", "skip"), cancelled("gen", "gen", "generator")],
      ["gen", "gen-up", "retrying", "skipped"]]
  ]
  it.each(rows)("%s", (_name, cancels, entries, ids) => {
    const plan = bulk({ cancels }, triggers)
    expect(plan.operations).toEqual(entries)
    expect(plan.cancelIds).toEqual(ids)
    expect(plan.itemWrites).toEqual([])
  })

  it("by key, an active generator is cancelled before a one-shot with the same key", () => {
    const plan = bulk({ cancels: [{ customKey: "k" }] }, [job("j", "k"), generator("g", "k")])
    expect(plan.operations).toEqual([cancelled("g", "k", "generator")])
  })
})

describe("an upsert and a cancel on the same trigger", () => {
  it("cancels apply first: the trigger is cancelled and the upsert adds a new one with the key", () => {
    const plan = bulk({ upserts: [{ customKey: "a", scheduledAt: FUTURE }], cancels: [{ customKey: "a" }] }, [job("j1", "a")])
    expect(plan.operations).toEqual([
      { operation: "added", customKey: "a", kind: "job", id: "new-1" },
      cancelled("j1", "a")
    ])
    expect(plan.cancelIds).toEqual(["j1"])
    expect(plan.itemWrites).toEqual([{ _tag: "Insert", trigger: expect.objectContaining({ id: "new-1" }) }])
  })

  it("a tag cancel does not reach the triggers the upserts create with that tag", () => {
    const plan = bulk({ upserts: [{ customKey: "a", scheduledAt: FUTURE, tags: ["t"] }], cancels: [{ tag: "t" }] }, [job("old", "old", { def: { tags: ["t"] } })])
    expect(plan.operations).toEqual([{ operation: "added", customKey: "a", kind: "job", id: "new-1" }, cancelled("old", "old")])
  })
})

describe("response (docs/declare-and-bulk.md)", () => {
  it("summary counts; upserts in request order, then one cancelled entry per trigger cancelled", () => {
    const plan = bulk({
      upserts: [
        { customKey: "upd", scheduledAt: FUTURE, title: "x" },
        { customKey: "new", scheduledAt: FUTURE },
        { customKey: "same", scheduledAt: FUTURE },
        { customKey: "past", scheduledAt: PAST }
      ],
      cancels: [{ customKey: "g" }, { customKey: "j" }]
    }, [job("upd", "upd"), job("same", "same"), generator("g", "g"), instance("g-up", "g", "registered"), job("j", "j")])
    expect(plan.operations).toEqual([
      { operation: "updated", customKey: "upd", kind: "job", id: "upd", changedFields: ["title"] },
      { operation: "added", customKey: "new", kind: "job", id: "new-1" },
      { operation: "unchanged", customKey: "same", kind: "job", id: "same" },
      { operation: "skipped", customKey: "past", kind: "job", id: "new-2" },
      cancelled("g-up", null),
      cancelled("j", "j"),
      cancelled("g", "g", "generator")
    ])
    expect(plan.summary).toEqual({ added: 1, updated: 1, unchanged: 1, skipped: 1, cancelled: 3 })
  })
})
