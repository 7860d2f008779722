// Tag gates end to end (docs/tag-policies.md; docs/retries.md "Which policy applies", "Timeouts"): the
// real service over HTTPS with a target that counts the requests it holds at once and stamps every
// start. maxConcurrent 1 and 2 are never exceeded; throughput {"1s": 1} and {"5s": 1} space the starts;
// {"1m": 0} holds a trigger queued and unsent until a PUT or a DELETE releases it, and a PUT pausing a
// tag answers once the node's lease applied it; the shortest requestTimeoutSeconds of a trigger's tags
// bounds its attempt; tag retry rules merge.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { TestServer, testServerLayer } from "../support/server.ts"
import { pollUntil } from "../support/wait.ts"

interface Start {
  readonly path: string
  readonly atMs: number
}

/** A target on 127.0.0.1 answering 200 after `delayMs` (per path: `status`, or "hang"); it records starts and peak concurrency. */
const countingTarget = (options: { readonly delayMs: number; readonly replies?: Record<string, number | "hang"> }) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const starts: Array<Start> = []
      let open = 0
      let peak = 0
      const server = http.createServer((req, res) => {
        const path = req.url!.split("?")[0]!
        starts.push({ path, atMs: Date.now() })
        open++
        peak = Math.max(peak, open)
        const reply = options.replies?.[path] ?? 200
        req.resume()
        if (reply === "hang") return
        setTimeout(() => {
          open--
          res.writeHead(reply).end("ok")
        }, options.delayMs)
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      return { server, target: { origin, starts, peak: () => peak, at: (path: string) => starts.filter((s) => s.path === path) } }
    }),
    ({ server }) => Effect.promise(() => {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    })
  ).pipe(Effect.map(({ target }) => target))

/** A project with helpers: its policies, triggers and their views. */
const project = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const headers = { "ttr-api-key": key }
  const json = (method: string, path: string, body?: unknown) =>
    Effect.map(
      server.call(method, path, {
        headers: { ...headers, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      }),
      (response) => {
        assert.isBelow(response.status, 300, response.text)
        return response.text === "" ? undefined : response.json()
      }
    )
  return {
    key: Effect.succeed(key),
    policy: (body: Record<string, unknown>) => Effect.map(json("POST", "/tag-policies", body), (view) => view.id as string),
    updatePolicy: (id: string, body: Record<string, unknown>) => json("PUT", `/tag-policies/${id}`, body),
    deletePolicy: (id: string) => json("DELETE", `/tag-policies/${id}`),
    policies: json("GET", "/tag-policies") as Effect.Effect<Array<any>>,
    schedule: (url: string, tags: string, extra: Record<string, string> = {}) =>
      Effect.map(
        server.call("POST", "/schedule", { headers: { ...headers, "ttr-url": url, "ttr-scheduled-at": "now", "ttr-tags": tags, ...extra } }),
        (response) => {
          assert.strictEqual(response.status, 200, response.text)
          return response.json().triggerId as string
        }
      ),
    job: (id: string) => Effect.map(server.call("GET", `/jobs/${id}`, { headers }), (r) => r.json()),
    executions: (id: string) => Effect.map(server.call("GET", `/jobs/${id}/executions`, { headers }), (r) => r.json().executions as Array<any>),
    cancel: (id: string) => Effect.map(server.call("DELETE", "/cancel", { headers: { ...headers, "ttr-trigger-id": id } }), (r) => r.status),
    /** Many triggers due now in one /bulk call, each POSTing to `url` with these tags. */
    bulk: (count: number, url: string, tags: ReadonlyArray<string>) =>
      Effect.map(json("POST", "/bulk", { upserts: Array.from({ length: count }, () => ({ url, method: "POST", tags })) }), (answer) => {
        assert.strictEqual(answer.summary.added, count)
      })
  }
})

const everyArrived = (target: { readonly starts: ReadonlyArray<Start> }, count: number, deadlineMs = 20_000) =>
  pollUntil(`${count} starts`, Effect.sync(() => (target.starts.length >= count ? true : undefined)), { deadlineMs })

const gaps = (starts: ReadonlyArray<Start>) => starts.slice(1).map((start, i) => start.atMs - starts[i]!.atMs)

type Project = Effect.Success<typeof project>
type Target = Effect.Success<ReturnType<typeof countingTarget>>
const setup = (delayMs: number, replies?: Record<string, number | "hang">): Effect.Effect<{ p: Project; t: Target }, never, TestServer | Scope.Scope> =>
  Effect.gen(function*() {
    return { p: yield* project, t: yield* countingTarget({ delayMs, ...(replies === undefined ? {} : { replies }) }) }
  })

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("tag gates end to end", (it) => {
  describe("maxConcurrent", () => {
    for (const limit of [1, 2]) {
      it.effect(`maxConcurrent ${limit}: never more than ${limit} at the target at once; the others wait queued`, () =>
        Effect.gen(function*() {
          const { p, t } = yield* setup(300)
          yield* p.policy({ tag: `conc${limit}`, maxConcurrent: limit })
          const ids: Array<string> = []
          for (let i = 0; i < 3 * limit; i++) ids.push(yield* p.schedule(`${t.origin}/c`, `conc${limit}`))
          const queued = yield* pollUntil("some held back", Effect.map(Effect.forEach(ids, p.job), (jobs) =>
            jobs.some((job) => job.status === "queued") ? true : undefined))
          assert.isTrue(queued)
          assert.strictEqual(yield* p.cancel(ids.at(-1)!), 410, "a held-back trigger cannot be cancelled by /cancel")
          yield* everyArrived(t, 3 * limit)
          assert.strictEqual(t.peak(), limit)
        }))
    }
  })

  it.effect("more triggers waiting than an admission round reads at once (pages of 500): all start, never more than the limit", () =>
    Effect.gen(function*() {
      const { p, t } = yield* setup(5)
      yield* p.policy({ tag: "many", maxConcurrent: 20 })
      yield* p.bulk(1_200, `${t.origin}/many`, ["many"])
      yield* everyArrived(t, 1_200, 60_000)
      assert.strictEqual(t.at("/many").length, 1_200)
      assert.strictEqual(t.peak(), 20)
    }))

  it.effect("a replay of a gated trigger waits at its gate like any other", () =>
    Effect.gen(function*() {
      const { p, t } = yield* setup(400)
      const server = yield* TestServer
      yield* p.policy({ tag: "replayed", maxConcurrent: 1 })
      const first = yield* p.schedule(`${t.origin}/r`, "replayed")
      yield* pollUntil("the first completed", Effect.map(p.job(first), (job) => (job.status === "completed" ? true : undefined)))
      yield* p.schedule(`${t.origin}/r`, "replayed")
      yield* everyArrived(t, 2)
      const replay = yield* server.call("POST", `/jobs/${first}/executions`, {
        headers: { "ttr-api-key": (yield* p.key), "content-type": "application/json" },
        body: JSON.stringify({ triggeredBy: "retry" })
      })
      assert.strictEqual(replay.status, 202, replay.text)
      yield* everyArrived(t, 3)
      assert.strictEqual(t.peak(), 1)
    }))

  describe("throughput", () => {
    it.effect(`{"1s": 1} starts one per second`, () =>
      Effect.gen(function*() {
        const { p, t } = yield* setup(0)
        yield* p.policy({ tag: "per1s", throughput: { "1s": 1 } })
        for (let i = 0; i < 3; i++) yield* p.schedule(`${t.origin}/s`, "per1s")
        yield* everyArrived(t, 3)
        for (const gap of gaps(t.at("/s"))) assert.isAtLeast(gap, 950, `gaps ${gaps(t.at("/s"))}`)
      }))

    it.effect(`{"5s": 1} starts the second five seconds after the first`, () =>
      Effect.gen(function*() {
        const { p, t } = yield* setup(0)
        yield* p.policy({ tag: "per5s", throughput: { "5s": 1 } })
        for (let i = 0; i < 2; i++) yield* p.schedule(`${t.origin}/s5`, "per5s")
        yield* everyArrived(t, 2, 15_000)
        assert.isAtLeast(gaps(t.at("/s5"))[0]!, 4_950)
      }))

    it.effect(`{"1m": 0} holds a trigger queued and unsent until a PUT raises the rate; another until a DELETE`, () =>
      Effect.gen(function*() {
        const { p, t } = yield* setup(0)
        const paused = yield* p.policy({ tag: "paused", throughput: { "1m": 0 } })
        const id = yield* p.schedule(`${t.origin}/paused`, "paused")
        yield* pollUntil("held back", Effect.map(p.job(id), (job) => (job.status === "queued" ? true : undefined)))
        const view = (yield* p.policies).find((policy) => policy.id === paused)
        assert.deepStrictEqual([view.queued, view.inFlight], [1, 0])
        assert.strictEqual(t.at("/paused").length, 0)
        const puttedAt = Date.now()
        yield* p.updatePolicy(paused, { throughput: { "1m": 10 } })
        yield* everyArrived(t, 1, 5_000)
        assert.isBelow(t.at("/paused")[0]!.atMs - puttedAt, 1_000, "released within a second of the PUT")

        const other = yield* p.policy({ tag: "paused2", throughput: { "1m": 0 } })
        yield* p.schedule(`${t.origin}/paused2`, "paused2")
        yield* pollUntil("held back", Effect.map(p.policies, (views) =>
          views.find((policy) => policy.id === other)?.queued === 1 ? true : undefined))
        const deletedAt = Date.now()
        yield* p.deletePolicy(other)
        yield* everyArrived(t, 2, 5_000)
        assert.isBelow(t.at("/paused2")[0]!.atMs - deletedAt, 1_000, "released within a second of the DELETE")
      }))

    it.effect("a PUT pausing a tag answers once this node's lease of it has applied the pause: none granted under the old policy is left", () =>
      Effect.gen(function*() {
        const { p, t } = yield* setup(0)
        const sql = yield* SqlClient.SqlClient
        const id = yield* p.policy({ tag: "to-pause", throughput: { "1s": 2 } })
        for (let i = 0; i < 6; i++) yield* p.schedule(`${t.origin}/to-pause`, "to-pause")
        // this node leases the gate (its row written under the first policy)
        yield* pollUntil("a lease of the gate", Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM gate_leases WHERE tag = 'to-pause'`,
          (rows) => (rows[0]!.n > 0 ? true : undefined)))
        const paused = (yield* p.updatePolicy(id, { throughput: { "1s": 0 } })) as { updatedAt: string }
        const behind = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM gate_leases
          WHERE tag = 'to-pause' AND gone_at IS NULL AND (policy_seen IS NULL OR policy_seen < ${new Date(paused.updatedAt)})`
        assert.strictEqual(behind[0]!.n, 0)
        const startedAtAnswer = t.at("/to-pause").length
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 1_500)))
        assert.strictEqual(t.at("/to-pause").length, startedAtAnswer, "nothing starts once the pause has answered")
      }))

    it.effect("a trigger with a paused tag never holds back one with another gated tag only", () =>
      Effect.gen(function*() {
        const { p, t } = yield* setup(0)
        yield* p.policy({ tag: "hold", throughput: { "1m": 0 } })
        yield* p.policy({ tag: "flow", maxConcurrent: 5 })
        yield* p.schedule(`${t.origin}/both`, "hold,flow")
        yield* p.schedule(`${t.origin}/flow`, "flow")
        yield* everyArrived(t, 1)
        assert.deepStrictEqual(t.starts.map((start) => start.path), ["/flow"])
      }))

    it.effect("nor do pages of them: the gate reads on past them to a trigger with its own tag only", () =>
      Effect.gen(function*() {
        const { p, t } = yield* setup(0)
        yield* p.policy({ tag: "hold-many", throughput: { "1m": 0 } })
        const flow = yield* p.policy({ tag: "flow-many", maxConcurrent: 5 })
        yield* p.bulk(1_100, `${t.origin}/both-many`, ["hold-many", "flow-many"])
        yield* pollUntil("all held back", Effect.map(p.policies, (views) =>
          views.find((policy) => policy.id === flow)?.queued === 1_100 ? true : undefined), { deadlineMs: 20_000 })
        yield* p.schedule(`${t.origin}/flow-many`, "flow-many")
        yield* everyArrived(t, 1)
        assert.deepStrictEqual(t.starts.map((start) => start.path), ["/flow-many"])
      }))
  })

  describe("timeouts and retries", () => {
    it.effect("the shortest requestTimeoutSeconds of the trigger's tags bounds the attempt and is recorded", () =>
      Effect.gen(function*() {
        const { p, t } = yield* setup(0, { "/hang": "hang" })
        yield* p.policy({ tag: "slow2", requestTimeoutSeconds: 2 })
        yield* p.policy({ tag: "slow1", requestTimeoutSeconds: 1 })
        const id = yield* p.schedule(`${t.origin}/hang`, "slow2,slow1", { "ttr-retry-strategy": "none" })
        const [execution] = yield* pollUntil("the timed-out attempt", Effect.map(p.executions(id), (rows) =>
          rows.length === 1 ? rows : undefined), { deadlineMs: 10_000 })
        assert.strictEqual(execution.errorKind, "timeout")
        assert.strictEqual(execution.timeoutSeconds, 1)
        assert.approximately(execution.durationMs, 1_000, 500)
      }))

    it.effect("the retry rules of several tags merge to the most defensive: fewest attempts, longest delay, most restrictive retryOn", () =>
      Effect.gen(function*() {
        const { p, t } = yield* setup(0, { "/fail": 500, "/missing": 404 })
        yield* p.policy({ tag: "r3", retryStrategy: "fixed", retryInitialDelaySeconds: 1, retryMaxAttempts: 3, retryOn: "non_2xx" })
        yield* p.policy({ tag: "r2", retryStrategy: "fixed", retryInitialDelaySeconds: 2, retryMaxAttempts: 2, retryOn: "5xx_and_network" })
        const failing = yield* p.schedule(`${t.origin}/fail`, "r3,r2")
        const missing = yield* p.schedule(`${t.origin}/missing`, "r3,r2")
        const attempts = yield* pollUntil("two attempts, the last a dead letter", Effect.map(p.executions(failing), (rows) =>
          rows.length === 2 && rows[1].isDeadLetter ? rows : undefined), { deadlineMs: 10_000 })
        const delayMs = Date.parse(attempts[1].startedAt) - Date.parse(attempts[0].finishedAt)
        assert.isAtLeast(delayMs, 1_950, "the longer delay (2 s)")
        // a 404 is not retried under 5xx_and_network (more restrictive than non_2xx)
        const [only] = yield* pollUntil("one attempt", Effect.map(p.executions(missing), (rows) =>
          rows.length === 1 ? rows : undefined))
        assert.isTrue(only.isDeadLetter)
      }))
  })
})
