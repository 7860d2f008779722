// GET / POST / PUT / DELETE /target-policies and GET /targets against the real service
// (docs/protecting-targets.md "Endpoints", "Errors"), in the style of /tag-policies: 415, the empty 400
// of a bad body or shape (with its Timewheel-Error hint), 401, 404 before any value is looked at, the
// validation messages in their order (`Invalid origin: <value>` first), the 409 of a second policy for
// an origin; the origin normalised on the way in; PUT as a patch that never changes the origin;
// project scoping; and the live state of the views and of GET /targets (gate rows and circuits
// written straight into the database).
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { insertTrigger, projectIdOfKey } from "../support/fixtures.ts"
import { TestServer, testServerLayer, type TestResponse } from "../support/server.ts"

const NOTHING = "At least one of maxConcurrent, throughput or circuitBreaker must be specified"
const MAX_CONCURRENT = "maxConcurrent must be ≥ 1"
const FAILURES = "circuitBreaker.failures must be ≥ 1"
const COOLDOWN = "circuitBreaker.cooldownSeconds must be between 1 and 3600"
const NOT_FOUND = { _tag: "NotFound", message: "Target policy not found" }
const UNKNOWN_ID = "0190b1c2-0000-7000-8000-000000000001"
const VIEW_KEYS = [
  "id", "origin", "maxConcurrent", "throughput", "circuitBreaker", "createdAt", "updatedAt", "queued", "inFlight", "heldUntil", "circuit"
]
const JSON_TYPE = { "content-type": "application/json" }

let originCounter = 0
/** An origin no other test of this file uses. */
const freshOrigin = () => `https://api${++originCounter}-${Math.random().toString(36).slice(2, 8)}.example.com`

const newProject = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const auth = { "ttr-api-key": key }
  const asBody = (body: unknown) => (typeof body === "string" ? body : JSON.stringify(body))
  return {
    key,
    list: () => server.call("GET", "/target-policies", { headers: auth }),
    targets: () => server.call("GET", "/targets", { headers: auth }),
    create: (body: unknown, headers: Record<string, string> = JSON_TYPE) =>
      server.call("POST", "/target-policies", { headers: { ...auth, ...headers }, body: asBody(body) }),
    update: (id: string, body: unknown, headers: Record<string, string> = JSON_TYPE) =>
      server.call("PUT", `/target-policies/${id}`, { headers: { ...auth, ...headers }, body: asBody(body) }),
    remove: (id: string) => server.call("DELETE", `/target-policies/${id}`, { headers: auth })
  }
})
type Project = Effect.Success<typeof newProject>

const created = (p: Project, body: Record<string, unknown>) =>
  Effect.map(p.create(body), (response) => {
    assert.strictEqual(response.status, 201, response.text)
    return response.json()
  })

const assertMessage = (response: TestResponse, status: number, body: unknown) => {
  assert.strictEqual(response.status, status, response.text)
  assert.strictEqual(response.headers["content-type"], "application/json")
  assert.deepStrictEqual(response.json(), body)
  assert.isString(response.headers["timewheel-error"], "every 4xx carries a hint")
}

const assertEmpty400 = (response: TestResponse, hint: string) => {
  assert.strictEqual(response.status, 400, response.text)
  assert.strictEqual(response.text, "")
  assert.strictEqual(response.headers["timewheel-error"], hint)
}

layer(testServerLayer(), { timeout: "120 seconds" })("target policies", (it) => {
  describe("validation messages, exact text (POST → 400 BadRequest, nothing written)", () => {
    const rows: ReadonlyArray<readonly [body: Record<string, unknown>, expected: string]> = [
      [{ origin: "https://api.example.com/v1", maxConcurrent: 1 }, "Invalid origin: https://api.example.com/v1"],
      [{ origin: "https://api.example.com?x=1", maxConcurrent: 1 }, "Invalid origin: https://api.example.com?x=1"],
      [{ origin: "https://api.example.com#f", maxConcurrent: 1 }, "Invalid origin: https://api.example.com#f"],
      [{ origin: "https://me:pw@api.example.com", maxConcurrent: 1 }, "Invalid origin: https://me:pw@api.example.com"],
      [{ origin: "ftp://api.example.com", maxConcurrent: 1 }, "Invalid origin: ftp://api.example.com"],
      [{ origin: "api.example.com", maxConcurrent: 1 }, "Invalid origin: api.example.com"],
      [{ origin: "", maxConcurrent: 1 }, "Invalid origin: "],
      [{ origin: "https://x.example/v1", maxConcurrent: 0 }, "Invalid origin: https://x.example/v1"],
      [{}, NOTHING],
      [{ throughput: {}, circuitBreaker: null }, NOTHING],
      [{ maxConcurrent: 0 }, MAX_CONCURRENT],
      [{ maxConcurrent: 0, circuitBreaker: { failures: 0, cooldownSeconds: 0 } }, MAX_CONCURRENT],
      [{ throughput: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`${i + 1}s`, 1])) }, "At most 8 throughput windows per policy"],
      [{ throughput: { "1s": -1 } }, "Throughput rate for '1s' must be a finite number ≥ 0"],
      [{ throughput: { "31d": 1 } }, "Effective window for '31d' at rate 1 exceeds the 30-day maximum"],
      [{ circuitBreaker: { failures: 0, cooldownSeconds: 30 } }, FAILURES],
      [{ circuitBreaker: { failures: 0, cooldownSeconds: 0 } }, FAILURES],
      [{ circuitBreaker: { failures: 5, cooldownSeconds: 0 } }, COOLDOWN],
      [{ circuitBreaker: { failures: 5, cooldownSeconds: 3601 } }, COOLDOWN]
    ]
    for (const [body, message] of rows) {
      it.effect(`${JSON.stringify(body)} → ${message}`, () =>
        Effect.gen(function*() {
          const p = yield* newProject
          assertMessage(yield* p.create({ origin: freshOrigin(), ...body }), 400, { _tag: "BadRequest", message })
          assert.deepStrictEqual((yield* p.list()).json(), [])
        }))
    }
  })

  describe("shape → 400 with an empty body and a hint (before the credentials)", () => {
    const rows: ReadonlyArray<readonly [body: string, hint: string]> = [
      ["{", "invalid JSON body"],
      ["[]", "body must be a JSON object"],
      [`{"maxConcurrent":1}`, "origin is required"],
      [`{"origin":5,"maxConcurrent":1}`, "origin must be a string"],
      [`{"origin":"*","maxConcurrent":"1"}`, "maxConcurrent must be an integer"],
      [`{"origin":"*","throughput":{"1w":1}}`, "throughput window \"1w\": a whole number followed by s, m, h or d"],
      [`{"origin":"*","circuitBreaker":true}`, "circuitBreaker must be an object {failures, cooldownSeconds} or null"],
      [`{"origin":"*","circuitBreaker":{"failures":3}}`, "circuitBreaker.cooldownSeconds is required"]
    ]
    for (const [body, hint] of rows) {
      it.effect(`POST ${body}`, () =>
        Effect.gen(function*() {
          const server = yield* TestServer
          const p = yield* newProject
          const response = yield* p.create(body)
          if (body === "{") {
            assert.strictEqual(response.status, 400)
            assert.strictEqual(response.text, "")
          } else {
            assertEmpty400(response, hint)
          }
          assert.strictEqual((yield* server.call("POST", "/target-policies", { headers: JSON_TYPE, body })).status, 400)
        }))
    }
  })

  it.effect("415, 401, and 404 before the values; an id that is not a UUID is not found", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const p = yield* newProject
      const unsupported = yield* p.create("{", { "content-type": "text/plain" })
      assert.deepStrictEqual([unsupported.status, unsupported.text], [415, "Unsupported content-type: text/plain"])
      assertMessage(yield* server.call("POST", "/target-policies", { headers: JSON_TYPE, body: `{"origin":"*"}` }), 401,
        { _tag: "Unauthorized", message: "Unauthorized" })
      assertMessage(yield* server.call("GET", "/targets", { headers: { "ttr-api-key": "ttr_nope" } }), 401,
        { _tag: "Unauthorized", message: "Invalid api key" })
      assertMessage(yield* p.update(UNKNOWN_ID, { maxConcurrent: 0 }), 404, NOT_FOUND)
      assertMessage(yield* p.update("nope", { maxConcurrent: 0 }), 404, NOT_FOUND)
      assertMessage(yield* p.remove(UNKNOWN_ID), 404, NOT_FOUND)
    }))

  it.effect("POST → 201: the origin normalised, every field (unset ones null), live state; GET lists it; bearer works", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const p = yield* newProject
      const view = yield* created(p, {
        origin: "HTTPS://API.Example.com:443/", maxConcurrent: 10, circuitBreaker: { failures: 5, cooldownSeconds: 30, extra: 1 }, unknown: true
      })
      assert.sameMembers(Object.keys(view), VIEW_KEYS)
      assert.deepStrictEqual(view, {
        id: view.id, origin: "https://api.example.com", maxConcurrent: 10, throughput: null, circuitBreaker: { failures: 5, cooldownSeconds: 30 },
        createdAt: view.createdAt, updatedAt: view.createdAt, queued: 0, inFlight: 0, heldUntil: null, circuit: "closed"
      })
      const star = yield* created(p, { origin: "*", throughput: { "1s": 5 } })
      assert.deepStrictEqual([star.heldUntil, star.circuit], [null, null])
      const listed = yield* server.call("GET", "/target-policies", { headers: { authorization: `Bearer ${p.key}` } })
      assert.deepStrictEqual(listed.json(), [view, star])
    }))

  it.effect("one policy per origin, as normalised: 409 naming it; validation first; another project may have its own", () =>
    Effect.gen(function*() {
      const p = yield* newProject
      const first = yield* created(p, { origin: "http://127.0.0.1:8080", maxConcurrent: 1 })
      const conflict = { _tag: "Conflict", message: `A target policy for origin "http://127.0.0.1:8080" already exists (id ${first.id})` }
      assertMessage(yield* p.create({ origin: "HTTP://127.0.0.1:8080/", throughput: { "1s": 1 } }), 409, conflict)
      assertMessage(yield* p.create({ origin: "http://127.0.0.1:8080", maxConcurrent: 0 }), 400, { _tag: "BadRequest", message: MAX_CONCURRENT })
      yield* created(p, { origin: "*", maxConcurrent: 1 })
      const star = (yield* p.list()).json()[1]
      assertMessage(yield* p.create({ origin: "*", maxConcurrent: 2 }), 409,
        { _tag: "Conflict", message: `A target policy for origin "*" already exists (id ${star.id})` })
      yield* created(yield* newProject, { origin: "http://127.0.0.1:8080", maxConcurrent: 1 })
    }))

  it.effect("PUT is a patch (null clears, absent keeps, origin ignored), validated after merging; DELETE → 204; scoped to the project", () =>
    Effect.gen(function*() {
      const p = yield* newProject
      const other = yield* newProject
      const origin = freshOrigin()
      const policy = yield* created(p, { origin, maxConcurrent: 2, throughput: { "1s": 5 } })
      const updated = (yield* p.update(policy.id, { origin: "https://elsewhere.example", maxConcurrent: null, circuitBreaker: { failures: 3, cooldownSeconds: 10 } })).json()
      assert.deepStrictEqual(updated, {
        ...policy, maxConcurrent: null, circuitBreaker: { failures: 3, cooldownSeconds: 10 }, updatedAt: updated.updatedAt
      })
      assertMessage(yield* p.update(policy.id, { throughput: null, circuitBreaker: null }), 400, { _tag: "BadRequest", message: NOTHING })
      assertMessage(yield* p.update(policy.id, { circuitBreaker: { failures: 1, cooldownSeconds: 4000 } }), 400, { _tag: "BadRequest", message: COOLDOWN })
      assertMessage(yield* other.update(policy.id, { maxConcurrent: 1 }), 404, NOT_FOUND)
      assertMessage(yield* other.remove(policy.id), 404, NOT_FOUND)
      assert.deepStrictEqual((yield* other.list()).json(), [])
      const removed = yield* p.remove(policy.id)
      assert.deepStrictEqual([removed.status, removed.text], [204, ""])
      assert.deepStrictEqual((yield* p.list()).json(), [])
    }))

  it.effect("live state: the views and GET /targets from the gate rows, leases, holds and circuits; `*` sums its origins", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const p = yield* newProject
      const projectId = yield* projectIdOfKey(p.key)
      const own = "http://own.example:8080"
      const heldOrigin = "https://held.example"
      const openOrigin = "https://open.example"
      const unruled = "https://unruled.example"
      const far = new Date(Date.UTC(2031, 0, 1))
      // paused: nothing here is admitted while the rows below exist
      const ownPolicy = yield* created(p, { origin: own, throughput: { "1d": 0 }, circuitBreaker: { failures: 3, cooldownSeconds: 60 } })
      const star = yield* created(p, { origin: "*", throughput: { "1d": 0 }, circuitBreaker: { failures: 3, cooldownSeconds: 60 } })
      const waiting = (origin: string) =>
        Effect.gen(function*() {
          const id = yield* insertTrigger({ projectId, status: "queued", scheduledAt: far, url: `${origin}/hook` })
          yield* sql`INSERT INTO gate_slots (trigger_id, tag, project_id, scheduled_at, not_before) VALUES (${id}, ${origin}, ${projectId}, ${far}, ${far})`
        })
      yield* waiting(own)
      yield* waiting(own)
      yield* waiting(heldOrigin)
      yield* sql`INSERT INTO gate_leases (project_id, tag, node, in_flight, renewed_at) VALUES
        (${projectId}, ${own}, 'node-x', 2, now()), (${projectId}, ${heldOrigin}, 'node-x', 1, now())`
      yield* sql`INSERT INTO gate_holds (project_id, tag, held_since, held_until) VALUES (${projectId}, ${heldOrigin}, now(), now() + interval '30 seconds')`
      yield* sql`INSERT INTO target_circuits (project_id, origin, failures, opened_at, reason, open_until, cooldown_ms) VALUES
        (${projectId}, ${openOrigin}, 0, now(), 'HTTP 500', now() + interval '60 seconds', 60000),
        (${projectId}, ${own}, 2, NULL, NULL, NULL, 0)`
      const heldUntil = (yield* sql<{ at: Date }>`SELECT held_until AS at FROM gate_holds WHERE project_id = ${projectId}`)[0]!.at.toISOString()
      const openUntil = (yield* sql<{ at: Date; opened: Date }>`SELECT open_until AS at, opened_at AS opened FROM target_circuits
        WHERE project_id = ${projectId} AND origin = ${openOrigin}`)[0]!

      const views = (yield* p.list()).json()
      assert.deepStrictEqual(views.map((v: Record<string, unknown>) => [v.origin, v.queued, v.inFlight, v.heldUntil, v.circuit]), [
        [own, 2, 2, null, "closed"],
        ["*", 1, 1, null, null]
      ])
      // alphabetically: `http://` before `https://`
      const targets = (yield* p.targets()).json()
      assert.deepStrictEqual(targets, [
        {
          origin: own, policyId: ownPolicy.id, queued: 2, inFlight: 2, heldUntil: null, circuit: "closed", consecutiveFailures: 2,
          circuitOpenedAt: null, circuitReason: null
        },
        {
          origin: heldOrigin, policyId: star.id, queued: 1, inFlight: 1, heldUntil, circuit: "closed", consecutiveFailures: 0,
          circuitOpenedAt: null, circuitReason: null
        },
        {
          origin: openOrigin, policyId: star.id, queued: 0, inFlight: 0, heldUntil: openUntil.at.toISOString(), circuit: "open",
          consecutiveFailures: 0, circuitOpenedAt: openUntil.opened.toISOString(), circuitReason: "HTTP 500"
        }
      ])
      // without a policy covering it an origin is not listed; without the circuit breaker the circuit reads closed
      yield* p.remove(star.id)
      yield* sql`INSERT INTO gate_holds (project_id, tag, held_since, held_until) VALUES (${projectId}, ${unruled}, now(), now() + interval '30 seconds')`
      assert.deepStrictEqual((yield* p.targets()).json().map((t: { origin: string }) => t.origin), [own])
    }))

  it.effect("the OpenAPI document describes the five operations", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const paths = (yield* server.call("GET", "/openapi/json")).json().paths
      assert.deepStrictEqual(
        [paths["/target-policies"].get.operationId, paths["/target-policies"].post.operationId, paths["/target-policies/{id}"].put.operationId,
          paths["/target-policies/{id}"].delete.operationId, paths["/targets"].get.operationId],
        ["listTargetPolicies", "createTargetPolicy", "updateTargetPolicy", "deleteTargetPolicy", "listTargets"]
      )
      const view = paths["/target-policies"].get.responses["200"].content["application/json"].schema.items
      assert.sameMembers(view.required, VIEW_KEYS)
    }))
})
