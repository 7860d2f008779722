// Tracing through the delay (docs/tracing.md), against a local OTLP/HTTP receiver
// (test/support/otlpReceiver.ts) whose spans are decoded and checked: every API call has a server span
// continuing the caller's `traceparent`; the trigger keeps that call's trace context (its server span,
// and the caller's `tracestate`); each delivery attempt is a client span, child of it, with the target
// host and port, the attempt number, the lateness and the status or error kind; the recording of its
// outcome is a child of the attempt; the target receives the attempt's `traceparent` and the stored
// `tracestate`. /declare and /bulk store their call's context; a generator's instances start traces of
// their own, linked to the call that made the generator. Tracing off (no endpoint): no context stored,
// a `traceparent` sent to /schedule is forwarded as any stored header.
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as crypto from "node:crypto"
import { ATTEMPT_SPAN, RECORD_SPAN } from "../../src/delivery/attemptTracing.ts"
import { type OtlpReceiver, otlpReceiver, type ReceivedSpan } from "../support/otlpReceiver.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { arrivalsAt, closedPort, headerValues, target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"

class Receiver extends Context.Service<Receiver, OtlpReceiver>()("test/OtlpReceiver") {}

const tracedService = Layer.unwrap(Effect.map(otlpReceiver, (receiver) =>
  Layer.merge(
    testServerLayer({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "timewheel-under-test",
      OTEL_BSP_SCHEDULE_DELAY: "100"
    }),
    Layer.succeed(Receiver)(receiver)
  )))

const hex = (bytes: number) => crypto.randomBytes(bytes).toString("hex")

/** A caller's own span: what its `traceparent` names. */
const callerContext = () => {
  const traceId = hex(16)
  const spanId = hex(8)
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` }
}

const spansWhere = (count: number, label: string, predicate: (span: ReceivedSpan) => boolean) =>
  Effect.flatMap(Receiver, (receiver) =>
    pollUntil(`${count} ${label} spans`, Effect.sync(() => {
      const found = receiver.spans.filter(predicate)
      return found.length >= count ? found : undefined
    }), { deadlineMs: 20_000 }))

const storedContext = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ traceparent: string | null; tracestate: string | null }>`SELECT traceparent, tracestate FROM triggers WHERE id = ${id}`,
      (rows) => rows[0]!))

const post = (path: string, headers: Record<string, string>, body?: string) =>
  Effect.flatMap(TestServer, (server) =>
    Effect.map(server.call("POST", path, { headers, ...(body === undefined ? {} : { body }) }), (response) => {
      assert.strictEqual(response.status, 200, response.text)
      return response.json()
    }))

layer(tracedService, { timeout: "120 seconds", excludeTestServices: true })("tracing on", (it) => {
  it.effect("/schedule → server span (child of the caller) → stored context → attempt span (its child) → record span; the target gets the attempt's traceparent", () =>
    Effect.gen(function*() {
      const t = yield* target
      const key = yield* (yield* TestServer).newKey()
      const caller = callerContext()
      const { triggerId } = yield* post("/schedule", {
        "ttr-api-key": key, "ttr-url": `${t.origin}/traced`, "ttr-scheduled-at": "now",
        traceparent: caller.traceparent, tracestate: "vendor=abc,other=1"
      }, "hello")
      const [server] = yield* spansWhere(1, "server", (span) => span.kind === 2 && span.parentSpanId === caller.spanId)
      assert.strictEqual(server!.traceId, caller.traceId)
      assert.strictEqual(server!.serviceName, "timewheel-under-test")
      assert.strictEqual(server!.attributes["http.request.method"], "POST")
      assert.strictEqual(server!.attributes["http.response.status_code"], 200)
      assert.deepStrictEqual(yield* storedContext(triggerId), {
        traceparent: `00-${caller.traceId}-${server!.spanId}-01`, tracestate: "vendor=abc,other=1"
      })

      const [attempt] = yield* spansWhere(1, "attempt", (span) => span.name === ATTEMPT_SPAN && span.attributes["timewheel.trigger.id"] === triggerId)
      assert.strictEqual(attempt!.traceId, caller.traceId)
      assert.strictEqual(attempt!.parentSpanId, server!.spanId)
      assert.strictEqual(attempt!.kind, 3)
      assert.strictEqual(attempt!.statusCode, 1)
      const port = Number(new URL(t.origin).port)
      assert.deepStrictEqual(
        [attempt!.attributes["server.address"], attempt!.attributes["server.port"], attempt!.attributes["http.request.method"],
          attempt!.attributes["http.response.status_code"], attempt!.attributes["timewheel.attempt"]],
        ["127.0.0.1", port, "POST", 200, 1]
      )
      assert.isAtLeast(attempt!.attributes["timewheel.lateness_ms"] as number, 0)
      assert.isUndefined(attempt!.attributes["error.type"])

      const [arrival] = yield* arrivalsAt(t, "/traced", 1)
      assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "traceparent"), [`00-${caller.traceId}-${attempt!.spanId}-01`])
      assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "tracestate"), ["vendor=abc,other=1"])

      const [record] = yield* spansWhere(1, "record", (span) => span.name === RECORD_SPAN && span.parentSpanId === attempt!.spanId)
      assert.strictEqual(record!.traceId, caller.traceId)
      assert.deepStrictEqual([record!.attributes["timewheel.outcome"], record!.attributes["timewheel.attempt"]], ["succeeded", 1])
    }))

  it.effect("every attempt of a retried trigger is a child of the same call: status 503 then the error kind, each recorded", () =>
    Effect.gen(function*() {
      const t = yield* target
      t.reply("/flaky", { status: 503 })
      const key = yield* (yield* TestServer).newKey()
      const refused = yield* closedPort
      const caller = callerContext()
      const retry = { "ttr-retry-strategy": "fixed", "ttr-retry-initial-delay": "0", "ttr-retry-max-attempts": "2" }
      const flaky = yield* post("/schedule", { "ttr-api-key": key, "ttr-url": `${t.origin}/flaky`, "ttr-scheduled-at": "now", traceparent: caller.traceparent, ...retry })
      const closed = yield* post("/schedule", { "ttr-api-key": key, "ttr-url": `http://127.0.0.1:${refused}/`, "ttr-scheduled-at": "now", ...retry })

      const [server] = yield* spansWhere(1, "server", (span) => span.kind === 2 && span.parentSpanId === caller.spanId)
      const attempts = yield* spansWhere(2, "attempt", (span) => span.name === ATTEMPT_SPAN && span.attributes["timewheel.trigger.id"] === flaky.triggerId)
      assert.deepStrictEqual(attempts.map((span) => span.attributes["timewheel.attempt"]).sort(), [1, 2])
      for (const span of attempts) {
        assert.strictEqual(span.parentSpanId, server!.spanId)
        assert.strictEqual(span.attributes["http.response.status_code"], 503)
        assert.strictEqual(span.statusCode, 2)
      }
      const records = yield* spansWhere(2, "record", (span) => span.name === RECORD_SPAN && attempts.some((a) => a.spanId === span.parentSpanId))
      assert.deepStrictEqual(records.map((span) => span.attributes["timewheel.outcome"]).sort(), ["dead_letter", "retrying"])
      const arrivals = yield* arrivalsAt(t, "/flaky", 2)
      assert.deepStrictEqual(
        arrivals.map((a) => headerValues(a.rawHeaders, "traceparent")[0]).sort(),
        attempts.map((span) => `00-${caller.traceId}-${span.spanId}-01`).sort()
      )

      // a call without a traceparent starts its own trace: its attempts are children of its server span
      const failed = yield* spansWhere(2, "refused attempt", (span) => span.name === ATTEMPT_SPAN && span.attributes["timewheel.trigger.id"] === closed.triggerId)
      const context = yield* storedContext(closed.triggerId)
      for (const span of failed) {
        assert.strictEqual(span.attributes["error.type"], "connection_refused")
        assert.isUndefined(span.attributes["http.response.status_code"])
        assert.strictEqual(`00-${span.traceId}-${span.parentSpanId}-01`, context.traceparent)
      }
    }))

  it.effect("/declare and /bulk store their call's context; a generator's instance starts its own trace, linked to the call", () =>
    Effect.gen(function*() {
      const t = yield* target
      const key = yield* (yield* TestServer).newKey()
      const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" }
      const sql = yield* SqlClient.SqlClient
      const declareCaller = callerContext()
      yield* post("/declare", { ...auth, traceparent: declareCaller.traceparent },
        JSON.stringify({ tag: "traced", items: [{ customKey: "d", url: `${t.origin}/declared`, scheduledAt: "2099-01-01" }] }))
      const bulkCaller = callerContext()
      yield* post("/bulk", { ...auth, traceparent: bulkCaller.traceparent },
        JSON.stringify({ upserts: [{ customKey: "b", url: `${t.origin}/bulk`, scheduledAt: "2099-01-01" }], cancels: [] }))
      for (const [customKey, caller] of [["d", declareCaller], ["b", bulkCaller]] as const) {
        const [server] = yield* spansWhere(1, "server", (span) => span.kind === 2 && span.parentSpanId === caller.spanId)
        const [row] = yield* sql<{ traceparent: string }>`SELECT traceparent FROM triggers WHERE custom_key = ${customKey}`
        assert.strictEqual(row!.traceparent, `00-${caller.traceId}-${server!.spanId}-01`)
      }

      const generatorCaller = callerContext()
      const generator = yield* post("/schedule", {
        "ttr-api-key": key, "ttr-url": `${t.origin}/every-second`, "ttr-scheduled-at": "cron(* * * * * *)", traceparent: generatorCaller.traceparent
      })
      const [server] = yield* spansWhere(1, "server", (span) => span.kind === 2 && span.parentSpanId === generatorCaller.spanId)
      const [instanceAttempt] = yield* spansWhere(1, "instance attempt", (span) =>
        span.name === ATTEMPT_SPAN && span.attributes["timewheel.generator.id"] === generator.triggerId)
      assert.isUndefined(instanceAttempt!.parentSpanId)
      assert.notStrictEqual(instanceAttempt!.traceId, generatorCaller.traceId)
      assert.deepStrictEqual(instanceAttempt!.links, [{ traceId: generatorCaller.traceId, spanId: server!.spanId }])
      const [arrival] = yield* arrivalsAt(t, "/every-second", 1)
      const sent = headerValues(arrival!.rawHeaders, "traceparent")[0]!
      assert.match(sent, new RegExp(`^00-${instanceAttempt!.traceId}-[0-9a-f]{16}-01$`))
      const cancelled = yield* (yield* TestServer).call("DELETE", "/cancel", { headers: { "ttr-api-key": key, "ttr-trigger-id": generator.triggerId } })
      assert.strictEqual(cancelled.status, 204, cancelled.text)
    }))

  it.effect("a read (GET /jobs) is a server span too; the spans go to /v1/traces of the endpoint", () =>
    Effect.gen(function*() {
      const key = yield* (yield* TestServer).newKey()
      const caller = callerContext()
      const response = yield* (yield* TestServer).call("GET", "/jobs", { headers: { authorization: `Bearer ${key}`, traceparent: caller.traceparent } })
      assert.strictEqual(response.status, 200)
      const [server] = yield* spansWhere(1, "server", (span) => span.kind === 2 && span.parentSpanId === caller.spanId)
      assert.strictEqual(server!.attributes["http.request.method"], "GET")
      assert.deepStrictEqual([...new Set((yield* Receiver).paths)], ["/v1/traces"])
    }))
})

layer(testServerLayer(), { timeout: "60 seconds", excludeTestServices: true })("tracing off (no OTLP endpoint)", (it) => {
  it.effect("no context is stored, and a traceparent sent to /schedule is forwarded as a stored header", () =>
    Effect.gen(function*() {
      const t = yield* target
      const key = yield* (yield* TestServer).newKey()
      const caller = callerContext()
      const { triggerId } = yield* post("/schedule", {
        "ttr-api-key": key, "ttr-url": `${t.origin}/untraced`, "ttr-scheduled-at": "now", traceparent: caller.traceparent
      })
      assert.deepStrictEqual(yield* storedContext(triggerId), { traceparent: null, tracestate: null })
      const [arrival] = yield* arrivalsAt(t, "/untraced", 1)
      assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "traceparent"), [caller.traceparent])
    }))
})
