// The operators' listener (docs/operations.md "Operator endpoints and metrics"): plain HTTP, no
// credentials, only on the ops port.
// First the whole service: /livez, /readyz and /metrics scraped and parsed after real deliveries
// (created, outcomes by error kind and status class, lateness and duration histograms, gauges,
// Node's event-loop delay), with bounded labels only. Then the listener alone with heartbeats the
// test controls: /readyz turning 503 when the database was not reached or a loop went stale, HEAD,
// 404s, and what happens when its port is taken (the default one: a free port, said by a warning).
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Logger } from "effect"
import * as net from "node:net"
import { request } from "undici"
import { NodeIdentity } from "../../src/cluster/node.ts"
import { AppConfig, type AppConfigShape, loadConfig } from "../../src/config.ts"
import { Metrics, makeMetrics } from "../../src/metrics/metrics.ts"
import { OpsListener, OpsServerLive } from "../../src/ops/opsServer.ts"
import { Heartbeats, type LoopName } from "../../src/scheduler/heartbeats.ts"
import { ShardCount } from "../../src/store/db.ts"
import { SHARDS_IN_TESTS, TestDatabase } from "../support/database.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { closedPort, target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"

const get = (url: string, method = "GET") =>
  Effect.promise(async () => {
    const response = await request(url, { method })
    const text = await response.body.text()
    return { status: response.statusCode, headers: response.headers, text }
  })

interface Sample {
  readonly name: string
  readonly labels: Record<string, string>
  readonly value: number
}

/** The Prometheus text format, read independently of prom-client: one sample per line. */
const parseExposition = (text: string): Array<Sample> =>
  text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const pair of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!
    return { name: match[1]!, labels, value: Number(match[3]) }
  })

/** The sum of the samples of `name` whose labels include `labels`. */
const valueOf = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0)

const has = (samples: ReadonlyArray<Sample>, name: string) => samples.some((s) => s.name === name)

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("ops listener of the service", (it) => {
  it.effect("/livez and /readyz answer without credentials on the ops port; none of them on the API port", () =>
    Effect.gen(function*() {
      const ops = (yield* OpsListener).url!
      assert.match(ops, /^http:\/\/127\.0\.0\.1:\d+$/)
      const livez = yield* get(`${ops}/livez`)
      assert.deepStrictEqual([livez.status, JSON.parse(livez.text)], [200, { status: "ok" }])
      const readyz = yield* pollUntil("ready", Effect.map(get(`${ops}/readyz`), (r) => (r.status === 200 ? r : undefined)))
      assert.include(JSON.parse(readyz.text), { status: "ready", databaseReachable: true })
      const server = yield* TestServer
      for (const path of ["/livez", "/readyz", "/metrics"]) {
        assert.strictEqual((yield* server.call("GET", path)).status, 404, `${path} on the API port`)
      }
      assert.strictEqual((yield* get(`${ops}/health`)).status, 404)
      assert.strictEqual((yield* get(`${ops}/metrics`, "POST")).status, 404)
    }))

  it.effect("/metrics after real deliveries: counts by outcome, error kind and status class, histograms, gauges, bounded labels", () =>
    Effect.gen(function*() {
      const ops = (yield* OpsListener).url!
      const server = yield* TestServer
      const t = yield* target
      t.reply("/fail", { status: 500 })
      const refused = yield* closedPort
      const key = yield* server.newKey()
      const schedule = (url: string) =>
        Effect.map(
          server.call("POST", "/schedule", {
            headers: { "ttr-api-key": key, "ttr-url": url, "ttr-scheduled-at": "now", "ttr-retry-strategy": "none" }
          }),
          (r) => r.json().triggerId as string
        )
      const ids = [
        yield* schedule(`${t.origin}/ok`),
        yield* schedule(`${t.origin}/ok`),
        yield* schedule(`${t.origin}/fail`),
        yield* schedule(`http://127.0.0.1:${refused}/x`)
      ]
      const samples = yield* pollUntil("four deliveries counted", Effect.gen(function*() {
        const scraped = yield* get(`${ops}/metrics`)
        assert.strictEqual(scraped.status, 200)
        assert.match(String(scraped.headers["content-type"]), /^text\/plain; version=0\.0\.4/)
        const samples = parseExposition(scraped.text)
        return valueOf(samples, "timewheel_deliveries_total") >= 4 ? samples : undefined
      }), { deadlineMs: 20_000 })

      assert.strictEqual(valueOf(samples, "timewheel_triggers_created_total", { source: "schedule", kind: "job" }), 4)
      assert.strictEqual(valueOf(samples, "timewheel_deliveries_total", { outcome: "succeeded", error_kind: "none", status_class: "2xx" }), 2)
      assert.strictEqual(valueOf(samples, "timewheel_deliveries_total", { outcome: "dead_letter", error_kind: "none", status_class: "5xx" }), 1)
      assert.strictEqual(
        valueOf(samples, "timewheel_deliveries_total", { outcome: "dead_letter", error_kind: "connection_refused", status_class: "none" }),
        1
      )
      assert.strictEqual(valueOf(samples, "timewheel_delivery_lateness_seconds_count"), 4)
      assert.strictEqual(valueOf(samples, "timewheel_delivery_duration_seconds_count"), 4)
      assert.strictEqual(valueOf(samples, "timewheel_delivery_lateness_seconds_bucket", { le: "+Inf" }), 4)
      // claimed 10 ms ahead and sent at their time: well under a second late on an idle node
      assert.isAtLeast(valueOf(samples, "timewheel_delivery_lateness_seconds_bucket", { le: "1" }), 3)
      assert.strictEqual(valueOf(samples, "timewheel_shards"), SHARDS_IN_TESTS)
      assert.strictEqual(valueOf(samples, "timewheel_shards_owned"), SHARDS_IN_TESTS)
      assert.strictEqual(valueOf(samples, "timewheel_deliveries_in_flight"), 0)
      assert.strictEqual(valueOf(samples, "timewheel_deliveries_waiting"), 0)
      // how far behind the node sends: its latest send at its time, on time on an idle node (0 after a quiet second)
      assert.isTrue(has(samples, "timewheel_delivery_behind_seconds"), "the behind gauge")
      assert.isBelow(valueOf(samples, "timewheel_delivery_behind_seconds"), 1)
      assert.strictEqual(valueOf(samples, "timewheel_triggers_queued"), 0)
      assert.strictEqual(valueOf(samples, "timewheel_database_reachable"), 1)
      assert.strictEqual(valueOf(samples, "timewheel_database_connections_max"), 20)
      // the scrape's own query at least, and the shard-lock session
      assert.isAtLeast(valueOf(samples, "timewheel_database_connections", { state: "active" }), 1)
      assert.isAtLeast(valueOf(samples, "timewheel_database_connections"), 2)
      assert.isBelow(valueOf(samples, "timewheel_loop_stale_seconds", { loop: "scheduler" }), 30)
      assert.isTrue(has(samples, "nodejs_eventloop_lag_p99_seconds"), "event-loop delay")
      assert.isTrue(has(samples, "process_resident_memory_bytes"))
      // bounded labels: no trigger id, URL or project id anywhere
      const values = samples.flatMap((s) => Object.values(s.labels))
      for (const id of ids) assert.notInclude(values, id)
      assert.deepStrictEqual(values.filter((v) => /[0-9a-f]{8}-[0-9a-f]{4}-|:\/\//.test(v)), [])
    }))
})

/** Heartbeats the test sets: each loop's age and whether the database was reached. */
const controlledHeartbeats = () => {
  const state = { reachable: true, stale: { scheduler: 0, materializer: 0 } as Record<LoopName, number> }
  const layer = Layer.succeed(Heartbeats)({
    beat: () => Effect.void,
    staleMs: (loop) => Effect.sync(() => state.stale[loop]),
    databaseReached: (reached) => Effect.sync(() => void (state.reachable = reached)),
    databaseReachable: Effect.sync(() => state.reachable)
  })
  return { state, layer }
}

/** Builds the listener alone (with `heartbeats`) in the current scope; its URL, null when it has none. */
const buildListener = (env: Record<string, string>, heartbeats: Layer.Layer<Heartbeats>, override: Partial<AppConfigShape> = {}) =>
  Effect.map(
    Layer.build(OpsServerLive({ poolConnections: 3 }).pipe(
      Layer.provide(Layer.mergeAll(
        Layer.succeed(AppConfig)({ ...loadConfig({ OPS_HOST: "127.0.0.1", ...env }), ...override }),
        heartbeats,
        Layer.succeed(NodeIdentity)({ id: "ops-test-node" }),
        Layer.succeed(ShardCount)({ count: 4 }),
        Layer.succeed(Metrics)(makeMetrics())
      ))
    )),
    (context) => Context.get(context, OpsListener).url
  )

/** A loopback port held by another listener for the scope's lifetime. */
const occupied = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<net.Server>((resolve) => {
      const server = net.createServer()
      server.listen({ port: 0, host: "127.0.0.1" }, () => resolve(server))
    })),
  (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
).pipe(Effect.map((server) => (server.address() as net.AddressInfo).port))

layer(TestDatabase, { timeout: "60 seconds", excludeTestServices: true })("ops listener alone", (it) => {
  it.effect("/readyz: 503 while the database was not reached, or a loop has not run for over 30 s; HEAD; 404 elsewhere", () =>
    Effect.scoped(Effect.gen(function*() {
      const heartbeats = controlledHeartbeats()
      const ops = (yield* buildListener({ OPS_PORT: "0" }, heartbeats.layer))!
      const readyz = () => Effect.map(get(`${ops}/readyz`), (r) => ({ status: r.status, body: JSON.parse(r.text) }))
      assert.deepStrictEqual(yield* readyz(), {
        status: 200,
        body: { status: "ready", databaseReachable: true, schedulerStaleMs: 0, materializerStaleMs: 0 }
      })
      heartbeats.state.reachable = false
      assert.deepStrictEqual(yield* readyz(), {
        status: 503,
        body: { status: "not ready", databaseReachable: false, schedulerStaleMs: 0, materializerStaleMs: 0 }
      })
      heartbeats.state.reachable = true
      heartbeats.state.stale.materializer = 30_001
      assert.strictEqual((yield* readyz()).status, 503)
      heartbeats.state.stale.materializer = 30_000
      assert.strictEqual((yield* readyz()).status, 200)
      heartbeats.state.stale.scheduler = 45_000
      assert.strictEqual((yield* readyz()).status, 503)
      heartbeats.state.stale.scheduler = 0
      const head = yield* get(`${ops}/readyz`, "HEAD")
      assert.deepStrictEqual([head.status, head.text], [200, ""])
      assert.strictEqual((yield* get(`${ops}/livez?x=1`)).status, 200)
      assert.strictEqual((yield* get(`${ops}/`)).status, 404)
      assert.strictEqual((yield* get(`${ops}/metricsx`)).status, 404)
      // read from this database: no connection carries this node's name
      const samples = parseExposition((yield* get(`${ops}/metrics`)).text)
      assert.strictEqual(valueOf(samples, "timewheel_database_connections"), 0)
      assert.strictEqual(valueOf(samples, "timewheel_database_connections_max"), 3)
      assert.strictEqual(valueOf(samples, "timewheel_shards"), 4)
      assert.strictEqual(valueOf(samples, "timewheel_triggers_queued"), 0)
    })))

  it.effect("the default port taken: a free port instead, said by a warning naming it; OPS_PORT set to a taken port fails the start; off: none", () =>
    Effect.scoped(Effect.gen(function*() {
      const taken = yield* occupied
      // OPS_PORT unset (the default port): not required; this node's endpoints move to a free port, said loudly
      const warnings: Array<string> = []
      const collector = Logger.make((options) => {
        if (options.logLevel === "Warn") warnings.push(String(Array.isArray(options.message) ? options.message.join(" ") : options.message))
      })
      const url = yield* buildListener({}, controlledHeartbeats().layer, { opsPort: taken }).pipe(Effect.provide(Logger.layer([collector])))
      assert.isNotNull(url)
      const port = Number(new URL(url!).port)
      assert.notStrictEqual(port, taken)
      assert.strictEqual((yield* get(`${url}/livez`)).status, 200)
      assert.deepStrictEqual(warnings, [
        `ops port ${taken} is taken by another process (another timewheel on this host?): this node's /livez, /readyz and /metrics ` +
        `are on http://127.0.0.1:${port} instead, and http://127.0.0.1:${taken} is not this node; set OPS_PORT to choose the port`
      ])
      const explicit = yield* Effect.exit(Effect.scoped(buildListener({ OPS_PORT: String(taken) }, controlledHeartbeats().layer)))
      assert.isTrue(Exit.isFailure(explicit), "an OPS_PORT that is taken fails the start")
      assert.isNull(yield* buildListener({ OPS_PORT: "off" }, controlledHeartbeats().layer))
    })))
})
