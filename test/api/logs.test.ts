// The log and replay endpoints against the real service: exact view shapes, filters, keyset
// pagination and ordering, project scoping, exact paths, replay's 202/400/404/410/415 cases and the
// auth matrix. Rows are inserted straight into the database (test/support/fixtures.ts); replay is
// observed through a recording Dispatcher.
import { assert, describe, layer } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { triggersQueueReplay } from "../../src/store/triggerReplay.ts"
import { headerValues, httpServer } from "../support/servers.ts"
import { DEFAULT_URL, insertExecution, insertTrigger, nextId } from "../support/fixtures.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { newProject } from "../support/projectClient.ts"
import { pollUntil, waitUntil } from "../support/wait.ts"

const notFound = (message: string) => ({ _tag: "NotFound", message })
const badRequest = (message: string) => ({ _tag: "BadRequest", message })

/** Every page of a listing, following nextCursor; the ids in order and the number of pages. */
const collectPages = (get: (path: string) => Effect.Effect<{ json: () => any }>, path: string, field: string) =>
  Effect.gen(function*() {
    const ids: Array<string> = []
    let pages = 0
    let cursor: string | null = null
    do {
      const separator = path.includes("?") ? "&" : "?"
      const body = (yield* get(cursor === null ? path : `${path}${separator}cursor=${cursor}`)).json()
      pages++
      ids.push(...body[field].map((entry: { id: string }) => entry.id))
      cursor = body.nextCursor
    } while (cursor !== null && pages < 20)
    return { ids, pages }
  })

/** The executions of a job once there are `count` of them (delivery runs in the background). */
const waitForExecutions = (get: (path: string) => Effect.Effect<{ json: () => any }>, jobId: string, count: number) =>
  pollUntil(`job ${jobId} to reach ${count} executions`, Effect.map(get(`/jobs/${jobId}/executions`), (response) => {
    const executions: Array<any> = response.json().executions
    return executions.length >= count ? executions : undefined
  }))

layer(testServerLayer(), { timeout: "60 seconds" })("logs and replay", (it) => {
  describe("trigger view", () => {
    it.effect("a one-shot trigger: every field, repeated headers joined, UTF-8 body as text", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const id = yield* insertTrigger({
          projectId: p.projectId,
          status: "registered",
          scheduledAt: new Date("2030-06-01T10:20:30.456Z"),
          url: "https://target.test/hook?x=1",
          method: "PURGE",
          headers: [["X-Rep", "1"], ["Accept", "text/plain"], ["x-rep", "2"], ["Authorization", "Bearer t"]],
          body: new TextEncoder().encode("héllo {\"a\":1}"),
          contentType: "application/json",
          title: "Nightly",
          tags: ["billing", "eu"],
          customKey: "order-17",
          retry: { strategy: "fixed", maxAttempts: 5, initialDelaySeconds: 10, maxDelaySeconds: null, jitter: true, retryOn: "non_2xx" },
          attempts: 0,
          createdAt: new Date("2030-01-02T03:04:05.006Z"),
          updatedAt: new Date("2030-01-02T03:04:07.000Z")
        })
        const response = yield* p.get(`/jobs/${id}`)
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers["content-type"], "application/json")
        assert.deepStrictEqual(response.json(), {
          id,
          kind: "job",
          status: "registered",
          outcome: null,
          scheduledAt: "2030-06-01T10:20:30.456Z",
          url: "https://target.test/hook?x=1",
          method: "PURGE",
          headers: { "X-Rep": "1, 2", Accept: "text/plain", Authorization: "Bearer t" },
          body: { encoding: "text", value: "héllo {\"a\":1}", size: 14 },
          contentType: "application/json",
          title: "Nightly",
          tags: ["billing", "eu"],
          customKey: "order-17",
          retry: { strategy: "fixed", maxAttempts: 5, initialDelaySeconds: 10, maxDelaySeconds: null, jitter: true, retryOn: "non_2xx" },
          generatorId: null,
          attempts: 0,
          createdAt: "2030-01-02T03:04:05.006Z",
          updatedAt: "2030-01-02T03:04:07.000Z"
        })
      }))

    it.effect("bytes that are not UTF-8 come back as base64; no body is null; an empty body is empty text", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const binary = yield* insertTrigger({ projectId: p.projectId, body: new Uint8Array([0xff, 0xfe, 0x00, 0x41]) })
        const none = yield* insertTrigger({ projectId: p.projectId, body: null })
        const empty = yield* insertTrigger({ projectId: p.projectId, body: new Uint8Array(0) })
        assert.deepStrictEqual((yield* p.get(`/jobs/${binary}`)).json().body, { encoding: "base64", value: "//4AQQ==", size: 4 })
        const noBody = (yield* p.get(`/jobs/${none}`)).json()
        assert.isNull(noBody.body)
        assert.deepStrictEqual(noBody.headers, {})
        assert.isNull(noBody.retry)
        assert.isNull(noBody.title)
        assert.deepStrictEqual(noBody.tags, [])
        assert.deepStrictEqual((yield* p.get(`/jobs/${empty}`)).json().body, { encoding: "text", value: "", size: 0 })
      }))

    it.effect("a generator: the time of its upcoming instance, never its cron fields; instances name it", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const generator = yield* insertTrigger({
          projectId: p.projectId, kind: "generator", status: "active", scheduledAt: null,
          cronExpr: "*/5 * * * *", cronTz: "Europe/Paris", customKey: "gen-key", tags: ["cron"]
        })
        const past = yield* insertTrigger({
          projectId: p.projectId, generatorId: generator, status: "completed", attempts: 1,
          scheduledAt: new Date("2030-03-01T09:55:00.000Z")
        })
        const upcoming = yield* insertTrigger({
          projectId: p.projectId, generatorId: generator, status: "registered",
          scheduledAt: new Date("2030-03-01T10:00:00.000Z")
        })
        const view = (yield* p.get(`/jobs/${generator}`)).json()
        assert.deepStrictEqual(Object.keys(view).sort(), [
          "attempts", "body", "contentType", "createdAt", "customKey", "generatorId", "headers", "id", "kind", "method",
          "outcome", "retry", "scheduledAt", "status", "tags", "title", "updatedAt", "url"
        ])
        assert.strictEqual(view.kind, "generator")
        assert.strictEqual(view.status, "active")
        assert.strictEqual(view.scheduledAt, "2030-03-01T10:00:00.000Z")
        assert.strictEqual(view.customKey, "gen-key")
        assert.isNull(view.generatorId)
        assert.notInclude(JSON.stringify(view), "Europe/Paris")
        assert.notInclude(JSON.stringify(view), "*/5")

        const instance = (yield* p.get(`/jobs/${upcoming}`)).json()
        assert.strictEqual(instance.kind, "job")
        assert.strictEqual(instance.generatorId, generator)
        assert.strictEqual(instance.scheduledAt, "2030-03-01T10:00:00.000Z")
        const completed = (yield* p.get(`/jobs/${past}`)).json()
        assert.strictEqual(completed.status, "completed")
        assert.strictEqual(completed.attempts, 1)

        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE triggers SET status = 'cancelled' WHERE id IN (${generator}, ${upcoming})`
        const cancelled = (yield* p.get(`/jobs/${generator}`)).json()
        assert.strictEqual(cancelled.status, "cancelled")
        assert.isNull(cancelled.scheduledAt)
      }))

    it.effect("unknown, malformed and other projects' ids → 404 Job not found", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const other = yield* newProject
        const foreign = yield* insertTrigger({ projectId: other.projectId })
        for (const id of [nextId(), "not-a-uuid", foreign]) {
          const response = yield* p.get(`/jobs/${id}`)
          assert.strictEqual(response.status, 404)
          assert.deepStrictEqual(response.json(), notFound("Job not found"))
        }
        assert.strictEqual((yield* other.get(`/jobs/${foreign}`)).status, 200)
        assert.strictEqual((yield* other.get(`/jobs/${foreign.toUpperCase()}`)).json().id, foreign)
      }))
  })

  describe("GET /jobs", () => {
    it.effect("newest first, filtered by status, kind, tag and customKey, scoped to the project", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const other = yield* newProject
        const a = yield* insertTrigger({ projectId: p.projectId, status: "registered", tags: ["red", "blue"], customKey: "k1" })
        const b = yield* insertTrigger({ projectId: p.projectId, status: "completed", tags: ["red"] })
        const g = yield* insertTrigger({ projectId: p.projectId, kind: "generator", tags: ["blue"], customKey: "k2" })
        const c = yield* insertTrigger({ projectId: p.projectId, status: "completed", customKey: "k1" })
        yield* insertTrigger({ projectId: other.projectId, status: "completed", tags: ["red"], customKey: "k1" })

        const ids = (path: string) => Effect.map(p.get(path), (r) => r.json().jobs.map((job: { id: string }) => job.id))
        const all = (yield* p.get("/jobs")).json()
        assert.deepStrictEqual(all.jobs.map((job: { id: string }) => job.id), [c, g, b, a])
        assert.isNull(all.nextCursor)
        assert.deepStrictEqual(yield* ids("/jobs?status=completed"), [c, b])
        assert.deepStrictEqual(yield* ids("/jobs?status=active"), [g])
        assert.deepStrictEqual(yield* ids("/jobs?kind=generator"), [g])
        assert.deepStrictEqual(yield* ids("/jobs?kind=job"), [c, b, a])
        assert.deepStrictEqual(yield* ids("/jobs?tag=red"), [b, a])
        assert.deepStrictEqual(yield* ids("/jobs?tag=blue&kind=job"), [a])
        assert.deepStrictEqual(yield* ids("/jobs?customKey=k1"), [c, a])
        assert.deepStrictEqual(yield* ids("/jobs?customKey=k1&status=registered"), [a])
        assert.deepStrictEqual(yield* ids("/jobs?tag=green"), [])
        assert.strictEqual((yield* other.get("/jobs")).json().jobs.length, 1)
      }))

    it.effect("outcome: how a trigger ended, from its status and latest attempt, and a filter", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const job = (status: string) => insertTrigger({ projectId: p.projectId, status })
        const attempt = (triggerId: string, attempt: number, fields: { status: "succeeded" | "failed"; isDeadLetter?: boolean }) =>
          insertExecution({ triggerId, projectId: p.projectId, attempt, httpStatus: fields.status === "succeeded" ? 200 : 500, ...fields })
        const pending = yield* job("registered")
        const retrying = yield* job("retrying")
        yield* attempt(retrying, 1, { status: "failed" })
        const delivered = yield* job("completed")
        yield* attempt(delivered, 1, { status: "failed" })
        yield* attempt(delivered, 2, { status: "succeeded" })
        const deadLetter = yield* job("completed")
        yield* attempt(deadLetter, 1, { status: "failed", isDeadLetter: true })
        // a dead letter replayed successfully: its latest attempt decides
        const redeemed = yield* job("completed")
        yield* attempt(redeemed, 1, { status: "failed", isDeadLetter: true })
        yield* attempt(redeemed, 2, { status: "succeeded" })
        const cancelled = yield* job("cancelled")
        const skipped = yield* job("skipped")
        const generator = yield* insertTrigger({ projectId: p.projectId, kind: "generator" })

        const outcomes = Object.fromEntries((yield* p.get("/jobs")).json().jobs.map((j: { id: string; outcome: unknown }) => [j.id, j.outcome]))
        assert.deepStrictEqual(outcomes, {
          [pending]: null, [retrying]: null, [delivered]: "delivered", [deadLetter]: "dead_letter", [redeemed]: "delivered",
          [cancelled]: "cancelled", [skipped]: "skipped", [generator]: null
        })
        assert.strictEqual((yield* p.get(`/jobs/${deadLetter}`)).json().outcome, "dead_letter")
        const ids = (path: string) => Effect.map(p.get(path), (r) => r.json().jobs.map((j: { id: string }) => j.id))
        assert.deepStrictEqual(yield* ids("/jobs?outcome=dead_letter"), [deadLetter])
        assert.deepStrictEqual(yield* ids("/jobs?outcome=delivered"), [redeemed, delivered])
        assert.deepStrictEqual(yield* ids("/jobs?outcome=cancelled"), [cancelled])
        assert.deepStrictEqual(yield* ids("/jobs?outcome=skipped&status=skipped"), [skipped])
        assert.deepStrictEqual((yield* p.get("/jobs?outcome=lost")).json(), badRequest("outcome must be one of delivered, dead_letter, cancelled, skipped"))
      }))

    it.effect("keyset pagination: every trigger exactly once, pages of `limit`, last nextCursor null", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const inserted: Array<string> = []
        for (let i = 0; i < 7; i++) inserted.push(yield* insertTrigger({ projectId: p.projectId, tags: ["paged"] }))
        const first = (yield* p.get("/jobs?limit=3")).json()
        assert.strictEqual(first.jobs.length, 3)
        assert.isString(first.nextCursor)
        const { ids, pages } = yield* collectPages(p.get, "/jobs?limit=3&tag=paged", "jobs")
        assert.deepStrictEqual(ids, [...inserted].reverse())
        assert.strictEqual(pages, 3)
        const exact = yield* collectPages(p.get, "/jobs?limit=7", "jobs")
        assert.strictEqual(exact.pages, 1)
        const defaultPage = (yield* p.get("/jobs")).json()
        assert.strictEqual(defaultPage.jobs.length, 7)
        assert.isNull(defaultPage.nextCursor)
      }))

    describe("bad query values → 400 naming the parameter", () => {
      const cases: ReadonlyArray<[string, string]> = [
        ["limit=0", "limit must be an integer between 1 and 500"],
        ["limit=501", "limit must be an integer between 1 and 500"],
        ["limit=abc", "limit must be an integer between 1 and 500"],
        ["limit=2.5", "limit must be an integer between 1 and 500"],
        ["limit=1&limit=2", "limit must be given at most once"],
        ["status=done", "status must be one of registered, skipped, queued, running, retrying, completed, cancelled, active"],
        ["kind=cron", "kind must be one of job, generator"],
        ["tag=", "tag must not be empty"],
        ["cursor=%21%21", "cursor is invalid"],
        [`cursor=${Buffer.from("not-an-id").toString("base64url")}`, "cursor is invalid"]
      ]
      for (const [query, message] of cases) {
        it.effect(`GET /jobs?${query}`, () =>
          Effect.gen(function*() {
            const p = yield* newProject
            const response = yield* p.get(`/jobs?${query}`)
            assert.strictEqual(response.status, 400)
            assert.deepStrictEqual(response.json(), badRequest(message))
          }))
      }
    })
  })

  describe("paths are exact", () => {
    const paths = (id: string) => [
      ["GET", "/jobs/"],
      ["GET", "//jobs"],
      ["GET", `/jobs/${id}/`],
      ["GET", `/jobs/${id}/x`],
      ["GET", `/jobs/${id}/executions/`],
      ["POST", `/jobs/${id}/executions/`],
      ["GET", "/executions/"],
      ["DELETE", `/jobs/${id}`],
      ["PUT", "/executions"]
    ] as const
    it.effect("other forms → 404 with an empty body", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const p = yield* newProject
        const id = yield* insertTrigger({ projectId: p.projectId, status: "completed" })
        for (const [method, path] of paths(id)) {
          const response = yield* server.call(method, path, {
            headers: { "ttr-api-key": p.key, "content-type": "application/json" },
            ...(method === "POST" ? { body: `{"triggeredBy":"retry"}` } : {})
          })
          assert.strictEqual(response.status, 404, `${method} ${path}`)
          assert.strictEqual(response.text, "", `${method} ${path}`)
        }
      }))
  })

  describe("executions", () => {
    it.effect("GET /jobs/{id}/executions: oldest first, exact views, error fields only when set", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const job = yield* insertTrigger({ projectId: p.projectId, status: "completed", attempts: 3 })
        const second = yield* insertExecution({
          projectId: p.projectId, triggerId: job, attempt: 2, status: "failed", startedAt: new Date("2030-06-01T00:00:30.000Z"),
          httpStatus: 503, responseHeaders: { "retry-after": "5" }, responseBody: "busy", durationMs: 40
        })
        const first = yield* insertExecution({
          projectId: p.projectId, triggerId: job, attempt: 1, status: "failed", startedAt: new Date("2030-06-01T00:00:00.000Z"),
          httpStatus: null, responseHeaders: null, responseBody: null, errorKind: "connection_refused",
          errorCode: "ECONNREFUSED", errorMessage: "connect ECONNREFUSED 127.0.0.1:9", durationMs: 3
        })
        const third = yield* insertExecution({
          projectId: p.projectId, triggerId: job, attempt: 3, startedAt: new Date("2030-06-01T00:01:30.000Z"),
          timeoutSeconds: 60
        })
        const response = yield* p.get(`/jobs/${job}/executions`)
        assert.strictEqual(response.status, 200)
        const executions = response.json().executions
        assert.deepStrictEqual(executions.map((e: { id: string }) => e.id), [first, second, third])
        assert.deepStrictEqual(executions[0], {
          id: first, jobId: job, attempt: 1, status: "failed",
          startedAt: "2030-06-01T00:00:00.000Z", finishedAt: "2030-06-01T00:00:00.003Z", durationMs: 3,
          httpStatus: null, responseHeaders: null, responseBody: null,
          errorKind: "connection_refused", errorCode: "ECONNREFUSED", errorMessage: "connect ECONNREFUSED 127.0.0.1:9",
          isDeadLetter: false, connectTimeoutSeconds: 10, timeoutSeconds: 300, triggeredBy: null, url: DEFAULT_URL
        })
        assert.deepStrictEqual(executions[1], {
          id: second, jobId: job, attempt: 2, status: "failed",
          startedAt: "2030-06-01T00:00:30.000Z", finishedAt: "2030-06-01T00:00:30.040Z", durationMs: 40,
          httpStatus: 503, responseHeaders: { "retry-after": "5" }, responseBody: "busy",
          isDeadLetter: false, connectTimeoutSeconds: 10, timeoutSeconds: 300, triggeredBy: null, url: DEFAULT_URL
        })
        assert.strictEqual(executions[2].timeoutSeconds, 60)
        assert.strictEqual(executions[2].status, "succeeded")

        const none = yield* insertTrigger({ projectId: p.projectId })
        assert.deepStrictEqual((yield* p.get(`/jobs/${none}/executions`)).json(), { executions: [] })
      }))

    it.effect("GET /jobs/{id}/executions of an unknown, malformed or foreign job → 404", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const other = yield* newProject
        const foreign = yield* insertTrigger({ projectId: other.projectId, status: "completed" })
        yield* insertExecution({ projectId: other.projectId, triggerId: foreign })
        for (const id of [nextId(), "nope", foreign]) {
          const response = yield* p.get(`/jobs/${id}/executions`)
          assert.strictEqual(response.status, 404)
          assert.deepStrictEqual(response.json(), notFound("Job not found"))
        }
      }))

    it.effect("GET /executions: newest first, filters, dead letters with their error fields, scoped", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const other = yield* newProject
        const one = yield* insertTrigger({ projectId: p.projectId, status: "completed", customKey: "shop", url: "https://a.test/" })
        const generator = yield* insertTrigger({ projectId: p.projectId, kind: "generator", customKey: "tick" })
        const instance = yield* insertTrigger({ projectId: p.projectId, generatorId: generator, status: "completed", url: "https://b.test/" })
        const e1 = yield* insertExecution({ projectId: p.projectId, triggerId: one, attempt: 1, status: "failed", httpStatus: 500, url: "https://a.test/" })
        const e2 = yield* insertExecution({
          projectId: p.projectId, triggerId: one, attempt: 2, status: "failed", httpStatus: 500, isDeadLetter: true, url: "https://a.test/"
        })
        const e3 = yield* insertExecution({ projectId: p.projectId, triggerId: instance, url: "https://b.test/" })
        const e4 = yield* insertExecution({
          projectId: p.projectId, triggerId: instance, attempt: 2, status: "failed", httpStatus: null, responseHeaders: null,
          responseBody: null, errorKind: "dns", errorCode: "ENOTFOUND", errorMessage: "getaddrinfo ENOTFOUND b.test",
          isDeadLetter: true, url: "https://b.test/"
        })
        const foreignJob = yield* insertTrigger({ projectId: other.projectId, status: "completed" })
        yield* insertExecution({ projectId: other.projectId, triggerId: foreignJob, isDeadLetter: true, status: "failed" })

        const ids = (path: string) => Effect.map(p.get(path), (r) => r.json().executions.map((e: { id: string }) => e.id))
        const all = (yield* p.get("/executions")).json()
        assert.deepStrictEqual(all.executions.map((e: { id: string }) => e.id), [e4, e3, e2, e1])
        assert.isNull(all.nextCursor)
        assert.deepStrictEqual(yield* ids(`/executions?jobId=${one}`), [e2, e1])
        assert.deepStrictEqual(yield* ids(`/executions?jobId=${foreignJob}`), [])
        assert.deepStrictEqual(yield* ids("/executions?customKey=shop"), [e2, e1])
        assert.deepStrictEqual(yield* ids("/executions?customKey=tick"), [e4, e3])
        assert.deepStrictEqual(yield* ids("/executions?executionStatus=succeeded"), [e3])
        assert.deepStrictEqual(yield* ids("/executions?executionStatus=failed"), [e4, e2, e1])
        assert.deepStrictEqual(yield* ids("/executions?httpStatus=500"), [e2, e1])
        assert.deepStrictEqual(yield* ids("/executions?httpStatus=500&deadLetterOnly=true"), [e2])
        assert.deepStrictEqual(yield* ids("/executions?deadLetterOnly=false"), [e4, e3, e2, e1])

        const deadLetters = (yield* p.get("/executions?deadLetterOnly=true")).json()
        assert.deepStrictEqual(deadLetters.executions.map((e: any) => [e.id, e.jobId, e.isDeadLetter, e.errorKind, e.errorCode, e.url]), [
          [e4, instance, true, "dns", "ENOTFOUND", "https://b.test/"],
          [e2, one, true, null, null, "https://a.test/"]
        ])
        assert.notProperty(deadLetters.executions[1], "errorMessage")
        assert.notProperty(all.executions[2], "errorKind")

        assert.deepStrictEqual((yield* other.get("/executions")).json().executions.length, 1)
      }))

    it.effect("GET /executions pages newest first with nextCursor", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const job = yield* insertTrigger({ projectId: p.projectId, status: "completed" })
        const inserted: Array<string> = []
        for (let i = 1; i <= 5; i++) inserted.push(yield* insertExecution({ projectId: p.projectId, triggerId: job, attempt: i }))
        const { ids, pages } = yield* collectPages(p.get, "/executions?limit=2", "executions")
        assert.deepStrictEqual(ids, [...inserted].reverse())
        assert.strictEqual(pages, 3)
      }))

    describe("bad GET /executions query values → 400", () => {
      const cases: ReadonlyArray<[string, string]> = [
        ["jobId=nope", "jobId must be a UUID"],
        ["executionStatus=ok", "executionStatus must be one of succeeded, failed"],
        ["httpStatus=abc", "httpStatus must be an integer between 100 and 599"],
        ["httpStatus=99", "httpStatus must be an integer between 100 and 599"],
        ["deadLetterOnly=yes", "deadLetterOnly must be true or false"],
        ["limit=600", "limit must be an integer between 1 and 500"],
        ["cursor=xyz", "cursor is invalid"]
      ]
      for (const [query, message] of cases) {
        it.effect(`GET /executions?${query}`, () =>
          Effect.gen(function*() {
            const p = yield* newProject
            const response = yield* p.get(`/executions?${query}`)
            assert.strictEqual(response.status, 400)
            assert.deepStrictEqual(response.json(), badRequest(message))
          }))
      }
    })

    it.effect("GET /executions/{id}: one view; unknown, malformed or foreign → 404 Execution not found", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const other = yield* newProject
        const job = yield* insertTrigger({ projectId: p.projectId, status: "completed" })
        const id = yield* insertExecution({ projectId: p.projectId, triggerId: job, triggeredBy: "retry", attempt: 2 })
        const view = (yield* p.get(`/executions/${id}`)).json()
        assert.strictEqual(view.id, id)
        assert.strictEqual(view.jobId, job)
        assert.strictEqual(view.attempt, 2)
        assert.strictEqual(view.triggeredBy, "retry")
        assert.strictEqual(view.httpStatus, 200)
        assert.deepStrictEqual(view.responseHeaders, { "content-type": "text/plain" })
        assert.strictEqual(view.responseBody, "ok")
        for (const path of [`/executions/${nextId()}`, "/executions/zzz", `/executions/${id}`]) {
          const response = yield* (path.endsWith(id) ? other : p).get(path)
          assert.strictEqual(response.status, 404)
          assert.deepStrictEqual(response.json(), notFound("Execution not found"))
        }
      }))
  })

  describe("POST /jobs/{id}/executions (replay)", () => {
    it.effect("end to end: 202, the stored request is sent again, the attempt is recorded with triggeredBy retry", () =>
      Effect.scoped(Effect.gen(function*() {
        const p = yield* newProject
        const target = yield* httpServer((_req, res) => res.end("replayed"))
        const id = yield* insertTrigger({
          projectId: p.projectId, status: "completed", attempts: 1, url: `${target.url}/hook?x=1`, method: "PUT",
          headers: [["X-Rep", "1"], ["X-Rep", "2"]], body: new TextEncoder().encode("payload"), contentType: "text/plain"
        })
        const response = yield* p.post(`/jobs/${id}/executions`, `{"triggeredBy":"retry"}`)
        assert.strictEqual(response.status, 202)
        assert.strictEqual(response.headers["content-type"], "application/json")
        assert.deepStrictEqual(response.json(), { jobId: id, status: "queued" })

        const executions = yield* waitForExecutions(p.get, id, 1)
        assert.strictEqual(target.received.length, 1)
        const sent = target.received[0]!
        assert.strictEqual(sent.method, "PUT")
        assert.strictEqual(sent.path, "/hook?x=1")
        assert.strictEqual(sent.body.toString(), "payload")
        assert.deepStrictEqual(headerValues(sent.rawHeaders, "x-rep"), ["1", "2"])
        assert.deepStrictEqual(headerValues(sent.rawHeaders, "content-type"), ["text/plain"])
        const [execution] = executions
        assert.strictEqual(execution.jobId, id)
        assert.strictEqual(execution.attempt, 2)
        assert.strictEqual(execution.triggeredBy, "retry")
        assert.strictEqual(execution.status, "succeeded")
        assert.strictEqual(execution.httpStatus, 200)
        assert.strictEqual(execution.responseBody, "replayed")
        assert.strictEqual(execution.url, `${target.url}/hook?x=1`)
        assert.isFalse(execution.isDeadLetter)
        const job = (yield* p.get(`/jobs/${id}`)).json()
        assert.strictEqual(job.status, "completed")
        assert.strictEqual(job.attempts, 2)

        // completed again, so it can be replayed again
        assert.strictEqual((yield* p.post(`/jobs/${id}/executions`, `{"triggeredBy":"retry"}`)).status, 202)
        const twice = yield* waitForExecutions(p.get, id, 2)
        assert.deepStrictEqual(twice.map((e: any) => [e.attempt, e.triggeredBy]), [[2, "retry"], [3, "retry"]])
        assert.strictEqual(target.received.length, 2)
      })))

    it.effect("two replays at once: one is queued (202), the other finds it no longer completed (410)", () =>
      Effect.scoped(Effect.gen(function*() {
        const p = yield* newProject
        const held: Array<() => void> = []
        const target = yield* httpServer((_req, res) => void held.push(() => res.end("late")))
        const id = yield* insertTrigger({ projectId: p.projectId, status: "completed", url: `${target.url}/slow` })
        const responses = yield* Effect.all(
          [p.post(`/jobs/${id}/executions`, `{"triggeredBy":"retry"}`), p.post(`/jobs/${id}/executions`, `{"triggeredBy":"retry"}`)],
          { concurrency: 2 }
        )
        const statuses = responses.map((r) => r.status).sort()
        assert.deepStrictEqual(statuses, [202, 410])
        const gone = responses.find((r) => r.status === 410)!.json()
        assert.strictEqual(gone._tag, "Gone")
        assert.match(gone.message, /^Job is not completed \(status=(queued|running)\)$/)
        yield* waitUntil("the target to hold the request", () => held.length === 1)
        held[0]!()
        const executions = yield* waitForExecutions(p.get, id, 1)
        assert.strictEqual(executions[0].triggeredBy, "retry")
        assert.strictEqual(target.received.length, 1)
      })))

    it.effect("the compare-and-set: only a completed one-shot moves to queued, with the Clock's time and this node", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const sql = yield* SqlClient.SqlClient
        const before = new Date("2030-01-01T00:00:00.000Z")
        const completed = yield* insertTrigger({ projectId: p.projectId, status: "completed", attempts: 2, dueAt: before, updatedAt: before })
        const running = yield* insertTrigger({ projectId: p.projectId, status: "running" })
        const generator = yield* insertTrigger({ projectId: p.projectId, kind: "generator", status: "completed" })
        // queued: its gated tags (none here: this node sends it); not queued: undefined
        const replay = (id: string, projectId = p.projectId) => triggersQueueReplay({ projectId, ids: [id], node: "node-a", nowMs: 1_234_567 })
        const other = yield* newProject
        assert.deepStrictEqual(yield* replay(completed, other.projectId), [])
        assert.deepStrictEqual(yield* replay(completed), [{ id: completed, gateTags: [] }])
        assert.deepStrictEqual(yield* replay(completed), [])
        assert.deepStrictEqual(yield* replay(running), [])
        assert.deepStrictEqual(yield* replay(generator), [])
        const [row] = yield* sql<{ status: string; triggered_by: string; due_at: Date | null; updated_at: Date; attempts: number; claimed_by: string }>`
          SELECT status, triggered_by, due_at, updated_at, attempts, claimed_by FROM triggers WHERE id = ${completed}`
        assert.deepStrictEqual({ ...row! }, {
          status: "queued", triggered_by: "retry", due_at: null, updated_at: new Date(1_234_567), attempts: 2, claimed_by: "node-a"
        })
      }))

    it.effect("the API stamps the replay with the time of the call", () =>
      Effect.scoped(Effect.gen(function*() {
        const p = yield* newProject
        const sql = yield* SqlClient.SqlClient
        const held: Array<() => void> = []
        const target = yield* httpServer((_req, res) => void held.push(() => res.end("ok")))
        const before = new Date("2030-01-01T00:00:00.000Z")
        const id = yield* insertTrigger({ projectId: p.projectId, status: "completed", updatedAt: before, url: target.url })
        const sentAt = Date.now()
        assert.strictEqual((yield* p.post(`/jobs/${id}/executions`, `{"triggeredBy":"retry"}`)).status, 202)
        const answeredAt = Date.now()
        yield* waitUntil("the target to hold the request", () => held.length === 1)
        const [row] = yield* sql<{ status: string; updated_at: Date }>`SELECT status, updated_at FROM triggers WHERE id = ${id}`
        assert.strictEqual(row!.status, "running")
        // the service runs on the live Clock (see test/support/server.ts): the stamp is the call's time
        assert.isAtLeast(row!.updated_at.getTime(), sentAt)
        assert.isAtMost(row!.updated_at.getTime(), answeredAt)
        held[0]!()
        yield* waitForExecutions(p.get, id, 1)
      })))

    it.effect("a completed generator instance can be replayed; a missing Content-Type is read as JSON", () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* TestServer
        const p = yield* newProject
        const target = yield* httpServer()
        const generator = yield* insertTrigger({ projectId: p.projectId, kind: "generator", url: target.url })
        const instance = yield* insertTrigger({ projectId: p.projectId, generatorId: generator, status: "completed", url: target.url })
        const response = yield* server.call("POST", `/jobs/${instance}/executions`, {
          headers: { authorization: `Bearer ${p.key}` }, body: `{"triggeredBy":"retry"}`
        })
        assert.strictEqual(response.status, 202)
        assert.deepStrictEqual(response.json(), { jobId: instance, status: "queued" })
        const charset = yield* insertTrigger({ projectId: p.projectId, status: "completed", url: target.url })
        const withCharset = yield* p.post(`/jobs/${charset}/executions`, `{"triggeredBy":"retry"}`, {
          "content-type": "Application/JSON; charset=utf-8"
        })
        assert.strictEqual(withCharset.status, 202)
        for (const id of [instance, charset]) {
          const [execution] = yield* waitForExecutions(p.get, id, 1)
          assert.strictEqual(execution.triggeredBy, "retry")
          assert.strictEqual(execution.status, "succeeded")
        }
      })))

    it.effect("a trigger that is not completed → 410 with its status (a generator's included)", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const statuses = ["registered", "skipped", "queued", "running", "retrying", "cancelled"]
        for (const status of statuses) {
          const id = yield* insertTrigger({ projectId: p.projectId, status })
          const response = yield* p.post(`/jobs/${id}/executions`, `{"triggeredBy":"retry"}`)
          assert.strictEqual(response.status, 410)
          assert.deepStrictEqual(response.json(), { _tag: "Gone", message: `Job is not completed (status=${status})` })
        }
        const generator = yield* insertTrigger({ projectId: p.projectId, kind: "generator", status: "active" })
        const response = yield* p.post(`/jobs/${generator}/executions`, `{"triggeredBy":"retry"}`)
        assert.strictEqual(response.status, 410)
        assert.deepStrictEqual(response.json(), { _tag: "Gone", message: "Job is not completed (status=active)" })
      }))

    it.effect("unknown, malformed or foreign ids → 404 Job not found, and nothing changes", () =>
      Effect.gen(function*() {
        const p = yield* newProject
        const other = yield* newProject
        const foreign = yield* insertTrigger({ projectId: other.projectId, status: "completed" })
        for (const id of [nextId(), "abc", foreign]) {
          const response = yield* p.post(`/jobs/${id}/executions`, `{"triggeredBy":"retry"}`)
          assert.strictEqual(response.status, 404)
          assert.deepStrictEqual(response.json(), notFound("Job not found"))
        }
        assert.strictEqual((yield* other.get(`/jobs/${foreign}`)).json().status, "completed")
      }))

    it.effect("body checks: 415 plain text, empty 400 for invalid JSON, 400 for other triggeredBy values", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const p = yield* newProject
        const id = yield* insertTrigger({ projectId: p.projectId, status: "completed" })
        const path = `/jobs/${id}/executions`

        const unsupported = yield* p.post(path, `{"triggeredBy":"retry"}`, { "content-type": "text/plain" })
        assert.strictEqual(unsupported.status, 415)
        assert.strictEqual(unsupported.text, "Unsupported content-type: text/plain")
        assert.match(String(unsupported.headers["content-type"]), /^text\/plain/)

        for (const body of ["", "{", "retry", "{\"triggeredBy\":}"]) {
          const invalid = yield* p.post(path, body)
          assert.strictEqual(invalid.status, 400, JSON.stringify(body))
          assert.strictEqual(invalid.text, "")
          assert.isUndefined(invalid.headers["content-type"])
        }
        for (const body of [`{"triggeredBy":"manual"}`, `{"triggeredBy":"RETRY"}`, `{}`, `{"triggeredBy":null}`]) {
          const wrong = yield* p.post(path, body)
          assert.strictEqual(wrong.status, 400, body)
          assert.deepStrictEqual(wrong.json(), badRequest(`triggeredBy must be "retry"`))
        }
        const notObject = yield* p.post(path, `["retry"]`)
        assert.deepStrictEqual(notObject.json(), badRequest("Body must be a JSON object"))

        // Content-Type and JSON are checked before credentials
        const anonymous415 = yield* server.call("POST", path, { headers: { "content-type": "text/xml" }, body: "<a/>" })
        assert.strictEqual(anonymous415.status, 415)
        const anonymous400 = yield* server.call("POST", path, { headers: { "content-type": "application/json" }, body: "{" })
        assert.strictEqual(anonymous400.status, 400)
        const anonymous = yield* server.call("POST", path, {
          headers: { "content-type": "application/json" }, body: `{"triggeredBy":"retry"}`
        })
        assert.strictEqual(anonymous.status, 401)
        assert.deepStrictEqual(anonymous.json(), { _tag: "Unauthorized", message: "Unauthorized" })

        assert.strictEqual((yield* p.get(`/jobs/${id}`)).json().status, "completed")
      }))
  })

  describe("authentication of GET /jobs", () => {
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
          const id = yield* insertTrigger({ projectId: p.projectId })
          const response = yield* server.call("GET", "/jobs", { headers: headers(p.key) })
          assert.strictEqual(response.status, status)
          if (message === null) assert.deepStrictEqual(response.json().jobs.map((job: { id: string }) => job.id), [id])
          else assert.deepStrictEqual(response.json(), { _tag: "Unauthorized", message })
        }))
    }
  })

  it.effect("the OpenAPI document lists every log endpoint with its credentials", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const document = (yield* server.call("GET", "/openapi/json")).json()
      const operations: ReadonlyArray<[string, string, string]> = [
        ["/jobs", "get", "listJobs"],
        ["/jobs/{id}", "get", "getJob"],
        ["/jobs/{id}/executions", "get", "listJobExecutions"],
        ["/jobs/{id}/executions", "post", "replayJob"],
        ["/executions", "get", "listExecutions"],
        ["/executions/{id}", "get", "getExecution"]
      ]
      for (const [path, method, operationId] of operations) {
        const operation = document.paths[path][method]
        assert.strictEqual(operation.operationId, operationId)
        assert.includeMembers(operation.parameters.map((p: { name: string }) => p.name), ["ttr-api-key", "Authorization", "__Host-timewheel-session"])
        assert.property(operation.responses, "401")
      }
      assert.includeMembers(Object.keys(document.paths["/jobs/{id}/executions"].post.responses), ["202", "400", "404", "410", "415"])
    }))

  it.effect("an unknown query parameter is named in Timewheel-Warning, with the one it likely meant; the answer is as without it", () =>
    Effect.gen(function*() {
      const p = yield* newProject
      const plain = yield* insertTrigger({ projectId: p.projectId })
      const dead = yield* insertTrigger({ projectId: p.projectId, status: "completed", attempts: 1 })
      yield* insertExecution({ projectId: p.projectId, triggerId: dead, status: "failed", httpStatus: 500, isDeadLetter: true })
      const ids = (response: { json: () => any }) => response.json().jobs.map((job: { id: string }) => job.id)

      const all = yield* p.get("/jobs")
      assert.isUndefined(all.headers["timewheel-warning"])
      const misnamed = yield* p.get("/jobs?isDeadLetter=true")
      assert.strictEqual(misnamed.status, 200)
      assert.deepStrictEqual(ids(misnamed), ids(all), "the answer is as without the parameter")
      assert.sameMembers(ids(all), [plain, dead])
      assert.strictEqual(
        misnamed.headers["timewheel-warning"],
        "GET /jobs ignored the unknown query parameter isDeadLetter (did you mean deadLetter?); it takes status, outcome, kind, tag, " +
          "customKey, deadLetter, scheduledFrom, scheduledTo, limit, cursor"
      )
      const named = yield* p.get("/jobs?deadLetter=true&_=1700000000")
      assert.deepStrictEqual(ids(named), [dead])
      assert.match(String(named.headers["timewheel-warning"]), /^GET \/jobs ignored the unknown query parameter _; it takes /)

      const executions = yield* p.get("/executions?deadLetter=true")
      assert.strictEqual(executions.json().executions.length, 1)
      assert.strictEqual(
        executions.headers["timewheel-warning"],
        "GET /executions ignored the unknown query parameter deadLetter (did you mean deadLetterOnly?); it takes jobId, customKey, " +
          "executionStatus, httpStatus, deadLetterOnly, limit, cursor"
      )
      assert.isUndefined((yield* p.get("/executions?deadLetterOnly=true")).headers["timewheel-warning"])
    }))
})
