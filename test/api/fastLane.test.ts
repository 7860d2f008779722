// The fast lane (src/api/fastLane.ts) on its own: which requests it takes and answers, and which it
// leaves to the Effect routes. The lane is built from the real service's context and served by a
// plain node:http server that answers 418 to whatever the lane declines, so a request the lane does
// not take is plain to see. (What its answers are, check by check, is test/api/schedule.test.ts.)
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Readable } from "node:stream"
import { request } from "undici"
import { FAST_LANE_MAX_BODY_BYTES, makeFastLane } from "../../src/api/fastLane.ts"
import { newKey, testServerLayer } from "../support/server.ts"

const DECLINED = 418

/** The lane behind a plain HTTP server on a free loopback port; its origin. */
const laneServer = Effect.gen(function*() {
  const lane = yield* makeFastLane
  const server = http.createServer((req, res) => {
    if (!lane(req, res)) res.writeHead(DECLINED).end()
  })
  yield* Effect.acquireRelease(
    Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
    () => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  )
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

const send = (origin: string, method: string, path: string, headers: Record<string, string>, body?: string | Uint8Array) =>
  Effect.promise(async () => {
    const response = await request(origin + path, { method, headers, ...(body === undefined ? {} : { body }) })
    const text = await response.body.text()
    return { status: response.statusCode, text }
  })

const scheduleHeaders = (key: string) => ({
  "ttr-api-key": key, "ttr-url": "http://127.0.0.1:9/hook", "ttr-scheduled-at": "2099-01-01T00:00:00Z", "content-type": "application/json"
})

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("fast lane", (it) => {
  it.effect("takes /schedule at its exact path with a bounded body, and GET /health with a remembered key; leaves the rest", () =>
    Effect.gen(function*() {
      const origin = yield* laneServer
      const key = yield* newKey()
      const headers = scheduleHeaders(key)

      // /schedule: taken with any key (one not remembered runs the route's Effect in the lane)
      const cold = yield* send(origin, "POST", "/schedule", headers, "{\"n\":1}")
      assert.strictEqual(cold.status, 200, cold.text)
      const warm = yield* send(origin, "PUT", "/schedule", headers, "{\"n\":2}")
      assert.strictEqual(warm.status, 200, warm.text)
      assert.strictEqual(JSON.parse(warm.text).operation, "schedule")
      assert.strictEqual((yield* send(origin, "GET", "/schedule", headers)).status, 200)
      assert.strictEqual((yield* send(origin, "POST", "/schedule", { ...headers, "ttr-api-key": "ttr_" + "0".repeat(48) }, "{}")).status, 401)
      assert.strictEqual((yield* send(origin, "POST", "/schedule", { "ttr-url": "x" })).status, 400)
      // the largest body it collects is still taken; a larger one, or a chunked one, is not
      const largest = yield* send(origin, "POST", "/schedule", headers, new Uint8Array(FAST_LANE_MAX_BODY_BYTES))
      assert.strictEqual(largest.status, 200, largest.text)
      assert.strictEqual((yield* send(origin, "POST", "/schedule", headers, new Uint8Array(FAST_LANE_MAX_BODY_BYTES + 1))).status, DECLINED)
      const chunked = yield* Effect.promise(async () => {
        const response = await request(`${origin}/schedule`, {
          method: "POST",
          headers,
          body: Readable.from(["{\"n\":", "3}"])
        })
        await response.body.dump()
        return response.statusCode
      })
      assert.strictEqual(chunked, DECLINED)
      // not its exact path
      for (const path of ["/schedule?x=1", "/schedule/", "//schedule", "/Schedule"]) {
        assert.strictEqual((yield* send(origin, "POST", path, headers, "{}")).status, DECLINED, path)
      }

      // /health: by GET, with a key (header or Bearer) the key cache remembers (it does since /schedule above)
      const health = yield* send(origin, "GET", "/health", { "ttr-api-key": key })
      assert.strictEqual(health.status === 200 || health.status === 503, true, health.text)
      assert.deepStrictEqual(Object.keys(JSON.parse(health.text)), ["status", "schedulerStaleMs", "materializerStaleMs"])
      assert.notStrictEqual((yield* send(origin, "GET", "/health", { authorization: `Bearer ${key}` })).status, DECLINED)
      assert.strictEqual((yield* send(origin, "GET", "/health", {})).status, DECLINED)
      assert.strictEqual((yield* send(origin, "GET", "/health", { "ttr-api-key": yield* newKey() })).status, DECLINED)
      assert.strictEqual((yield* send(origin, "HEAD", "/health", { "ttr-api-key": key })).status, DECLINED)
      assert.strictEqual((yield* send(origin, "GET", "/health?x=1", { "ttr-api-key": key })).status, DECLINED)

      // everything else
      assert.strictEqual((yield* send(origin, "POST", "/bulk", { "ttr-api-key": key }, "{}")).status, DECLINED)
      assert.strictEqual((yield* send(origin, "DELETE", "/cancel", { "ttr-api-key": key })).status, DECLINED)
    }).pipe(Effect.scoped))
})
