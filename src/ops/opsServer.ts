// The operators' listener: plain HTTP on OPS_HOST:OPS_PORT (loopback by default), apart from the HTTPS
// API, without credentials. GET /livez: the process runs (200). GET /readyz: 200 while the scheduler's
// last turn reached the database and its loops ran in the last 30 s, else 503 (for load balancers and
// orchestrators; the API's /health keeps its behaviour, docs/reading.md). GET /metrics: the Prometheus
// text format (metrics/metrics.ts and Node's process metrics); the few values that live in PostgreSQL are
// read once per scrape. Anything else: 404. OPS_PORT set and unavailable stops the start; the default
// port taken (a second node on the host) moves the listener to a free port, said by a warning naming it
// (docs/operations.md, "Operator endpoints and metrics"), so a quick start's request to 127.0.0.1:9464
// reaching another process is explained.
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as http from "node:http"
import type * as net from "node:net"
import { NodeIdentity } from "../cluster/node.ts"
import { AppConfig } from "../config.ts"
import { Heartbeats, STALE_AFTER_MS } from "../scheduler/heartbeats.ts"
import { type Database, ShardCount } from "../store/db.ts"
import { opsDatabaseRead } from "../store/opsReads.ts"
import { Metrics, processMetrics } from "../metrics/metrics.ts"

/** How long a scrape waits for the database before answering without its values. */
const DATABASE_READ_TIMEOUT = "2 seconds"

export interface OpsServerOptions {
  /** The most connections the node's pool opens (reported as timewheel_database_connections_max). */
  readonly poolConnections: number
}

const json = (res: http.ServerResponse, status: number, body: unknown, head: boolean) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), "cache-control": "no-store" })
  res.end(head ? undefined : text)
}

const listen = (server: http.Server, port: number, host: string) =>
  Effect.callback<net.AddressInfo, Error>((resume) => {
    const onError = (error: Error) => resume(Effect.fail(error))
    server.once("error", onError)
    server.listen({ port, host }, () => {
      server.off("error", onError)
      resume(Effect.succeed(server.address() as net.AddressInfo))
    })
  })

const close = (server: http.Server) =>
  Effect.promise(() =>
    new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    }))

/** Where the ops listener listens: `http://host:port`, or null when there is none. */
export class OpsListener extends Context.Service<OpsListener, { readonly url: string | null }>()("timewheel/OpsListener") {}

export const OpsServerLive = (options: OpsServerOptions) =>
  Layer.effect(OpsListener, Effect.gen(function*() {
    const config = yield* AppConfig
    if (config.opsPort === null) return OpsListener.of({ url: null })
    const metrics = yield* Metrics
    const heartbeats = yield* Heartbeats
    const node = (yield* NodeIdentity).id
    const shards = (yield* ShardCount).count
    const services = yield* Effect.context<Database>()
    const nodeProcess = processMetrics()
    metrics.gauges.shards.set(shards)
    metrics.gauges.databaseConnectionsMax.set(options.poolConnections)

    const readiness = Effect.gen(function*() {
      const databaseReachable = yield* heartbeats.databaseReachable
      const schedulerStaleMs = yield* heartbeats.staleMs("scheduler")
      const materializerStaleMs = yield* heartbeats.staleMs("materializer")
      const ready = databaseReachable && schedulerStaleMs <= STALE_AFTER_MS && materializerStaleMs <= STALE_AFTER_MS
      return { status: ready ? "ready" : "not ready", databaseReachable, schedulerStaleMs, materializerStaleMs }
    })

    /** Sets the gauges read from the heartbeats and the database, then renders every metric. */
    const scrape = Effect.gen(function*() {
      const state = yield* readiness
      metrics.gauges.databaseReachable.set(state.databaseReachable ? 1 : 0)
      metrics.gauges.loopStaleSeconds.set({ loop: "scheduler" }, state.schedulerStaleMs / 1000)
      metrics.gauges.loopStaleSeconds.set({ loop: "materializer" }, state.materializerStaleMs / 1000)
      const database = yield* opsDatabaseRead(node).pipe(
        Effect.provideContext(services),
        Effect.timeoutOption(DATABASE_READ_TIMEOUT),
        Effect.catchCause(() => Effect.succeedNone)
      )
      if (database._tag === "Some") {
        metrics.gauges.queued.set(database.value.queued)
        for (const [state, count] of Object.entries(database.value.connections)) {
          metrics.gauges.databaseConnections.set({ state }, count)
        }
      } else {
        metrics.gauges.queued.set(Number.NaN)
        metrics.gauges.databaseConnections.reset()
      }
      const [own, processText] = yield* Effect.promise(() => Promise.all([metrics.registry.metrics(), nodeProcess.metrics()]))
      return processText + own
    })

    const handle = (req: http.IncomingMessage, res: http.ServerResponse) => {
      const head = req.method === "HEAD"
      const path = (req.url ?? "/").split("?")[0]
      if ((req.method !== "GET" && !head) || (path !== "/livez" && path !== "/readyz" && path !== "/metrics")) {
        res.writeHead(404, { "content-length": 0 })
        res.end()
        return
      }
      if (path === "/livez") return json(res, 200, { status: "ok" }, head)
      if (path === "/readyz") {
        const state = Effect.runSync(readiness)
        return json(res, state.status === "ready" ? 200 : 503, state, head)
      }
      Effect.runPromise(scrape).then(
        (text) => {
          res.writeHead(200, { "content-type": metrics.registry.contentType, "cache-control": "no-store" })
          res.end(head ? undefined : text)
        },
        (error: unknown) => {
          res.writeHead(500, { "content-type": "text/plain" })
          res.end(`metrics failed: ${String(error)}\n`)
        }
      )
    }

    const server = http.createServer({ maxHeaderSize: 16 * 1024 }, handle)
    server.keepAliveTimeout = 65_000
    const urlOf = (port: number) => `http://${config.opsHost.includes(":") ? `[${config.opsHost}]` : config.opsHost}:${port}`
    const codeOf = (error: Error) => (error as NodeJS.ErrnoException).code ?? error.message
    const where = `${config.opsHost}:${config.opsPort}`
    const bound = yield* Effect.acquireRelease(
      Effect.result(listen(server, config.opsPort, config.opsHost)),
      () => close(server)
    )
    if (bound._tag === "Success") {
      yield* Effect.logInfo(`timewheel ops listening on ${urlOf(bound.success.port)}`)
      return OpsListener.of({ url: urlOf(bound.success.port) })
    }
    if (config.opsPortRequired) return yield* Effect.die(new Error(`cannot listen for operators on ${where} (${codeOf(bound.failure)})`))
    // the default port taken: a free one, said loudly
    const moved = codeOf(bound.failure) === "EADDRINUSE" ? yield* Effect.result(listen(server, 0, config.opsHost)) : undefined
    if (moved === undefined || moved._tag === "Failure") {
      yield* Effect.logWarning(`no ops listener: ${where} is not available (${codeOf(bound.failure)}); set OPS_PORT to another port, 0 for a free one, or off`)
      return OpsListener.of({ url: null })
    }
    const url = urlOf(moved.success.port)
    yield* Effect.logWarning(
      `ops port ${config.opsPort} is taken by another process (another timewheel on this host?): this node's /livez, /readyz and /metrics ` +
        `are on ${url} instead, and ${urlOf(config.opsPort)} is not this node; set OPS_PORT to choose the port`
    ).pipe(Effect.annotateLogs({ event: "ops_port_taken", port: moved.success.port }))
    return OpsListener.of({ url })
  }))
