// Faults against the real service (docs/errors.md "Text the database cannot store", 503): a value
// PostgreSQL cannot store is a 400 from the domain and fails alone among concurrent calls; while the
// database cannot be reached (its sessions terminated, new ones refused) every endpoint that needs it
// answers 503 `ServiceUnavailable` with `Retry-After: 1` and /health 503 with its usual body, never a
// 500; once it is back, the same calls succeed again.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestServer, testServerLayer, type TestResponse } from "../support/server.ts"
import { closeDatabase, databaseUrlOf, reopenDatabase } from "../support/outage.ts"
import { pollUntil } from "../support/wait.ts"

const URL_OK = "http://127.0.0.1:9/hook"
const FAR = "2099-01-01T00:00:00Z"
const SOME_UUID = "01890000-0000-7000-8000-000000000000"

const scheduleHeaders = (key: string, extra: Record<string, string> = {}) => ({
  "ttr-api-key": key, "ttr-url": URL_OK, "ttr-scheduled-at": FAR, ...extra
})


/** Every call an API client can make that needs the database, for one key. */
const databaseCalls = (key: string, jobId: string): ReadonlyArray<readonly [string, string, { headers: Record<string, string>; body?: string }]> => {
  const auth = { "ttr-api-key": key }
  const json = { ...auth, "content-type": "application/json" }
  return [
    ["POST", "/schedule", { headers: scheduleHeaders(key), body: "{}" }],
    ["POST", "/schedule", { headers: scheduleHeaders(key, { "ttr-custom-key": "outage-key" }) }],
    ["PUT", "/schedule", { headers: scheduleHeaders(key, { "ttr-scheduled-at": "cron(0 9 * * *)" }) }],
    ["DELETE", "/cancel", { headers: { ...auth, "ttr-trigger-id": jobId } }],
    ["GET", "/jobs", { headers: auth }],
    ["GET", "/jobs?customKey=x&tag=y", { headers: auth }],
    ["GET", `/jobs/${jobId}`, { headers: auth }],
    ["GET", `/jobs/${jobId}/executions`, { headers: auth }],
    ["POST", `/jobs/${jobId}/executions`, { headers: json, body: JSON.stringify({ triggeredBy: "retry" }) }],
    ["GET", "/executions", { headers: auth }],
    ["GET", `/executions/${SOME_UUID}`, { headers: auth }],
    ["GET", "/project/retry-policy", { headers: { authorization: `Bearer ${key}` } }],
    ["PUT", "/project/retry-policy", { headers: json, body: JSON.stringify({ retryMaxAttempts: 4 }) }]
  ]
}

const assertUnavailable = (response: TestResponse, what: string) => {
  assert.strictEqual(response.status, 503, `${what}: ${response.status} ${response.text}`)
  assert.deepStrictEqual(response.json(), { _tag: "ServiceUnavailable", message: "Database unavailable" }, what)
  assert.strictEqual(response.headers["retry-after"], "1", what)
  assert.strictEqual(response.headers["content-type"], "application/json", what)
}

const assertUnavailableHealth = (response: TestResponse, what: string) => {
  assert.strictEqual(response.status, 503, `${what}: ${response.status} ${response.text}`)
  const body = response.json()
  assert.deepStrictEqual(Object.keys(body), ["status", "schedulerStaleMs", "materializerStaleMs"], what)
  assert.strictEqual(body.status, "unavailable", what)
  assert.isTrue(Number.isInteger(body.schedulerStaleMs) && Number.isInteger(body.materializerStaleMs), what)
}

layer(testServerLayer(), { timeout: "120 seconds" })("faults", (it) => {
  describe("isolation (item 3)", () => {
    it.effect("year 0000 is a 400 from the domain, and 150 concurrent valid calls of the project all succeed", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        const valid = Array.from({ length: 150 }, (_, i) =>
          server.call("POST", "/schedule", { headers: scheduleHeaders(key, { "ttr-scheduled-at": "now | add 1h" }), body: `{"n":${i}}` }))
        const bad = server.call("POST", "/schedule", { headers: scheduleHeaders(key, { "ttr-scheduled-at": "0000-01-01" }) })
        const responses = yield* Effect.all([...valid.slice(0, 75), bad, ...valid.slice(75)], { concurrency: "unbounded" })
        const badResponse = responses[75]!
        assert.strictEqual(badResponse.status, 400, badResponse.text)
        assert.deepStrictEqual(badResponse.json(), { _tag: "BadRequest", message: "Invalid date: 0000-01-01" })
        const statuses = responses.filter((_, i) => i !== 75).map((r) => r.status)
        assert.deepStrictEqual([...new Set(statuses)], [200])
        // the 150 stored triggers are all there
        let listed = 0
        let cursor: string | null = null
        do {
          const page: { jobs: Array<unknown>; nextCursor: string | null } = (yield* server.call(
            "GET",
            `/jobs?limit=500${cursor === null ? "" : `&cursor=${cursor}`}`,
            { headers: { "ttr-api-key": key } }
          )).json()
          listed += page.jobs.length
          cursor = page.nextCursor
        } while (cursor !== null)
        assert.strictEqual(listed, 150)
      }))

    it.effect("the year bounds hold after date operations, and the earliest storable date is accepted", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        for (const value of ["0001-01-01 | subtract 1d", "0001-01-01T00:30:00+01:00", "9999-12-31T23:59:59Z | add 1s"]) {
          const response = yield* server.call("POST", "/schedule", { headers: scheduleHeaders(key, { "ttr-scheduled-at": value }) })
          assert.strictEqual(response.status, 400, value)
          assert.deepStrictEqual(response.json(), { _tag: "BadRequest", message: `Invalid date: ${value}` })
        }
        for (const value of ["0001-01-01", "9999-12-31T23:59:59.999Z"]) {
          for (const extra of [{}, { "ttr-custom-key": `edge-${value}` }, { "ttr-run-missed": "true" }]) {
            const response = yield* server.call("POST", "/schedule", { headers: scheduleHeaders(key, { "ttr-scheduled-at": value, ...extra }) })
            assert.strictEqual(response.status, 200, `${value} ${JSON.stringify(extra)}: ${response.text}`)
          }
        }
      }))
  })

  describe("database outage (item 4)", () => {
    it.effect("every endpoint needing the database answers 503 while it is away, /health 503 with its body; all recover", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const url = yield* databaseUrlOf
        // `known` is used before the outage (the service remembers it); `unknown` never is: its lookup needs the database
        const known = yield* server.newKey()
        const unknown = yield* server.newKey()
        const created = yield* server.call("POST", "/schedule", { headers: scheduleHeaders(known) })
        assert.strictEqual(created.status, 200, created.text)
        const jobId: string = created.json().triggerId

        yield* closeDatabase(url)
        try {
          for (const key of [known, unknown]) {
            for (const [method, path, options] of databaseCalls(key, jobId)) {
              assertUnavailable(yield* server.call(method, path, options), `${method} ${path} (${key === known ? "remembered" : "new"} key)`)
            }
            // /health reads what the scheduler found in its last turn (every second)
            const health = yield* pollUntil("/health to say unavailable", Effect.map(
              server.call("GET", "/health", { headers: { "ttr-api-key": key } }),
              (response) => (response.status === 503 ? response : undefined)
            ), { deadlineMs: 5_000 })
            assertUnavailableHealth(health, "GET /health")
          }
          // what needs no database still works, and what is wrong with a request is still said first
          assert.strictEqual((yield* server.call("GET", "/openapi/json")).status, 200)
          assert.strictEqual((yield* server.call("POST", "/schedule", { headers: { "ttr-url": URL_OK } })).status, 400)
          assert.strictEqual((yield* server.call("GET", "/jobs")).status, 401)
          // concurrent creates during the outage: every one a 503, none a 500
          const burst = yield* Effect.all(
            Array.from({ length: 40 }, () => server.call("POST", "/schedule", { headers: scheduleHeaders(known) })),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual([...new Set(burst.map((r) => r.status))], [503])
        } finally {
          yield* reopenDatabase(url)
        }

        // back: the same calls succeed again (the pool reconnects by itself)
        const listed = yield* pollUntil("GET /jobs to answer 200 again", Effect.map(
          server.call("GET", "/jobs", { headers: { "ttr-api-key": unknown } }),
          (response) => (response.status === 200 ? response : undefined)
        ), { everyMs: 100, deadlineMs: 20_000 })
        assert.strictEqual(listed.status, 200, listed.text)
        const again = yield* server.call("POST", "/schedule", { headers: scheduleHeaders(known) })
        assert.strictEqual(again.status, 200, again.text)
        const health = yield* pollUntil("/health to say ok again", Effect.map(
          server.call("GET", "/health", { headers: { "ttr-api-key": known } }),
          (response) => (response.json().status !== "unavailable" ? response : undefined)
        ), { deadlineMs: 10_000 })
        assert.notStrictEqual(health.status, 500)
      }))
  })
})
