// End to end over HTTPS against the real service and a local recording target on 127.0.0.1
// (docs/scheduling.md "What is stored and sent"; docs/retries.md; docs/reading.md "An execution",
// "Replay"): what the target receives, firing time, reschedule and cancel, retries and dead letters,
// replay, and project scoping. Waiting is always a bounded poll of the recorder or the log endpoints,
// never a fixed long sleep.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TestServer, testServerLayer, type TestResponse } from "../support/server.ts"
import { type Arrival, closedPort, headerNames, headerValues, target } from "../support/target.ts"
import { pollUntil, realSleep } from "../support/wait.ts"

type Headers = Record<string, string> | Array<[string, string]>

/** A new project and helpers authenticated with its key. */
const project = (monthlyQuota?: number) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    const key = yield* server.newKey(monthlyQuota === undefined ? {} : { monthlyQuota })
    const auth: Array<[string, string]> = [["ttr-api-key", key]]
    const withAuth = (headers: Headers): Array<[string, string]> => [...auth, ...(Array.isArray(headers) ? headers : Object.entries(headers))]
    const schedule = (headers: Headers, options: { readonly method?: string; readonly body?: string | Uint8Array } = {}) =>
      Effect.map(
        server.call(options.method ?? "POST", "/schedule", { headers: withAuth(headers), ...(options.body === undefined ? {} : { body: options.body }) }),
        (response) => {
          assert.strictEqual(response.status, 200, response.text)
          // HEAD /schedule answers without a body (docs/scheduling.md "The answer")
          if (options.method === "HEAD") return { triggerId: "", scheduledAt: "", operation: "" }
          return response.json() as { triggerId: string; scheduledAt: string; operation: string }
        }
      )
    return {
      key,
      schedule,
      call: (method: string, path: string, headers: Headers = {}, body?: string) =>
        server.call(method, path, { headers: withAuth(headers), ...(body === undefined ? {} : { body }) }),
      job: (id: string) => Effect.map(server.call("GET", `/jobs/${id}`, { headers: auth }), (r) => r.json()),
      executions: (id: string) =>
        Effect.map(server.call("GET", `/jobs/${id}/executions`, { headers: auth }), (r) => r.json().executions as Array<any>)
    }
  })

type Project = Effect.Success<ReturnType<typeof project>>

const waitFor = <A>(what: string, probe: () => A | undefined, deadlineMs = 10_000) =>
  pollUntil(what, Effect.sync(probe), { deadlineMs })

/** The trigger's executions once it is `completed` with at least `count` of them. */
const completedWith = (p: Project, id: string, count: number, deadlineMs = 10_000) =>
  pollUntil(`${id} completed with ${count} executions`, Effect.gen(function*() {
    const job = yield* p.job(id)
    if (job.status !== "completed") return undefined
    const executions = yield* p.executions(id)
    return executions.length >= count ? executions : undefined
  }), { deadlineMs })

const iso = (ms: number) => new Date(ms).toISOString()

const assertStatus = (response: TestResponse, status: number, body?: unknown) => {
  assert.strictEqual(response.status, status, response.text)
  if (body !== undefined) assert.deepStrictEqual(response.json(), body)
}

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("delivery end to end", (it) => {
  describe("what the target receives", () => {
    it.effect("method, path and query, every non-prefix header (Authorization, repeats), exact binary body, Content-Type", () =>
      Effect.gen(function*() {
        const p = yield* project()
        const t = yield* target
        const body = new Uint8Array(256).map((_, i) => i)
        yield* p.schedule([
          ["ttr-url", `${t.origin}/headers?q=1&r=two`], ["ttr-scheduled-at", "now"], ["ttr-title", "Headers"],
          ["ttr-tags", "e2e"], ["ttr-retry-strategy", "none"], ["ttr-custom-key", "hdr"],
          ["Authorization", "Basic dGFyZ2V0OnNlY3JldA=="], ["X-Repeat", "a"], ["X-Repeat", "b"], ["X-Mixed-Case", "Keep This"],
          ["Content-Type", "application/vnd.custom+json; charset=utf-8"]
        ], { method: "PUT", body })
        const arrival = yield* waitFor("the request", () => t.at("/headers")[0])
        assert.strictEqual(arrival.method, "PUT")
        assert.strictEqual(arrival.url, "/headers?q=1&r=two")
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "authorization"), ["Basic dGFyZ2V0OnNlY3JldA=="])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "x-repeat"), ["a", "b"])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "x-mixed-case"), ["Keep This"])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "content-type"), ["application/vnd.custom+json; charset=utf-8"])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "user-agent"), ["timewheel"])
        // Host is the target's, Content-Length the body's: nothing of the /schedule call's own framing
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "host"), [`127.0.0.1:${t.port}`])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "content-length"), ["256"])
        assert.deepStrictEqual(headerNames(arrival.rawHeaders).filter((name) => name.startsWith("ttr-")), [])
        assert.isTrue(arrival.body.equals(Buffer.from(body)))
      }))

    const methods: ReadonlyArray<[string, string | undefined]> = [
      ["POST", "{\"json\":true}"],
      ["PUT", "put body"],
      ["PATCH", "patch body"],
      ["DELETE", "delete body"],
      ["PURGE", undefined],
      ["GET", undefined],
      ["OPTIONS", undefined],
      ["HEAD", undefined]
    ]
    it.effect(`every method is repeated as given (${methods.map(([m]) => m).join(", ")}); a body without Content-Type arrives as application/octet-stream`, () =>
      Effect.gen(function*() {
        const p = yield* project()
        const t = yield* target
        for (const [method, body] of methods) {
          yield* p.schedule({ "ttr-url": `${t.origin}/method/${method}`, "ttr-scheduled-at": "now" }, { method, ...(body === undefined ? {} : { body }) })
        }
        yield* waitFor("every method", () => (methods.every(([m]) => t.at(`/method/${m}`).length === 1) ? true : undefined))
        for (const [method, body] of methods) {
          const arrival = t.at(`/method/${method}`)[0]!
          assert.strictEqual(arrival.method, method)
          assert.strictEqual(arrival.body.toString(), body ?? "")
          assert.deepStrictEqual(headerValues(arrival.rawHeaders, "content-type"), body === undefined ? [] : ["application/octet-stream"], method)
          assert.deepStrictEqual(headerValues(arrival.rawHeaders, "user-agent"), ["timewheel"])
        }
      }))

    it.effect("a stored User-Agent is sent instead of timewheel's; a GET body is not stored", () =>
      Effect.gen(function*() {
        const p = yield* project()
        const t = yield* target
        yield* p.schedule({ "ttr-url": `${t.origin}/ua`, "ttr-scheduled-at": "now", "user-agent": "caller/1.0", "content-type": "text/plain" }, { method: "GET" })
        const arrival = yield* waitFor("the request", () => t.at("/ua")[0])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "user-agent"), ["caller/1.0"])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "content-type"), ["text/plain"])
        assert.strictEqual(arrival.body.length, 0)
      }))
  })

  describe("time", () => {
    it.effect("fires at its time (never early); reschedule by key moves it; cancel prevents it", () =>
      Effect.gen(function*() {
        const p = yield* project()
        const t = yield* target
        const t0 = Date.now()
        const onTime: Array<{ path: string; atMs: number }> = []
        for (let i = 0; i < 5; i++) {
          const path = `/on-time/${i}`
          const body = yield* p.schedule({ "ttr-url": `${t.origin}${path}`, "ttr-scheduled-at": iso(t0 + 1_500 + i * 150) })
          onTime.push({ path, atMs: Date.parse(body.scheduledAt) })
        }
        const first = yield* p.schedule({ "ttr-url": `${t.origin}/move-from`, "ttr-scheduled-at": iso(t0 + 1_500), "ttr-custom-key": "move" })
        const moved = yield* p.schedule({ "ttr-url": `${t.origin}/move-to`, "ttr-scheduled-at": iso(t0 + 2_500), "ttr-custom-key": "move" })
        assert.strictEqual(moved.triggerId, first.triggerId)
        assert.strictEqual(moved.operation, "reschedule")
        const doomed = yield* p.schedule({ "ttr-url": `${t.origin}/cancelled`, "ttr-scheduled-at": iso(t0 + 1_500) })
        assertStatus(yield* p.call("DELETE", "/cancel", { "ttr-trigger-id": doomed.triggerId }), 204)

        const movedArrival = yield* waitFor("the moved trigger", () => t.at("/move-to")[0])
        yield* waitFor("the on-time triggers", () => (onTime.every(({ path }) => t.at(path).length > 0) ? true : undefined))
        yield* realSleep(300) // a window of silence: no trigger arrives a second time, the cancelled one not at all
        const lateness = onTime.map(({ path, atMs }) => {
          const arrivals = t.at(path)
          assert.strictEqual(arrivals.length, 1, path)
          return arrivals[0]!.arrivedAtMs - atMs
        })
        const movedLateness = movedArrival.arrivedAtMs - (t0 + 2_500)
        console.log(`lateness (ms) of triggers 1.5-2.1 s ahead: ${lateness.join(", ")}; moved trigger: ${movedLateness}`)
        for (const late of [...lateness, movedLateness]) {
          assert.isAtLeast(late, 0, "never early")
          assert.isBelow(late, 1_000, "within a second")
        }
        assert.strictEqual(t.at("/move-to").length, 1)
        assert.strictEqual(t.at("/move-from").length, 0)
        assert.strictEqual(t.at("/cancelled").length, 0)
        assert.strictEqual((yield* p.job(doomed.triggerId)).status, "cancelled")
      }))
  })

  describe("retries and dead letters", () => {
    it.effect("500 with retry-initial-delay 1, max-attempts 2: two attempts ~1 s apart, the last a dead letter, trigger completed", () =>
      Effect.gen(function*() {
        const p = yield* project()
        const t = yield* target
        t.reply("/fail", { status: 500 })
        const { triggerId } = yield* p.schedule({
          "ttr-url": `${t.origin}/fail`, "ttr-scheduled-at": "now", "ttr-retry-initial-delay": "1", "ttr-retry-max-attempts": "2"
        })
        const executions = yield* completedWith(p, triggerId, 2)
        const arrivals = t.at("/fail")
        assert.strictEqual(arrivals.length, 2)
        const gap = arrivals[1]!.arrivedAtMs - arrivals[0]!.arrivedAtMs
        console.log(`retry gap with a 1 s delay: ${gap} ms`)
        assert.isAtLeast(gap, 1_000)
        assert.isBelow(gap, 2_500)
        assert.deepStrictEqual(
          executions.map((e) => ({ jobId: e.jobId, attempt: e.attempt, status: e.status, httpStatus: e.httpStatus, isDeadLetter: e.isDeadLetter, responseBody: e.responseBody })),
          [
            { jobId: triggerId, attempt: 1, status: "failed", httpStatus: 500, isDeadLetter: false, responseBody: "status 500" },
            { jobId: triggerId, attempt: 2, status: "failed", httpStatus: 500, isDeadLetter: true, responseBody: "status 500" }
          ]
        )
        for (const e of executions) {
          assert.strictEqual(e.connectTimeoutSeconds, 10)
          assert.strictEqual(e.timeoutSeconds, 300)
          assert.strictEqual(e.url, `${t.origin}/fail`)
          assert.isNull(e.triggeredBy)
        }
        const deadLetters = (yield* p.call("GET", "/executions?deadLetterOnly=true")).json().executions
        assert.strictEqual(deadLetters.length, 1)
        assert.deepStrictEqual(
          { jobId: deadLetters[0].jobId, isDeadLetter: deadLetters[0].isDeadLetter, errorKind: deadLetters[0].errorKind, errorCode: deadLetters[0].errorCode, url: deadLetters[0].url, httpStatus: deadLetters[0].httpStatus },
          { jobId: triggerId, isDeadLetter: true, errorKind: null, errorCode: null, url: `${t.origin}/fail`, httpStatus: 500 }
        )
      }))

    it.effect("500 under the project default (network_only): one attempt, a dead letter", () =>
      Effect.gen(function*() {
        const p = yield* project()
        const t = yield* target
        t.reply("/fail", { status: 500 })
        const { triggerId } = yield* p.schedule({ "ttr-url": `${t.origin}/fail`, "ttr-scheduled-at": "now" })
        const executions = yield* completedWith(p, triggerId, 1)
        assert.deepStrictEqual(executions.map((e) => [e.httpStatus, e.isDeadLetter]), [[500, true]])
        assert.strictEqual(t.at("/fail").length, 1)
      }))

    it.effect("closed port under the project default (network_only, 30 s): retrying after the first attempt", () =>
      Effect.gen(function*() {
        const p = yield* project()
        const port = yield* closedPort
        const { triggerId } = yield* p.schedule({ "ttr-url": `http://127.0.0.1:${port}/x`, "ttr-scheduled-at": "now" })
        const executions = yield* pollUntil("the first attempt", Effect.map(p.executions(triggerId), (e) => (e.length > 0 ? e : undefined)))
        assert.strictEqual(executions.length, 1)
        assert.deepStrictEqual(
          { errorKind: executions[0].errorKind, errorCode: executions[0].errorCode, isDeadLetter: executions[0].isDeadLetter, httpStatus: executions[0].httpStatus },
          { errorKind: "connection_refused", errorCode: "ECONNREFUSED", isDeadLetter: false, httpStatus: null }
        )
        const job = yield* pollUntil("retrying", Effect.map(p.job(triggerId), (job) => (job.status === "retrying" ? job : undefined)))
        assert.strictEqual(job.attempts, 1)
        const sql = yield* SqlClient.SqlClient
        const due = yield* sql<{ due_at: Date }>`SELECT due_at FROM triggers WHERE id = ${triggerId}`
        const delay = due[0]!.due_at.getTime() - Date.parse(executions[0].finishedAt)
        assert.isAtLeast(delay, 29_000)
        assert.isAtMost(delay, 31_000)
      }))

    it.effect("closed port with the project policy at 1 s and 2 attempts: retried once, then a dead letter listed with errorKind and errorCode", () =>
      Effect.gen(function*() {
        const p = yield* project()
        assertStatus(
          yield* p.call("PUT", "/project/retry-policy", { "content-type": "application/json" }, JSON.stringify({ retryInitialDelaySeconds: 1, retryMaxAttempts: 2 })),
          200
        )
        const port = yield* closedPort
        const url = `http://127.0.0.1:${port}/refused`
        const { triggerId } = yield* p.schedule({ "ttr-url": url, "ttr-scheduled-at": "now" })
        const executions = yield* completedWith(p, triggerId, 2)
        assert.deepStrictEqual(executions.map((e) => [e.attempt, e.errorKind, e.isDeadLetter]), [[1, "connection_refused", false], [2, "connection_refused", true]])
        const gap = Date.parse(executions[1].startedAt) - Date.parse(executions[0].finishedAt)
        assert.isAtLeast(gap, 1_000)
        const deadLetters = (yield* p.call("GET", "/executions?deadLetterOnly=true")).json().executions
        assert.deepStrictEqual(
          deadLetters.map((d: any) => ({ jobId: d.jobId, errorKind: d.errorKind, errorCode: d.errorCode, url: d.url, isDeadLetter: d.isDeadLetter })),
          [{ jobId: triggerId, errorKind: "connection_refused", errorCode: "ECONNREFUSED", url, isDeadLetter: true }]
        )
      }))

    it.effect("ttr-retry-strategy: none → one attempt, a dead letter", () =>
      Effect.gen(function*() {
        const p = yield* project()
        const port = yield* closedPort
        const { triggerId } = yield* p.schedule({ "ttr-url": `http://127.0.0.1:${port}/x`, "ttr-scheduled-at": "now", "ttr-retry-strategy": "none" })
        const executions = yield* completedWith(p, triggerId, 1)
        yield* realSleep(1_200) // a window of silence: no second attempt follows
        assert.deepStrictEqual((yield* p.executions(triggerId)).map((e) => [e.attempt, e.errorKind, e.isDeadLetter]), [[1, "connection_refused", true]])
        assert.strictEqual(executions.length, 1)
      }))

    it.effect("a hanging target: the attempt stays running (the request timeout is the fixed default of 300 s)", () =>
      Effect.gen(function*() {
        const p = yield* project()
        const t = yield* target
        t.reply("/hang", "hang")
        const { triggerId } = yield* p.schedule({ "ttr-url": `${t.origin}/hang`, "ttr-scheduled-at": "now", "ttr-retry-strategy": "none" })
        yield* waitFor("the request", () => t.at("/hang")[0])
        yield* realSleep(500) // a window of silence: the attempt neither ends nor is recorded
        assert.strictEqual((yield* p.job(triggerId)).status, "running")
        assert.deepStrictEqual(yield* p.executions(triggerId), [])
      }))

    it.effect("a keyless trigger being sent (fired by its shard's mark, not written) is running to every reader and every command", () =>
      Effect.gen(function*() {
        const p = yield* project()
        const t = yield* target
        t.reply("/held", "hang")
        const { triggerId } = yield* p.schedule({
          "ttr-url": `${t.origin}/held`, "ttr-scheduled-at": "now", "ttr-retry-strategy": "none", "ttr-tags": "held"
        })
        yield* waitFor("the request", () => t.at("/held")[0])
        const sql = yield* SqlClient.SqlClient
        const stored = (yield* sql<{ status: string }>`SELECT status FROM triggers WHERE id = ${triggerId}`)[0]!.status
        assert.strictEqual(stored, "registered", "no write per trigger before it is sent")

        const list = (query: string) => Effect.map(p.call("GET", `/jobs?${query}`), (r) => r.json().jobs.map((j: any) => j.id))
        assert.include(yield* list("status=running"), triggerId)
        assert.notInclude(yield* list("status=registered"), triggerId)
        assertStatus(
          yield* p.call("DELETE", "/cancel", { "ttr-trigger-id": triggerId }),
          410,
          { _tag: "Gone", message: "Job is no longer cancellable (status=running)" }
        )
        assertStatus(
          yield* p.call("POST", "/schedule", { "ttr-trigger-id": triggerId, "ttr-url": `${t.origin}/held`, "ttr-scheduled-at": "now" }),
          410,
          { _tag: "Gone", message: "Job is no longer in registered state" }
        )
        const bulk = yield* p.call("POST", "/bulk", { "content-type": "application/json" }, JSON.stringify({ cancels: [triggerId] }))
        assert.strictEqual(bulk.json().summary.cancelled, 0, "a /bulk cancel leaves a running trigger alone")
        const declared = yield* p.call("POST", "/declare", { "content-type": "application/json" }, JSON.stringify({ tag: "held", items: [] }))
        assert.strictEqual(declared.json().summary.cancelled, 0, "a /declare leaves a running trigger alone")
        assert.strictEqual((yield* p.job(triggerId)).status, "running")
      }))
  })

  describe("replay and scoping", () => {
    it.effect("replay of a completed trigger → 202, a new attempt with triggeredBy retry using the stored request", () =>
      Effect.gen(function*() {
        const p = yield* project()
        const t = yield* target
        t.reply("/replay", { status: 500 })
        const { triggerId } = yield* p.schedule(
          { "ttr-url": `${t.origin}/replay`, "ttr-scheduled-at": "now", "ttr-retry-strategy": "none", "x-stored": "yes" },
          { method: "PATCH", body: "stored body" }
        )
        yield* completedWith(p, triggerId, 1)
        t.reply("/replay", { status: 200 })
        assertStatus(
          yield* p.call("POST", `/jobs/${triggerId}/executions`, { "content-type": "application/json" }, JSON.stringify({ triggeredBy: "retry" })),
          202,
          { jobId: triggerId, status: "queued" }
        )
        const executions = yield* completedWith(p, triggerId, 2)
        assert.deepStrictEqual(
          executions.map((e) => ({ status: e.status, httpStatus: e.httpStatus, triggeredBy: e.triggeredBy, isDeadLetter: e.isDeadLetter })),
          [
            { status: "failed", httpStatus: 500, triggeredBy: null, isDeadLetter: true },
            { status: "succeeded", httpStatus: 200, triggeredBy: "retry", isDeadLetter: false }
          ]
        )
        const arrivals: ReadonlyArray<Arrival> = t.at("/replay")
        assert.strictEqual(arrivals.length, 2)
        for (const a of arrivals) {
          assert.strictEqual(a.method, "PATCH")
          assert.strictEqual(a.body.toString(), "stored body")
          assert.deepStrictEqual(headerValues(a.rawHeaders, "x-stored"), ["yes"])
        }
      }))

    it.effect("another project's key cannot cancel, edit, read or replay the trigger (404)", () =>
      Effect.gen(function*() {
        const owner = yield* project()
        const other = yield* project()
        const t = yield* target
        const done = yield* owner.schedule({ "ttr-url": `${t.origin}/mine-done`, "ttr-scheduled-at": "now" })
        yield* completedWith(owner, done.triggerId, 1)
        const pending = yield* owner.schedule({ "ttr-url": `${t.origin}/mine`, "ttr-scheduled-at": "2099-01-01", "ttr-custom-key": "mine" })
        const notFound = { _tag: "NotFound", message: "Job not found" }
        assertStatus(yield* other.call("DELETE", "/cancel", { "ttr-trigger-id": pending.triggerId }), 404, notFound)
        assertStatus(yield* other.call("DELETE", "/cancel", { "ttr-custom-key": "mine" }), 404, notFound)
        assertStatus(
          yield* other.call("POST", "/schedule", { "ttr-url": `${t.origin}/theirs`, "ttr-scheduled-at": "2099-01-01", "ttr-trigger-id": pending.triggerId }),
          404,
          { _tag: "NotFound", message: "Trigger not found" }
        )
        for (const id of [pending.triggerId, done.triggerId]) {
          assertStatus(yield* other.call("GET", `/jobs/${id}`), 404, notFound)
          assertStatus(yield* other.call("GET", `/jobs/${id}/executions`), 404, notFound)
        }
        assertStatus(
          yield* other.call("POST", `/jobs/${done.triggerId}/executions`, { "content-type": "application/json" }, JSON.stringify({ triggeredBy: "retry" })),
          404,
          notFound
        )
        assert.deepStrictEqual((yield* other.call("GET", `/executions?jobId=${done.triggerId}`)).json().executions, [])
        // the same custom key in the other project is a different trigger
        const theirs = yield* other.schedule({ "ttr-url": `${t.origin}/theirs`, "ttr-scheduled-at": "2099-01-01", "ttr-custom-key": "mine" })
        assert.notStrictEqual(theirs.triggerId, pending.triggerId)
        assert.strictEqual(theirs.operation, "schedule")
        const job = yield* owner.job(pending.triggerId)
        assert.deepStrictEqual([job.status, job.url], ["registered", `${t.origin}/mine`])
        assert.strictEqual(t.at("/mine-done").length, 1)
      }))
  })
})
