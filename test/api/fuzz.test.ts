// Property-based fuzzing of the API (issue 10, "Proof"): arbitrary /schedule and /cancel headers,
// bodies of the JSON endpoints (POST /actions included) and query parameters of the log endpoints (test/support/fuzzInputs.ts)
// never get a 5xx from a healthy service, and the service still answers /health afterwards. A few
// hundred inputs here; `npm run fuzz` runs 100,000 against a started service.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { request } from "undici"
import { actionRequest, anyRequest, type FuzzRequest, jsonRequest, queryRequest, scheduleRequest } from "../support/fuzzInputs.ts"
import { insecureAgent, TestServer, testServerLayer } from "../support/server.ts"

/** Sends one fuzzed request; its status and body. */
const send = async (baseUrl: string, req: FuzzRequest) => {
  const response = await request(baseUrl + req.path, {
    method: req.method,
    dispatcher: insecureAgent,
    headers: req.headers.flat(),
    ...(req.body === undefined ? {} : { body: req.body })
  })
  return { status: response.statusCode, text: await response.body.text() }
}

/** Checks the property "never a 5xx" over `runs` inputs of `arbitrary`. */
const neverServerError = (baseUrl: string, arbitrary: fc.Arbitrary<FuzzRequest>, runs: number) =>
  Effect.promise(() =>
    fc.assert(
      fc.asyncProperty(arbitrary, async (req) => {
        const { status, text } = await send(baseUrl, req)
        if (status >= 500) throw new Error(`${req.method} ${req.path} → ${status} ${text}`)
      }),
      { numRuns: runs, interruptAfterTimeLimit: 60_000 }
    ))

layer(testServerLayer(), { timeout: "180 seconds" })("fuzz", (it) => {
  it.effect("no 5xx from arbitrary requests, and the service answers /health afterwards", () =>
    Effect.gen(function*() {
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

      yield* neverServerError(server.baseUrl, scheduleRequest(key), 150)
      yield* neverServerError(server.baseUrl, jsonRequest(key, jobIds), 80)
      yield* neverServerError(server.baseUrl, queryRequest(key), 120)
      yield* neverServerError(server.baseUrl, actionRequest(key), 80)
      yield* neverServerError(server.baseUrl, anyRequest(key, jobIds), 50)

      const health = yield* server.call("GET", "/health", { headers: { "ttr-api-key": key } })
      assert.include([200, 503], health.status)
      assert.include(["ok", "stale"], health.json().status)
      assert.strictEqual((yield* server.call("GET", "/openapi/json")).status, 200)
    }))
})
