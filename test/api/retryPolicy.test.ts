// GET / PUT /project/retry-policy against the real service: the documented defaults, patch semantics,
// one 400 per invalid field (and nothing written), 415 / empty 400 body rules, project scoping
// and the auth matrix.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestServer, testServerLayer } from "../support/server.ts"

const DEFAULTS = {
  retryStrategy: "exponential",
  retryMaxAttempts: 3,
  retryInitialDelaySeconds: 30,
  retryMaxDelaySeconds: null,
  retryJitter: false,
  retryOn: "network_only"
}

const newProject = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const auth = { "ttr-api-key": key }
  return {
    key,
    get: () => server.call("GET", "/project/retry-policy", { headers: auth }),
    put: (body: string, headers: Record<string, string> = { "content-type": "application/json" }) =>
      server.call("PUT", "/project/retry-policy", { headers: { ...auth, ...headers }, body })
  }
})

layer(testServerLayer(), { timeout: "60 seconds" })("project retry policy", (it) => {
  it.effect("a new project has the documented defaults", () =>
    Effect.gen(function*() {
      const p = yield* newProject
      const response = yield* p.get()
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers["content-type"], "application/json")
      assert.deepStrictEqual(response.json(), DEFAULTS)
    }))

  it.effect("PUT patches: omitted fields keep their value, the answer is the whole policy", () =>
    Effect.gen(function*() {
      const p = yield* newProject
      const first = yield* p.put(`{"retryMaxAttempts":5,"retryOn":"non_2xx"}`)
      assert.strictEqual(first.status, 200)
      assert.deepStrictEqual(first.json(), { ...DEFAULTS, retryMaxAttempts: 5, retryOn: "non_2xx" })

      const second = yield* p.put(`{"retryStrategy":"fixed","retryMaxDelaySeconds":600,"retryJitter":true,"retryInitialDelaySeconds":0}`)
      const expected = {
        retryStrategy: "fixed",
        retryMaxAttempts: 5,
        retryInitialDelaySeconds: 0,
        retryMaxDelaySeconds: 600,
        retryJitter: true,
        retryOn: "non_2xx"
      }
      assert.deepStrictEqual(second.json(), expected)
      assert.deepStrictEqual((yield* p.get()).json(), expected)

      const cleared = yield* p.put(`{"retryMaxDelaySeconds":null,"unknownField":1}`)
      assert.deepStrictEqual(cleared.json(), { ...expected, retryMaxDelaySeconds: null })
      const empty = yield* p.put(`{}`)
      assert.deepStrictEqual(empty.json(), { ...expected, retryMaxDelaySeconds: null })
      assert.deepStrictEqual((yield* p.get()).json(), { ...expected, retryMaxDelaySeconds: null })

      const edges = yield* p.put(`{"retryStrategy":"none","retryMaxAttempts":1,"retryInitialDelaySeconds":86400,"retryMaxDelaySeconds":0}`)
      assert.deepStrictEqual(edges.json(), {
        ...expected, retryStrategy: "none", retryMaxAttempts: 1, retryInitialDelaySeconds: 86400, retryMaxDelaySeconds: 0
      })
    }))

  it.effect("a patch changes only the caller's project", () =>
    Effect.gen(function*() {
      const p = yield* newProject
      const other = yield* newProject
      yield* p.put(`{"retryStrategy":"none"}`)
      assert.strictEqual((yield* p.get()).json().retryStrategy, "none")
      assert.deepStrictEqual((yield* other.get()).json(), DEFAULTS)
    }))

  describe("a bad value → 400 naming the field, nothing written", () => {
    const strategy = "retryStrategy must be one of none, fixed, exponential"
    const attempts = "retryMaxAttempts must be an integer from 1 to 2147483647"
    const initial = "retryInitialDelaySeconds must be an integer from 0 to 86400"
    const max = "retryMaxDelaySeconds must be null or an integer from 0 to 86400"
    const jitter = "retryJitter must be true or false"
    const retryOn = "retryOn must be one of network_only, 5xx_and_network, non_2xx"
    const cases: ReadonlyArray<[string, string]> = [
      [`{"retryStrategy":"linear"}`, strategy],
      [`{"retryStrategy":null}`, strategy],
      [`{"retryMaxAttempts":0}`, attempts],
      [`{"retryMaxAttempts":2.5}`, attempts],
      [`{"retryMaxAttempts":"3"}`, attempts],
      [`{"retryMaxAttempts":null}`, attempts],
      [`{"retryInitialDelaySeconds":-1}`, initial],
      [`{"retryInitialDelaySeconds":86401}`, initial],
      [`{"retryMaxDelaySeconds":-5}`, max],
      [`{"retryMaxDelaySeconds":86401}`, max],
      [`{"retryMaxDelaySeconds":"60"}`, max],
      [`{"retryJitter":"true"}`, jitter],
      [`{"retryOn":"all"}`, retryOn],
      [`{"retryMaxAttempts":5,"retryOn":"all"}`, retryOn],
      [`{"retryOn":"all","retryStrategy":"x"}`, strategy],
      [`[]`, "Retry policy must be a JSON object"],
      [`"fixed"`, "Retry policy must be a JSON object"],
      [`null`, "Retry policy must be a JSON object"]
    ]
    for (const [body, message] of cases) {
      it.effect(body, () =>
        Effect.gen(function*() {
          const p = yield* newProject
          const response = yield* p.put(body)
          assert.strictEqual(response.status, 400)
          assert.deepStrictEqual(response.json(), { _tag: "BadRequest", message })
          assert.deepStrictEqual((yield* p.get()).json(), DEFAULTS)
        }))
    }
  })

  it.effect("body rules: 415 plain text, empty 400 for invalid JSON, no Content-Type read as JSON", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const p = yield* newProject
      const unsupported = yield* p.put(`{"retryJitter":true}`, { "content-type": "application/x-www-form-urlencoded" })
      assert.strictEqual(unsupported.status, 415)
      assert.strictEqual(unsupported.text, "Unsupported content-type: application/x-www-form-urlencoded")
      for (const body of ["", "{", "{'retryJitter': true}"]) {
        const invalid = yield* p.put(body)
        assert.strictEqual(invalid.status, 400)
        assert.strictEqual(invalid.text, "")
      }
      assert.deepStrictEqual((yield* p.get()).json(), DEFAULTS)
      const noType = yield* server.call("PUT", "/project/retry-policy", { headers: { "ttr-api-key": p.key }, body: `{"retryJitter":true}` })
      assert.strictEqual(noType.status, 200)
      assert.strictEqual(noType.json().retryJitter, true)
      // Content-Type and JSON come before credentials
      const anonymous415 = yield* server.call("PUT", "/project/retry-policy", { headers: { "content-type": "text/plain" }, body: "{}" })
      assert.strictEqual(anonymous415.status, 415)
      const anonymous = yield* server.call("PUT", "/project/retry-policy", { headers: { "content-type": "application/json" }, body: "{}" })
      assert.strictEqual(anonymous.status, 401)
    }))

  it.effect("exact path: a trailing slash or a sub-path → empty 404; other methods → empty 404", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const p = yield* newProject
      for (const [method, path] of [["GET", "/project/retry-policy/"], ["GET", "/project/retry-policy/x"], ["POST", "/project/retry-policy"], ["GET", "/project"]]) {
        const response = yield* server.call(method!, path!, { headers: { "ttr-api-key": p.key } })
        assert.strictEqual(response.status, 404, `${method} ${path}`)
        assert.strictEqual(response.text, "")
      }
    }))

  describe("authentication of GET /project/retry-policy", () => {
    const cases: ReadonlyArray<[string, (key: string) => Record<string, string>, number, string | null]> = [
      ["key header", (key) => ({ "ttr-api-key": key }), 200, null],
      ["Bearer", (key) => ({ authorization: `Bearer ${key}` }), 200, null],
      ["both, key header good", (key) => ({ "ttr-api-key": key, authorization: "Bearer ttr_nope" }), 200, null],
      ["both, only the Bearer good", (key) => ({ "ttr-api-key": "ttr_nope", authorization: `Bearer ${key}` }), 401, "Invalid api key"],
      ["none", () => ({}), 401, "Unauthorized"]
    ]
    for (const [name, headers, status, message] of cases) {
      it.effect(`${name} → ${status}`, () =>
        Effect.gen(function*() {
          const server = yield* TestServer
          const p = yield* newProject
          const response = yield* server.call("GET", "/project/retry-policy", { headers: headers(p.key) })
          assert.strictEqual(response.status, status)
          assert.deepStrictEqual(response.json(), message === null ? DEFAULTS : { _tag: "Unauthorized", message })
        }))
    }
  })

  it.effect("the OpenAPI document describes GET and PUT", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const item = (yield* server.call("GET", "/openapi/json")).json().paths["/project/retry-policy"]
      assert.strictEqual(item.get.operationId, "getProjectRetryPolicy")
      assert.strictEqual(item.put.operationId, "patchProjectRetryPolicy")
      assert.includeMembers(Object.keys(item.put.responses), ["200", "400", "401", "415"])
      assert.deepStrictEqual(Object.keys(item.get.responses["200"].content["application/json"].schema.properties), Object.keys(DEFAULTS))
    }))
})
