// The HTTPS foundation against the real service: auth matrix of the endpoints that exist, empty
// 404s, 431 on oversized headers, CORS only on the OpenAPI document, its exact-path rules and shape.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { KEY_CACHE_TTL_MS } from "../../src/commands/apiKeyCache.ts"
import { keyRevoke } from "../../src/cli/commands.ts"
import { hashApiKey } from "../../src/domain/auth/apiKey.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { pollUntil } from "../support/wait.ts"

layer(testServerLayer(), { timeout: "60 seconds" })("foundation", (it) => {
  describe("authentication (key header or Bearer endpoints)", () => {
    const cases: ReadonlyArray<[string, (key: string) => Record<string, string>, number, string | null]> = [
      ["key header", (key) => ({ "ttr-api-key": key }), 200, null],
      ["Bearer", (key) => ({ authorization: `Bearer ${key}` }), 200, null],
      ["bearer scheme in any case", (key) => ({ authorization: `bEaReR ${key}` }), 200, null],
      ["key header wins over a bad Bearer", (key) => ({ "ttr-api-key": key, authorization: "Bearer ttr_nope" }), 200, null],
      ["bad key header, good Bearer: only the key header is checked", (key) => ({ "ttr-api-key": "ttr_nope", authorization: `Bearer ${key}` }), 401, "Invalid api key"],
      ["unknown key", () => ({ "ttr-api-key": "ttr_" + "0".repeat(48) }), 401, "Invalid api key"],
      ["unknown Bearer", () => ({ authorization: "Bearer ttr_" + "0".repeat(48) }), 401, "Invalid api key"],
      ["no credentials", () => ({}), 401, "Unauthorized"],
      ["empty key header", () => ({ "ttr-api-key": "" }), 401, "Unauthorized"],
      ["non-Bearer Authorization", (key) => ({ authorization: `Basic ${key}` }), 401, "Unauthorized"],
      ["Bearer without a token", () => ({ authorization: "Bearer " }), 401, "Unauthorized"]
    ]
    for (const [name, headers, status, message] of cases) {
      it.effect(`GET /health with ${name} → ${status}`, () =>
        Effect.gen(function*() {
          const server = yield* TestServer
          const key = yield* server.newKey()
          const response = yield* server.call("GET", "/health", { headers: headers(key) })
          assert.strictEqual(response.status, status)
          if (message !== null) {
            assert.deepStrictEqual(response.json(), { _tag: "Unauthorized", message })
            assert.strictEqual(response.headers["content-type"], "application/json")
          }
        }))
    }
  })

  it.effect("a revoked key stops authenticating within moments, though the service remembers live keys", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const key = yield* server.newKey()
      const headers = { "ttr-api-key": key }
      assert.strictEqual((yield* server.call("GET", "/health", { headers })).status, 200) // now remembered
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ id: string }>`SELECT id::text FROM api_keys WHERE key_hash = ${hashApiKey(key)}`
      yield* keyRevoke(row!.id)
      // the NOTIFY reaches the service long before the cache's own expiry (KEY_CACHE_TTL_MS)
      const status = yield* pollUntil(
        "the revoked key to be refused",
        Effect.map(server.call("GET", "/health", { headers }), (response) => (response.status === 200 ? undefined : response.status)),
        { deadlineMs: KEY_CACHE_TTL_MS / 2 }
      )
      assert.strictEqual(status, 401)
    }))

  it.effect("GET /health reports both loop heartbeats", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const key = yield* server.newKey()
      const body = (yield* server.call("GET", "/health", { headers: { "ttr-api-key": key } })).json()
      assert.strictEqual(body.status, "ok")
      assert.isNumber(body.schedulerStaleMs)
      assert.isNumber(body.materializerStaleMs)
    }))

  describe("unknown paths and methods → 404 with an empty body", () => {
    const cases: ReadonlyArray<[string, string]> = [
      ["GET", "/nope"],
      ["POST", "/cancel"],
      ["GET", "/cancel"],
      ["POST", "/health"],
      ["POST", "/openapi/json"],
      ["GET", "/openapi/json/"],
      ["GET", "/openapi/json?x=1"],
      ["GET", "/schedule/abc"],
      ["POST", "/"]
    ]
    for (const [method, path] of cases) {
      it.effect(`${method} ${path}`, () =>
        Effect.gen(function*() {
          const server = yield* TestServer
          const response = yield* server.call(method, path)
          assert.strictEqual(response.status, 404)
          assert.strictEqual(response.text, "")
          assert.isUndefined(response.headers["content-type"])
        }))
    }
  })

  it.effect("GET / sends a browser to the dashboard", () =>
    Effect.gen(function*() {
      const response = yield* (yield* TestServer).call("GET", "/")
      assert.deepStrictEqual([response.status, response.headers["location"]], [302, "/dashboard/"])
    }))

  it.effect("request headers over 16 KB → 431 with an empty body", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const small = yield* server.call("GET", "/openapi/json", { headers: { "x-pad": "a".repeat(15_000) } })
      assert.strictEqual(small.status, 200)
      const big = yield* server.call("GET", "/openapi/json", { headers: { "x-pad": "a".repeat(17_000) } })
      assert.strictEqual(big.status, 431)
      assert.strictEqual(big.text, "")
    }))

  describe("CORS", () => {
    it.effect("GET /openapi/json is public and carries Access-Control-Allow-Origin: *", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const response = yield* server.call("GET", "/openapi/json", { headers: { origin: "https://example.test" } })
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers["access-control-allow-origin"], "*")
        assert.strictEqual(response.headers["content-type"], "application/json")
      }))

    it.effect("other endpoints send no CORS headers, and preflights get no allowance", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        const health = yield* server.call("GET", "/health", { headers: { "ttr-api-key": key, origin: "https://example.test" } })
        const preflight = yield* server.call("OPTIONS", "/health", {
          headers: { origin: "https://example.test", "access-control-request-method": "GET" }
        })
        const openapiPreflight = yield* server.call("OPTIONS", "/openapi/json", {
          headers: { origin: "https://example.test", "access-control-request-method": "GET" }
        })
        for (const response of [health, preflight, openapiPreflight]) {
          assert.deepStrictEqual(Object.keys(response.headers).filter((name) => name.startsWith("access-control-")), [])
        }
        assert.strictEqual(preflight.status, 404)
        assert.strictEqual(openapiPreflight.status, 404)
      }))
  })

  describe("OpenAPI document", () => {
    it.effect("is OpenAPI 3.1 as the contract describes it: no servers, the key as header parameters, /schedule's five methods sharing one id", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const document = (yield* server.call("GET", "/openapi/json")).json()
        assert.strictEqual(document.openapi, "3.1.0")
        assert.notProperty(document, "servers")
        assert.notProperty(document.components, "securitySchemes")
        type Operation = { operationId: string; security?: unknown; parameters?: Array<{ name: string; in: string; required: boolean }> }
        const operations = Object.values(document.paths).flatMap((item) => Object.values(item as Record<string, Operation>))
        for (const operation of operations) assert.notProperty(operation, "security", operation.operationId)
        const credentials = (operation: Operation) =>
          (operation.parameters ?? []).filter((p) => ["ttr-api-key", "authorization", "__host-timewheel-session"].includes(p.name.toLowerCase()))
            .map((p) => `${p.in}:${p.name}:${p.required}`)
        const schedule = document.paths["/schedule"]
        assert.deepStrictEqual(Object.keys(schedule), ["get", "post", "put", "patch", "delete"])
        for (const method of Object.keys(schedule)) {
          assert.strictEqual(schedule[method].operationId, "schedule", method)
          assert.deepStrictEqual(credentials(schedule[method]), ["header:ttr-api-key:true"], method)
        }
        assert.deepStrictEqual(credentials(document.paths["/cancel"].delete), ["header:ttr-api-key:true"])
        assert.deepStrictEqual(credentials(document.paths["/health"].get), [
          "header:ttr-api-key:false", "header:Authorization:false", "cookie:__Host-timewheel-session:false"
        ])
        assert.deepStrictEqual(credentials(document.paths["/mcp"].post), ["header:ttr-api-key:false", "header:Authorization:false"])
        assert.deepStrictEqual(credentials(document.paths["/keys"].get), ["cookie:__Host-timewheel-session:true"])
        assert.deepStrictEqual(credentials(document.paths["/openapi/json"].get), [])
        // every other operation has an id of its own
        const others = operations.filter((operation) => operation.operationId !== "schedule").map((operation) => operation.operationId)
        assert.strictEqual(new Set(others).size, others.length)
        // every 4xx documents its hint
        assert.property(document.paths["/declare"].post.responses["400"].headers, "Timewheel-Error")
      }))

    it.effect("GET /docs serves an interactive page embedding the generators' document, its server this one", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        const docs = yield* server.call("GET", "/docs", { headers: { "ttr-api-key": key } })
        assert.strictEqual(docs.status, 200)
        assert.match(String(docs.headers["content-type"]), /^text\/html/)
        assert.include(docs.text, "Scalar.createApiReference")
        assert.include(docs.text, '"openapi":"3.1.0"')
        assert.include(docs.text, `"servers":[{"url":"https://127.0.0.1:${new URL(server.baseUrl).port}"`)
        assert.include(docs.text, '"securitySchemes":{"apiKey"')
        // an inline (empty) icon: the browser does not ask for /favicon.ico, which is a 404
        assert.include(docs.text, '<link rel="icon" href="data:," />')
        const anonymous = yield* server.call("GET", "/docs")
        assert.strictEqual(anonymous.status, 401)
      }))
  })
})
