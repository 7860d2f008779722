// Recurring triggers end to end over HTTPS against the real service and a local recording target on
// 127.0.0.1 (docs/cron.md "How instances are made"; docs/scheduling.md "DELETE /cancel";
// docs/reading.md "GET /health"): a 5-second cron delivers on its beat, a cancel stops it, a cancelled
// upcoming instance is replaced for the same time by the materializer, and /health reports the
// materializer loop. Waiting is a bounded poll; the only fixed wait is the "nothing more arrives"
// window after a cancel, which has to be longer than one period.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { instancesOf, statusOf } from "../support/fixtures.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { headerValues, target } from "../support/target.ts"
import { pollUntil, realSleep } from "../support/wait.ts"

const PERIOD_MS = 5_000
/** How late an instance may arrive after its time on a busy two-core machine. */
const MAX_LATENESS_MS = 1_500

/** A new project and helpers authenticated with its key. */
const project = Effect.gen(function*() {
  const server = yield* TestServer
  const key = yield* server.newKey()
  const auth = { "ttr-api-key": key }
  return {
    schedule: (headers: Record<string, string>, options: { readonly method?: string; readonly body?: string } = {}) =>
      Effect.map(
        server.call(options.method ?? "POST", "/schedule", {
          headers: { ...auth, ...headers },
          ...(options.body === undefined ? {} : { body: options.body })
        }),
        (response) => {
          assert.strictEqual(response.status, 200, response.text)
          return response.json() as { triggerId: string; scheduledAt: string; operation: string; kind: string }
        }
      ),
    cancel: (id: string) => server.call("DELETE", "/cancel", { headers: { ...auth, "ttr-trigger-id": id } }),
    job: (id: string) => Effect.map(server.call("GET", `/jobs/${id}`, { headers: auth }), (r) => r.json()),
    health: server.call("GET", "/health", { headers: auth })
  }
})

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("generators end to end", (it) => {
  it.effect("cron(*/5 * * * * *) delivers every 5 s on the 5-second beat with the generator's request; a cancel stops it", () =>
    Effect.gen(function*() {
      const p = yield* project
      const t = yield* target
      const before = Date.now()
      const created = yield* p.schedule({
        "ttr-url": `${t.origin}/tick?n=1`, "ttr-scheduled-at": "cron(*/5 * * * * *)", "ttr-retry-strategy": "none",
        "x-run": "gen", "content-type": "text/plain"
      }, { method: "PUT", body: "tick" })
      assert.strictEqual(created.kind, "generator")
      const firstMs = Date.parse(created.scheduledAt)
      assert.strictEqual(firstMs % PERIOD_MS, 0, created.scheduledAt)
      assert.isAbove(firstMs, before - 1_000)
      assert.isAtMost(firstMs, Date.now() + PERIOD_MS)

      const arrivals = yield* pollUntil("three deliveries", Effect.sync(() => (t.at("/tick").length >= 3 ? t.at("/tick") : undefined)), {
        deadlineMs: 3 * PERIOD_MS + 8_000
      })
      // cancel right after a delivery: the next instance is ~5 s away, so nothing is in flight
      const cancelled = yield* p.cancel(created.triggerId)
      assert.strictEqual(cancelled.status, 204, cancelled.text)
      const countAtCancel = t.at("/tick").length
      const cancelledAtMs = Date.now()

      const times = arrivals.slice(0, 3).map((a) => a.arrivedAtMs)
      assert.isAtLeast(times[0]!, firstMs, "the first delivery is not early")
      for (const at of times) {
        const lateness = at % PERIOD_MS
        assert.isBelow(lateness, MAX_LATENESS_MS, `arrival ${new Date(at).toISOString()} is on the 5-second beat`)
      }
      for (let i = 1; i < times.length; i++) {
        const gap = times[i]! - times[i - 1]!
        assert.isAtLeast(gap, 4_000, `gap ${i}: ${gap} ms`)
        assert.isAtMost(gap, 6_000, `gap ${i}: ${gap} ms`)
      }
      for (const arrival of arrivals.slice(0, 3)) {
        assert.strictEqual(arrival.method, "PUT")
        assert.strictEqual(arrival.url, "/tick?n=1")
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "x-run"), ["gen"])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "content-type"), ["text/plain"])
        assert.strictEqual(arrival.body.toString(), "tick")
      }

      // one instance per matching time, consecutive times, each delivered once
      const delivered = yield* pollUntil("three completed instances", Effect.map(instancesOf(created.triggerId), (rows) => {
        const completed = rows.filter((row) => row.status === "completed")
        return completed.length >= 3 ? completed : undefined
      }))
      assert.deepStrictEqual(
        delivered.slice(0, 3).map((row) => row.scheduled_at!.getTime()),
        [firstMs, firstMs + PERIOD_MS, firstMs + 2 * PERIOD_MS]
      )
      assert.strictEqual(new Set(delivered.map((row) => row.id)).size, delivered.length)

      // nothing more for over one period after the cancel
      yield* realSleep(Math.max(0, cancelledAtMs + PERIOD_MS + 1_500 - Date.now()))
      assert.strictEqual(t.at("/tick").length, countAtCancel)
      assert.strictEqual(yield* statusOf(created.triggerId), "cancelled")
      const after = yield* instancesOf(created.triggerId)
      assert.deepStrictEqual(after.filter((row) => row.status !== "completed" && row.status !== "cancelled"), [])
      assert.isNull((yield* p.job(created.triggerId)).scheduledAt)
    }))

  it.effect("cancelling the upcoming instance by its own id → a new instance for the same time appears within about 5 s", () =>
    Effect.gen(function*() {
      const p = yield* project
      // a daily time 12 hours away, so the day cannot roll over during the test
      const hour = (new Date().getUTCHours() + 12) % 24
      const created = yield* p.schedule({ "ttr-url": "http://127.0.0.1:9/never", "ttr-scheduled-at": `cron(0 ${hour} * * *)` })
      const [first] = yield* instancesOf(created.triggerId)
      assert.strictEqual(first!.status, "registered")
      assert.strictEqual(first!.scheduled_at?.toISOString(), created.scheduledAt)

      const cancelled = yield* p.cancel(first!.id)
      assert.strictEqual(cancelled.status, 204, cancelled.text)
      const cancelledAtMs = Date.now()
      const replacement = yield* pollUntil("a replacement instance", Effect.map(instancesOf(created.triggerId), (rows) =>
        rows.find((row) => row.status === "registered")), { everyMs: 100, deadlineMs: 8_000 })
      assert.isBelow(Date.now() - cancelledAtMs, 7_000)
      assert.notStrictEqual(replacement.id, first!.id)
      assert.strictEqual(replacement.scheduled_at?.toISOString(), created.scheduledAt)
      assert.strictEqual(yield* statusOf(first!.id), "cancelled")
      assert.strictEqual(yield* statusOf(created.triggerId), "active")
      const view = yield* p.job(created.triggerId)
      assert.strictEqual(view.status, "active")
      assert.strictEqual(view.scheduledAt, created.scheduledAt)
    }))

  it.effect("GET /health: ok, with a small materializerStaleMs", () =>
    Effect.gen(function*() {
      const p = yield* project
      const response = yield* p.health
      assert.strictEqual(response.status, 200, response.text)
      const body = response.json()
      assert.strictEqual(body.status, "ok")
      assert.isTrue(Number.isInteger(body.materializerStaleMs))
      assert.isBelow(body.materializerStaleMs, 10_000)
      assert.isBelow(body.schedulerStaleMs, 10_000)
    }))
})
