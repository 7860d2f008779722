// Target policies end to end on one node (docs/protecting-targets.md), against the real service and
// local origins (one loopback port each), with untagged triggers:
// - `*` with maxConcurrent limits each origin separately, never summed; an origin's own policy wins;
//   an origin without a policy, in a project with one, is not held back;
// - a 429 under a target policy holds the origin (every trigger to it, whatever its tags) until
//   Retry-After: they wait queued, the views show heldUntil; other origins go on;
// - the circuit breaker: consecutive failures (network errors, timeouts, 5xx but 503) open it, an
//   answer resets the count; open, the origin is held for the cooldown (triggers wait queued using no
//   attempt; the failed one retries not before it ends), GET /targets says open and why, /metrics
//   counts it and the project's failure alert reports it; then one probe: its failure reopens for
//   twice as long, its answer closes the circuit and the rest go;
// - a paused origin's triggers go once its policy is deleted.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { request } from "undici"
import { afterAll } from "vitest"
import { OpsListener } from "../../src/ops/opsServer.ts"
import { projectIdOfKey } from "../support/fixtures.ts"
import { makeOrigins, type Origin } from "../support/origins.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { target } from "../support/target.ts"
import { pollUntil, realSleep, waitUntil } from "../support/wait.ts"

const project = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const headers = { "ttr-api-key": key }
  const json = { ...headers, "content-type": "application/json" }
  return {
    headers,
    policy: (body: Record<string, unknown>) =>
      Effect.map(server.call("POST", "/target-policies", { headers: json, body: JSON.stringify(body) }), (response) => {
        assert.strictEqual(response.status, 201, response.text)
        return response.json() as { id: string }
      }),
    remove: (id: string) => Effect.map(server.call("DELETE", `/target-policies/${id}`, { headers }), (r) => assert.strictEqual(r.status, 204)),
    /** The project's failure alerts go to this webhook (set as the dashboard's PUT /alerts would). */
    alertTo: (webhookUrl: string) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const projectId = yield* projectIdOfKey(key)
        yield* sql`INSERT INTO project_alerts (project_id, webhook_url, updated_at) VALUES (${projectId}, ${webhookUrl}, now())`
      }),
    schedule: (url: string, extra: Record<string, string> = {}) =>
      Effect.map(server.call("POST", "/schedule", { headers: { ...headers, "ttr-url": url, "ttr-scheduled-at": "now", ...extra } }), (response) => {
        assert.strictEqual(response.status, 200, response.text)
        return response.json().triggerId as string
      }),
    job: (id: string) => Effect.map(server.call("GET", `/jobs/${id}`, { headers }), (r) => r.json() as { status: string; attempts: number }),
    targets: Effect.map(server.call("GET", "/targets", { headers }), (r) => r.json() as Array<Record<string, any>>),
    views: Effect.map(server.call("GET", "/target-policies", { headers }), (r) => r.json() as Array<Record<string, any>>)
  }
})

const metric = (line: string) =>
  Effect.gen(function*() {
    const ops = (yield* OpsListener).url!
    const text = yield* Effect.promise(async () => (await request(`${ops}/metrics`)).body.text())
    const found = text.split("\n").find((row) => row.startsWith(`${line} `))
    return found === undefined ? 0 : Number(found.slice(line.length + 1))
  })

/** Origins closed only when the file is done: a port closed earlier could come back as another test's origin. */
const made: Array<{ readonly close: () => void }> = []
afterAll(() => made.forEach((m) => m.close()))
const origins = (count: number) =>
  Effect.promise(async () => {
    const these = await makeOrigins(count)
    made.push(these)
    return these
  })

const NO_RETRY = { "ttr-retry-strategy": "none" }
const RETRY_AT_ONCE = { "ttr-retry-strategy": "fixed", "ttr-retry-initial-delay": "0", "ttr-retry-max-attempts": "20" }

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("target policies on one node", (it) => {
  it.effect("`*` maxConcurrent 2 limits each origin separately; an origin's own policy wins; an origin without one is not held back", () =>
    Effect.scoped(Effect.gen(function*() {
      const p = yield* project
      const { origins: [a, b, own] } = yield* origins(3)
      yield* p.policy({ origin: "*", maxConcurrent: 2 })
      yield* p.policy({ origin: own!.origin, maxConcurrent: 1 })
      for (const o of [a!, b!, own!]) o.behave({ delayMs: 300 })
      for (let i = 0; i < 6; i++) for (const o of [a!, b!, own!]) yield* p.schedule(`${o.origin}/x?n=${i}`)
      yield* waitUntil("every request", () => [a!, b!, own!].every((o) => o.arrivals.length === 6 && o.open === 0), 30_000)
      assert.deepStrictEqual([a!.peak, b!.peak, own!.peak], [2, 2, 1])

      // another project without target policies, and an origin this project has no policy for... under `*` every origin is covered:
      const other = yield* project
      const { origins: [free] } = yield* origins(1)
      free!.behave({ delayMs: 300 })
      for (let i = 0; i < 5; i++) yield* other.schedule(`${free!.origin}/x?n=${i}`)
      yield* waitUntil("the free origin's requests", () => free!.arrivals.length === 5 && free!.open === 0, 20_000)
      assert.strictEqual(free!.peak, 5)
    })))

  it.effect("an origin's own policy in a project without `*` leaves other origins alone", () =>
    Effect.scoped(Effect.gen(function*() {
      const p = yield* project
      const { origins: [limited, free] } = yield* origins(2)
      yield* p.policy({ origin: limited!.origin, maxConcurrent: 1 })
      limited!.behave({ delayMs: 300 })
      free!.behave({ delayMs: 300 })
      for (let i = 0; i < 4; i++) {
        yield* p.schedule(`${limited!.origin}/x?n=${i}`)
        yield* p.schedule(`${free!.origin}/x?n=${i}`)
      }
      yield* waitUntil("every request", () => limited!.arrivals.length === 4 && free!.arrivals.length === 4 && free!.open === 0, 20_000)
      assert.deepStrictEqual([limited!.peak, free!.peak], [1, 4])
    })))

  it.effect("a trigger starts only when every gate admits it: its gated tag's (maxConcurrent 2) and its origin's (maxConcurrent 1)", () =>
    Effect.scoped(Effect.gen(function*() {
      const p = yield* project
      const server = yield* TestServer
      const { origins: [limited, other] } = yield* origins(2)
      yield* p.policy({ origin: limited!.origin, maxConcurrent: 1 })
      const tagPolicy = yield* server.call("POST", "/tag-policies", {
        headers: { ...p.headers, "content-type": "application/json" }, body: JSON.stringify({ tag: "both-gates", maxConcurrent: 2 })
      })
      assert.strictEqual(tagPolicy.status, 201, tagPolicy.text)
      limited!.behave({ delayMs: 300 })
      other!.behave({ delayMs: 300 })
      for (let i = 0; i < 4; i++) {
        yield* p.schedule(`${limited!.origin}/x?n=${i}`, { "ttr-tags": "both-gates" })
        yield* p.schedule(`${other!.origin}/x?n=${i}`, { "ttr-tags": "both-gates" })
      }
      yield* waitUntil("every request", () => limited!.arrivals.length === 4 && other!.arrivals.length === 4 && limited!.open + other!.open === 0, 20_000)
      assert.strictEqual(limited!.peak, 1, "the origin's limit")
      // the tag's limit over both origins: replay the two timelines together
      // (each change as +1 or −1; at one instant, ends before starts)
      const deltas = (o: Origin) => o.openAt.map(([at, open], i) => [at, open - (i === 0 ? 0 : o.openAt[i - 1]![1])] as const)
      const events = [...deltas(limited!), ...deltas(other!)].sort((a, b) => a[0] - b[0] || a[1] - b[1])
      let open = 0
      let most = 0
      for (const [, delta] of events) most = Math.max(most, open += delta)
      assert.strictEqual(most, 2, "the tag's limit, over both origins")
    })))

  it.effect("a 429 with Retry-After: 2 holds the origin, tagged or not: they wait queued, the views show heldUntil; other origins go on", () =>
    Effect.scoped(Effect.gen(function*() {
      const p = yield* project
      const { origins: [refusing, other] } = yield* origins(2)
      yield* p.policy({ origin: "*", maxConcurrent: 50 })
      refusing!.behave({ status: 429, headers: { "retry-after": "2" } })
      yield* p.schedule(`${refusing!.origin}/first`, NO_RETRY)
      yield* waitUntil("the refusal", () => refusing!.arrivals.length === 1)
      const refusedAt = refusing!.arrivals[0]!.atMs
      refusing!.behave({})
      const held = yield* pollUntil("the hold in GET /targets", Effect.map(p.targets, (all) => all.find((t) => t.origin === refusing!.origin && t.heldUntil !== null)))
      const heldUntil = Date.parse(held.heldUntil)
      assert.isAtLeast(heldUntil, refusedAt + 1_900)
      assert.isAtMost(heldUntil, refusedAt + 2_600)
      const waiting = [yield* p.schedule(`${refusing!.origin}/later`), yield* p.schedule(`${refusing!.origin}/later`, { "ttr-tags": "some-tag" })]
      yield* p.schedule(`${other!.origin}/go`)
      yield* pollUntil("both queued", Effect.map(Effect.forEach(waiting, p.job), (jobs) => (jobs.every((j) => j.status === "queued") ? true : undefined)))
      yield* waitUntil("the other origin's request", () => other!.arrivals.length === 1)
      assert.isBelow(other!.arrivals[0]!.atMs - refusedAt, 1_500, "another origin is not held")
      yield* waitUntil("the held ones", () => refusing!.arrivals.length === 3, 10_000)
      for (const arrival of refusing!.arrivals.slice(1)) assert.isAtLeast(arrival.atMs, heldUntil - 50, "nothing to the origin before heldUntil")
      assert.isAtLeast(yield* metric(`timewheel_target_holds_total{reason="retry_after"}`), 1)
    })))

  it.effect("consecutive failures: an answer (and a 503) resets the count; the third failure in a row opens the circuit", () =>
    Effect.scoped(Effect.gen(function*() {
      const p = yield* project
      const { origins: [o] } = yield* origins(1)
      yield* p.policy({ origin: o!.origin, circuitBreaker: { failures: 3, cooldownSeconds: 60 } })
      const sendOne = (how: Parameters<Origin["behave"]>[0]) =>
        Effect.gen(function*() {
          o!.behave(how)
          const before = o!.arrivals.length
          const id = yield* p.schedule(`${o!.origin}/x`, NO_RETRY)
          yield* waitUntil("its attempt", () => o!.arrivals.length === before + 1)
          yield* pollUntil("its outcome", Effect.map(p.job(id), (job) => (job.status === "completed" ? true : undefined)))
        })
      const failures = Effect.map(p.targets, (all) => all.find((t) => t.origin === o!.origin))
      yield* sendOne({ status: 500 })
      yield* sendOne({ status: 502 })
      yield* sendOne({ status: 200 })
      yield* sendOne({ close: true })
      yield* sendOne({ status: 503 })
      yield* sendOne({ status: 500 })
      yield* sendOne({ status: 500 })
      const view = (yield* p.views)[0]!
      assert.strictEqual(view.circuit, "closed", "never three failures in a row so far")
      yield* sendOne({ close: true })
      const open = yield* pollUntil("the open circuit", Effect.map(failures, (t) => (t?.circuit === "open" ? t : undefined)))
      assert.match(open.circuitReason, /^connection_reset/)
    })))

  it.effect("open: held for the cooldown (queued, no attempt used; the failed one retries after it), alerted; one probe reopens for twice as long, then closes", () =>
    Effect.scoped(Effect.gen(function*() {
      const p = yield* project
      const { origins: [o] } = yield* origins(1)
      const hooks = yield* target
      yield* p.alertTo(`${hooks.origin}/chat`)
      const openingsBefore = yield* metric("timewheel_target_circuit_openings_total")
      // the gauge counts the gates this node looks after: an earlier test's open circuit until its idle gate is forgotten
      const openBefore = yield* pollUntil("no open circuit of an earlier test counted", Effect.map(metric(`timewheel_target_circuits{state="open"}`), (n) =>
        n === 0 ? n : undefined))
      const policy = yield* p.policy({ origin: o!.origin, circuitBreaker: { failures: 3, cooldownSeconds: 2 } })
      o!.behave({ status: 500 })
      // one trigger retrying at once: its third failure opens the circuit, its retry waits for the cooldown
      const failing = yield* p.schedule(`${o!.origin}/failing`, RETRY_AT_ONCE)
      yield* waitUntil("three failures", () => o!.arrivals.length === 3, 20_000)
      const openedAt = o!.arrivals[2]!.atMs
      const open = yield* pollUntil("the open circuit", Effect.map(p.targets, (all) => all.find((t) => t.origin === o!.origin && t.circuit === "open")))
      assert.deepStrictEqual([open.policyId, open.circuitReason, open.consecutiveFailures], [policy.id, "HTTP 500", 0])
      assert.approximately(Date.parse(open.heldUntil), openedAt + 2_000, 500)
      assert.strictEqual((yield* p.views)[0]!.circuit, "open")
      const waiting = [yield* p.schedule(`${o!.origin}/later`, NO_RETRY), yield* p.schedule(`${o!.origin}/later`, NO_RETRY)]
      yield* pollUntil("the later ones queued", Effect.map(Effect.forEach(waiting, p.job), (jobs) =>
        jobs.every((job) => job.status === "queued" && job.attempts === 0) ? true : undefined))
      assert.strictEqual((yield* metric("timewheel_target_circuit_openings_total")) - openingsBefore, 1)
      assert.strictEqual((yield* metric(`timewheel_target_circuits{state="open"}`)) - openBefore, 1)
      // the alert reports it
      const [message] = yield* pollUntil("the alert", Effect.sync(() => (hooks.at("/chat").length > 0 ? hooks.at("/chat") : undefined)))
      const text = JSON.parse(message!.body.toString("utf8")).text as string
      assert.include(text, "1 circuit opened")
      assert.include(text, `${o!.origin}: circuit opened for 2 s after HTTP 500`)

      // the cooldown passes: one probe, still failing: open again, for 4 s
      yield* waitUntil("the probe", () => o!.arrivals.length === 4, 10_000)
      const probedAt = o!.arrivals[3]!.atMs
      assert.isAtLeast(probedAt, openedAt + 1_950, "nothing before the cooldown ends")
      yield* realSleep(300) // a window of silence: the probe is alone
      assert.strictEqual(o!.arrivals.length, 4, "a single probe")
      const reopened = yield* pollUntil("reopened", Effect.map(p.targets, (all) => all.find((t) => t.origin === o!.origin && t.circuit === "open")))
      assert.approximately(Date.parse(reopened.heldUntil), probedAt + 4_000, 500)

      // now the origin answers: the next probe closes the circuit, and everything waiting goes
      o!.behave({ status: 200 })
      yield* waitUntil("the rest", () => o!.arrivals.length === 7, 15_000)
      const secondProbeAt = o!.arrivals[4]!.atMs
      assert.isAtLeast(secondProbeAt, probedAt + 3_950, "the second cooldown is twice the first")
      yield* pollUntil("closed", Effect.map(p.views, (views) => (views[0]!.circuit === "closed" ? true : undefined)))
      // the origin has seen the last requests; their outcomes are recorded a moment later
      const jobs = yield* pollUntil("the outcomes recorded", Effect.map(Effect.forEach([failing, ...waiting], p.job), (all) =>
        all.every((job) => job.status !== "running" && job.status !== "queued") ? all : undefined))
      assert.deepStrictEqual(jobs.map((job) => job.status), ["completed", "completed", "completed"])
      // the waiting ones used one attempt each; the failing one its three, one probe or retry per cooldown, and its success
      assert.deepStrictEqual(jobs.slice(1).map((job) => job.attempts), [1, 1])
    })))

  it.effect("maxConcurrent with a circuit breaker: the probe gets its budget at once, then the limit holds again", () =>
    Effect.scoped(Effect.gen(function*() {
      const p = yield* project
      const { origins: [o] } = yield* origins(1)
      yield* p.policy({ origin: o!.origin, maxConcurrent: 2, circuitBreaker: { failures: 2, cooldownSeconds: 1 } })
      o!.behave({ status: 500 })
      for (let i = 0; i < 2; i++) yield* p.schedule(`${o!.origin}/fail?n=${i}`, NO_RETRY)
      yield* waitUntil("two failures", () => o!.arrivals.length === 2)
      yield* pollUntil("the open circuit", Effect.map(p.views, (views) => (views[0]!.circuit === "open" ? true : undefined)))
      o!.behave({ delayMs: 300 })
      for (let i = 0; i < 6; i++) yield* p.schedule(`${o!.origin}/later?n=${i}`, NO_RETRY)
      const openedAt = o!.arrivals[1]!.atMs
      yield* waitUntil("the probe", () => o!.arrivals.length === 3, 10_000)
      // the probe leaves as the cooldown ends (its lease taken at once), and nothing beside it until it answers
      const probedAt = o!.arrivals[2]!.atMs
      assert.isBelow(probedAt - openedAt, 1_000 + 1_000)
      yield* realSleep(200) // a window of silence: the probe (answered after 300 ms) is alone
      assert.strictEqual(o!.arrivals.length, 3)
      yield* waitUntil("the rest", () => o!.arrivals.length === 8 && o!.open === 0, 15_000)
      const afterProbe = o!.openAt.filter(([atMs]) => atMs > probedAt).map(([, open]) => open)
      assert.strictEqual(Math.max(...afterProbe), 2, "the limit, reached and held once closed")
    })))

  it.effect("a paused origin's triggers wait queued, and go once its policy is deleted", () =>
    Effect.scoped(Effect.gen(function*() {
      const p = yield* project
      const { origins: [o] } = yield* origins(1)
      const policy = yield* p.policy({ origin: o!.origin, throughput: { "1s": 0 } })
      const ids = [yield* p.schedule(`${o!.origin}/p`), yield* p.schedule(`${o!.origin}/p`)]
      yield* pollUntil("queued", Effect.map(Effect.forEach(ids, p.job), (jobs) => (jobs.every((j) => j.status === "queued") ? true : undefined)))
      assert.strictEqual((yield* p.views)[0]!.queued, 2)
      assert.strictEqual(o!.arrivals.length, 0)
      yield* p.remove(policy.id)
      yield* waitUntil("both sent", () => o!.arrivals.length === 2, 10_000)
    })))
})
