// Any-method /schedule against the real service (docs/scheduling.md, its "Errors" in order;
// docs/README.md "Limits at a glance"; docs/retries.md "Per-trigger headers"): one table row per check
// in the documented order (each row also breaks later checks, so the order is pinned), the quota
// arithmetic (also under concurrency), and what a create or an edit stores.
// The check table runs through each way into /schedule (api/fastLane.ts): the fast lane with a key
// the key cache remembers (its synchronous checks), the fast lane with a key it does not (the
// route's Effect, run by the lane), and the Effect route itself (a query string keeps a request off
// the lane).
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { insertTrigger, projectIdOfKey, quotaUsed, triggerRow } from "../support/fixtures.ts"
import { type Headers, insecureAgent, newKey, schedule, scheduled, TestServer, testServerLayer } from "../support/server.ts"
import { target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"
import { assertError } from "../support/assertions.ts"
import { Readable } from "node:stream"
import { request } from "undici"

const FAR = "2099-01-01T00:00:00Z"
const FAR_ISO = "2099-01-01T00:00:00.000Z"
/** A target that is never reached: the triggers in these tests are far in the future or skipped. */
const URL_OK = "http://127.0.0.1:9/hook"
const UNKNOWN_KEY = "ttr_" + "0".repeat(48)
const UNKNOWN_ID = "01890000-0000-7000-8000-000000000000"
const LONG_TAG = "t".repeat(51)
/** UUIDv7 (docs/README.md "Conventions"). */
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
/** The millisecond timestamp in the first 48 bits of a UUIDv7. */
const uuidTimeMs = (id: string) => parseInt(id.replace(/-/g, "").slice(0, 12), 16)

/** A valid request for `key`, with overrides (undefined removes a header). */
const valid = (key: string, overrides: Record<string, string | undefined> = {}): Record<string, string> => {
  const all: Record<string, string | undefined> = { "ttr-api-key": key, "ttr-url": URL_OK, "ttr-scheduled-at": FAR, ...overrides }
  return Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== undefined))
}

const isoNoMs = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z")

interface CheckRow {
  readonly name: string
  /** Builds the request (keys, fixtures); runs against the shared service. */
  readonly request: Effect.Effect<{ headers: Headers; body?: string }, never, TestServer | SqlClient.SqlClient>
  readonly status: number
  /** null: empty body, no Content-Type. */
  readonly message: string | null
}

const withKey = (f: (key: string) => Headers, monthlyQuota?: number): CheckRow["request"] =>
  Effect.map(newKey(monthlyQuota), (key) => ({ headers: f(key) }))

/** A trigger of a new project, inserted straight into the database. */
const fixtureTrigger = (fixture: Omit<Parameters<typeof insertTrigger>[0], "projectId">) =>
  Effect.gen(function*() {
    const key = yield* newKey()
    const projectId = yield* projectIdOfKey(key)
    const id = yield* insertTrigger({ projectId, ...fixture })
    return { key, projectId, id }
  }).pipe(Effect.orDie)

const CHECKS: ReadonlyArray<CheckRow> = [
  // 1. ttr-api-key or ttr-url missing: empty 400, before everything else
  { name: "key missing (URL and tags also invalid)", request: Effect.succeed({ headers: { "ttr-url": "nope", "ttr-tags": "Bad!", "ttr-scheduled-at": "x" } }), status: 400, message: null },
  { name: "key missing, Bearer sent instead", request: withKey((key) => ({ authorization: `Bearer ${key}`, "ttr-url": URL_OK, "ttr-scheduled-at": FAR })), status: 400, message: null },
  { name: "url missing (tags and date also invalid)", request: withKey((key) => ({ "ttr-api-key": key, "ttr-tags": "Bad!", "ttr-scheduled-at": "x" })), status: 400, message: null },
  { name: "url missing with an unknown key", request: Effect.succeed({ headers: { "ttr-api-key": UNKNOWN_KEY, "ttr-scheduled-at": FAR } }), status: 400, message: null },
  // 3. ttr-url empty or not absolute (reported even with a wrong key, before tags)
  { name: "url empty", request: withKey((key) => valid(key, { "ttr-url": "" })), status: 400, message: "Invalid URL: " },
  { name: "url relative", request: withKey((key) => valid(key, { "ttr-url": "/hooks/a" })), status: 400, message: "Invalid URL: /hooks/a" },
  { name: "url without scheme", request: withKey((key) => valid(key, { "ttr-url": "example.com/a" })), status: 400, message: "Invalid URL: example.com/a" },
  { name: "url relative, unknown key, bad tags, bad date", request: Effect.succeed({ headers: valid(UNKNOWN_KEY, { "ttr-url": "hooks", "ttr-tags": "Bad!", "ttr-scheduled-at": "x" }) }), status: 400, message: "Invalid URL: hooks" },
  // 4–6. tags: count, then each tag in listed order, length before characters (before the key)
  { name: "11 tags (one of them also invalid)", request: withKey((key) => valid(key, { "ttr-tags": "a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,Bad!" })), status: 400, message: "Maximum 10 tags allowed" },
  { name: "11 tags with an unknown key", request: Effect.succeed({ headers: valid(UNKNOWN_KEY, { "ttr-tags": "a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,a11" }) }), status: 400, message: "Maximum 10 tags allowed" },
  { name: "a 51-character tag", request: withKey((key) => valid(key, { "ttr-tags": `ok,${LONG_TAG}` })), status: 400, message: `Tag too long (max 50 chars): ${LONG_TAG}` },
  { name: "a 51-character tag of invalid characters: length first", request: withKey((key) => valid(key, { "ttr-tags": "B".repeat(51) })), status: 400, message: `Tag too long (max 50 chars): ${"B".repeat(51)}` },
  { name: "a tag with an invalid character", request: withKey((key) => valid(key, { "ttr-tags": "ok,Bad!" })), status: 400, message: "Invalid tag (only a-z 0-9 _ - allowed): Bad!" },
  { name: "tags in order: invalid before too long", request: withKey((key) => valid(key, { "ttr-tags": `ok,Bad!,${LONG_TAG}` })), status: 400, message: "Invalid tag (only a-z 0-9 _ - allowed): Bad!" },
  { name: "tags in order: too long before invalid", request: withKey((key) => valid(key, { "ttr-tags": `ok,${LONG_TAG},Bad!` })), status: 400, message: `Tag too long (max 50 chars): ${LONG_TAG}` },
  { name: "upper-case tag", request: withKey((key) => valid(key, { "ttr-tags": "Urgent" })), status: 400, message: "Invalid tag (only a-z 0-9 _ - allowed): Urgent" },
  { name: "an invalid tag with an unknown key", request: Effect.succeed({ headers: valid(UNKNOWN_KEY, { "ttr-tags": "Bad!" }) }), status: 400, message: "Invalid tag (only a-z 0-9 _ - allowed): Bad!" },
  // 7. key empty or unknown (before the scheduling value)
  { name: "empty key", request: Effect.succeed({ headers: valid("") }), status: 401, message: "Invalid api key" },
  { name: "unknown key", request: Effect.succeed({ headers: valid(UNKNOWN_KEY) }), status: 401, message: "Invalid api key" },
  { name: "unknown key with an invalid date", request: Effect.succeed({ headers: valid(UNKNOWN_KEY, { "ttr-scheduled-at": "tomorrow" }) }), status: 401, message: "Invalid api key" },
  { name: "unknown key with an invalid retry header", request: Effect.succeed({ headers: valid(UNKNOWN_KEY, { "ttr-retry-strategy": "sometimes" }) }), status: 401, message: "Invalid api key" },
  { name: "empty key with an invalid duration", request: Effect.succeed({ headers: valid("", { "ttr-scheduled-at": "now | add 1x" }) }), status: 401, message: "Invalid api key" },
  // 8. Invalid date
  { name: "scheduled-at empty", request: withKey((key) => valid(key, { "ttr-scheduled-at": "" })), status: 400, message: "Invalid date: " },
  { name: "scheduled-at a word", request: withKey((key) => valid(key, { "ttr-scheduled-at": "tomorrow" })), status: 400, message: "Invalid date: tomorrow" },
  { name: "scheduled-at an impossible date", request: withKey((key) => valid(key, { "ttr-scheduled-at": "2099-02-30" })), status: 400, message: "Invalid date: 2099-02-30" },
  { name: "CRON(...) is read as a date", request: withKey((key) => valid(key, { "ttr-scheduled-at": "CRON(* * * * *)" })), status: 400, message: "Invalid date: CRON(* * * * *)" },
  { name: "cron (...) with a space is read as a date", request: withKey((key) => valid(key, { "ttr-scheduled-at": "cron (* * * * *)" })), status: 400, message: "Invalid date: cron (* * * * *)" },
  // 9. Unknown pipe operation
  { name: "unknown operation", request: withKey((key) => valid(key, { "ttr-scheduled-at": "now | multiply 2" })), status: 400, message: "Unknown pipe operation: multiply 2" },
  { name: "upper-case operation", request: withKey((key) => valid(key, { "ttr-scheduled-at": "now | ADD 1h" })), status: 400, message: "Unknown pipe operation: ADD 1h" },
  { name: "operation without an amount", request: withKey((key) => valid(key, { "ttr-scheduled-at": "now | add" })), status: 400, message: "Unknown pipe operation: add" },
  // 10. Invalid duration
  { name: "unknown unit", request: withKey((key) => valid(key, { "ttr-scheduled-at": "now | add 1x" })), status: 400, message: "Invalid duration: 1x" },
  { name: "fractional amount", request: withKey((key) => valid(key, { "ttr-scheduled-at": "now | subtract 1.5h" })), status: 400, message: "Invalid duration: 1.5h" },
  { name: "unit without a number", request: withKey((key) => valid(key, { "ttr-scheduled-at": `${FAR} | add h` })), status: 400, message: "Invalid duration: h" },
  { name: "an invalid date with a used-up quota: 400, not 402", request: withKey((key) => valid(key, { "ttr-scheduled-at": "tomorrow" }), 0), status: 400, message: "Invalid date: tomorrow" },
  // a custom key too long to index (before the quota: it costs nothing)
  { name: "a custom key over 1024 bytes", request: withKey((key) => valid(key, { "ttr-custom-key": "k".repeat(1025) }), 0), status: 400, message: "ttr-custom-key must be at most 1024 bytes" },
  // 12. quota
  { name: "quota 0", request: withKey((key) => valid(key), 0), status: 402, message: "Monthly quota of 0 triggers exceeded" },
  { name: "quota 0 and an unknown trigger id: 402 before 404", request: withKey((key) => valid(key, { "ttr-trigger-id": UNKNOWN_ID }), 0), status: 402, message: "Monthly quota of 0 triggers exceeded" },
  // 13. Trigger not found (ttr-trigger-id with a date or now)
  { name: "unknown trigger id", request: withKey((key) => valid(key, { "ttr-trigger-id": UNKNOWN_ID })), status: 404, message: "Trigger not found" },
  { name: "malformed trigger id", request: withKey((key) => valid(key, { "ttr-trigger-id": "not-a-uuid" })), status: 404, message: "Trigger not found" },
  { name: "unknown trigger id with now", request: withKey((key) => valid(key, { "ttr-trigger-id": UNKNOWN_ID, "ttr-scheduled-at": "now" })), status: 404, message: "Trigger not found" },
  {
    name: "another project's trigger id",
    request: Effect.gen(function*() {
      const other = yield* fixtureTrigger({})
      return { headers: valid(yield* newKey(), { "ttr-trigger-id": other.id }) }
    }),
    status: 404,
    message: "Trigger not found"
  },
  {
    name: "a generator's id with a date",
    request: Effect.map(fixtureTrigger({ kind: "generator", status: "active", cronExpr: "0 0 * * *", cronTz: "UTC" }), ({ key, id }) => ({ headers: valid(key, { "ttr-trigger-id": id }) })),
    status: 404,
    message: "Trigger not found"
  },
  {
    name: "an instance's id with a date",
    request: Effect.gen(function*() {
      const generator = yield* fixtureTrigger({ kind: "generator", status: "active", cronExpr: "0 0 * * *", cronTz: "UTC" })
      const instance = yield* insertTrigger({ projectId: generator.projectId, generatorId: generator.id, dueAt: new Date(Date.UTC(2099, 0, 1)) }).pipe(Effect.orDie)
      return { headers: valid(generator.key, { "ttr-trigger-id": instance }) }
    }),
    status: 404,
    message: "Trigger not found"
  },
  // 15. Job is no longer in registered state
  ...(["skipped", "queued", "running", "retrying", "completed", "cancelled"] as const).map((status): CheckRow => ({
    name: `trigger id of a ${status} one-shot`,
    request: Effect.map(fixtureTrigger({ status, dueAt: null }), ({ key, id }) => ({ headers: valid(key, { "ttr-trigger-id": id }) })),
    status: 410,
    message: "Job is no longer in registered state"
  }))
]

/** The ways into /schedule: the path they call, and whether the key is remembered first (a GET /health with it). */
const WAYS_IN = [
  { name: "fast lane, key remembered", path: "/schedule", remember: true },
  { name: "fast lane, key not remembered", path: "/schedule", remember: false },
  { name: "Effect route", path: "/schedule?via=route", remember: false }
] as const

/** The value of a header, however the table wrote the headers. */
const headerOf = (headers: Headers, name: string): string | undefined =>
  Array.isArray(headers) ? headers.find(([key]) => key === name)?.[1] : headers[name]

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("/schedule", (it) => {
  describe("checks, in order (each row also breaks later checks)", () => {
    for (const way of WAYS_IN) {
      describe(way.name, () => {
        for (const row of CHECKS) {
          it.effect(`${row.name} → ${row.status} ${row.message ?? "(empty)"}`, () =>
            Effect.gen(function*() {
              const request = yield* row.request
              const key = headerOf(request.headers, "ttr-api-key")
              if (way.remember && key !== undefined) yield* TestServer.use((server) => server.call("GET", "/health", { headers: { "ttr-api-key": key } }))
              const response = yield* TestServer.use((server) => server.call("POST", way.path, { headers: request.headers }))
              assertError(response, row.status, row.message)
            }))
        }
      })
    }

    it.effect("a body over the 10 MiB limit → 413 naming the limit (declared or chunked), before the URL check; 10 MiB is taken", () =>
      Effect.gen(function*() {
        const limit = 10 * 1024 * 1024
        const over = yield* schedule(valid(UNKNOWN_KEY, { "ttr-url": "relative", "ttr-scheduled-at": "x" }), { body: new Uint8Array(limit + 1) })
        assertError(over, 413, "Request body larger than 10485760 bytes")
        assert.strictEqual(over.headers["timewheel-error"], "request body over this endpoint's limit of 10 MiB (10485760 bytes)")
        // without a Content-Length: read until it passes the limit
        const server = yield* TestServer
        const chunked = yield* Effect.promise(async () => {
          const response = await request(`${server.baseUrl}/schedule`, {
            method: "POST",
            dispatcher: insecureAgent,
            headers: { "ttr-api-key": UNKNOWN_KEY, "ttr-url": "relative" },
            body: Readable.from((function*() {
              for (let i = 0; i <= 10; i++) yield Buffer.alloc(1024 * 1024)
            })())
          })
          return { status: response.statusCode, text: await response.body.text() }
        })
        assert.deepStrictEqual(chunked, { status: 413, text: `{"_tag":"ContentTooLarge","message":"Request body larger than 10485760 bytes"}` })
        const key = yield* newKey()
        const atLimit = yield* schedule(valid(key, { "ttr-url": "https://example.com/big", "ttr-scheduled-at": "2099-01-01T00:00:00Z" }), { body: new Uint8Array(limit) })
        assert.strictEqual(atLimit.status, 200, atLimit.text)
      }))
  })

  describe("retry headers", () => {
    const bad: ReadonlyArray<[string, string]> = [
      ["ttr-retry-strategy", "sometimes"],
      ["ttr-retry-strategy", "Fixed"],
      ["ttr-retry-max-attempts", "0"],
      ["ttr-retry-max-attempts", "two"],
      ["ttr-retry-max-attempts", "1.5"],
      ["ttr-retry-initial-delay", "-1"],
      ["ttr-retry-initial-delay", "86401"],
      ["ttr-retry-max-delay", "soon"],
      ["ttr-retry-jitter", "maybe"],
      ["ttr-retry-on", "4xx"]
    ]
    for (const [header, value] of bad) {
      it.effect(`${header}: ${value} → 400 naming the header, costs nothing`, () =>
        Effect.gen(function*() {
          const key = yield* newKey(5)
          const response = yield* schedule(valid(key, { [header]: value }))
          assert.strictEqual(response.status, 400)
          assert.strictEqual(response.json()._tag, "BadRequest")
          assert.include(response.json().message, header)
          assert.include(response.json().message, value)
          assert.strictEqual(yield* quotaUsed(key), 0)
        }))
    }

    it.effect("one retry header sets a per-trigger policy; the others take the per-trigger defaults", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const fixed = yield* scheduled(valid(key, { "ttr-retry-strategy": "fixed" }))
        assert.deepStrictEqual((yield* triggerRow(fixed.triggerId)).retry, {
          strategy: "fixed", maxAttempts: 3, initialDelaySeconds: 30, maxDelaySeconds: null, jitter: false, retryOn: "5xx_and_network"
        })
        const all = yield* scheduled(valid(key, {
          "ttr-retry-strategy": "exponential", "ttr-retry-max-attempts": "5", "ttr-retry-initial-delay": "2",
          "ttr-retry-max-delay": "60", "ttr-retry-jitter": "true", "ttr-retry-on": "non_2xx"
        }))
        assert.deepStrictEqual((yield* triggerRow(all.triggerId)).retry, {
          strategy: "exponential", maxAttempts: 5, initialDelaySeconds: 2, maxDelaySeconds: 60, jitter: true, retryOn: "non_2xx"
        })
        const none = yield* scheduled(valid(key, { "ttr-retry-strategy": "none" }))
        assert.deepStrictEqual((yield* triggerRow(none.triggerId)).retry, {
          strategy: "none", maxAttempts: 1, initialDelaySeconds: 30, maxDelaySeconds: null, jitter: false, retryOn: "5xx_and_network"
        })
        const noHeaders = yield* scheduled(valid(key))
        assert.isNull((yield* triggerRow(noHeaders.triggerId)).retry)
      }))
  })

  describe("quota", () => {
    it.effect("quota 3: remaining 2, 1, 0, then 402 which costs nothing", () =>
      Effect.gen(function*() {
        const key = yield* newKey(3)
        const remaining: Array<number> = []
        for (let i = 0; i < 3; i++) remaining.push((yield* scheduled(valid(key))).monthQuotaRemaining)
        assert.deepStrictEqual(remaining, [2, 1, 0])
        assertError(yield* schedule(valid(key)), 402, "Monthly quota of 3 triggers exceeded")
        assertError(yield* schedule(valid(key)), 402, "Monthly quota of 3 triggers exceeded")
        assert.strictEqual(yield* quotaUsed(key), 3)
      }))

    it.effect("400s cost nothing; a 404 or 410 after the quota check costs one unit", () =>
      Effect.gen(function*() {
        const key = yield* newKey(5)
        assertError(yield* schedule(valid(key, { "ttr-url": "relative" })), 400, "Invalid URL: relative")
        assertError(yield* schedule(valid(key, { "ttr-tags": "Bad!" })), 400, "Invalid tag (only a-z 0-9 _ - allowed): Bad!")
        assertError(yield* schedule(valid(key, { "ttr-scheduled-at": "soon" })), 400, "Invalid date: soon")
        assertError(yield* schedule(valid(key, { "ttr-scheduled-at": "now | add 1y" })), 400, "Invalid duration: 1y")
        assert.strictEqual(yield* quotaUsed(key), 0)
        assert.strictEqual((yield* scheduled(valid(key))).monthQuotaRemaining, 4)
        assertError(yield* schedule(valid(key, { "ttr-trigger-id": UNKNOWN_ID })), 404, "Trigger not found")
        assert.strictEqual((yield* scheduled(valid(key))).monthQuotaRemaining, 2)
        const skipped = yield* scheduled(valid(key, { "ttr-scheduled-at": "2001-01-01T00:00:00Z" }))
        assert.strictEqual(skipped.monthQuotaRemaining, 1)
        assertError(yield* schedule(valid(key, { "ttr-trigger-id": skipped.triggerId })), 410, "Job is no longer in registered state")
        assert.strictEqual(yield* quotaUsed(key), 5)
        assertError(yield* schedule(valid(key)), 402, "Monthly quota of 5 triggers exceeded")
      }))

    it.effect("401s never touch any project's quota", () =>
      Effect.gen(function*() {
        const key = yield* newKey(2)
        assertError(yield* schedule(valid(UNKNOWN_KEY)), 401, "Invalid api key")
        assertError(yield* schedule(valid("")), 401, "Invalid api key")
        assert.strictEqual(yield* quotaUsed(key), 0)
        assert.strictEqual((yield* scheduled(valid(key))).monthQuotaRemaining, 1)
      }))

    it.effect("edits cost one unit each", () =>
      Effect.gen(function*() {
        const key = yield* newKey(3)
        const first = yield* scheduled(valid(key, { "ttr-custom-key": "k" }))
        const byKey = yield* scheduled(valid(key, { "ttr-custom-key": "k" }))
        const byId = yield* scheduled(valid(key, { "ttr-trigger-id": first.triggerId }))
        assert.deepStrictEqual([first.monthQuotaRemaining, byKey.monthQuotaRemaining, byId.monthQuotaRemaining], [2, 1, 0])
      }))

    // plain creates are group-committed with their quota unit; keyed ones take the unit in a transaction
    for (const [kind, headersOf] of [
      ["keyed", (i: number) => ({ "ttr-custom-key": `c${i}` })],
      ["plain", () => ({})]
    ] as const) {
      it.effect(`20 concurrent ${kind} calls on quota 10: exactly 10 succeed with remaining 9..0, 10 get 402, 10 triggers exist`, () =>
        Effect.gen(function*() {
          const key = yield* newKey(10)
          const responses = yield* Effect.all(
            Array.from({ length: 20 }, (_, i) => schedule(valid(key, headersOf(i)))),
            { concurrency: "unbounded" }
          )
          const ok = responses.filter((r) => r.status === 200)
          const refused = responses.filter((r) => r.status === 402)
          assert.strictEqual(ok.length, 10)
          assert.strictEqual(refused.length, 10)
          for (const r of refused) assertError(r, 402, "Monthly quota of 10 triggers exceeded")
          const remaining = ok.map((r) => r.json().monthQuotaRemaining as number).sort((a, b) => a - b)
          assert.deepStrictEqual(remaining, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
          assert.strictEqual(yield* quotaUsed(key), 10)
          const sql = yield* SqlClient.SqlClient
          const projectId = yield* projectIdOfKey(key)
          const count = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM triggers WHERE project_id = ${projectId}`
          assert.strictEqual(Number(count[0]!.n), 10)
        }))
    }
  })

  it.effect("concurrent creates with the same new custom key → one trigger, one schedule and reschedules", () =>
    Effect.gen(function*() {
      const key = yield* newKey()
      const responses = yield* Effect.all(
        Array.from({ length: 5 }, () => scheduled(valid(key, { "ttr-custom-key": "race" }))),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(new Set(responses.map((r) => r.triggerId)).size, 1)
      assert.deepStrictEqual(responses.map((r) => r.operation).sort(), ["reschedule", "reschedule", "reschedule", "reschedule", "schedule"])
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM triggers WHERE project_id = ${yield* projectIdOfKey(key)}`
      assert.strictEqual(Number(rows[0]!.n), 1)
    }))

  describe("a new one-shot trigger", () => {
    it.effect("response fields: uuid triggerId, ISO ms scheduledAt, schedule, job, registered, monthQuotaRemaining", () =>
      Effect.gen(function*() {
        const key = yield* newKey(100)
        const response = yield* schedule(valid(key, { "ttr-scheduled-at": "2099-06-01T12:34:56.789+02:00" }))
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers["content-type"], "application/json")
        const body = response.json()
        assert.deepStrictEqual(Object.keys(body).sort(), ["kind", "monthQuotaRemaining", "operation", "scheduledAt", "status", "triggerId"])
        assert.strictEqual(body.status, "registered")
        assert.match(body.triggerId, UUID_V7)
        assert.isBelow(Math.abs(uuidTimeMs(body.triggerId) - Date.now()), 10_000, "id minted at the request time")
        assert.strictEqual(body.scheduledAt, "2099-06-01T10:34:56.789Z")
        assert.strictEqual(body.operation, "schedule")
        assert.strictEqual(body.kind, "job")
        assert.strictEqual(body.monthQuotaRemaining, 99)
        const row = yield* triggerRow(body.triggerId)
        assert.strictEqual(row.status, "registered")
        assert.strictEqual(row.scheduled_at?.toISOString(), "2099-06-01T10:34:56.789Z")
      }))

    const resolved: ReadonlyArray<[string, string]> = [
      ["2099-01-01", "2099-01-01T00:00:00.000Z"],
      ["2099-01-01T10:00", "2099-01-01T10:00:00.000Z"],
      ["2099-01-01T10:00:00-05:00", "2099-01-01T15:00:00.000Z"],
      ["2099-01-01T00:00:00Z | add 1d | subtract 2h", "2099-01-01T22:00:00.000Z"],
      ["2099-01-01 | add -5m", "2098-12-31T23:55:00.000Z"],
      ["2099-01-01 | add 1w", "2099-01-08T00:00:00.000Z"],
      ["2099-01-01 | add 90s", "2099-01-01T00:01:30.000Z"]
    ]
    for (const [value, expected] of resolved) {
      it.effect(`scheduled-at ${value} → ${expected}`, () =>
        Effect.gen(function*() {
          const key = yield* newKey()
          const body = yield* scheduled(valid(key, { "ttr-scheduled-at": value }))
          assert.strictEqual(body.scheduledAt, expected)
          assert.strictEqual((yield* triggerRow(body.triggerId)).status, "registered")
        }))
    }

    it.effect("now | add 1h resolves against the request moment", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const before = Date.now()
        const body = yield* scheduled(valid(key, { "ttr-scheduled-at": "now | add 1h" }))
        const after = Date.now()
        const at = Date.parse(body.scheduledAt)
        assert.isAtLeast(at, before + 3_600_000 - 1_000)
        assert.isAtMost(at, after + 3_600_000 + 1_000)
      }))

    it.effect("a past date is stored skipped (no due time); the current second counts as past", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const past = yield* scheduled(valid(key, { "ttr-scheduled-at": "2001-01-01T00:00:00Z" }))
        assert.strictEqual(past.scheduledAt, "2001-01-01T00:00:00.000Z")
        assert.strictEqual(past.operation, "schedule")
        const pastRow = yield* triggerRow(past.triggerId)
        assert.strictEqual(pastRow.status, "skipped")
        assert.isNull(pastRow.due_at)
        // .999 of the current second: milliseconds are dropped, so it is at or before the request moment
        const thisSecond = new Date(Math.floor(Date.now() / 1000) * 1000 + 999).toISOString()
        const current = yield* scheduled(valid(key, { "ttr-scheduled-at": thisSecond }))
        assert.strictEqual((yield* triggerRow(current.triggerId)).status, "skipped")
        // a past date plus an operation that keeps it past is still skipped
        const op = yield* scheduled(valid(key, { "ttr-scheduled-at": `${isoNoMs(Date.now())} | subtract 1h` }))
        assert.strictEqual((yield* triggerRow(op.triggerId)).status, "skipped")
      }))

    it.effect("firing: now, now | subtract 1h and a past date with run-missed fire; a past date alone never does", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const t = yield* target
        const ids = {
          now: (yield* scheduled(valid(key, { "ttr-url": `${t.origin}/now`, "ttr-scheduled-at": "now" }))).triggerId,
          nowMinus: (yield* scheduled(valid(key, { "ttr-url": `${t.origin}/now-minus`, "ttr-scheduled-at": "now | subtract 1h" }))).triggerId,
          missed: (yield* scheduled(valid(key, { "ttr-url": `${t.origin}/missed`, "ttr-scheduled-at": "2001-01-01T00:00:00Z", "ttr-run-missed": "true" }))).triggerId,
          skipped: (yield* scheduled(valid(key, { "ttr-url": `${t.origin}/skipped`, "ttr-scheduled-at": "2001-01-01T00:00:00Z" }))).triggerId
        }
        assert.notStrictEqual((yield* triggerRow(ids.missed)).status, "skipped")
        yield* pollUntil("three deliveries", Effect.sync(() =>
          t.at("/now").length + t.at("/now-minus").length + t.at("/missed").length === 3 ? true : undefined)).pipe(
            Effect.tapDefect(() =>
              Effect.gen(function*() {
                const sql = yield* SqlClient.SqlClient
                const rows = yield* sql`SELECT id, status, shard, due_at, attempts, claimed_by FROM triggers WHERE id IN (${ids.now}, ${ids.nowMinus}, ${ids.missed})`
                console.log("state when the firing test timed out:", JSON.stringify(rows), t.arrivals.map((a) => a.url))
              }).pipe(Effect.orDie))
          )
        yield* pollUntil("completed", Effect.map(triggerRow(ids.missed), (row) => (row.status === "completed" ? true : undefined)))
        // no wait for it: a skipped trigger has no due time and is never claimed, so still skipped
        // (below) means it was never sent
        assert.strictEqual(t.at("/skipped").length, 0)
        assert.strictEqual((yield* triggerRow(ids.skipped)).status, "skipped")
        for (const id of [ids.now, ids.nowMinus]) {
          yield* pollUntil("completed", Effect.map(triggerRow(id), (row) => (row.status === "completed" ? true : undefined)))
        }
      }))
  })

  describe("edits", () => {
    it.effect("same custom key twice → same id, reschedule, new time stored", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const first = yield* scheduled(valid(key, { "ttr-custom-key": "order-1" }))
        assert.strictEqual(first.operation, "schedule")
        const second = yield* scheduled(valid(key, { "ttr-custom-key": "order-1", "ttr-scheduled-at": "2099-02-01" }))
        assert.strictEqual(second.triggerId, first.triggerId)
        assert.strictEqual(second.operation, "reschedule")
        assert.strictEqual(second.kind, "job")
        assert.strictEqual(second.scheduledAt, "2099-02-01T00:00:00.000Z")
        assert.strictEqual((yield* triggerRow(first.triggerId)).scheduled_at?.toISOString(), "2099-02-01T00:00:00.000Z")
      }))

    it.effect("a custom key is per project", () =>
      Effect.gen(function*() {
        const a = yield* scheduled(valid(yield* newKey(), { "ttr-custom-key": "shared" }))
        const b = yield* scheduled(valid(yield* newKey(), { "ttr-custom-key": "shared" }))
        assert.notStrictEqual(a.triggerId, b.triggerId)
        assert.strictEqual(b.operation, "schedule")
      }))

    it.effect("a skipped trigger is edited by its custom key (and becomes registered when moved to the future)", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const first = yield* scheduled(valid(key, { "ttr-custom-key": "late", "ttr-scheduled-at": "2001-01-01" }))
        assert.strictEqual((yield* triggerRow(first.triggerId)).status, "skipped")
        const second = yield* scheduled(valid(key, { "ttr-custom-key": "late" }))
        assert.strictEqual(second.triggerId, first.triggerId)
        assert.strictEqual(second.operation, "reschedule")
        const row = yield* triggerRow(first.triggerId)
        assert.strictEqual(row.status, "registered")
        assert.strictEqual(row.due_at?.toISOString(), FAR_ISO)
      }))

    it.effect("edit by trigger id → same id, reschedule", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const first = yield* scheduled(valid(key))
        const edit = yield* scheduled(valid(key, { "ttr-trigger-id": first.triggerId, "ttr-scheduled-at": "2099-03-03" }))
        assert.deepStrictEqual(
          { id: edit.triggerId, operation: edit.operation, kind: edit.kind, at: edit.scheduledAt },
          { id: first.triggerId, operation: "reschedule", kind: "job", at: "2099-03-03T00:00:00.000Z" }
        )
        // an edit into the past makes it skipped
        yield* scheduled(valid(key, { "ttr-trigger-id": first.triggerId, "ttr-scheduled-at": "2001-01-01" }))
        assert.strictEqual((yield* triggerRow(first.triggerId)).status, "skipped")
      }))

    it.effect("edit by id of a skipped trigger → 410", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const skipped = yield* scheduled(valid(key, { "ttr-scheduled-at": "2001-01-01" }))
        assertError(yield* schedule(valid(key, { "ttr-trigger-id": skipped.triggerId })), 410, "Job is no longer in registered state")
        assert.strictEqual((yield* triggerRow(skipped.triggerId)).status, "skipped")
      }))

    it.effect("custom key of a pending trigger + another id → the keyed trigger is edited, the id is not checked", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const keyed = yield* scheduled(valid(key, { "ttr-custom-key": "k1" }))
        const other = yield* scheduled(valid(key, { "ttr-scheduled-at": "2099-05-05" }))
        const edit = yield* scheduled(valid(key, { "ttr-custom-key": "k1", "ttr-trigger-id": other.triggerId, "ttr-scheduled-at": "2099-04-04" }))
        assert.strictEqual(edit.triggerId, keyed.triggerId)
        assert.strictEqual(edit.operation, "reschedule")
        assert.strictEqual((yield* triggerRow(keyed.triggerId)).scheduled_at?.toISOString(), "2099-04-04T00:00:00.000Z")
        assert.strictEqual((yield* triggerRow(other.triggerId)).scheduled_at?.toISOString(), "2099-05-05T00:00:00.000Z")
        // an unknown or malformed id is not checked either (no 404)
        const unknownId = yield* scheduled(valid(key, { "ttr-custom-key": "k1", "ttr-trigger-id": UNKNOWN_ID }))
        assert.strictEqual(unknownId.triggerId, keyed.triggerId)
        const malformed = yield* scheduled(valid(key, { "ttr-custom-key": "k1", "ttr-trigger-id": "nope" }))
        assert.strictEqual(malformed.triggerId, keyed.triggerId)
        // a skipped one-shot is matched by key as well, even with the id of a skipped trigger
        const skippedKeyed = yield* scheduled(valid(key, { "ttr-custom-key": "k2", "ttr-scheduled-at": "2001-01-01" }))
        const skippedOther = yield* scheduled(valid(key, { "ttr-scheduled-at": "2001-01-01" }))
        const edit2 = yield* scheduled(valid(key, { "ttr-custom-key": "k2", "ttr-trigger-id": skippedOther.triggerId }))
        assert.strictEqual(edit2.triggerId, skippedKeyed.triggerId)
      }))

    it.effect("a retrying trigger is edited by its custom key", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const first = yield* scheduled(valid(key, { "ttr-custom-key": "r1" }))
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE triggers SET status = 'retrying', due_at = ${new Date(Date.UTC(2099, 0, 1))}, attempts = 1 WHERE id = ${first.triggerId}`
        const edit = yield* scheduled(valid(key, { "ttr-custom-key": "r1", "ttr-scheduled-at": "2099-07-07" }))
        assert.strictEqual(edit.triggerId, first.triggerId)
        assert.strictEqual(edit.operation, "reschedule")
        const row = yield* triggerRow(first.triggerId)
        assert.strictEqual(row.status, "registered")
        assert.strictEqual(row.scheduled_at?.toISOString(), "2099-07-07T00:00:00.000Z")
      }))

    it.effect("a key whose trigger is no longer pending creates a new trigger", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const first = yield* scheduled(valid(key, { "ttr-custom-key": "done" }))
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE triggers SET status = 'completed', due_at = NULL WHERE id = ${first.triggerId}`
        const second = yield* scheduled(valid(key, { "ttr-custom-key": "done" }))
        assert.notStrictEqual(second.triggerId, first.triggerId)
        assert.strictEqual(second.operation, "schedule")
        assert.strictEqual((yield* triggerRow(first.triggerId)).status, "completed")
      }))

    it.effect("a date under a generator's custom key cancels the generator and replaces it with a one-shot", () =>
      Effect.gen(function*() {
        const generator = yield* fixtureTrigger({ kind: "generator", status: "active", cronExpr: "0 0 * * *", cronTz: "UTC", customKey: "nightly" })
        const body = yield* scheduled(valid(generator.key, { "ttr-custom-key": "nightly" }))
        assert.notStrictEqual(body.triggerId, generator.id)
        assert.strictEqual(body.kind, "job")
        assert.strictEqual((yield* triggerRow(generator.id)).status, "cancelled")
        const row = yield* triggerRow(body.triggerId)
        assert.strictEqual(row.status, "registered")
        assert.strictEqual(row.custom_key, "nightly")
      }))

    it.effect("an edit replaces the whole definition: omitted retry headers, tags, title, headers and body are cleared", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const first = yield* scheduled([
          ["ttr-api-key", key], ["ttr-url", "http://127.0.0.1:9/a?x=1"], ["ttr-scheduled-at", FAR],
          ["ttr-custom-key", "full"], ["ttr-tags", "alpha,beta"], ["ttr-title", "First"], ["ttr-retry-strategy", "fixed"],
          ["x-extra", "1"], ["content-type", "text/plain"]
        ], { method: "PUT", body: "hello" })
        const before = yield* triggerRow(first.triggerId)
        assert.deepStrictEqual([...before.tags], ["alpha", "beta"])
        assert.strictEqual(before.title, "First")
        assert.isNotNull(before.retry)
        assert.strictEqual(Buffer.from(before.body!).toString(), "hello")
        assert.strictEqual(before.content_type, "text/plain")
        assert.strictEqual(before.method, "PUT")

        const edit = yield* scheduled(valid(key, { "ttr-trigger-id": first.triggerId, "ttr-url": "http://127.0.0.1:9/b" }), { method: "GET" })
        assert.strictEqual(edit.triggerId, first.triggerId)
        const after = yield* triggerRow(first.triggerId)
        assert.isNull(after.retry)
        assert.deepStrictEqual([...after.tags], [])
        assert.isNull(after.title)
        assert.isNull(after.body)
        assert.isNull(after.content_type)
        assert.isNull(after.custom_key)
        assert.strictEqual(after.method, "GET")
        assert.strictEqual(after.url, "http://127.0.0.1:9/b")
        const names = (after.headers as Array<[string, string]>).map(([name]) => name.toLowerCase())
        assert.notInclude(names, "x-extra")
      }))
  })

  describe("methods, headers, body", () => {
    it.effect("HEAD /schedule → 200 with no body (and is stored as HEAD)", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const response = yield* schedule(valid(key, { "ttr-custom-key": "head" }), { method: "HEAD" })
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.text, "")
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ method: string }>`SELECT method FROM triggers WHERE custom_key = 'head'
          AND project_id = ${yield* projectIdOfKey(key)}`
        assert.deepStrictEqual(rows.map((r) => r.method), ["HEAD"])
        // an error answer to HEAD has no body either
        const error = yield* schedule(valid(UNKNOWN_KEY), { method: "HEAD" })
        assert.strictEqual(error.status, 401)
        assert.strictEqual(error.text, "")
      }))

    const methods: ReadonlyArray<[string, string | undefined, boolean]> = [
      ["POST", "p", true],
      ["PUT", "u", true],
      ["PATCH", "a", true],
      ["DELETE", "d", true],
      ["PURGE", undefined, false],
      ["GET", undefined, false],
      ["OPTIONS", undefined, false]
    ]
    for (const [method, body, bodyStored] of methods) {
      it.effect(`${method} /schedule → 200, stored as ${method}${bodyStored ? " with its body" : ""}`, () =>
        Effect.gen(function*() {
          const key = yield* newKey()
          const response = yield* scheduled(valid(key), { method, ...(body === undefined ? {} : { body }) })
          const row = yield* triggerRow(response.triggerId)
          assert.strictEqual(row.method, method)
          if (bodyStored) assert.strictEqual(Buffer.from(row.body!).toString(), body)
          else assert.isNull(row.body)
        }))
    }

    it.effect("stored headers: every non-prefix header in order with repeats (Authorization included); no prefix, Host, Content-Length or hop-by-hop headers", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const body = new Uint8Array([0, 1, 2, 255, 254])
        const response = yield* scheduled([
          ["ttr-api-key", key], ["ttr-url", URL_OK], ["ttr-scheduled-at", FAR], ["ttr-title", "Hello"],
          ["Authorization", "Bearer target-secret"], ["X-Multi", "one"], ["X-Multi", "two"], ["X-Case", "MiXeD"],
          ["Content-Type", "application/x-custom; charset=latin1"], ["Connection", "keep-alive"]
        ], { method: "POST", body })
        const row = yield* triggerRow(response.triggerId)
        const headers = row.headers as Array<[string, string]>
        const lower = headers.map(([name, value]) => [name.toLowerCase(), value])
        assert.deepStrictEqual(lower.filter(([name]) => name.startsWith("x-") || name === "authorization"), [
          ["authorization", "Bearer target-secret"], ["x-multi", "one"], ["x-multi", "two"], ["x-case", "MiXeD"]
        ])
        for (const [name] of lower) {
          assert.isFalse(name!.startsWith("ttr-"), name)
          assert.notInclude(["host", "content-length", "connection", "keep-alive", "transfer-encoding"], name)
        }
        assert.deepStrictEqual([...Buffer.from(row.body!)], [0, 1, 2, 255, 254])
        assert.strictEqual(row.content_type, "application/x-custom; charset=latin1")
        assert.strictEqual(row.title, "Hello")
      }))
  })
})
