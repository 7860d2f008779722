// Bounded list responses (docs/reading.md "Large bodies in lists", "How long a page is", "Paging"): in
// GET /jobs a body whose value would take over 64 KiB in the JSON (escapes and base64 counted) is
// listed as `{ encoding, value: null, size, truncated: true }`, one over 64 KiB stored is never read
// whole from the database (the store returns at most a short prefix); GET /jobs/{id} returns every body
// whole, with its size. In GET /executions and GET /jobs/{id}/executions a response body is cut to what
// takes 64 KiB in the JSON. A page ends before the entry that would take it past 1 MiB encoded, with a
// cursor; the store reads no more than that budget of stored bytes. GET /jobs/{id}/executions is
// written as it is read.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { LIST_PAGE_MAX_BYTES } from "../../src/domain/listPage.ts"
import { ENCODING_PROBE_BYTES, LIST_BODY_MAX_BYTES } from "../../src/domain/views.ts"
import { triggersList } from "../../src/store/triggerReads.ts"
import { insertExecution, insertTrigger, insertTriggers, projectIdOfKey } from "../support/fixtures.ts"
import { TestServer, testServerLayer, type TestResponse } from "../support/server.ts"

const text = (n: number, fill = "a") => new TextEncoder().encode(fill.repeat(n))
const bytes = (n: number, first: ReadonlyArray<number>) => {
  const out = new Uint8Array(n).fill(0x41)
  out.set(first)
  return out
}

/** The largest binary body whose base64 takes LIST_BODY_MAX_BYTES. */
const BASE64_AT_LIMIT = (LIST_BODY_MAX_BYTES / 4) * 3
const CONTROL = "\u0001"

const newProject = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const projectId = yield* projectIdOfKey(key)
  return { projectId, get: (path: string) => server.call("GET", path, { headers: { "ttr-api-key": key } }) }
})

layer(testServerLayer(), { timeout: "120 seconds" })("bounded list bodies", (it) => {
  describe("GET /jobs", () => {
    it.effect("lists bodies up to 64 KiB whole and larger ones as size and encoding only", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        // a multi-byte character cut by the prefix's end still reads as text
        const cutAtPrefix = new Uint8Array([...text(ENCODING_PROBE_BYTES - 1), 0xc3, 0xa9, ...text(LIST_BODY_MAX_BYTES)])
        const bodies: ReadonlyArray<readonly [string, Uint8Array | null]> = [
          ["none", null],
          ["empty", new Uint8Array(0)],
          ["small", text(100)],
          ["at limit", text(LIST_BODY_MAX_BYTES)],
          ["over limit", text(LIST_BODY_MAX_BYTES + 1)],
          ["binary at limit", bytes(BASE64_AT_LIMIT, [0xff, 0xfe])],
          ["binary over limit of base64", bytes(BASE64_AT_LIMIT + 1, [0xff, 0xfe])],
          ["binary over limit", bytes(LIST_BODY_MAX_BYTES + 1, [0xff, 0xfe])],
          ["cut at prefix", cutAtPrefix],
          ["10 MB text", text(5 * 1024 * 1024, "é")],
          ["5 MB binary", bytes(5 * 1024 * 1024, [0x00, 0x9f, 0x92, 0x96])]
        ]
        const ids = new Map<string, string>()
        for (const [name, body] of bodies) ids.set(name, yield* insertTrigger({ projectId: p.projectId, body, title: name }))

        const page = (yield* p.get("/jobs?limit=500")).json()
        const listed = new Map<string, any>(page.jobs.map((job: any) => [job.title, job.body]))
        assert.isNull(listed.get("none"))
        assert.deepStrictEqual(listed.get("empty"), { encoding: "text", value: "", size: 0 })
        assert.deepStrictEqual(listed.get("small"), { encoding: "text", value: "a".repeat(100), size: 100 })
        assert.deepStrictEqual(listed.get("at limit"), { encoding: "text", value: "a".repeat(LIST_BODY_MAX_BYTES), size: LIST_BODY_MAX_BYTES })
        assert.deepStrictEqual(listed.get("over limit"), { encoding: "text", value: null, size: LIST_BODY_MAX_BYTES + 1, truncated: true })
        assert.strictEqual(listed.get("binary at limit").encoding, "base64")
        assert.strictEqual(listed.get("binary at limit").value.length, LIST_BODY_MAX_BYTES)
        assert.strictEqual(listed.get("binary at limit").size, BASE64_AT_LIMIT)
        assert.deepStrictEqual(listed.get("binary over limit of base64"), { encoding: "base64", value: null, size: BASE64_AT_LIMIT + 1, truncated: true })
        assert.deepStrictEqual(listed.get("binary over limit"), { encoding: "base64", value: null, size: LIST_BODY_MAX_BYTES + 1, truncated: true })
        assert.deepStrictEqual(listed.get("cut at prefix"), { encoding: "text", value: null, size: cutAtPrefix.byteLength, truncated: true })
        assert.deepStrictEqual(listed.get("10 MB text"), { encoding: "text", value: null, size: 10 * 1024 * 1024, truncated: true })
        assert.deepStrictEqual(listed.get("5 MB binary"), { encoding: "base64", value: null, size: 5 * 1024 * 1024, truncated: true })

        // the same with a filter (another statement shape)
        const filtered = (yield* p.get(`/jobs?limit=1&status=registered`)).json()
        assert.strictEqual(filtered.jobs[0].title, "5 MB binary")
        assert.isNull(filtered.jobs[0].body.value)

        // GET /jobs/{id}: always whole, with the size
        const big = (yield* p.get(`/jobs/${ids.get("10 MB text")}`)).json().body
        assert.deepStrictEqual(Object.keys(big), ["encoding", "value", "size"])
        assert.strictEqual(big.encoding, "text")
        assert.strictEqual(big.size, 10 * 1024 * 1024)
        assert.strictEqual(big.value.length, 5 * 1024 * 1024)
        const binary = (yield* p.get(`/jobs/${ids.get("binary over limit")}`)).json().body
        assert.deepStrictEqual(
          binary,
          { encoding: "base64", value: Buffer.from(bytes(LIST_BODY_MAX_BYTES + 1, [0xff, 0xfe])).toString("base64"), size: LIST_BODY_MAX_BYTES + 1 }
        )
      }))

    it.effect("the store never reads a large body for a list: at most its prefix", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        for (let i = 0; i < 3; i++) yield* insertTrigger({ projectId: p.projectId, body: text(2 * 1024 * 1024) })
        yield* insertTrigger({ projectId: p.projectId, body: text(10) })
        const rows = yield* triggersList({ projectId: p.projectId, filter: {}, limit: 10 })
        assert.deepStrictEqual(rows.map((row) => [row.body?.byteLength, row.body_size, row.body_truncated]), [
          [10, 10, false],
          [ENCODING_PROBE_BYTES, 2 * 1024 * 1024, true],
          [ENCODING_PROBE_BYTES, 2 * 1024 * 1024, true],
          [ENCODING_PROBE_BYTES, 2 * 1024 * 1024, true]
        ])
      }))

    it.effect("eight 5 MB triggers make a page of a few kilobytes (was 21 MB)", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        for (let i = 0; i < 8; i++) yield* insertTrigger({ projectId: p.projectId, body: text(5 * 1024 * 1024, "x") })
        const response = yield* p.get("/jobs")
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.json().jobs.length, 8)
        assert.isBelow(response.text.length, 16 * 1024)
      }))
  })

  describe("bounded by what is sent", () => {
    it.effect("a body is listed only when its value takes at most 64 KiB in the JSON, escapes counted", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const bodies: ReadonlyArray<readonly [string, string, boolean]> = [
          // [title, body text, listed whole]
          ["control at limit", CONTROL.repeat(10_922), true], // 65,532 bytes as \u0001
          ["control over limit", CONTROL.repeat(10_923), false], // 65,538
          ["control 65,520", CONTROL.repeat(65_520), false], // 393,120: listed whole before
          ["quotes at limit", "\"".repeat(32_768), true], // 65,536 as \"
          ["quotes over limit", "\"".repeat(32_769), false],
          ["newlines at limit", "\n".repeat(32_768), true],
          ["two-byte characters at limit", "é".repeat(32_768), true]
        ]
        for (const [title, body] of bodies) yield* insertTrigger({ projectId: p.projectId, body: new TextEncoder().encode(body), title })
        const listed = new Map<string, any>((yield* p.get("/jobs?limit=500")).json().jobs.map((job: any) => [job.title, job.body]))
        for (const [title, body, whole] of bodies) {
          const size = new TextEncoder().encode(body).byteLength
          assert.deepStrictEqual(listed.get(title), whole ? { encoding: "text", value: body, size } : { encoding: "text", value: null, size, truncated: true }, title)
        }
      }))

    it.effect("a page ends before the entry that would take it past 1 MiB encoded; following the cursors lists each trigger once", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        // 500 bodies of 10,000 stored bytes that take 60,000 each in the JSON (listed whole): 30 MB in one page before
        const body = text(10_000, CONTROL)
        const ids = yield* fiveHundredTriggers(p.projectId, body)
        const pages = yield* allPages(p.get, "/jobs?limit=500")
        const first = pages[0]!.json()
        assert.strictEqual(first.jobs.length, 17) // 17 entries of about 60.5 KB: 1,028,500 bytes; an 18th passes 1 MiB
        assert.strictEqual(first.jobs[0].body.value, CONTROL.repeat(10_000))
        for (const page of pages) assert.isAtMost(Buffer.byteLength(page.text), LIST_PAGE_MAX_BYTES + 100)
        assert.deepStrictEqual(pages.flatMap((page) => page.json().jobs.map((job: any) => job.id)), ids.reverse())
        assert.isNull(pages.at(-1)!.json().nextCursor)

        // the store reads no more than the budget of stored bytes (and the first row past it, without its columns)
        const rows = yield* triggersList({ projectId: p.projectId, filter: {}, limit: 500 })
        const fetched = rows.filter((row) => row.fetched)
        assert.strictEqual(rows.length, 500)
        assert.isBelow(fetched.length, 110)
        assert.isAtMost(fetched.reduce((sum, row) => sum + (row.body?.byteLength ?? 0), 0), LIST_PAGE_MAX_BYTES + 10_000)
        assert.isTrue(rows.slice(fetched.length).every((row) => row.body === null && row.headers === null && !row.fetched))
      }))

    it.effect("500 triggers with 65,520-byte U+0001 bodies and their responses: each page under 1 MiB (was 196.8 MB), cursors to the end", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const body = text(65_520, CONTROL)
        const ids = yield* fiveHundredTriggers(p.projectId, body)
        const jobs = yield* allPages(p.get, "/jobs?status=registered&limit=500")
        // one page: the bodies left out cost little, so the page is filled from 32 reads of 16 rows (1 MiB stored each)
        assert.strictEqual(jobs.length, 1)
        for (const page of jobs) {
          assert.isAtMost(Buffer.byteLength(page.text), LIST_PAGE_MAX_BYTES + 100)
          for (const job of page.json().jobs) assert.deepStrictEqual(job.body, { encoding: "text", value: null, size: 65_520, truncated: true })
        }
        assert.strictEqual(jobs.flatMap((page) => page.json().jobs).length, 500)

        // 500 executions whose response bodies are 65,520 U+0001: cut to the 10,922 that take 65,532 bytes
        const response = CONTROL.repeat(65_520)
        for (const [i, triggerId] of ids.entries()) {
          yield* insertExecution({ projectId: p.projectId, triggerId, responseBody: response, attempt: i < 250 ? 1 : i - 248 })
        }
        const executions = yield* allPages(p.get, "/executions?limit=500")
        for (const page of executions) {
          assert.isAtMost(Buffer.byteLength(page.text), LIST_PAGE_MAX_BYTES + 100)
          for (const execution of page.json().executions) assert.strictEqual(execution.responseBody, CONTROL.repeat(10_922))
        }
        assert.strictEqual(executions.flatMap((page) => page.json().executions).length, 500)
        assert.strictEqual(executions[0]!.json().executions.length, 15) // 15 entries of 65.8 KB; a 16th passes 1 MiB
        // GET /executions/{id}: whole (the first 64 KiB the target sent)
        const one = executions[0]!.json().executions[0]
        assert.strictEqual((yield* p.get(`/executions/${one.id}`)).json().responseBody, response)
      }))

    it.effect("GET /jobs/{id}/executions: every attempt, oldest first, response bodies cut, written as it is read", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const triggerId = yield* insertTrigger({ projectId: p.projectId })
        const response = CONTROL.repeat(65_520)
        // 250 attempts of 65 KB: 2.5 reads of 100 attempts, each read over the 1 MiB budget several times
        for (let attempt = 1; attempt <= 250; attempt++) yield* insertExecution({ projectId: p.projectId, triggerId, attempt, responseBody: response })
        const answer = yield* p.get(`/jobs/${triggerId}/executions`)
        assert.strictEqual(answer.status, 200)
        assert.strictEqual(answer.headers["content-type"], "application/json")
        assert.strictEqual(answer.headers["transfer-encoding"], "chunked")
        const executions = answer.json().executions
        assert.deepStrictEqual(executions.map((execution: any) => execution.attempt), Array.from({ length: 250 }, (_, i) => i + 1))
        for (const execution of executions) assert.strictEqual(execution.responseBody, CONTROL.repeat(10_922))
        // none, and an unknown trigger
        assert.deepStrictEqual((yield* p.get(`/jobs/${yield* insertTrigger({ projectId: p.projectId })}/executions`)).json(), { executions: [] })
        assert.strictEqual((yield* p.get("/jobs/0190b1c2-0000-7000-8000-000000000001/executions")).status, 404)
      }))
  })
})

/** 500 registered triggers with this body, in 10 statements; their ids, oldest first. */
const fiveHundredTriggers = (projectId: string, body: Uint8Array) =>
  Effect.gen(function*() {
    const ids: Array<string> = []
    for (let i = 0; i < 10; i++) ids.push(...(yield* insertTriggers(Array.from({ length: 50 }, () => ({ projectId, body })))))
    return ids
  })

/** Every page of a list, following `nextCursor` from `path`. */
const allPages = (get: (path: string) => Effect.Effect<TestResponse, unknown, any>, path: string) =>
  Effect.gen(function*() {
    const pages: Array<TestResponse> = []
    let cursor: string | null = null
    do {
      const page: TestResponse = yield* get(cursor === null ? path : `${path}&cursor=${cursor}`)
      assert.strictEqual(page.status, 200, page.text.slice(0, 300))
      pages.push(page)
      cursor = page.json().nextCursor
    } while (cursor !== null && pages.length < 1000)
    return pages
  })
