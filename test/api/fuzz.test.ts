// Property-based fuzzing of the API (RELIABILITY.md "Fuzzing"): arbitrary /schedule and
// /cancel headers, bodies of the JSON endpoints (POST /actions included) and query parameters of the log endpoints
// (test/support/fuzzInputs.ts), and every other endpoint family — /declare, /bulk, /tag-policies, /target-policies,
// replay, /mcp, the dashboard's endpoints with a signed-in session, the ops port — with deep, wide,
// huge and broken inputs and many headers (test/support/fuzzFamilies.ts) never get a 5xx from a
// healthy service, and the service still answers /health afterwards. A few hundred inputs here;
// `npm run fuzz` runs many more against a started service.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { request } from "undici"
import { OpsListener } from "../../src/ops/opsServer.ts"
import { newAdmin, sessionCall, signedIn } from "../support/dashboard.ts"
import { MAX_JSON_DEPTH } from "../../src/domain/jsonDepth.ts"
import { SESSION_COOKIE } from "../../src/domain/auth/signin.ts"
import {
  dashboardRequest, declareAndBulkRequest, everyRequest, type FuzzContext, mcpRequest, opsRequest, replayRequest, tagPolicyRequest,
  targetPolicyRequest
} from "../support/fuzzFamilies.ts"
import { projectIdOfKey } from "../support/fixtures.ts"
import { actionRequest, anyRequest, type FuzzRequest, jsonRequest, queryRequest, scheduleRequest } from "../support/fuzzInputs.ts"
import { insecureAgent, TestServer, testServerLayer } from "../support/server.ts"

/** Sends one fuzzed request (to the ops listener when it says so); its status and body. */
const send = async (baseUrl: string, req: FuzzRequest, opsUrl = "") => {
  const response = await request((req.port === "ops" ? opsUrl : baseUrl) + req.path, {
    method: req.method,
    dispatcher: insecureAgent,
    headers: req.headers.flat(),
    ...(req.body === undefined ? {} : { body: req.body })
  })
  return { status: response.statusCode, text: await response.body.text() }
}

/** Checks the property "never a 5xx" over `runs` inputs of `arbitrary`. */
const neverServerError = (baseUrl: string, arbitrary: fc.Arbitrary<FuzzRequest>, runs: number, opsUrl?: string) =>
  Effect.promise(() =>
    fc.assert(
      fc.asyncProperty(arbitrary, async (req) => {
        const { status, text } = await send(baseUrl, req, opsUrl)
        if (status >= 500) throw new Error(`${req.method} ${req.path} → ${status} ${text.slice(0, 500)}`)
      }),
      { numRuns: runs, interruptAfterTimeLimit: 60_000 }
    ))

/** A new project's key and three of its triggers (far in the future). */
const keyWithJobs = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const jobIds: Array<string> = []
  for (let i = 0; i < 3; i++) {
    const created = yield* server.call("POST", "/schedule", {
      headers: { "ttr-api-key": key, "ttr-url": "http://127.0.0.1:9/hook", "ttr-scheduled-at": "2099-01-01T00:00:00Z" }
    })
    assert.strictEqual(created.status, 200)
    jobIds.push(created.json().triggerId)
  }
  return { key, jobIds }
})

layer(testServerLayer(), { timeout: "300 seconds" })("fuzz", (it) => {
  it.effect("no 5xx from arbitrary requests, and the service answers /health afterwards", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const { key, jobIds } = yield* keyWithJobs

      yield* neverServerError(server.baseUrl, scheduleRequest(key), 150)
      yield* neverServerError(server.baseUrl, jsonRequest(key, jobIds), 80)
      yield* neverServerError(server.baseUrl, queryRequest(key), 120)
      yield* neverServerError(server.baseUrl, actionRequest(key), 80)
      yield* neverServerError(server.baseUrl, anyRequest(key, jobIds), 50)

      yield* answersAfterwards(key)
    }))

  it.effect("no 5xx from the other families: declare, bulk, tag and target policies, replay, MCP, the dashboard with a session, the ops port", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const { key, jobIds } = yield* keyWithJobs
      const policy = yield* server.call("POST", "/tag-policies", { headers: { "ttr-api-key": key, "content-type": "application/json" }, body: "{\"tag\":\"billing\",\"maxConcurrent\":2}" })
      assert.strictEqual(policy.status, 201, policy.text)
      const targetPolicy = yield* server.call("POST", "/target-policies", {
        headers: { "ttr-api-key": key, "content-type": "application/json" }, body: "{\"origin\":\"https://api.example.com\",\"maxConcurrent\":2}"
      })
      assert.strictEqual(targetPolicy.status, 201, targetPolicy.text)
      const admin = yield* newAdmin
      const token = yield* signedIn(admin.email, admin.password)
      const ctx: FuzzContext = {
        key, jobIds, policyIds: [policy.json().id], targetPolicyIds: [targetPolicy.json().id],
        session: { cookie: `${SESSION_COOKIE}=${token}`, projectId: yield* projectIdOfKey(key), origin: server.baseUrl }
      }
      const ops = (yield* OpsListener).url!

      yield* neverServerError(server.baseUrl, declareAndBulkRequest(ctx), 60)
      yield* neverServerError(server.baseUrl, tagPolicyRequest(ctx), 40)
      yield* neverServerError(server.baseUrl, targetPolicyRequest(ctx), 40)
      yield* neverServerError(server.baseUrl, replayRequest(ctx), 20)
      yield* neverServerError(server.baseUrl, mcpRequest(ctx), 60)
      yield* neverServerError(server.baseUrl, dashboardRequest(ctx), 60)
      yield* neverServerError(server.baseUrl, opsRequest, 30, ops)
      yield* neverServerError(server.baseUrl, everyRequest(ctx), 40, ops)

      // every hostile shape, whole, at every JSON endpoint (with the key, and with the session)
      const jsonEndpoints: ReadonlyArray<readonly [string, string, "key" | "session"]> = [
        ["POST", "/declare", "key"], ["POST", "/bulk", "key"], ["POST", "/tag-policies", "key"], ["PUT", `/tag-policies/${ctx.policyIds[0]}`, "key"],
        ["POST", "/target-policies", "key"], ["PUT", `/target-policies/${ctx.targetPolicyIds![0]}`, "key"],
        ["POST", `/jobs/${jobIds[0]}/executions`, "key"], ["PUT", "/project/retry-policy", "key"], ["POST", "/mcp", "key"],
        ["PUT", "/alerts", "session"], ["POST", "/session", "session"], ["POST", "/declare", "session"]
      ]
      for (const [shape, body] of HOSTILE) {
        for (const [method, path, credentials] of jsonEndpoints) {
          const headers: Array<[string, string]> = credentials === "key"
            ? [["ttr-api-key", key], ["accept", "application/json, text/event-stream"]]
            : [["cookie", ctx.session!.cookie], ["origin", server.baseUrl], ["timewheel-project", ctx.session!.projectId]]
          const answer = yield* server.call(method, path, { headers: [...headers, ["content-type", "application/json"]], body })
          assert.isBelow(answer.status, 500, `${shape} → ${method} ${path}: ${answer.status} ${answer.text.slice(0, 300)}`)
        }
      }

      // the session survived its fuzzing
      assert.strictEqual((yield* sessionCall(token, "GET", "/session")).status, 200)
      yield* answersAfterwards(key)
      // about a hundred multi-megabyte hostile bodies, parsed and refused: CPU-bound, 13 s alone, over 60 s
      // once beside the rest of the suite on two cores, so a longer limit than the default
    }), { timeout: 180_000 })
})

/** A /declare body whose one item's body nests `depth` arrays (the item itself adds 3 levels). */
const declareNested = (depth: number) =>
  `{"tag":"deep","items":[{"url":"http://127.0.0.1:9/","scheduledAt":"2099-01-01T00:00:00Z","body":${"[".repeat(depth)}${"]".repeat(depth)}}]}`

/** [name, JSON text] of the worst shapes, each sent whole to every JSON endpoint. */
const HOSTILE: ReadonlyArray<readonly [string, string]> = [
  ["200,000 nested arrays", `${"[".repeat(200_000)}${"]".repeat(200_000)}`],
  ["200,000 nested objects", `${"{\"a\":".repeat(200_000)}{}${"}".repeat(200_000)}`],
  ["an array of 1,000,000 zeros", `[${Array(1_000_000).fill("0").join(",")}]`],
  ["an object of 100,000 keys", `{${Array.from({ length: 100_000 }, (_, i) => `"k${i}":0`).join(",")}}`],
  ["an 8 MB string of U+0001", JSON.stringify("\u0001".repeat(8_000_000))],
  ["lone surrogates", JSON.stringify("\ud800\udfff\ud800".repeat(1_000))],
  ["NUL in keys and values", "{\"\\u0000\":\"\\u0000\",\"tag\":\"\\u0000\",\"items\":[{\"url\":\"\\u0000\"}]}"],
  ["items nested 100,000 deep", declareNested(100_000)],
  ["upserts nested 100,000 deep", `{"upserts":[{"url":"http://127.0.0.1:9/","headers":{"a":"b"},"body":${"{\"a\":".repeat(100_000)}1${"}".repeat(100_000)}}]}`]
]

layer(testServerLayer(), { timeout: "60 seconds" })("JSON nesting", (it) => {
  it.effect(`a body nested deeper than ${MAX_JSON_DEPTH} levels is the empty 400 of invalid JSON (its item body overflowed the stack: 500)`, () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const key = yield* server.newKey()
      const declare = (body: string) => server.call("POST", "/declare", { headers: { "ttr-api-key": key, "content-type": "application/json" }, body })
      const within = yield* declare(declareNested(MAX_JSON_DEPTH - 3))
      assert.strictEqual(within.status, 200, within.text)
      assert.strictEqual(within.json().summary.added, 1)
      for (const depth of [MAX_JSON_DEPTH - 2, 100_000]) {
        const refused = yield* declare(declareNested(depth))
        assert.strictEqual(refused.status, 400, `${depth}: ${refused.text.slice(0, 200)}`)
        assert.strictEqual(refused.text, "")
      }
    }))
})

/** /health and the OpenAPI document still answer. */
const answersAfterwards = (key: string) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const health = yield* server.call("GET", "/health", { headers: { "ttr-api-key": key } })
    assert.include([200, 503], health.status)
    assert.include(["ok", "stale"], health.json().status)
    assert.strictEqual((yield* server.call("GET", "/openapi/json")).status, 200)
  })
