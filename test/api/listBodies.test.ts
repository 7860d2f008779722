// Bounded list responses (issue 10, item 5; DECISIONS "Trigger and generator views"): in GET /jobs a
// body over 64 KiB is listed as `{ encoding, value: null, size, truncated: true }` and never read
// whole from the database (the store returns at most a short prefix); GET /jobs/{id} returns every
// body whole, with its size. Eight 5 MB triggers make a page of a few kilobytes.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { ENCODING_PROBE_BYTES, LIST_BODY_MAX_BYTES } from "../../src/domain/views.ts"
import { triggersList } from "../../src/store/triggerReads.ts"
import { insertTrigger, projectIdOfKey } from "../support/fixtures.ts"
import { TestServer, testServerLayer } from "../support/server.ts"

const text = (n: number, fill = "a") => new TextEncoder().encode(fill.repeat(n))
const bytes = (n: number, first: ReadonlyArray<number>) => {
  const out = new Uint8Array(n).fill(0x41)
  out.set(first)
  return out
}

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
          ["binary at limit", bytes(LIST_BODY_MAX_BYTES, [0xff, 0xfe])],
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
        assert.strictEqual(listed.get("binary at limit").size, LIST_BODY_MAX_BYTES)
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
        const { rows } = yield* triggersList({ projectId: p.projectId, filter: {}, limit: 10 })
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
})
