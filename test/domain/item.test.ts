// Items of /declare and /bulk as tables (docs/declare-and-bulk.md "Items", "The body", "Headers",
// "Errors"; docs/errors.md "Text the database cannot store"): JSON in, the stored definition or the
// API's empty-body 400 (Shape) or message out.
import { describe, expect, it } from "vitest"
import { decodeDeclareBody, decodeItem, decodeWith, validateDeclareBody } from "../../src/domain/item.ts"
import { parseScheduleValue } from "../../src/domain/schedule.ts"
import type { Item } from "../../src/domain/item.ts"
import { decodeLenientBase64, encodeItemBody } from "../../src/domain/itemBody.ts"
import { TRIGGER_DEFAULT_RETRY } from "../../src/domain/retry.ts"

const NOW = Date.parse("2025-06-01T12:00:00.000Z")
const text = (s: string) => new TextEncoder().encode(s)
const bytes = (...values: ReadonlyArray<number>) => new Uint8Array(values)

/** A /declare body through decoding and validation: the items, "Shape", or the 400 message. */
const declare = (json: unknown): ReadonlyArray<Item> | "Shape" | string => {
  const decoded = decodeDeclareBody(json)
  if (decoded._tag === "Shape") return "Shape"
  const validated = validateDeclareBody(decoded.value, NOW)
  return validated._tag === "Ok" ? validated.items : validated.message
}
const items = (...list: ReadonlyArray<unknown>) => declare({ tag: "t", items: list })
const only = (item: unknown): Item => {
  const result = items(item)
  if (typeof result === "string") throw new Error(`expected a valid item, got ${result}`)
  return result[0]!
}

describe("Body encoding (items)", () => {
  const rows: ReadonlyArray<readonly [name: string, body: unknown, expected: Uint8Array | null]> = [
    ["omitted", undefined, null],
    ["null", null, null],
    ["object", { b: 1, a: [true, null] }, text('{"b":1,"a":[true,null]}')],
    ["array", [1, "x", { y: 2 }], text('[1,"x",{"y":2}]')],
    ["number", 42, text("42")],
    ["fraction", 1.5, text("1.5")],
    ["boolean true", true, text("true")],
    ["boolean false", false, text("false")],
    ["string keeps its quotes", "hi", text('"hi"')],
    ["empty string is JSON too", "", text('""')],
    ["text: UTF-8, no quotes", { _tag: "text", value: "héllo ✓" }, text("héllo ✓")],
    ["text: other fields ignored", { _tag: "text", value: "x", extra: 1 }, text("x")],
    ["empty text: no body", { _tag: "text", value: "" }, null],
    ["base64", { _tag: "base64", value: "aGVsbG8=" }, text("hello")],
    ["base64 unpadded", { _tag: "base64", value: "aGVsbG8" }, text("hello")],
    ["base64 binary", { _tag: "base64", value: "AP8=" }, bytes(0, 255)],
    ["base64: whitespace skipped", { _tag: "base64", value: " aGVs\r\n\tbG8= " }, text("hello")],
    ["base64: other characters skipped", { _tag: "base64", value: "aG!V*s~bG.8" }, text("hello")],
    ["base64: url-safe - and _ are outside the alphabet, skipped", { _tag: "base64", value: "-aGVs_bG8-" }, text("hello")],
    ["base64: + and / are in it", { _tag: "base64", value: "+/+/" }, bytes(251, 255, 191)],
    ["base64: data ends at the padding", { _tag: "base64", value: "aGk=aGk=" }, text("hi")],
    ["empty base64: no body", { _tag: "base64", value: "" }, null],
    ["base64 of nothing but skipped characters: no body", { _tag: "base64", value: "!!-_ \n" }, null],
    ["base64 of one character (not a byte): no body", { _tag: "base64", value: "a" }, null],
    ["other _tag: JSON as written", { _tag: "json", value: "x" }, text('{"_tag":"json","value":"x"}')],
    ["_tag is case-sensitive", { _tag: "Text", value: "x" }, text('{"_tag":"Text","value":"x"}')],
    ["text with a non-string value: JSON", { _tag: "text", value: 5 }, text('{"_tag":"text","value":5}')],
    ["text without value: JSON", { _tag: "text" }, text('{"_tag":"text"}')],
    ["base64 with a null value: JSON", { _tag: "base64", value: null }, text('{"_tag":"base64","value":null}')],
    ["a tagged object nested in JSON stays JSON", { a: { _tag: "text", value: "x" } }, text('{"a":{"_tag":"text","value":"x"}}')],
    ["NUL in a JSON string is JSON text (stored as bytes)", { a: "\u0000" }, text('{"a":"\\u0000"}')],
    ["NUL in text is a byte", { _tag: "text", value: "a\u0000b" }, bytes(97, 0, 98)]
  ]
  it.each(rows)("%s", (_name, body, expected) => {
    expect(encodeItemBody(body)).toEqual(expected)
    const item = only(body === undefined ? { url: "u" } : { url: "u", body })
    expect(item.definition.body).toEqual(expected)
    // no Content-Type is added, JSON included
    expect(item.definition.contentType).toBeNull()
    expect(item.definition.headers).toEqual([])
  })

  it("decodeLenientBase64 returns plain bytes", () => {
    expect(decodeLenientBase64("aGk=")).toEqual(bytes(104, 105))
  })
})

describe("Item headers rules", () => {
  it("names lowercased, values unchanged, nothing filtered, object order kept", () => {
    const headers = {
      "X-Custom": "A  b ",
      "TTR-Api-Key": "forwarded",
      Host: "other.example",
      "Content-Length": "5",
      "Content-Type": "application/json",
      Connection: "Upgrade",
      "Transfer-Encoding": "chunked"
    }
    expect(only({ url: "u", headers }).definition.headers).toEqual([
      ["x-custom", "A  b "],
      ["ttr-api-key", "forwarded"],
      ["host", "other.example"],
      ["content-length", "5"],
      ["content-type", "application/json"],
      ["connection", "Upgrade"],
      ["transfer-encoding", "chunked"]
    ])
  })

  it("names differing only in case are both kept", () => {
    expect(only({ url: "u", headers: { "X-A": "1", "x-a": "2" } }).definition.headers).toEqual([["x-a", "1"], ["x-a", "2"]])
  })
})

describe("shape: empty-body 400", () => {
  const ok = { tag: "t", items: [{ url: "u" }] }
  const withItem = (fields: Record<string, unknown>) => ({ tag: "t", items: [{ url: "u", ...fields }] })
  const rows: ReadonlyArray<readonly [name: string, body: unknown]> = [
    ["null", null],
    ["array", []],
    ["string", "x"],
    ["number", 1],
    ["tag missing", { items: [] }],
    ["items missing", { tag: "t" }],
    ["tag null", { tag: null, items: [] }],
    ["tag a number", { tag: 1, items: [] }],
    ["items null", { tag: "t", items: null }],
    ["items an object", { tag: "t", items: {} }],
    ["items a string", { tag: "t", items: "x" }],
    ["an item a number", { tag: "t", items: [1] }],
    ["an item null", { tag: "t", items: [null] }],
    ["an item an array", { tag: "t", items: [[]] }],
    ["url missing", { tag: "t", items: [{ customKey: "k" }] }],
    ["url missing in a later item", { tag: "t", items: [{ url: "u" }, { method: "GET" }] }],
    ["url null", withItem({ url: null })],
    ["url a number", withItem({ url: 1 })],
    ["scheduledAt null", withItem({ scheduledAt: null })],
    ["scheduledAt a number", withItem({ scheduledAt: 1_700_000_000_000 })],
    ["customKey null", withItem({ customKey: null })],
    ["customKey a number", withItem({ customKey: 7 })],
    ["method null", withItem({ method: null })],
    ["method a number", withItem({ method: 1 })],
    ["headers null", withItem({ headers: null })],
    ["headers an array", withItem({ headers: [["a", "b"]] })],
    ["headers a string", withItem({ headers: "a: b" })],
    ["a header value a number", withItem({ headers: { a: 1 } })],
    ["a header value null", withItem({ headers: { a: null } })],
    ["a header value a list", withItem({ headers: { a: ["1", "2"] } })],
    ["title null", withItem({ title: null })],
    ["title a number", withItem({ title: 1 })],
    ["tags null", withItem({ tags: null })],
    ["tags a string", withItem({ tags: "a,b" })],
    ["a tag a number", withItem({ tags: ["a", 1] })],
    ["a tag null", withItem({ tags: [null] })],
    ["retry null", withItem({ retry: null })],
    ["retry an array", withItem({ retry: [] })],
    ["retry a string", withItem({ retry: "exponential" })],
    ["retry.strategy unknown", withItem({ retry: { strategy: "sometimes" } })],
    ["retry.strategy upper-case", withItem({ retry: { strategy: "FIXED" } })],
    ["retry.strategy null", withItem({ retry: { strategy: null } })],
    ["retry.maxAttempts a string", withItem({ retry: { maxAttempts: "3" } })],
    ["retry.maxAttempts null (unlimited is not offered)", withItem({ retry: { maxAttempts: null } })],
    ["retry.initialDelaySeconds a string", withItem({ retry: { initialDelaySeconds: "30" } })],
    ["retry.maxDelaySeconds null", withItem({ retry: { maxDelaySeconds: null } })],
    ["retry.jitter a string", withItem({ retry: { jitter: "true" } })],
    ["retry.retryOn unknown", withItem({ retry: { retryOn: "always" } })],
    ["retry.retryOn null", withItem({ retry: { retryOn: null } })],
    ["runMissed the string true", { ...ok, runMissed: "true" }],
    ["runMissed null", { ...ok, runMissed: null }],
    ["runMissed a number", { ...ok, runMissed: 1 }]
  ]
  it.each(rows)("%s", (_name, body) => {
    expect(declare(body)).toBe("Shape")
  })

  const accepted: ReadonlyArray<readonly [name: string, body: unknown]> = [
    ["minimal", ok],
    ["no items", { tag: "t", items: [] }],
    ["unknown top-level fields ignored", { ...ok, extra: null, another: { x: 1 } }],
    ["unknown item fields ignored", withItem({ extra: null, scheduled_at: 5 })],
    ["unknown retry fields ignored", withItem({ retry: { extra: null } })],
    ["body null", withItem({ body: null })],
    ["runMissed true", { ...ok, runMissed: true }],
    ["empty headers and tags", withItem({ headers: {}, tags: [] })]
  ]
  it.each(accepted)("accepted: %s", (_name, body) => {
    expect(declare(body)).not.toBe("Shape")
  })

  it("runMissed is read as a JSON boolean, default false", () => {
    const read = (body: unknown) => {
      const decoded = decodeDeclareBody(body)
      return decoded._tag === "Ok" ? decoded.value.runMissed : "Shape"
    }
    expect(read(ok)).toBe(false)
    expect(read({ ...ok, runMissed: true })).toBe(true)
    expect(read({ ...ok, runMissed: false })).toBe(false)
  })

  it("decodeWith turns only shape mismatches into Shape", () => {
    expect(decodeWith(() => decodeItem({}))).toEqual({ _tag: "Shape", reason: "url is required (a string)" })
    expect(() => decodeWith(() => { throw new Error("bug") })).toThrow("bug")
  })
})

describe("a wrong shape names the value (docs/errors.md: the reason is the Timewheel-Error header)", () => {
  const reasonOf = (json: unknown) => {
    const decoded = decodeDeclareBody(json)
    return decoded._tag === "Shape" ? decoded.reason : "Ok"
  }
  it.each([
    ["not an object", [1], "body must be a JSON object, got a list"],
    ["no tag", { items: [] }, "tag is required (a string)"],
    ["tag null", { tag: null, items: [] }, "tag must be a string, got null"],
    ["items not a list", { tag: "t", items: {} }, "items must be a list, got an object"],
    ["an item not an object", { tag: "t", items: ["x"] }, "items[0] must be a JSON object, got a string"],
    ["an item without url", { tag: "t", items: [{ url: "u" }, { title: "x" }] }, "items[1].url is required (a string)"],
    ["a header that is not a string", { tag: "t", items: [{ url: "u", headers: { a: 1 } }] }, "items[0].headers must be an object of strings, got an object"],
    ["tags not strings", { tag: "t", items: [{ url: "u", tags: [1] }] }, "items[0].tags must be a list of strings, got a list"],
    ["a retry field of the wrong type", { tag: "t", items: [{ url: "u", retry: { maxAttempts: "3" } }] }, "items[0].retry.maxAttempts must be a number, got a string"],
    ["an unknown retryOn", { tag: "t", items: [{ url: "u", retry: { retryOn: "never" } }] }, "items[0].retry.retryOn must be one of network_only, 5xx_and_network, non_2xx, got a string"],
    ["runMissed not a boolean", { tag: "t", items: [], runMissed: "yes" }, "runMissed must be true or false, got a string"]
  ] as const)("%s → %s", (_what, json, reason) => {
    expect(reasonOf(json)).toBe(reason)
  })
})

describe("defaults and normalisation", () => {
  it("an item with only a url", () => {
    expect(only({ url: "https://example.com/x?y=1" })).toEqual({
      schedule: { _tag: "Once", fireAtMs: NOW, nowBased: true },
      definition: {
        url: "https://example.com/x?y=1",
        method: "GET",
        headers: [],
        body: null,
        contentType: null,
        title: null,
        tags: ["t"],
        customKey: null,
        retry: null
      }
    })
  })

  const methods: ReadonlyArray<readonly [string, string]> = [
    ["post", "POST"],
    ["pAtCh", "PATCH"],
    ["m-search", "M-SEARCH"],
    ["PROPFIND", "PROPFIND"],
    // not validated
    ["not a method", "NOT A METHOD"],
    ["", ""]
  ]
  it.each(methods)("method %j is stored as %j", (method, stored) => {
    expect(only({ url: "u", method }).definition.method).toBe(stored)
  })

  it("url is not validated as an absolute URL, and kept as written", () => {
    expect(only({ url: " not a url " }).definition.url).toBe(" not a url ")
  })

  it("title kept as written (non-ASCII too); an empty title is no title", () => {
    expect(only({ url: "u", title: "Relance café ✓" }).definition.title).toBe("Relance café ✓")
    expect(only({ url: "u", title: "" }).definition.title).toBeNull()
  })

  it("an empty customKey is no key", () => {
    expect(only({ url: "u", customKey: "" }).definition.customKey).toBeNull()
    expect(only({ url: "u", customKey: "k" }).definition.customKey).toBe("k")
  })

  it("tags are not checked for format or count; the declared tag is appended unless listed", () => {
    const many = Array.from({ length: 12 }, (_, i) => `Tag ${i}!`)
    expect(only({ url: "u", tags: many }).definition.tags).toEqual([...many, "t"])
    expect(only({ url: "u", tags: ["t", "a"] }).definition.tags).toEqual(["t", "a"])
    expect(only({ url: "u", tags: ["a", "t"] }).definition.tags).toEqual(["a", "t"])
  })

  const schedules: ReadonlyArray<readonly [string, unknown]> = [
    ["2030-01-02T03:04:05.678Z", { _tag: "Once", fireAtMs: Date.parse("2030-01-02T03:04:05.678Z"), nowBased: false }],
    ["2020-01-01", { _tag: "Once", fireAtMs: Date.parse("2020-01-01T00:00:00Z"), nowBased: false }],
    ["now", { _tag: "Once", fireAtMs: NOW, nowBased: true }],
    ["now | add 1h", { _tag: "Once", fireAtMs: NOW + 3_600_000, nowBased: true }],
    ["now | subtract 1d", { _tag: "Once", fireAtMs: NOW - 86_400_000, nowBased: true }],
    ["2030-01-01T00:00:00Z | add 30m", { _tag: "Once", fireAtMs: Date.parse("2030-01-01T00:30:00Z"), nowBased: false }],
    ["cron(*/5 * * * *)", { _tag: "Cron", cronExpr: "*/5 * * * *", cronTz: "UTC" }],
    ["cron( */5 * * * * )", { _tag: "Cron", cronExpr: "*/5 * * * *", cronTz: "UTC" }],
    ["cron(@daily, Europe/Paris)", { _tag: "Cron", cronExpr: "0 0 * * *", cronTz: "Europe/Paris" }]
  ]
  it.each(schedules)("scheduledAt %j", (scheduledAt, expected) => {
    expect(only({ url: "u", scheduledAt }).schedule).toEqual(expected)
    expect(parseScheduleValue(scheduledAt, NOW)).toEqual({ _tag: "Ok", value: expected })
  })
})

describe("/declare checks, in order: the message of the first failure", () => {
  const rows: ReadonlyArray<readonly [name: string, list: ReadonlyArray<unknown>, message: string]> = [
    ["repeated key", [{ url: "u", customKey: "a" }, { url: "u", customKey: "b" }, { url: "u", customKey: "a" }],
      "Duplicate customKey in items: a"],
    ["the first repeated key in request order", [
      { url: "u", customKey: "b" }, { url: "u", customKey: "a" }, { url: "u", customKey: "a" }, { url: "u", customKey: "b" }
    ], "Duplicate customKey in items: a"],
    ["the key check runs over all items before any item check", [
      { url: "u", customKey: "x", scheduledAt: "yesterday" }, { url: "u", customKey: "a" }, { url: "u", customKey: "a" }
    ], "Duplicate customKey in items: a"],
    ["repeated tag", [{ url: "u", customKey: "a", tags: ["x", "y", "x"] }], 'Item a: duplicate tag "x" in tags'],
    ["repeated tag, keyless item", [{ url: "u", tags: ["x", "x"] }], 'Item (no customKey): duplicate tag "x" in tags'],
    ["repeated tag, empty key", [{ url: "u", customKey: "", tags: ["x", "x"] }], 'Item (no customKey): duplicate tag "x" in tags'],
    ["tags are case-sensitive, but the first repeat is reported", [{ url: "u", customKey: "a", tags: ["X", "x", "y", "y"] }],
      'Item a: duplicate tag "y" in tags'],
    ["repeated tag before scheduledAt", [{ url: "u", customKey: "a", tags: ["x", "x"], scheduledAt: "soon" }],
      'Item a: duplicate tag "x" in tags'],
    ["items in request order", [
      { url: "u", customKey: "a", scheduledAt: "soon" }, { url: "u", customKey: "b", tags: ["x", "x"] }
    ], "Item a: Invalid date: soon"],
    ["Invalid date", [{ url: "u", customKey: "a", scheduledAt: "tomorrow" }], "Item a: Invalid date: tomorrow"],
    ["Invalid date: empty", [{ url: "u", customKey: "a", scheduledAt: "" }], "Item a: Invalid date: "],
    ["Invalid date: impossible day", [{ url: "u", customKey: "a", scheduledAt: "2030-02-30" }], "Item a: Invalid date: 2030-02-30"],
    ["Invalid date: Cron( is a date", [{ url: "u", customKey: "a", scheduledAt: "Cron(* * * * *)" }],
      "Item a: Invalid date: Cron(* * * * *)"],
    ["Unknown pipe operation", [{ url: "u", customKey: "a", scheduledAt: "now | plus 1h" }], "Item a: Unknown pipe operation: plus 1h"],
    ["Invalid duration", [{ url: "u", customKey: "a", scheduledAt: "now | add 5x" }], "Item a: Invalid duration: 5x"],
    ["Invalid cron expression", [{ url: "u", customKey: "a", scheduledAt: "cron(61 * * * *)" }],
      "Item a: Invalid cron expression: minute value 61 out of range 0-59"],
    ["Invalid cron expression: time zone", [{ url: "u", scheduledAt: "cron(0 0 * * *, Mars/Base)" }],
      'Item (no customKey): Invalid cron expression: unknown time zone "Mars/Base"'],
    ["Invalid cron expression: fewer than 5 fields", [{ url: "u", customKey: "a", scheduledAt: "cron(* * * *)" }],
      "Item a: Invalid cron expression: expected 5 fields (minute hour day-of-month month day-of-week) or 6 with a leading second, got 4"],
    ["scheduledAt before retry values", [{ url: "u", customKey: "a", scheduledAt: "x", retry: { maxAttempts: 0 } }],
      "Item a: Invalid date: x"]
  ]
  it.each(rows)("%s", (_name, list, message) => {
    expect(items(...list)).toBe(message)
  })

  it("empty keys are not duplicates of each other", () => {
    const result = items({ url: "u", customKey: "" }, { url: "u", customKey: "" })
    expect(typeof result).not.toBe("string")
  })

  it("an item listing the declared tag itself is not a repeat", () => {
    expect(only({ url: "u", tags: ["t"] }).definition.tags).toEqual(["t"])
  })
})

describe("values a database cannot store: 400 before any write", () => {
  const rows: ReadonlyArray<readonly [name: string, body: unknown, message: string]> = [
    ["declared tag", { tag: "t\u0000", items: [] }, "tag must not contain NUL characters"],
    ["declared tag before the items", { tag: "t\u0000", items: [{ url: "u", customKey: "a" }, { url: "u", customKey: "a" }] },
      "tag must not contain NUL characters"],
    ["customKey", { tag: "t", items: [{ url: "u", customKey: "k\u0000" }] }, "Item k\u0000: customKey must not contain NUL characters"],
    ["url", { tag: "t", items: [{ url: "u\u0000", customKey: "k" }] }, "Item k: url must not contain NUL characters"],
    ["method", { tag: "t", items: [{ url: "u", method: "G\u0000T", customKey: "k" }] }, "Item k: method must not contain NUL characters"],
    ["header name", { tag: "t", items: [{ url: "u", headers: { "x\u0000": "v" }, customKey: "k" }] },
      "Item k: headers must not contain NUL characters"],
    ["header value", { tag: "t", items: [{ url: "u", headers: { x: "v\u0000" }, customKey: "k" }] },
      "Item k: headers must not contain NUL characters"],
    ["title", { tag: "t", items: [{ url: "u", title: "\u0000", customKey: "k" }] }, "Item k: title must not contain NUL characters"],
    ["tags", { tag: "t", items: [{ url: "u", tags: ["a\u0000"], customKey: "k" }] }, "Item k: tags must not contain NUL characters"],
    ["unpaired surrogate", { tag: "t", items: [{ url: "u", title: "a\ud800b" }] },
      "Item (no customKey): title must not contain unpaired surrogates"],
    ["unpaired surrogate in the tag", { tag: "\udc00", items: [] }, "tag must not contain unpaired surrogates"],
    ["after scheduledAt", { tag: "t", items: [{ url: "u\u0000", customKey: "k", scheduledAt: "x" }] }, "Item k: Invalid date: x"],
    ["fields in order: url before title", { tag: "t", items: [{ url: "\u0000", title: "\u0000", customKey: "k" }] },
      "Item k: url must not contain NUL characters"]
  ]
  it.each(rows)("%s", (_name, body, message) => {
    expect(declare(body)).toBe(message)
  })

  it("paired surrogates (emoji) are fine", () => {
    expect(only({ url: "u", title: "🎉" }).definition.title).toBe("🎉")
  })
})

describe("retry objects (docs/retries.md)", () => {
  const rows: ReadonlyArray<readonly [name: string, retry: unknown, expected: unknown]> = [
    ["omitted: no per-trigger policy", undefined, null],
    ["{} opts in with the defaults", {}, TRIGGER_DEFAULT_RETRY],
    ["fields override the defaults", { strategy: "fixed", maxAttempts: 5, initialDelaySeconds: 10, jitter: true, retryOn: "non_2xx" },
      { strategy: "fixed", maxAttempts: 5, initialDelaySeconds: 10, maxDelaySeconds: null, jitter: true, retryOn: "non_2xx" }],
    ["maxDelaySeconds", { maxDelaySeconds: 600 }, { ...TRIGGER_DEFAULT_RETRY, maxDelaySeconds: 600 }],
    ["bounds", { maxAttempts: 2_147_483_647, initialDelaySeconds: 0, maxDelaySeconds: 86_400 },
      { ...TRIGGER_DEFAULT_RETRY, maxAttempts: 2_147_483_647, initialDelaySeconds: 0, maxDelaySeconds: 86_400 }],
    ["strategy none pins one attempt", { strategy: "none" }, { ...TRIGGER_DEFAULT_RETRY, strategy: "none", maxAttempts: 1 }],
    ["strategy none pins one attempt over maxAttempts", { strategy: "none", maxAttempts: 7 },
      { ...TRIGGER_DEFAULT_RETRY, strategy: "none", maxAttempts: 1 }],
    ["maxAttempts 0", { maxAttempts: 0 }, "Item k: retry.maxAttempts must be an integer from 1 to 2147483647"],
    ["maxAttempts not whole", { maxAttempts: 1.5 }, "Item k: retry.maxAttempts must be an integer from 1 to 2147483647"],
    ["maxAttempts too large", { maxAttempts: 2_147_483_648 }, "Item k: retry.maxAttempts must be an integer from 1 to 2147483647"],
    ["maxAttempts checked with strategy none too", { strategy: "none", maxAttempts: 0 },
      "Item k: retry.maxAttempts must be an integer from 1 to 2147483647"],
    ["initialDelaySeconds negative", { initialDelaySeconds: -1 }, "Item k: retry.initialDelaySeconds must be an integer from 0 to 86400"],
    ["initialDelaySeconds over a day", { initialDelaySeconds: 86_401 }, "Item k: retry.initialDelaySeconds must be an integer from 0 to 86400"],
    ["maxDelaySeconds over a day", { maxDelaySeconds: 86_401 }, "Item k: retry.maxDelaySeconds must be an integer from 0 to 86400"],
    ["first bad field in order", { maxDelaySeconds: -1, maxAttempts: 0 }, "Item k: retry.maxAttempts must be an integer from 1 to 2147483647"]
  ]
  it.each(rows)("%s", (_name, retry, expected) => {
    const item = retry === undefined ? { url: "u", customKey: "k" } : { url: "u", customKey: "k", retry }
    const result = items(item)
    if (typeof expected === "string") expect(result).toBe(expected)
    else expect(typeof result === "string" ? result : result[0]!.definition.retry).toEqual(expected)
  })
})
