// POST /declare against the real service, read like the table of docs/declare-and-bulk.md "Errors": each
// status and message, and that each check runs before the next (415 before the body, the body's
// shape before the key, the key before the items, the repeated key before the item checks);
// credentials (docs/README.md "Authentication"), methods and paths, the body size limit, nothing
// written on a 400 and no quota. The diff itself: declareRules.test.ts.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { assertError } from "../support/assertions.ts"
import { quotaUsed } from "../support/fixtures.ts"
import { declareCall, declared, post } from "../support/items.ts"
import { newKey, TestServer, testServerLayer } from "../support/server.ts"

const URL = "http://127.0.0.1:9/hook"
const FAR = "2099-01-01T00:00:00.000Z"
const UNKNOWN_KEY = "ttr_" + "0".repeat(48)
const item = (over: Record<string, unknown> = {}) => ({ url: URL, scheduledAt: FAR, ...over })
const body = (items: ReadonlyArray<unknown>, over: Record<string, unknown> = {}) => ({ tag: "checks", items, ...over })

/** Listed jobs carrying a tag. */
const jobsWithTag = (key: string, tag: string) =>
  Effect.map(TestServer.use((server) => server.call("GET", `/jobs?tag=${tag}`, { headers: { "ttr-api-key": key } })), (r) => r.json().jobs as Array<unknown>)

layer(testServerLayer(), { timeout: "60 seconds" })("POST /declare checks", (it) => {
  describe("415 Unsupported content-type: <type>, first of all", () => {
    const rows: ReadonlyArray<readonly [contentType: string, text: string]> = [
      ["text/plain", "{}"],
      ["application/x-www-form-urlencoded", "tag=x"],
      ["application/jsonx", "{"],
      ["multipart/form-data; boundary=x", "not even json"]
    ]
    it.effect.each(rows)("%s, with an unknown key and whatever body", ([contentType, text]) =>
      Effect.gen(function*() {
        const response = yield* declareCall(UNKNOWN_KEY, text, { "content-type": contentType })
        assert.strictEqual(response.status, 415)
        assert.strictEqual(response.text, `Unsupported content-type: ${contentType}`)
        assert.match(String(response.headers["content-type"]), /^text\/plain/)
      }))

    it.effect("application/json in any case and with parameters, or no Content-Type at all, is read as JSON", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        for (const contentType of ["application/json", "Application/JSON", "application/json; charset=utf-8"]) {
          const response = yield* declareCall(key, body([]), { "content-type": contentType })
          assert.strictEqual(response.status, 200, contentType)
        }
        const bare = yield* TestServer.use((server) =>
          server.call("POST", "/declare", { headers: { "ttr-api-key": key }, body: JSON.stringify(body([])) }))
        assert.strictEqual(bare.status, 200, bare.text)
      }))
  })

  describe("400 with an empty body: invalid JSON or shape — before the key (sent here with an unknown key)", () => {
    const rows: ReadonlyArray<readonly [name: string, text: string]> = [
      ["no body", ""],
      ["invalid JSON", "{"],
      ["an array", "[]"],
      ["a string", "\"x\""],
      ["null", "null"],
      ["tag missing", JSON.stringify({ items: [] })],
      ["tag null", JSON.stringify({ tag: null, items: [] })],
      ["tag a number", JSON.stringify({ tag: 1, items: [] })],
      ["items missing", JSON.stringify({ tag: "t" })],
      ["items an object", JSON.stringify({ tag: "t", items: {} })],
      ["items null", JSON.stringify({ tag: "t", items: null })],
      ["an item not an object", JSON.stringify(body(["x"]))],
      ["an item's url missing", JSON.stringify(body([{ scheduledAt: FAR }]))],
      ["url null", JSON.stringify(body([item({ url: null })]))],
      ["url a number", JSON.stringify(body([item({ url: 1 })]))],
      ["scheduledAt null", JSON.stringify(body([item({ scheduledAt: null })]))],
      ["scheduledAt a number", JSON.stringify(body([item({ scheduledAt: 1 })]))],
      ["customKey null", JSON.stringify(body([item({ customKey: null })]))],
      ["method a number", JSON.stringify(body([item({ method: 1 })]))],
      ["headers a string", JSON.stringify(body([item({ headers: "a: 1" })]))],
      ["headers an array", JSON.stringify(body([item({ headers: [] })]))],
      ["a header value not a string", JSON.stringify(body([item({ headers: { a: 1 } })]))],
      ["title null", JSON.stringify(body([item({ title: null })]))],
      ["tags a string", JSON.stringify(body([item({ tags: "a" })]))],
      ["a tag not a string", JSON.stringify(body([item({ tags: [1] })]))],
      ["retry null", JSON.stringify(body([item({ retry: null })]))],
      ["retry a string", JSON.stringify(body([item({ retry: "none" })]))],
      ["retry.maxAttempts a string", JSON.stringify(body([item({ retry: { maxAttempts: "3" } })]))],
      ["retry.strategy unknown", JSON.stringify(body([item({ retry: { strategy: "sometimes" } })]))],
      ["runMissed the string \"true\"", JSON.stringify(body([], { runMissed: "true" }))],
      ["runMissed null", JSON.stringify(body([], { runMissed: null }))],
      ["a later item wrong, the first fine", JSON.stringify(body([item(), item({ title: 5 })]))]
    ]
    it.effect.each(rows)("%s", ([, text]) =>
      Effect.gen(function*() {
        assertError(yield* declareCall(UNKNOWN_KEY, text), 400, null)
      }))

    it.effect("null is fine for body (no body), and unknown fields are ignored everywhere", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const answer = yield* declared(key, { ...body([item({ body: null, whatever: { a: 1 } })]), extra: true })
        assert.strictEqual(answer.summary.added, 1)
      }))
  })

  describe("401 after the body's shape, before the items", () => {
    it.effect("`Invalid api key`: an unknown key in the header or as Bearer; the header wins over a valid Bearer", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const invalid = [
          { "ttr-api-key": UNKNOWN_KEY },
          { authorization: `Bearer ${UNKNOWN_KEY}` },
          { "ttr-api-key": UNKNOWN_KEY, authorization: `Bearer ${key}` },
          { "ttr-api-key": "not-a-key" }
        ]
        for (const headers of invalid) assertError(yield* post("/declare", body([]), headers), 401, "Invalid api key")
      }))

    it.effect("`Unauthorized`: no credentials, an empty key, a non-Bearer Authorization, an empty Bearer", () =>
      Effect.gen(function*() {
        const none = [{}, { "ttr-api-key": "" }, { authorization: `Basic ${UNKNOWN_KEY}` }, { authorization: "Bearer " }, { authorization: UNKNOWN_KEY }]
        for (const headers of none) assertError(yield* post("/declare", body([]), headers), 401, "Unauthorized")
      }))

    it.effect("accepted: the key header (a bogus Bearer beside it is not checked), or Bearer in any case", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        for (const headers of [{ "ttr-api-key": key, authorization: "Bearer nonsense" }, { authorization: `bEaReR ${key}` }]) {
          const response = yield* post("/declare", body([]), headers)
          assert.strictEqual(response.status, 200, response.text)
        }
      }))

    it.effect("a wrong key wins over an item error; a shape error wins over a wrong key", () =>
      Effect.gen(function*() {
        assertError(yield* declareCall(UNKNOWN_KEY, body([item({ scheduledAt: "yesterday" })])), 401, "Invalid api key")
        assertError(yield* declareCall(UNKNOWN_KEY, body([item({ scheduledAt: null })])), 400, null)
      }))
  })

  describe("400 with a message, items checked in order, only the first error", () => {
    const rows: ReadonlyArray<readonly [name: string, items: ReadonlyArray<unknown>, message: string]> = [
      ["repeated key", [item({ customKey: "a" }), item({ customKey: "b" }), item({ customKey: "a" })], "Duplicate customKey in items: a"],
      ["the repeated key before any item check", [item({ customKey: "x", scheduledAt: "yesterday" }), item({ customKey: "a" }), item({ customKey: "a" })],
        "Duplicate customKey in items: a"],
      ["repeated tag", [item({ customKey: "a", tags: ["x", "y", "x"] })], "Item a: duplicate tag \"x\" in tags"],
      ["repeated tag, keyless", [item({ tags: ["x", "x"] })], "Item (no customKey): duplicate tag \"x\" in tags"],
      ["Invalid date", [item({ customKey: "k", scheduledAt: "yesterday" })], "Item k: Invalid date: yesterday"],
      ["Invalid date, empty", [item({ customKey: "k", scheduledAt: "" })], "Item k: Invalid date: "],
      ["Unknown pipe operation", [item({ customKey: "k", scheduledAt: "now | plus 1h" })], "Item k: Unknown pipe operation: plus 1h"],
      ["Invalid duration", [item({ customKey: "k", scheduledAt: "now | add 1y" })], "Item k: Invalid duration: 1y"],
      ["Invalid cron expression", [item({ customKey: "k", scheduledAt: "cron(0 0 30 2 *)" })],
        "Item k: Invalid cron expression: day-of-month 30 does not exist in FEB"],
      ["keyless item", [item({ scheduledAt: "soon" })], "Item (no customKey): Invalid date: soon"],
      ["an empty key is no key", [item({ customKey: "", scheduledAt: "soon" })], "Item (no customKey): Invalid date: soon"],
      ["the first failing item", [item({ customKey: "ok" }), item({ customKey: "b", scheduledAt: "x" }), item({ customKey: "c", scheduledAt: "y" })],
        "Item b: Invalid date: x"],
      ["the tag repeat before the date of the same item", [item({ customKey: "a", scheduledAt: "x", tags: ["t", "t"] })],
        "Item a: duplicate tag \"t\" in tags"],
      ["a retry value out of range", [item({ customKey: "r", retry: { maxAttempts: 0 } })],
        "Item r: retry.maxAttempts must be an integer from 1 to 2147483647"],
      ["text PostgreSQL cannot store", [item({ customKey: "n", url: "http://a/\u0000" })], "Item n: url must not contain NUL characters"],
      ["a customKey too long to index", [item({ customKey: "é".repeat(513) })], `Item ${"é".repeat(513)}: customKey must be at most 1024 bytes`],
      ["a tag too long to index", [item({ customKey: "t", tags: ["x".repeat(1025)] })], "Item t: tags must be at most 1024 bytes each"]
    ]
    it.effect.each(rows)("%s", ([, items, message]) =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const tag = `t${Math.random().toString(36).slice(2, 8)}`
        assertError(yield* declareCall(key, { tag, items }), 400, message)
        // rule 11: nothing was written, not even the valid items before the failing one
        assert.deepStrictEqual(yield* jobsWithTag(key, tag), [])
      }))
  })

  describe("methods, paths, size, quota", () => {
    it.effect("only POST /declare: other methods and paths get the empty 404", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        for (const [method, path] of [["GET", "/declare"], ["PUT", "/declare"], ["DELETE", "/declare"], ["POST", "/declare/"], ["POST", "/declare/x"]]) {
          const response = yield* TestServer.use((server) =>
            server.call(method!, path!, { headers: { "ttr-api-key": key, "content-type": "application/json" }, body: JSON.stringify(body([])) }))
          assertError(response, 404, null)
        }
      }))

    it.effect("a JSON body of 10 MB is accepted; over 16 MiB the answer is 413 ContentTooLarge", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const chunk = "x".repeat(500_000)
        const items = Array.from({ length: 21 }, (_, i) => item({ customKey: `big-${i}`, body: { _tag: "text", value: chunk } }))
        const big = JSON.stringify({ tag: "big", items })
        assert.isAbove(big.length, 10_000_000)
        const answer = yield* declared(key, big)
        assert.strictEqual(answer.summary.added, 21)
        const tooBig = JSON.stringify({ tag: "big", items: [item({ body: { _tag: "text", value: "y".repeat(17 * 1024 * 1024) } })] })
        const response = yield* declareCall(key, tooBig)
        assert.strictEqual(response.status, 413)
        assert.strictEqual(response.headers["content-type"], "application/json")
        assert.deepStrictEqual(response.json(), { _tag: "ContentTooLarge", message: "Request body larger than 16777216 bytes" })
      }))

    it.effect("the declared tag: `tag must not contain NUL characters`, `tag must be at most 1024 bytes`; 1,024-byte keys and tags are stored", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        assertError(yield* declareCall(key, { tag: "a\u0000", items: [] }), 400, "tag must not contain NUL characters")
        assertError(yield* declareCall(key, { tag: "t".repeat(1025), items: [] }), 400, "tag must be at most 1024 bytes")
        const longest = "k".repeat(1024)
        const answer = yield* declared(key, { tag: "t".repeat(1024), items: [item({ customKey: longest, tags: ["x".repeat(1024)] })] })
        assert.deepStrictEqual(answer.summary.added, 1)
      }))

    it.effect("never uses or checks quota (rule 12): a project with a quota of 0 declares, nothing is counted", () =>
      Effect.gen(function*() {
        const key = yield* newKey(0)
        const answer = yield* declared(key, body([item({ customKey: "q" })]))
        assert.strictEqual(answer.summary.added, 1)
        assert.strictEqual(yield* quotaUsed(key), 0)
      }))
  })
})
