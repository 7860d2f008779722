// No 500 from unstorable input (docs/errors.md "Text the database cannot store"): a NUL in a query
// filter is a 400 naming the parameter, for every parameter of GET /jobs and GET /executions; invalid
// UTF-8 in a query (`%ED%A0%80`, an encoded surrogate) decodes to U+FFFD and is an ordinary value; NUL
// in a path is a
// 404. Headers: Node's parser refuses NUL and control characters itself (its own 400, never our 500),
// and Latin-1 bytes reach the store as the characters they decode to, which PostgreSQL keeps.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as tls from "node:tls"
import { TestServer, testServerLayer } from "../support/server.ts"

const badRequest = (message: string) => ({ _tag: "BadRequest", message })

/** Sends raw bytes as one HTTP/1.1 request over TLS; the status line of the answer. */
const rawRequest = (baseUrl: string, head: Buffer) =>
  Effect.promise(() =>
    new Promise<string>((resolve, reject) => {
      const url = new URL(baseUrl)
      const socket = tls.connect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false }, () => socket.write(head))
      let answer = ""
      socket.setEncoding("latin1")
      socket.on("data", (chunk: string) => (answer += chunk))
      socket.on("end", () => resolve(answer.split("\r\n")[0] ?? ""))
      socket.on("error", reject)
      socket.setTimeout(10_000, () => socket.destroy(new Error("no answer")))
    }))

const scheduleHead = (key: string, extra: Buffer) =>
  Buffer.concat([
    Buffer.from(`POST /schedule HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\nttr-api-key: ${key}\r\n`),
    Buffer.from("ttr-url: http://127.0.0.1:9/hook\r\nttr-scheduled-at: 2099-01-01T00:00:00Z\r\n"),
    extra,
    Buffer.from("\r\n\r\n")
  ])

layer(testServerLayer(), { timeout: "60 seconds" })("unstorable input", (it) => {
  describe("query filters", () => {
    it.effect("a NUL in any parameter of GET /jobs and GET /executions is a 400 naming it", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        const get = (path: string) => server.call("GET", path, { headers: { "ttr-api-key": key } })
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["/jobs?customKey=%00", "customKey"],
          ["/jobs?tag=%00", "tag"],
          ["/jobs?tag=billing%00x", "tag"],
          ["/jobs?status=%00", "status"],
          ["/jobs?kind=%00", "kind"],
          ["/jobs?limit=1%00", "limit"],
          ["/jobs?cursor=%00", "cursor"],
          ["/executions?customKey=%00", "customKey"],
          ["/executions?customKey=order%0017", "customKey"],
          ["/executions?jobId=%00", "jobId"],
          ["/executions?executionStatus=%00", "executionStatus"],
          ["/executions?httpStatus=%00", "httpStatus"],
          ["/executions?deadLetterOnly=%00", "deadLetterOnly"],
          ["/executions?cursor=%00", "cursor"]
        ]
        for (const [path, name] of cases) {
          const response = yield* get(path)
          assert.strictEqual(response.status, 400, `${path}: ${response.text}`)
          assert.deepStrictEqual(response.json(), badRequest(`${name} must not contain U+0000`), path)
        }
      }))

    it.effect("invalid UTF-8 in a filter (an encoded surrogate) is read as U+FFFD: an ordinary value, no 500", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        for (const path of ["/jobs?customKey=%ED%A0%80", "/jobs?tag=%ED%A0%80", "/jobs?customKey=%C3", "/executions?customKey=%ED%A0%80"]) {
          const response = yield* server.call("GET", path, { headers: { "ttr-api-key": key } })
          assert.strictEqual(response.status, 200, `${path}: ${response.text}`)
        }
      }))

    it.effect("a NUL in a path id is a 404, not a 500", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        for (const path of ["/jobs/%00", "/jobs/%00/executions", "/executions/%00", "/jobs/%ED%A0%80"]) {
          const response = yield* server.call("GET", path, { headers: { "ttr-api-key": key } })
          assert.strictEqual(response.status, 404, `${path}: ${response.text}`)
        }
      }))
  })

  describe("/schedule and /cancel headers", () => {
    it.effect("NUL and control characters in a header are refused by Node's parser with its 400", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        for (const bytes of [[0x00], [0x61, 0x00, 0x62], [0x01], [0x1f], [0x7f]]) {
          for (const header of ["ttr-custom-key", "ttr-title", "x-forwarded-thing"]) {
            const status = yield* rawRequest(server.baseUrl, scheduleHead(key, Buffer.concat([Buffer.from(`${header}: `), Buffer.from(bytes)])))
            assert.strictEqual(status, "HTTP/1.1 400 Bad Request", `${header} ${bytes}`)
          }
        }
        // the service still answers
        assert.strictEqual((yield* server.call("GET", "/openapi/json")).status, 200)
      }))

    it.effect("Latin-1 bytes in a custom key and a forwarded header are stored as the characters they decode to", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        const extra = Buffer.concat([
          Buffer.from("ttr-custom-key: k"), Buffer.from([0xed, 0xa0, 0x80, 0xff]), Buffer.from("\r\n"),
          Buffer.from("x-raw: "), Buffer.from([0x80, 0xc3, 0x28])
        ])
        assert.strictEqual(yield* rawRequest(server.baseUrl, scheduleHead(key, extra)), "HTTP/1.1 200 OK")
        const listed = (yield* server.call("GET", `/jobs?customKey=${encodeURIComponent("k\u00ed\u00a0\u0080\u00ff")}`, {
          headers: { "ttr-api-key": key }
        })).json()
        assert.strictEqual(listed.jobs.length, 1)
        assert.strictEqual(listed.jobs[0].headers["x-raw"], "\u0080\u00c3(")
        // cancel by that key: found (no 500 either way)
        const cancelled = yield* rawRequest(
          server.baseUrl,
          Buffer.concat([
            Buffer.from(`DELETE /cancel HTTP/1.1\r\nHost: x\r\nConnection: close\r\nttr-api-key: ${key}\r\nttr-custom-key: k`),
            Buffer.from([0xed, 0xa0, 0x80, 0xff]),
            Buffer.from("\r\n\r\n")
          ])
        )
        assert.strictEqual(cancelled, "HTTP/1.1 204 No Content")
      }))
  })
})
