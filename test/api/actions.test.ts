// Bulk actions against the real service (docs/bulk-actions.md): the filter fields of
// GET /jobs, POST /actions' checks in order, the dry run matching exactly what GET /jobs lists, cancel
// and replay by filter under the single-trigger rules (untouched counted by reason), a replay's URL
// and headers for its attempt only, a filter matching nothing, an action repeated after it finished
// and while it runs (the same action, never twice), progress while a chunk waits, another project's
// triggers untouched, no quota used. Chunks are 2 triggers here, so every action runs in several.
// Rows are inserted straight into the database (test/support/fixtures.ts); replays go to a local target.
import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { BulkChunkSize } from "../../src/commands/bulkActionChunk.ts"
import { insertDeadLetters, insertExecution, insertTrigger, insertTriggers, nextId, quotaUsed, setStatus, statusOf } from "../support/fixtures.ts"
import { newProject, type ProjectClient } from "../support/projectClient.ts"
import { TestServer, testServerLayer, type TestResponse } from "../support/server.ts"
import { headerValues, target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"

const CHUNK = 2

const badRequest = (message: string) => ({ _tag: "BadRequest", message })

/** Ids listed by GET /jobs with this query (every page). */
const listed = (p: ProjectClient, query: string) =>
  Effect.gen(function*() {
    const ids: Array<string> = []
    let cursor: string | null = null
    do {
      const response: TestResponse = yield* p.get(`/jobs?limit=500&${query}${cursor === null ? "" : `&cursor=${cursor}`}`)
      assert.strictEqual(response.status, 200, response.text)
      const page: { jobs: Array<{ id: string }>; nextCursor: string | null } = response.json()
      ids.push(...page.jobs.map((job) => job.id))
      cursor = page.nextCursor
    } while (cursor !== null)
    return ids
  })

/** Starts an action (202) and returns its view. */
const started = (p: ProjectClient, body: unknown) =>
  Effect.map(p.post("/actions", body), (response) => {
    assert.strictEqual(response.status, 202, response.text)
    return response.json()
  })

/** The action once it is no longer running. */
const finished = (p: ProjectClient, id: string) =>
  pollUntil(`action ${id} to finish`, Effect.map(p.get(`/actions/${id}`), (response) => {
    const action = response.json()
    return action.status === "running" ? undefined : action
  }))

const CHUNKED = testServerLayer().pipe(Layer.provide(Layer.succeed(BulkChunkSize)(CHUNK)))

layer(CHUNKED, { timeout: "90 seconds" })("bulk actions", (it) => {
  describe("GET /jobs: the filter fields the actions take", () => {
    it.effect("deadLetter: the latest execution is a dead letter (a replay that succeeded is not one any more)", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const [dead] = yield* insertDeadLetters([{ projectId: p.projectId }])
        const [redriven] = yield* insertDeadLetters([{ projectId: p.projectId, attempts: 2 }])
        yield* insertExecution({ projectId: p.projectId, triggerId: redriven!, attempt: 2, triggeredBy: "retry" })
        const never = yield* insertTrigger({ projectId: p.projectId })
        assert.deepStrictEqual(yield* listed(p, "deadLetter=true"), [dead])
        assert.deepStrictEqual(yield* listed(p, "deadLetter=false"), [never, redriven])
      }))

    it.effect("scheduledFrom and scheduledTo: half-open, a generator by its upcoming instance", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const at = (iso: string) => insertTrigger({ projectId: p.projectId, scheduledAt: new Date(iso) })
        const before = yield* at("2030-03-31T23:59:59.999Z")
        const first = yield* at("2030-04-01T00:00:00.000Z")
        const last = yield* at("2030-04-30T23:59:59.999Z")
        const after = yield* at("2030-05-01T00:00:00.000Z")
        const generator = yield* insertTrigger({ projectId: p.projectId, kind: "generator" })
        const instance = yield* insertTrigger({ projectId: p.projectId, generatorId: generator, scheduledAt: new Date("2030-04-15T09:00:00Z") })
        yield* insertTrigger({ projectId: p.projectId, kind: "generator" }) // no upcoming instance: no time
        assert.deepStrictEqual(yield* listed(p, "scheduledFrom=2030-04-01&scheduledTo=2030-05-01"), [instance, generator, last, first])
        assert.deepStrictEqual(yield* listed(p, "scheduledTo=2030-04-01T00:00:00Z"), [before])
        assert.deepStrictEqual(yield* listed(p, "scheduledFrom=2030-05-01&kind=job"), [after])
      }))

    it.effect("a bad value is a 400 naming it", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["deadLetter=yes", "deadLetter must be true or false"],
          ["scheduledFrom=soon", "Invalid date: soon"],
          ["scheduledFrom=2030-02-01&scheduledTo=2030-01-01", "scheduledFrom must be before scheduledTo"],
          ["deadLetter=true&deadLetter=false", "deadLetter must be given at most once"],
          ["status=done", "status must be one of registered, skipped, queued, running, retrying, completed, cancelled, active"]
        ]
        for (const [query, message] of cases) {
          const response = yield* p.get(`/jobs?${query}`)
          assert.strictEqual(response.status, 400, query)
          assert.deepStrictEqual(response.json(), badRequest(message), query)
        }
      }))
  })

  describe("POST /actions: checks in order", () => {
    it.effect("415, the empty 400 of invalid JSON, 401, then the body's fields", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const p = yield* newProject
        const text = yield* p.post("/actions", "{}", { "content-type": "text/plain" })
        assert.deepStrictEqual([text.status, text.text], [415, "Unsupported content-type: text/plain"])
        const broken = yield* p.post("/actions", "{", { "content-type": "application/json" })
        assert.deepStrictEqual([broken.status, broken.text], [400, ""])
        const anonymous = yield* server.call("POST", "/actions", { headers: { "content-type": "application/json" }, body: "{}" })
        assert.deepStrictEqual([anonymous.status, anonymous.json()], [401, { _tag: "Unauthorized", message: "Unauthorized" }])
        const cases: ReadonlyArray<readonly [unknown, string]> = [
          [{ action: "cancel", filter: {} }, "A cancel needs at least one filter field"],
          [{ action: "cancel", filter: {}, dryRun: true }, "A cancel needs at least one filter field"],
          [{ action: "purge", filter: { tag: "a" } }, `action must be "cancel" or "replay"`],
          [{ action: "replay", filter: { deadLetter: "true" } }, "deadLetter must be true or false"],
          [{ action: "replay", filter: {}, replay: { url: "not a url" } }, "Invalid URL: not a url"]
        ]
        for (const [body, message] of cases) {
          const response = yield* p.post("/actions", body)
          assert.strictEqual(response.status, 400, JSON.stringify(body))
          assert.deepStrictEqual(response.json(), badRequest(message))
        }
      }))

    it.effect("an action of another project, or an unknown or malformed id: 404 Action not found", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const other = yield* newProject
        yield* insertTrigger({ projectId: p.projectId, tags: ["t"] })
        const action = yield* started(p, { action: "cancel", filter: { tag: "t" } })
        for (const [who, id] of [[other, action.id], [p, nextId()], [p, "nope"]] as const) {
          const response = yield* who.get(`/actions/${id}`)
          assert.deepStrictEqual([response.status, response.json()], [404, { _tag: "NotFound", message: "Action not found" }])
        }
        assert.deepStrictEqual((yield* other.get("/actions")).json(), { actions: [], nextCursor: null })
      }))
  })

  it.effect("the OpenAPI document: the action endpoints with their responses, the filter on GET /jobs", () =>
    Effect.gen(function*() {
      const document = (yield* (yield* TestServer).call("GET", "/openapi/json")).json()
      const start = document.paths["/actions"].post
      assert.strictEqual(start.operationId, "startAction")
      assert.includeMembers(Object.keys(start.responses), ["200", "202", "400", "401", "413", "415", "503"])
      assert.sameMembers(Object.keys(start.requestBody.content["application/json"].schema.properties.filter.properties), [
        "status", "outcome", "kind", "tag", "customKey", "deadLetter", "scheduledFrom", "scheduledTo"
      ])
      assert.strictEqual(document.paths["/actions"].get.operationId, "listActions")
      assert.includeMembers(Object.keys(document.paths["/actions/{id}"].get.responses), ["200", "401", "404"])
      const jobs = document.paths["/jobs"].get.parameters.map((parameter: { name: string }) => parameter.name)
      assert.includeMembers(jobs, ["status", "outcome", "kind", "tag", "customKey", "deadLetter", "scheduledFrom", "scheduledTo", "limit", "cursor"])
    }))

  describe("cancel by filter", () => {
    it.effect("DELETE /cancel's rules per trigger; the dry run counts what GET /jobs lists; another project untouched; no quota", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const other = yield* newProject
        const tags = ["leaving"]
        const [registered, skipped, retrying, completed, cancelled] = yield* insertTriggers(
          (["registered", "skipped", "retrying", "completed", "cancelled"] as const).map((status) => ({ projectId: p.projectId, status, tags }))
        )
        const running = yield* insertTrigger({ projectId: p.projectId, tags })
        yield* setStatus(running, "running")
        const generator = yield* insertTrigger({ projectId: p.projectId, kind: "generator", tags })
        const instance = yield* insertTrigger({ projectId: p.projectId, generatorId: generator }) // untagged: cancelled with its generator
        const staying = yield* insertTrigger({ projectId: p.projectId, tags: ["staying"] })
        const foreign = yield* insertTrigger({ projectId: other.projectId, tags })
        const quotaBefore = yield* quotaUsed(p.key)

        const set = yield* listed(p, "tag=leaving")
        assert.strictEqual(set.length, 7)
        const dry = yield* p.post("/actions", { action: "cancel", filter: { tag: "leaving" }, dryRun: true })
        assert.deepStrictEqual([dry.status, dry.json()], [200, { matched: 7 }])
        assert.strictEqual(yield* statusOf(registered!), "registered")

        const action = yield* started(p, { action: "cancel", filter: { tag: "leaving" } })
        assert.strictEqual(action.action, "cancel")
        assert.deepStrictEqual(action.filter, { tag: "leaving" })
        assert.strictEqual(action.matched, 7)
        const done = yield* finished(p, action.id)
        assert.deepStrictEqual({ ...done, createdAt: "…", finishedAt: typeof done.finishedAt }, {
          id: action.id, action: "cancel", filter: { tag: "leaving" }, status: "completed", matched: 7, processed: 7, cancelled: 4,
          untouched: { completed: 1, cancelled: 1, running: 1 }, createdAt: "…", finishedAt: "string"
        })
        for (const id of [registered, skipped, retrying, generator, instance]) assert.strictEqual(yield* statusOf(id!), "cancelled", id)
        assert.deepStrictEqual(
          [yield* statusOf(completed!), yield* statusOf(cancelled!), yield* statusOf(running), yield* statusOf(staying), yield* statusOf(foreign)],
          ["completed", "cancelled", "running", "registered", "registered"]
        )
        assert.strictEqual(yield* quotaUsed(p.key), quotaBefore)
        assert.deepStrictEqual((yield* p.get(`/actions/${action.id}`)).json(), done)
        assert.deepStrictEqual((yield* p.get("/actions")).json(), { actions: [done], nextCursor: null })

        // repeated after it finished: a new action over the same filter, which finds nothing left to cancel
        const again = yield* started(p, { action: "cancel", filter: { tag: "leaving" } })
        assert.notStrictEqual(again.id, action.id)
        const repeated = yield* finished(p, again.id)
        assert.deepStrictEqual([repeated.matched, repeated.cancelled, repeated.untouched], [7, 0, { cancelled: 5, completed: 1, running: 1 }])
        assert.deepStrictEqual((yield* p.get("/actions?limit=1")).json().actions.map((a: { id: string }) => a.id), [again.id])
      }))

    it.effect("a filter matching nothing: completed at once", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        yield* insertTrigger({ projectId: p.projectId, tags: ["other"] })
        const action = yield* started(p, { action: "cancel", filter: { tag: "nothing-has-it" } })
        assert.deepStrictEqual([action.status, action.matched, action.processed, action.cancelled, action.untouched], ["completed", 0, 0, 0, {}])
        assert.strictEqual(action.finishedAt, action.createdAt)
        const dry = yield* p.post("/actions", { action: "replay", filter: { tag: "nothing-has-it" }, dryRun: true })
        assert.deepStrictEqual(dry.json(), { matched: 0 })
      }))

    it.effect("calling again while it runs answers the same action; progress while a chunk waits; each trigger once", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const sql = yield* SqlClient.SqlClient
        const ids = yield* insertTriggers(Array.from({ length: 5 }, () => ({ projectId: p.projectId, tags: ["slow"] })))
        // a claim-like lock on the last trigger: the third chunk waits for it
        const locked = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const holder = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT 1 FROM triggers WHERE id = ${ids.at(-1)!} FOR UPDATE`
          yield* Deferred.succeed(locked, undefined)
          yield* Deferred.await(release)
        })))
        yield* Deferred.await(locked)
        const body = { action: "cancel", filter: { tag: "slow", kind: "job" } }
        const action = yield* started(p, body)
        const midway = yield* pollUntil("two chunks done", Effect.map(p.get(`/actions/${action.id}`), (r) => (r.json().processed === 4 ? r.json() : undefined)))
        assert.deepStrictEqual([midway.status, midway.matched, midway.cancelled, midway.finishedAt], ["running", 5, 4, null])
        const again = yield* started(p, { filter: { kind: "job", tag: "slow" }, action: "cancel" })
        assert.strictEqual(again.id, action.id)
        assert.strictEqual(again.status, "running")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        const done = yield* finished(p, action.id)
        assert.deepStrictEqual([done.processed, done.cancelled, done.untouched], [5, 5, {}])
        assert.strictEqual((yield* p.get("/actions")).json().actions.length, 1)
      }))
  })

  describe("replay by filter (dead-letter redrive)", () => {
    it.effect("dead letters sent again as replays, to the replay's URL with its headers for that attempt only", () =>
      Effect.scoped(Effect.gen(function*() {
        const p = yield* newProject
        const other = yield* newProject
        const hooks = yield* target
        const tags = ["redrive"]
        const old = `${hooks.origin}/old`
        const dead = yield* insertDeadLetters([1, 2, 3].map((n) => ({
          projectId: p.projectId, tags, url: `${old}?n=${n}`, headers: [["Authorization", "Bearer old"], ["X-Keep", "1"]] as const
        })))
        const [delivered] = yield* insertTriggers([{ projectId: p.projectId, tags, status: "completed", attempts: 1, url: old }])
        yield* insertExecution({ projectId: p.projectId, triggerId: delivered!, attempt: 1 })
        yield* insertTrigger({ projectId: p.projectId, tags, url: old }) // registered
        yield* insertDeadLetters([{ projectId: p.projectId, url: old }]) // another tag
        const [foreign] = yield* insertDeadLetters([{ projectId: other.projectId, tags, url: old }])

        assert.deepStrictEqual(yield* listed(p, "tag=redrive&deadLetter=true"), [...dead].reverse())
        assert.deepStrictEqual((yield* p.post("/actions", { action: "replay", filter: { tag: "redrive", deadLetter: true }, dryRun: true })).json(), { matched: 3 })
        const quotaBefore = yield* quotaUsed(p.key)

        const action = yield* started(p, {
          action: "replay", filter: { tag: "redrive" },
          replay: { url: `${hooks.origin}/moved`, headers: { authorization: "Bearer new", "X-Moved": "yes" } }
        })
        const done = yield* finished(p, action.id)
        assert.deepStrictEqual([done.matched, done.processed, done.replayed, done.untouched], [5, 5, 3, { notDeadLetter: 1, registered: 1 }])
        assert.notProperty(done, "cancelled")
        yield* pollUntil("three replays at the target", Effect.sync(() => (hooks.at("/moved").length === 3 ? true : undefined)))
        for (const arrival of hooks.at("/moved")) {
          assert.deepStrictEqual(headerValues(arrival.rawHeaders, "authorization"), ["Bearer new"])
          assert.deepStrictEqual(headerValues(arrival.rawHeaders, "x-keep"), ["1"])
          assert.deepStrictEqual(headerValues(arrival.rawHeaders, "x-moved"), ["yes"])
        }
        assert.deepStrictEqual(hooks.at("/moved").map((a) => a.url).sort(), ["/moved", "/moved", "/moved"])
        assert.strictEqual(hooks.at("/old").length, 0)
        for (const id of dead) {
          const executions = yield* pollUntil(`the replay of ${id} recorded`, Effect.map(p.get(`/jobs/${id}/executions`), (r) => {
            const list = r.json().executions
            return list.length === 2 ? list : undefined
          }))
          assert.deepStrictEqual(executions.map((e: any) => [e.attempt, e.status, e.triggeredBy, e.isDeadLetter, e.url]), [
            [1, "failed", null, true, executions[0].url],
            [2, "succeeded", "retry", false, `${hooks.origin}/moved`]
          ])
          // the trigger itself is unchanged
          const job = (yield* p.get(`/jobs/${id}`)).json()
          assert.deepStrictEqual([job.status, job.url.startsWith(old), job.headers], ["completed", true, { Authorization: "Bearer old", "X-Keep": "1" }])
        }
        assert.strictEqual(yield* statusOf(foreign!), "completed")
        assert.strictEqual(yield* quotaUsed(p.key), quotaBefore)

        // the override was for that attempt only: a single replay afterwards sends the stored request
        assert.strictEqual((yield* p.post(`/jobs/${dead[0]}/executions`, { triggeredBy: "retry" })).status, 202)
        yield* pollUntil("the single replay", Effect.sync(() => (hooks.at("/old").length === 1 ? true : undefined)))
        assert.deepStrictEqual(headerValues(hooks.at("/old")[0]!.rawHeaders, "authorization"), ["Bearer old"])
        assert.deepStrictEqual(headerValues(hooks.at("/old")[0]!.rawHeaders, "x-moved"), [])

        // repeated after it finished: nothing is a dead letter any more
        const again = yield* started(p, { action: "replay", filter: { tag: "redrive", deadLetter: true } })
        assert.deepStrictEqual([again.status, again.matched, again.replayed], ["completed", 0, 0])
        const wider = yield* finished(p, (yield* started(p, { action: "replay", filter: { tag: "redrive" } })).id)
        assert.deepStrictEqual([wider.matched, wider.replayed], [5, 0])
        assert.strictEqual(hooks.at("/moved").length, 3)
      })))

    it.effect("an empty filter redrives every dead letter of the project (and only its own)", () =>
      Effect.scoped(Effect.gen(function*() {
        const p = yield* newProject
        const other = yield* newProject
        const hooks = yield* target
        yield* insertDeadLetters(Array.from({ length: 5 }, (_, n) => ({ projectId: p.projectId, url: `${hooks.origin}/mine?n=${n}` })))
        yield* insertDeadLetters([{ projectId: other.projectId, url: `${hooks.origin}/theirs` }])
        // triggers of the project that are not dead letters: not in the set at all
        yield* insertTriggers([
          { projectId: p.projectId, url: `${hooks.origin}/pending` },
          { projectId: p.projectId, status: "completed", attempts: 1, url: `${hooks.origin}/delivered` },
          { projectId: p.projectId, status: "cancelled", url: `${hooks.origin}/cancelled` }
        ])
        assert.deepStrictEqual((yield* p.post("/actions", { action: "replay", filter: {}, dryRun: true })).json(), { matched: 5 })
        const action = yield* started(p, { action: "replay", filter: {} })
        assert.deepStrictEqual(action.filter, { deadLetter: true }, "the filter the set was chosen by")
        const done = yield* finished(p, action.id)
        assert.deepStrictEqual([done.matched, done.replayed, done.untouched], [5, 5, {}])
        yield* pollUntil("five replays", Effect.sync(() => (hooks.at("/mine").length === 5 ? true : undefined)))
        assert.strictEqual(hooks.at("/theirs").length, 0)
      })))
  })
})
