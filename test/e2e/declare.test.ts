// /declare and /bulk end to end over HTTPS against a local recording target (docs/declare-and-bulk.md
// "The body", "Headers", "What the call does"; docs/cron.md "How instances are made"): what the target
// receives for each row of the body table and each header rule, the hop-by-hop headers that make every
// attempt fail (recorded as `invalid_request`, nothing sent), and the timing a /declare or /bulk write
// must keep — a trigger moved near wakes its shard, a cancelled one never fires, a declared generator
// runs within about 5 s. Waiting is a bounded poll, never a long sleep.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { bulked, declared, entryLines } from "../support/items.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { type Arrival, headerNames, headerValues, pollUntil, realSleep, target } from "../support/target.ts"

const FAR = "2099-01-01T00:00:00.000Z"
const utf8 = (text: string) => Buffer.from(text, "utf8")

const project = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const auth = { "ttr-api-key": key }
  return {
    key,
    declare: (tag: string, items: ReadonlyArray<unknown>, over: Record<string, unknown> = {}) => declared(key, { tag, items, ...over }),
    bulk: (body: unknown) => bulked(key, body),
    executions: (id: string) =>
      Effect.map(server.call("GET", `/jobs/${id}/executions`, { headers: auth }), (r) => r.json().executions as Array<Record<string, unknown>>),
    job: (id: string) => Effect.map(server.call("GET", `/jobs/${id}`, { headers: auth }), (r) => r.json() as Record<string, unknown>)
  }
})

const arrivalAt = (t: { readonly at: (path: string) => ReadonlyArray<Arrival> }, path: string, deadlineMs = 10_000) =>
  pollUntil(`a request on ${path}`, Effect.sync(() => t.at(path)[0]), { deadlineMs })

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("/declare and /bulk end to end", (it) => {
  describe("Body encoding (items): what the target receives", () => {
    const rows: ReadonlyArray<readonly [name: string, body: unknown, bytes: Buffer | null]> = [
      ["omitted", undefined, null],
      ["null", null, null],
      ["an object: compact JSON", { a: 1, b: [true, null], c: { d: "é" } }, utf8("{\"a\":1,\"b\":[true,null],\"c\":{\"d\":\"é\"}}")],
      ["an array", [1, "x"], utf8("[1,\"x\"]")],
      ["a number", 42.5, utf8("42.5")],
      ["a boolean", false, utf8("false")],
      ["a string keeps its quotes", "hi", utf8("\"hi\"")],
      ["_tag text: the value as UTF-8, no quotes", { _tag: "text", value: "héllo wörld" }, utf8("héllo wörld")],
      ["_tag base64: the decoded bytes", { _tag: "base64", value: "AAEC/w==" }, Buffer.from([0, 1, 2, 255])],
      ["base64: characters outside the alphabet skipped", { _tag: "base64", value: "aGV s\nbG8-_=" }, utf8("hello")],
      ["another _tag word: JSON as written", { _tag: "Text", value: "x" }, utf8("{\"_tag\":\"Text\",\"value\":\"x\"}")],
      ["_tag text with a non-string value: JSON", { _tag: "text", value: 5 }, utf8("{\"_tag\":\"text\",\"value\":5}")],
      ["an empty text: no body", { _tag: "text", value: "" }, null],
      ["an empty base64: no body", { _tag: "base64", value: "" }, null]
    ]
    it.effect("each row, sent with the default GET; without a Content-Type a body arrives as application/octet-stream", () =>
      Effect.gen(function*() {
        const p = yield* project
        const t = yield* target
        const items = rows.map(([, body], i) => ({ url: `${t.origin}/body/${i}`, ...(body === undefined ? {} : { body }) }))
        yield* p.declare("bodies", items)
        for (const [i, [name, , bytes]] of rows.entries()) {
          const arrival = yield* arrivalAt(t, `/body/${i}`)
          assert.strictEqual(arrival.method, "GET", name)
          assert.isTrue(arrival.body.equals(bytes ?? Buffer.alloc(0)), `${name}: ${arrival.body.toString("hex")}`)
          assert.deepStrictEqual(headerValues(arrival.rawHeaders, "content-type"), bytes === null ? [] : ["application/octet-stream"], name)
        }
      }))

    it.effect("a Content-Type in headers is sent as written; the method is upper-cased and sent as given", () =>
      Effect.gen(function*() {
        const p = yield* project
        const t = yield* target
        yield* p.bulk({
          upserts: [
            { url: `${t.origin}/typed`, method: "patch", headers: { "Content-Type": "application/json; charset=utf-8" }, body: { ok: true } },
            { url: `${t.origin}/purge?x=1`, method: "purge", body: { _tag: "text", value: "p" } }
          ]
        })
        const typed = yield* arrivalAt(t, "/typed")
        assert.strictEqual(typed.method, "PATCH")
        assert.deepStrictEqual(headerValues(typed.rawHeaders, "content-type"), ["application/json; charset=utf-8"])
        assert.strictEqual(typed.body.toString(), "{\"ok\":true}")
        const purge = yield* arrivalAt(t, "/purge")
        assert.deepStrictEqual([purge.method, purge.url, purge.body.toString()], ["PURGE", "/purge?x=1", "p"])
      }))
  })

  describe("Item headers rules", () => {
    it.effect("nothing filtered (prefixed headers too), names lowercased, values unchanged; Host replaces the target's, Content-Length ignored", () =>
      Effect.gen(function*() {
        const p = yield* project
        const t = yield* target
        yield* p.declare("headers", [{
          url: `${t.origin}/headers`,
          body: { _tag: "text", value: "12345" },
          headers: {
            "ttr-api-key": "forwarded-not-checked", "X-Mixed-Case": "Keep This", Authorization: "Bearer target-token",
            Host: "tenant.example:8080", "Content-Length": "999", Connection: "keep-alive"
          }
        }])
        const arrival = yield* arrivalAt(t, "/headers")
        const names = headerNames(arrival.rawHeaders)
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "ttr-api-key"), ["forwarded-not-checked"])
        assert.include(names, "x-mixed-case")
        assert.notInclude(arrival.rawHeaders, "X-Mixed-Case")
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "x-mixed-case"), ["Keep This"])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "authorization"), ["Bearer target-token"])
        // the request still went to the url's host (this target); it saw the item's Host
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "host"), ["tenant.example:8080"])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "content-length"), ["5"])
        assert.strictEqual(arrival.body.toString(), "12345")
      }))

    const forbidden: ReadonlyArray<readonly [string, string]> = [
      ["Keep-Alive", "timeout=5"], ["Transfer-Encoding", "chunked"], ["Upgrade", "websocket"], ["Connection", "upgrade"]
    ]
    it.effect(`${forbidden.map(([name]) => name).join(", ")} (other than close / keep-alive): every attempt fails as invalid_request, nothing reaches the target`, () =>
      Effect.gen(function*() {
        const p = yield* project
        const t = yield* target
        const items = forbidden.map(([name, value], i) => ({ customKey: `f${i}`, url: `${t.origin}/forbidden/${i}`, headers: { [name]: value }, retry: { maxAttempts: 3, initialDelaySeconds: 0 } }))
        const answer = yield* p.declare("forbidden", [...items, { customKey: "close", url: `${t.origin}/close`, headers: { Connection: "close" } }])
        for (const entry of answer.operations.slice(0, forbidden.length)) {
          const executions = yield* pollUntil(`the failed attempt of ${entry.customKey}`, Effect.gen(function*() {
            const job = yield* p.job(entry.id)
            if (job.status !== "completed") return undefined
            return yield* p.executions(entry.id)
          }))
          assert.strictEqual(executions.length, 1, `${entry.customKey}: never retried`)
          assert.deepStrictEqual([executions[0]!.status, executions[0]!.errorKind, executions[0]!.isDeadLetter], ["failed", "invalid_request", true])
          assert.match(String(executions[0]!.errorMessage), /cannot be sent/)
        }
        yield* arrivalAt(t, "/close")
        assert.deepStrictEqual(t.arrivals.filter((a) => a.url.startsWith("/forbidden")), [])
      }))
  })

  describe("timing of the writes", () => {
    it.effect("a one-shot moved near by /declare or /bulk fires at its new time (its shard was woken); a cancelled one never fires", () =>
      Effect.gen(function*() {
        const p = yield* project
        const t = yield* target
        const far = [{ customKey: "moved", url: `${t.origin}/moved` }, { customKey: "dropped", url: `${t.origin}/dropped` }]
        yield* p.declare("timing", far.map((i) => ({ ...i, scheduledAt: FAR })))
        yield* p.bulk({ upserts: [{ customKey: "bulk-moved", url: `${t.origin}/bulk-moved`, scheduledAt: FAR }] })
        const soon = new Date(Date.now() + 1_500).toISOString()
        const answer = yield* p.declare("timing", [{ ...far[0]!, scheduledAt: soon }, { customKey: "late", url: `${t.origin}/late`, scheduledAt: soon }])
        assert.deepStrictEqual(entryLines(answer), ["updated job moved [scheduledAt]", "added job late", "cancelled job dropped"])
        yield* p.bulk({ upserts: [{ customKey: "bulk-moved", url: `${t.origin}/bulk-moved`, scheduledAt: soon }] })
        for (const path of ["/moved", "/late", "/bulk-moved"]) {
          const arrival = yield* arrivalAt(t, path)
          assert.isAtLeast(arrival.arrivedAtMs, Date.parse(soon) - 5, path)
          assert.isBelow(arrival.arrivedAtMs, Date.parse(soon) + 1_000, path)
        }
        // something due in 1 s and cancelled at once never arrives
        const cancelSoon = new Date(Date.now() + 1_000).toISOString()
        yield* p.declare("timing2", [{ customKey: "x", url: `${t.origin}/cancelled`, scheduledAt: cancelSoon }])
        const cancelled = yield* p.declare("timing2", [])
        assert.deepStrictEqual(entryLines(cancelled), ["cancelled job x"])
        yield* realSleep(2_000) // a window of silence past its due time: it never arrives
        assert.deepStrictEqual(t.at("/cancelled"), [])
      }))

    it.effect("rule 3: a now-based item fires; once it is done, the same call adds and fires a new one", () =>
      Effect.gen(function*() {
        const p = yield* project
        const t = yield* target
        const item = { customKey: "n", url: `${t.origin}/now` }
        const first = yield* p.declare("now", [item])
        yield* pollUntil("the first trigger done", Effect.map(p.job(first.operations[0]!.id), (job) => (job.status === "completed" ? true : undefined)))
        const second = yield* p.declare("now", [item])
        assert.deepStrictEqual(entryLines(second), ["added job n"])
        assert.notStrictEqual(second.operations[0]!.id, first.operations[0]!.id)
        yield* pollUntil("two deliveries", Effect.sync(() => (t.at("/now").length === 2 ? true : undefined)))
      }))

    it.effect("a generator created by /declare runs within about 5 s, each instance a request to its url", () =>
      Effect.gen(function*() {
        const p = yield* project
        const t = yield* target
        const answer = yield* p.declare("recurring", [{ customKey: "every2s", url: `${t.origin}/recurring`, scheduledAt: "cron(*/2 * * * * *)", method: "POST", body: { n: 1 } }])
        const started = Date.now()
        const first = yield* arrivalAt(t, "/recurring", 12_000)
        assert.isBelow(first.arrivedAtMs - started, 9_000)
        assert.strictEqual(first.method, "POST")
        assert.strictEqual(first.body.toString(), "{\"n\":1}")
        // stop it: no further runs once cancelled (an instance claimed just before may still arrive)
        yield* p.declare("recurring", [])
        yield* realSleep(500) // room for an instance claimed just before the cancel to arrive
        const count = t.at("/recurring").length
        yield* realSleep(4_500) // a window of silence: two periods and more, no further run
        assert.strictEqual(t.at("/recurring").length, count)
        assert.strictEqual((yield* p.job(answer.operations[0]!.id)).status, "cancelled")
      }))
  })
})
