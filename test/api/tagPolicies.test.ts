// GET / POST / PUT / DELETE /tag-policies against the real service, read like docs/tag-policies.md
// "Errors": 415, the empty 400 of a bad JSON body or shape, 401, 404 (PUT and DELETE, before any value
// is looked at), the validation messages in their order, and the 409 of a second policy for one tag.
// Then the shapes of docs/tag-policies.md "Endpoints" (201, 200, 204), PUT as a patch validated after
// merging, project scoping, and the live counts of the view (gate rows written straight into the
// database).
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { insertTrigger, projectIdOfKey } from "../support/fixtures.ts"
import { type CallOptions, TestServer, testServerLayer, type TestResponse } from "../support/server.ts"

const INVALID_TAG = "Invalid tag (only a-z 0-9 _ - allowed, max 50 chars)"
const NOTHING_SPECIFIED = "At least one of throughput, concurrency, timeout, or retry strategy must be specified"
const TIMEOUT = "requestTimeoutSeconds must be between 1 and 3600"
const MAX_CONCURRENT = "maxConcurrent must be ≥ 1"
const WINDOWS = "At most 8 throughput windows per policy"
const rate = (window: string) => `Throughput rate for '${window}' must be a finite number ≥ 0`
const effective = (window: string, r: number) => `Effective window for '${window}' at rate ${r} exceeds the 30-day maximum`
const STRETCH_NOTE = " (rates below 1 stretch the window by 1/rate)"
const MAX_ATTEMPTS = "retryMaxAttempts must be ≥ 1 (or null for unlimited)"
const INITIAL_REQUIRED = "retryInitialDelaySeconds is required (≥0) when retryStrategy is 'fixed' or 'exponential'"
const MAX_DELAY_NEGATIVE = "retryMaxDelaySeconds must be ≥ 0"
const INITIAL_MAX = "retryInitialDelaySeconds must be ≤ 86400 (1 day)"
const MAX_DELAY_MAX = "retryMaxDelaySeconds must be ≤ 86400 (1 day)"
const NOT_FOUND = { _tag: "NotFound", message: "Tag policy not found" }
const conflict = (tag: string, id: string) => ({ _tag: "Conflict", message: `A tag policy for tag "${tag}" already exists (id ${id})` })

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const UNKNOWN_ID = "0190b1c2-0000-7000-8000-000000000001"
const VIEW_KEYS = [
  "id", "tag", "maxConcurrent", "requestTimeoutSeconds", "throughput", "retryStrategy", "retryMaxAttempts",
  "retryInitialDelaySeconds", "retryMaxDelaySeconds", "retryOn", "createdAt", "updatedAt", "queued", "inFlight", "heldUntil"
]
/** A view's request fields when only the tag is set (retryMaxAttempts: 3 when a create leaves it out). */
const UNSET = {
  maxConcurrent: null,
  requestTimeoutSeconds: null,
  throughput: null,
  retryStrategy: null,
  retryMaxAttempts: 3,
  retryInitialDelaySeconds: null,
  retryMaxDelaySeconds: null,
  retryOn: null
}

let tagCounter = 0
/** A tag no other test of this file uses. */
const freshTag = () => `t${++tagCounter}-${Math.random().toString(36).slice(2, 8)}`

const windows = (n: number): Record<string, number> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${i + 1}s`, 1]))

const JSON_TYPE = { "content-type": "application/json" }
const asBody = (body: unknown) => (typeof body === "string" ? body : JSON.stringify(body))

/** A new project, its key, and the four calls with its key header. */
const newProject = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const auth = { "ttr-api-key": key }
  return {
    key,
    list: () => server.call("GET", "/tag-policies", { headers: auth }),
    create: (body: unknown, headers: Record<string, string> = JSON_TYPE) =>
      server.call("POST", "/tag-policies", { headers: { ...auth, ...headers }, body: asBody(body) }),
    update: (id: string, body: unknown, headers: Record<string, string> = JSON_TYPE) =>
      server.call("PUT", `/tag-policies/${id}`, { headers: { ...auth, ...headers }, body: asBody(body) }),
    remove: (id: string) => server.call("DELETE", `/tag-policies/${id}`, { headers: auth })
  }
})

type Project = Effect.Success<typeof newProject>

/** Creates a policy and returns its view (fails the test unless 201). */
const created = (p: Project, body: Record<string, unknown>) =>
  Effect.map(p.create(body), (response) => {
    assert.strictEqual(response.status, 201, response.text)
    return response.json()
  })

const assertMessage = (response: TestResponse, status: number, body: unknown) => {
  assert.strictEqual(response.status, status, response.text)
  assert.strictEqual(response.headers["content-type"], "application/json")
  assert.deepStrictEqual(response.json(), body)
}

const assertEmpty = (response: TestResponse, status: number) => {
  assert.strictEqual(response.status, status, response.text)
  assert.strictEqual(response.text, "")
  assert.isUndefined(response.headers["content-type"])
}

layer(testServerLayer(), { timeout: "120 seconds" })("tag policies", (it) => {
  describe("validation messages, exact text (POST → 400 BadRequest, nothing written)", () => {
    // the tag is fresh unless the row sets one
    const rows: ReadonlyArray<readonly [body: Record<string, unknown>, expected: string]> = [
      [{ tag: "", maxConcurrent: 1 }, INVALID_TAG],
      [{ tag: "Api", maxConcurrent: 1 }, INVALID_TAG],
      [{ tag: "a b", maxConcurrent: 1 }, INVALID_TAG],
      [{ tag: "a".repeat(51), maxConcurrent: 1 }, INVALID_TAG],
      [{}, NOTHING_SPECIFIED],
      [{ throughput: {} }, NOTHING_SPECIFIED],
      [{ retryOn: "non_2xx", retryMaxAttempts: 5 }, NOTHING_SPECIFIED],
      [{ requestTimeoutSeconds: 0 }, TIMEOUT],
      [{ requestTimeoutSeconds: 3601 }, TIMEOUT],
      [{ maxConcurrent: 0 }, MAX_CONCURRENT],
      [{ maxConcurrent: -1 }, MAX_CONCURRENT],
      [{ throughput: windows(9) }, WINDOWS],
      [{ throughput: { "1m": -1 } }, rate("1m")],
      [{ throughput: { "1s": 5, "1h": -0.5 } }, rate("1h")],
      [{ throughput: { "1d": 0.01 } }, effective("1d", 0.01) + STRETCH_NOTE],
      [{ throughput: { "31d": 5 } }, effective("31d", 5)],
      [{ throughput: { "31d": 0 } }, effective("31d", 0)],
      [{ retryStrategy: "fixed", retryInitialDelaySeconds: 5, retryMaxAttempts: 0 }, MAX_ATTEMPTS],
      [{ retryStrategy: "fixed" }, INITIAL_REQUIRED],
      [{ retryStrategy: "exponential", retryInitialDelaySeconds: null }, INITIAL_REQUIRED],
      [{ retryStrategy: "none", retryInitialDelaySeconds: -1 }, INITIAL_REQUIRED],
      [{ retryStrategy: "exponential", retryInitialDelaySeconds: 1, retryMaxDelaySeconds: -1 }, MAX_DELAY_NEGATIVE],
      [{ retryStrategy: "fixed", retryInitialDelaySeconds: 86_401 }, INITIAL_MAX],
      [{ retryStrategy: "exponential", retryInitialDelaySeconds: 1, retryMaxDelaySeconds: 86_401 }, MAX_DELAY_MAX]
    ]
    for (const [body, message] of rows) {
      it.effect(`${JSON.stringify(body)} → ${message}`, () =>
        Effect.gen(function*() {
          const p = yield* newProject
          assertMessage(yield* p.create({ tag: freshTag(), ...body }), 400, { _tag: "BadRequest", message })
          assert.deepStrictEqual((yield* p.list()).json(), [])
        }))
    }
    // a rate of JSON's 1e400 arrives as Infinity: a number, refused by validation
    it.effect("a rate of 1e400 → the rate message", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        assertMessage(yield* p.create(`{"tag":"${freshTag()}","throughput":{"1s":1e400}}`), 400, { _tag: "BadRequest", message: rate("1s") })
      }))
  })

  describe("order: a body breaking two rules gets the earlier message", () => {
    const rows: ReadonlyArray<readonly [what: string, body: Record<string, unknown>, expected: string]> = [
      ["tag before at-least-one", { tag: "A" }, INVALID_TAG],
      ["tag before timeout", { tag: "A", requestTimeoutSeconds: 0 }, INVALID_TAG],
      ["at-least-one before retryMaxAttempts", { retryMaxAttempts: 0 }, NOTHING_SPECIFIED],
      ["timeout before maxConcurrent", { requestTimeoutSeconds: 0, maxConcurrent: 0 }, TIMEOUT],
      ["maxConcurrent before window count", { maxConcurrent: 0, throughput: windows(9) }, MAX_CONCURRENT],
      ["window count before rate", { throughput: { ...windows(8), "1d": -1 } }, WINDOWS],
      ["every rate before any effective window", { throughput: { "1d": 0.01, "1s": -2 } }, rate("1s")],
      ["effective window before retryMaxAttempts", { throughput: { "31d": 1 }, retryMaxAttempts: 0 }, effective("31d", 1)],
      ["retryMaxAttempts before initial delay required", { retryStrategy: "fixed", retryMaxAttempts: 0 }, MAX_ATTEMPTS],
      ["initial delay required before max delay ≥ 0", { retryStrategy: "fixed", retryMaxDelaySeconds: -1 }, INITIAL_REQUIRED],
      [
        "max delay ≥ 0 before initial delay ≤ 86400",
        { retryStrategy: "fixed", retryInitialDelaySeconds: 86_401, retryMaxDelaySeconds: -1 },
        MAX_DELAY_NEGATIVE
      ],
      [
        "initial delay ≤ 86400 before max delay ≤ 86400",
        { retryStrategy: "fixed", retryInitialDelaySeconds: 86_401, retryMaxDelaySeconds: 86_401 },
        INITIAL_MAX
      ]
    ]
    for (const [what, body, message] of rows) {
      it.effect(what, () =>
        Effect.gen(function*() {
          const p = yield* newProject
          assertMessage(yield* p.create({ tag: freshTag(), ...body }), 400, { _tag: "BadRequest", message })
        }))
    }
  })

  describe("shape → 400 with an empty body (before the credentials)", () => {
    const rows: ReadonlyArray<readonly [what: string, body: string]> = [
      ["empty body", ""],
      ["invalid JSON", "{"],
      ["single quotes", "{'tag': 'a'}"],
      ["null", "null"],
      ["an array", `[{"tag":"a","maxConcurrent":1}]`],
      ["a string", `"a"`],
      ["tag missing on POST", `{"maxConcurrent":1}`],
      ["tag null", `{"tag":null,"maxConcurrent":1}`],
      ["tag a number", `{"tag":5,"maxConcurrent":1}`],
      ["maxConcurrent a string", `{"tag":"a","maxConcurrent":"2"}`],
      ["maxConcurrent a fraction", `{"tag":"a","maxConcurrent":1.5}`],
      ["requestTimeoutSeconds a boolean", `{"tag":"a","requestTimeoutSeconds":true}`],
      ["throughput an array", `{"tag":"a","throughput":[1]}`],
      ["malformed window 1w", `{"tag":"a","throughput":{"1w":1}}`],
      ["a rate that is a string", `{"tag":"a","throughput":{"1s":"10"}}`],
      ["unknown retryStrategy", `{"tag":"a","retryStrategy":"linear"}`],
      ["unknown retryOn", `{"tag":"a","retryStrategy":"none","retryOn":"5xx"}`],
      ["a wrong type next to an invalid tag", `{"tag":"A B","maxConcurrent":"1"}`]
    ]
    for (const [what, body] of rows) {
      it.effect(`POST: ${what}`, () =>
        Effect.gen(function*() {
          const server = yield* TestServer
          const p = yield* newProject
          assertEmpty(yield* p.create(body), 400)
          // the same without credentials, and with an unknown key: still the empty 400
          assertEmpty(yield* server.call("POST", "/tag-policies", { headers: JSON_TYPE, body }), 400)
          assertEmpty(yield* server.call("POST", "/tag-policies", { headers: { ...JSON_TYPE, "ttr-api-key": "ttr_nope" }, body }), 400)
          assert.deepStrictEqual((yield* p.list()).json(), [])
        }))
    }

    const updateRows: ReadonlyArray<readonly [what: string, body: string]> = [
      ["invalid JSON", "{"],
      ["an array", "[]"],
      ["tag null", `{"tag":null}`],
      ["maxConcurrent a fraction", `{"maxConcurrent":2.5}`],
      ["malformed window 1w", `{"throughput":{"1w":1}}`],
      ["unknown retryOn", `{"retryOn":"never"}`]
    ]
    for (const [what, body] of updateRows) {
      it.effect(`PUT: ${what} (also for an unknown id: shape before 404)`, () =>
        Effect.gen(function*() {
          const p = yield* newProject
          const policy = yield* created(p, { tag: freshTag(), maxConcurrent: 1 })
          assertEmpty(yield* p.update(policy.id, body), 400)
          assertEmpty(yield* p.update(UNKNOWN_ID, body), 400)
          assert.deepStrictEqual((yield* p.list()).json(), [policy])
        }))
    }
  })

  describe("the check order across the table (docs/tag-policies.md)", () => {
    type Caller = (method: string, path: string, options?: CallOptions) => Effect.Effect<TestResponse>
    type Call = (call: Caller, key: string, existingId: string) => Effect.Effect<TestResponse>
    const post = (headers: Record<string, string>, body: string): Call => (call) => call("POST", "/tag-policies", { headers, body })
    /** PUT to this id, or to the id of a policy the project has (`"existing"`). */
    const put = (id: string, headers: Record<string, string>, body: string): Call => (call, _key, existingId) =>
      call("PUT", `/tag-policies/${id === "existing" ? existingId : id}`, { headers, body })
    const withKey = (make: (auth: Record<string, string>) => Call): Call => (call, key, existingId) =>
      make({ "ttr-api-key": key })(call, key, existingId)
    const text415 = (type: string) => ({ status: 415, text: `Unsupported content-type: ${type}` })
    const empty400 = { status: 400, text: "" }
    const json = (status: number, body: unknown) => ({ status, json: body })

    const rows: ReadonlyArray<readonly [what: string, call: Call, expected: { status: number; text?: string; json?: unknown }]> = [
      ["POST: 415 before an invalid body and no key", post({ "content-type": "text/plain" }, "{"), text415("text/plain")],
      ["PUT: 415 before an unknown id and no key", put(UNKNOWN_ID, { "content-type": "application/xml" }, "{"), text415("application/xml")],
      ["POST: invalid JSON before no key", post(JSON_TYPE, "{"), empty400],
      ["PUT: a shape error before an unknown key and an unknown id", put(UNKNOWN_ID, { ...JSON_TYPE, "ttr-api-key": "ttr_nope" }, "[]"), empty400],
      ["POST: no credentials before validation", post(JSON_TYPE, `{"tag":"A"}`), json(401, { _tag: "Unauthorized", message: "Unauthorized" })],
      [
        "POST: an unknown key before validation",
        post({ ...JSON_TYPE, "ttr-api-key": "ttr_nope" }, `{"tag":"A"}`),
        json(401, { _tag: "Unauthorized", message: "Invalid api key" })
      ],
      ["PUT: no credentials before 404", put(UNKNOWN_ID, JSON_TYPE, `{"maxConcurrent":1}`), json(401, { _tag: "Unauthorized", message: "Unauthorized" })],
      ["PUT: 404 before validation", withKey((auth) => put(UNKNOWN_ID, { ...JSON_TYPE, ...auth }, `{"maxConcurrent":0}`)), json(404, NOT_FOUND)],
      ["PUT: an id that is not a UUID is not found", withKey((auth) => put("nope", { ...JSON_TYPE, ...auth }, `{"maxConcurrent":0}`)), json(404, NOT_FOUND)],
      [
        "PUT: validation of an existing policy",
        withKey((auth) => put("existing", { ...JSON_TYPE, ...auth }, `{"maxConcurrent":0}`)),
        json(400, { _tag: "BadRequest", message: MAX_CONCURRENT })
      ],
      [
        "DELETE: no credentials before 404",
        (call) => call("DELETE", `/tag-policies/${UNKNOWN_ID}`),
        json(401, { _tag: "Unauthorized", message: "Unauthorized" })
      ],
      ["DELETE: unknown id", (call, key) => call("DELETE", `/tag-policies/${UNKNOWN_ID}`, { headers: { "ttr-api-key": key } }), json(404, NOT_FOUND)],
      ["DELETE: not a UUID", (call, key) => call("DELETE", "/tag-policies/12", { headers: { "ttr-api-key": key } }), json(404, NOT_FOUND)],
      [
        "GET: an unknown key",
        (call) => call("GET", "/tag-policies", { headers: { "ttr-api-key": "ttr_nope" } }),
        json(401, { _tag: "Unauthorized", message: "Invalid api key" })
      ]
    ]
    for (const [what, call, expected] of rows) {
      it.effect(what, () =>
        Effect.gen(function*() {
          const server = yield* TestServer
          const p = yield* newProject
          const existing = yield* created(p, { tag: freshTag(), maxConcurrent: 3 })
          const response = yield* call(server.call, p.key, existing.id)
          assert.strictEqual(response.status, expected.status, response.text)
          if (expected.text !== undefined) assert.strictEqual(response.text, expected.text)
          if (expected.status === 415) assert.match(String(response.headers["content-type"]), /^text\/plain/)
          if (expected.status === 400 && expected.text === "") assert.isUndefined(response.headers["content-type"])
          if (expected.json !== undefined) assertMessage(response, expected.status, expected.json)
          assert.deepStrictEqual((yield* p.list()).json(), [existing])
        }))
    }
  })

  describe("credentials: key header, Bearer, both", () => {
    /** null: accepted; else the 401 message. */
    const cases: ReadonlyArray<readonly [string, (key: string) => Record<string, string>, string | null]> = [
      ["key header", (key) => ({ "ttr-api-key": key }), null],
      ["Bearer", (key) => ({ authorization: `Bearer ${key}` }), null],
      ["bearer in lowercase", (key) => ({ authorization: `bearer ${key}` }), null],
      ["both, key header good", (key) => ({ "ttr-api-key": key, authorization: "Bearer ttr_nope" }), null],
      ["both, only the Bearer good: only the key header is checked", (key) => ({ "ttr-api-key": "ttr_nope", authorization: `Bearer ${key}` }), "Invalid api key"],
      ["an unknown Bearer key", () => ({ authorization: "Bearer ttr_nope" }), "Invalid api key"],
      ["none", () => ({}), "Unauthorized"]
    ]
    for (const [name, headers, message] of cases) {
      it.effect(`${name} → ${message === null ? "accepted" : `401 ${message}`} on all four endpoints`, () =>
        Effect.gen(function*() {
          const server = yield* TestServer
          const p = yield* newProject
          const policy = yield* created(p, { tag: freshTag(), maxConcurrent: 1 })
          const auth = headers(p.key)
          const list = yield* server.call("GET", "/tag-policies", { headers: auth })
          const create = yield* server.call("POST", "/tag-policies", { headers: { ...auth, ...JSON_TYPE }, body: asBody({ tag: freshTag(), maxConcurrent: 1 }) })
          const update = yield* server.call("PUT", `/tag-policies/${policy.id}`, { headers: { ...auth, ...JSON_TYPE }, body: `{"maxConcurrent":2}` })
          const remove = yield* server.call("DELETE", `/tag-policies/${policy.id}`, { headers: auth })
          if (message === null) {
            assert.deepStrictEqual([list.status, create.status, update.status, remove.status], [200, 201, 200, 204])
          } else {
            for (const response of [list, create, update, remove]) assertMessage(response, 401, { _tag: "Unauthorized", message })
            assert.deepStrictEqual((yield* p.list()).json(), [policy])
          }
        }))
    }
  })

  describe("responses (docs/tag-policies.md)", () => {
    it.effect("POST → 201 with the policy: UUID id, every request field (unset ones null), timestamps, live counts", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const tag = freshTag()
        const before = Date.now()
        const response = yield* p.create({ tag, maxConcurrent: 2, unknownField: "ignored" })
        assert.strictEqual(response.status, 201)
        assert.strictEqual(response.headers["content-type"], "application/json")
        const view = response.json()
        assert.sameMembers(Object.keys(view), VIEW_KEYS)
        assert.match(view.id, UUID)
        assert.deepStrictEqual(view, {
          id: view.id, tag, ...UNSET, maxConcurrent: 2, createdAt: view.createdAt, updatedAt: view.createdAt, queued: 0, inFlight: 0, heldUntil: null
        })
        assert.match(view.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        assert.isAtLeast(Date.parse(view.createdAt), before - 1000)
        assert.isAtMost(Date.parse(view.createdAt), Date.now() + 1000)
        // GET lists exactly that
        const list = yield* p.list()
        assert.strictEqual(list.status, 200)
        assert.strictEqual(list.headers["content-type"], "application/json")
        assert.deepStrictEqual(list.json(), [view])
      }))

    it.effect("every field set is returned as sent; a create without retryMaxAttempts stores 3, null means unlimited", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const full = {
          tag: freshTag(),
          maxConcurrent: 5,
          requestTimeoutSeconds: 30,
          throughput: { "1s": 10, "1h": 500, "1m": 0.5 },
          retryStrategy: "exponential",
          retryMaxAttempts: 4,
          retryInitialDelaySeconds: 2,
          retryMaxDelaySeconds: 60,
          retryOn: "non_2xx"
        }
        const view = yield* created(p, full)
        assert.deepStrictEqual(view, { ...full, id: view.id, createdAt: view.createdAt, updatedAt: view.updatedAt, queued: 0, inFlight: 0, heldUntil: null })
        const unlimited = yield* created(p, { tag: freshTag(), retryStrategy: "fixed", retryInitialDelaySeconds: 0, retryMaxAttempts: null })
        assert.isNull(unlimited.retryMaxAttempts)
        const timeoutOnly = yield* created(p, { tag: freshTag(), requestTimeoutSeconds: 1, throughput: null })
        assert.deepStrictEqual(timeoutOnly, { ...timeoutOnly, ...UNSET, requestTimeoutSeconds: 1 })
        // listed oldest first
        assert.deepStrictEqual((yield* p.list()).json().map((v: { id: string }) => v.id), [view.id, unlimited.id, timeoutOnly.id])
      }))

    it.effect("PUT → 200 with the policy after the patch: present fields replace, null clears, absent keep", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const tag = freshTag()
        const original = yield* created(p, { tag, maxConcurrent: 2, throughput: { "1s": 5 }, retryStrategy: "none" })
        const response = yield* p.update(original.id, { maxConcurrent: null, requestTimeoutSeconds: 10, throughput: { "1m": 30 } })
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers["content-type"], "application/json")
        const updated = response.json()
        assert.deepStrictEqual(updated, {
          ...original, maxConcurrent: null, requestTimeoutSeconds: 10, throughput: { "1m": 30 }, updatedAt: updated.updatedAt
        })
        assert.isAtLeast(Date.parse(updated.updatedAt), Date.parse(original.updatedAt))
        assert.deepStrictEqual((yield* p.list()).json(), [updated])
        // an empty patch keeps everything; {} clears throughput; a PUT may make the policy specify nothing
        const same = (yield* p.update(original.id, {})).json()
        assert.deepStrictEqual(same, { ...updated, updatedAt: same.updatedAt })
        const cleared = (yield* p.update(original.id, { throughput: {}, requestTimeoutSeconds: null, retryStrategy: null })).json()
        assert.deepStrictEqual(cleared, { ...updated, ...UNSET, updatedAt: cleared.updatedAt })
        // an upper-case id names the same policy
        assert.strictEqual((yield* p.update(original.id.toUpperCase(), { maxConcurrent: 9 })).json().maxConcurrent, 9)
      }))

    it.effect("PUT validates the policy as it would be after the update: retryStrategy alone fails without a stored initial delay", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const policy = yield* created(p, { tag: freshTag(), maxConcurrent: 1 })
        for (const strategy of ["fixed", "exponential"]) {
          assertMessage(yield* p.update(policy.id, { retryStrategy: strategy }), 400, { _tag: "BadRequest", message: INITIAL_REQUIRED })
        }
        assert.deepStrictEqual((yield* p.list()).json(), [policy])
        const withDelay = (yield* p.update(policy.id, { retryStrategy: "fixed", retryInitialDelaySeconds: 5 })).json()
        assert.strictEqual(withDelay.retryStrategy, "fixed")
        // now the stored delay carries a strategy change alone, and clearing the delay fails
        const exponential = yield* p.update(policy.id, { retryStrategy: "exponential" })
        assert.strictEqual(exponential.status, 200)
        assertMessage(yield* p.update(policy.id, { retryInitialDelaySeconds: null }), 400, { _tag: "BadRequest", message: INITIAL_REQUIRED })
        // at-least-one is a create rule only; range rules hold as on create
        assert.strictEqual((yield* p.update(policy.id, { maxConcurrent: null, retryStrategy: null })).status, 200)
        assertMessage(yield* p.update(policy.id, { tag: "Billing" }), 400, { _tag: "BadRequest", message: INVALID_TAG })
        assertMessage(yield* p.update(policy.id, { requestTimeoutSeconds: 0, maxConcurrent: 0 }), 400, { _tag: "BadRequest", message: TIMEOUT })
      }))

    it.effect("PUT may change the tag", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const policy = yield* created(p, { tag: freshTag(), maxConcurrent: 1 })
        const renamed = freshTag()
        const updated = (yield* p.update(policy.id, { tag: renamed })).json()
        assert.deepStrictEqual(updated, { ...policy, tag: renamed, updatedAt: updated.updatedAt })
        // the old tag is free again
        yield* created(p, { tag: policy.tag, maxConcurrent: 1 })
      }))

    it.effect("DELETE → 204 without a body; then the policy is gone (404 on PUT and DELETE)", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const kept = yield* created(p, { tag: freshTag(), maxConcurrent: 1 })
        const policy = yield* created(p, { tag: freshTag(), maxConcurrent: 1 })
        assertEmpty(yield* p.remove(policy.id), 204)
        assert.deepStrictEqual((yield* p.list()).json(), [kept])
        assertMessage(yield* p.remove(policy.id), 404, NOT_FOUND)
        assertMessage(yield* p.update(policy.id, { maxConcurrent: 2 }), 404, NOT_FOUND)
        // the tag can have a policy again
        yield* created(p, { tag: policy.tag, requestTimeoutSeconds: 5 })
      }))
  })

  describe("one policy per tag: 409 Conflict naming the existing policy", () => {
    it.effect("a second POST for a tag that has a policy", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const tag = freshTag()
        const first = yield* created(p, { tag, maxConcurrent: 1 })
        assertMessage(yield* p.create({ tag, throughput: { "1s": 1 } }), 409, conflict(tag, first.id))
        assert.deepStrictEqual((yield* p.list()).json(), [first])
        // validation comes first: an invalid body for a taken tag is a 400
        assertMessage(yield* p.create({ tag, maxConcurrent: 0 }), 400, { _tag: "BadRequest", message: MAX_CONCURRENT })
      }))

    it.effect("a PUT renaming onto a tag that has a policy; keeping its own tag is no conflict", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const a = yield* created(p, { tag: freshTag(), maxConcurrent: 1 })
        const b = yield* created(p, { tag: freshTag(), maxConcurrent: 2 })
        assertMessage(yield* p.update(b.id, { tag: a.tag, maxConcurrent: 5 }), 409, conflict(a.tag, a.id))
        assert.deepStrictEqual((yield* p.list()).json(), [a, b])
        const own = yield* p.update(b.id, { tag: b.tag, maxConcurrent: 3 })
        assert.strictEqual(own.status, 200)
        // 404 and validation come before the conflict
        assertMessage(yield* p.update(UNKNOWN_ID, { tag: a.tag }), 404, NOT_FOUND)
        assertMessage(yield* p.update(b.id, { tag: a.tag, maxConcurrent: 0 }), 400, { _tag: "BadRequest", message: MAX_CONCURRENT })
      }))

    it.effect("concurrent creates of one tag: one 201, the others 409 naming the winner", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const tag = freshTag()
        const responses = yield* Effect.all(Array.from({ length: 6 }, (_, i) => p.create({ tag, maxConcurrent: i + 1 })), { concurrency: "unbounded" })
        const winners = responses.filter((response) => response.status === 201)
        assert.strictEqual(winners.length, 1, responses.map((response) => `${response.status} ${response.text}`).join("\n"))
        const winner = winners[0]!.json()
        for (const response of responses.filter((response) => response.status !== 201)) {
          assertMessage(response, 409, conflict(tag, winner.id))
        }
        assert.deepStrictEqual((yield* p.list()).json(), [winner])
      }))

    it.effect("another project may use the same tag", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const other = yield* newProject
        const tag = freshTag()
        yield* created(p, { tag, maxConcurrent: 1 })
        yield* created(other, { tag, maxConcurrent: 1 })
      }))
  })

  it.effect("scoped to the caller's project: another project's policy is not listed and is not found", () =>
    Effect.gen(function*() {
      const p = yield* newProject
      const other = yield* newProject
      const policy = yield* created(p, { tag: freshTag(), maxConcurrent: 1 })
      assert.deepStrictEqual((yield* other.list()).json(), [])
      assertMessage(yield* other.update(policy.id, { maxConcurrent: 0 }), 404, NOT_FOUND)
      assertMessage(yield* other.remove(policy.id), 404, NOT_FOUND)
      assert.deepStrictEqual((yield* p.list()).json(), [policy])
    }))

  it.effect("exact paths; other methods and paths → the router's empty 404", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const p = yield* newProject
      const policy = yield* created(p, { tag: freshTag(), maxConcurrent: 1 })
      const auth = { "ttr-api-key": p.key, ...JSON_TYPE }
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["GET", "/tag-policies/"],
        ["POST", "/tag-policies/"],
        ["GET", `/tag-policies/${policy.id}`],
        ["POST", `/tag-policies/${policy.id}`],
        ["PATCH", `/tag-policies/${policy.id}`],
        ["PUT", `/tag-policies/${policy.id}/`],
        ["DELETE", `/tag-policies/${policy.id}/x`],
        ["PUT", "/tag-policies"],
        ["DELETE", "/tag-policies"],
        ["PATCH", "/tag-policies"],
        ["GET", "/tag-policy"]
      ]
      for (const [method, path] of cases) {
        const response = yield* server.call(method, path, { headers: auth, body: `{"maxConcurrent":2}` })
        assert.strictEqual(response.status, 404, `${method} ${path}`)
        assert.strictEqual(response.text, "", `${method} ${path}`)
      }
      assert.deepStrictEqual((yield* p.list()).json(), [policy])
      // a query string is not part of the path
      assert.strictEqual((yield* server.call("GET", "/tag-policies?x=1", { headers: auth })).status, 200)
    }))

  it.effect("live state: queued (waiting in PostgreSQL) per tag from the gate rows, inFlight from the live leases, heldUntil from the hold; this project only", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const p = yield* newProject
      const other = yield* newProject
      const projectId = yield* projectIdOfKey(p.key)
      const otherProjectId = yield* projectIdOfKey(other.key)
      // paused: the gates admit nothing while the rows below exist
      const busy = yield* created(p, { tag: freshTag(), maxConcurrent: 3, throughput: { "1d": 0 } })
      const idle = yield* created(p, { tag: freshTag(), maxConcurrent: 1, throughput: { "1d": 0 } })
      const far = new Date(Date.UTC(2031, 0, 1))

      /** A trigger with these tags in this status, with one gate row per gated tag. */
      const waiting = (input: { projectId: string; tags: ReadonlyArray<string>; status: "queued" | "cancelled" }) =>
        Effect.gen(function*() {
          const id = yield* insertTrigger({ projectId: input.projectId, status: input.status, tags: input.tags, scheduledAt: far })
          for (const tag of input.tags) {
            yield* sql`INSERT INTO gate_slots (trigger_id, tag, project_id, scheduled_at, not_before)
              VALUES (${id}, ${tag}, ${input.projectId}, ${far}, ${far})`
          }
        })
      /** A lease row of a node (not connected: a pause waits for no node but live ones) with requests in flight. */
      const lease = (input: { projectId: string; tag: string; node: string; inFlight: number; gone?: boolean }) =>
        sql`INSERT INTO gate_leases (project_id, tag, node, permits, in_flight, renewed_at, gone_at)
          VALUES (${input.projectId}, ${input.tag}, ${input.node}, ${input.inFlight}, ${input.inFlight}, now(),
            ${input.gone === true ? new Date() : null})`
      for (let i = 0; i < 3; i++) yield* waiting({ projectId, tags: [busy.tag], status: "queued" })
      // waiting under both tags: counted under each
      yield* waiting({ projectId, tags: [busy.tag, idle.tag], status: "queued" })
      // a waiting trigger cancelled meanwhile is not counted
      yield* waiting({ projectId, tags: [busy.tag], status: "cancelled" })
      // the same tag in another project is not counted here
      yield* waiting({ projectId: otherProjectId, tags: [busy.tag], status: "queued" })
      yield* lease({ projectId, tag: busy.tag, node: "node-x", inFlight: 2 })
      yield* lease({ projectId, tag: busy.tag, node: "node-y", inFlight: 1 })
      // a gone node's row counts nothing in flight
      yield* lease({ projectId, tag: busy.tag, node: "node-z~gone~1", inFlight: 5, gone: true })
      yield* lease({ projectId: otherProjectId, tag: busy.tag, node: "node-x", inFlight: 1 })
      // held until two seconds from now; the other tag's hold is over
      yield* sql`INSERT INTO gate_holds (project_id, tag, held_since, held_until) VALUES
        (${projectId}, ${busy.tag}, now(), now() + interval '2 seconds'),
        (${projectId}, ${idle.tag}, now() - interval '3 seconds', now() - interval '1 second')`
      const heldUntil = (yield* sql<{ until: Date }>`SELECT held_until AS until FROM gate_holds WHERE project_id = ${projectId} AND tag = ${busy.tag}`)[0]!.until

      const views = (yield* p.list()).json() as Array<{ tag: string; queued: number; inFlight: number; heldUntil: string | null }>
      assert.deepStrictEqual(views.map((view) => [view.tag, view.queued, view.inFlight, view.heldUntil]), [
        [busy.tag, 4, 3, heldUntil.toISOString()],
        [idle.tag, 1, 0, null]
      ])
      // the views of PUT carry them too
      const updated = (yield* p.update(busy.id, { maxConcurrent: 4 })).json()
      assert.deepStrictEqual([updated.queued, updated.inFlight, updated.heldUntil], [4, 3, heldUntil.toISOString()])
      // the other project has no policy for the tag; once it has one, it sees its own rows only
      const otherPolicy = yield* created(other, { tag: busy.tag, maxConcurrent: 1, throughput: { "1d": 0 } })
      assert.deepStrictEqual([otherPolicy.queued, otherPolicy.inFlight, otherPolicy.heldUntil], [1, 1, null])
    }))

  it.effect("the OpenAPI document describes the four operations and the policy view", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const paths = (yield* server.call("GET", "/openapi/json")).json().paths
      const list = paths["/tag-policies"].get
      const create = paths["/tag-policies"].post
      const update = paths["/tag-policies/{id}"].put
      const remove = paths["/tag-policies/{id}"].delete
      assert.deepStrictEqual(
        [list.operationId, create.operationId, update.operationId, remove.operationId],
        ["listTagPolicies", "createTagPolicy", "updateTagPolicy", "deleteTagPolicy"]
      )
      assert.sameMembers(Object.keys(create.responses), ["201", "400", "401", "409", "415", "503"])
      assert.sameMembers(Object.keys(update.responses), ["200", "400", "401", "404", "409", "415", "503"])
      assert.sameMembers(Object.keys(remove.responses), ["204", "401", "404", "503"])
      const view = list.responses["200"].content["application/json"].schema.items
      assert.sameMembers(Object.keys(view.properties), VIEW_KEYS)
      assert.sameMembers(view.required, VIEW_KEYS)
      assert.deepStrictEqual(create.responses["201"].content["application/json"].schema, view)
      const names = update.parameters.map((parameter: { name: string; in: string }) => `${parameter.in}:${parameter.name}`)
      assert.includeMembers(names, ["path:id", "header:ttr-api-key", "header:Authorization", "cookie:__Host-timewheel-session"])
    }))
})
