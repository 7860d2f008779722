// The whole service as one layer: configuration, database (migrated), heartbeats, the HTTPS API and
// the background roles (shard manager with its actors, delivery, the bulk actions' worker).
// `npm start` launches it; the test helpers build it in-process.
import * as Formatter from "effect/Formatter"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"
import * as Logger from "effect/Logger"
import * as References from "effect/References"
import type { LogLevel } from "effect/LogLevel"
import { DashboardSessionsLive } from "./api/dashboardSessions.ts"
import { HttpsServerLive } from "./api/server.ts"
import { NodeIdentity } from "./cluster/node.ts"
import { ApiKeyCache } from "./commands/apiKeyCache.ts"
import { BulkActionRunner } from "./commands/bulkActionRunner.ts"
import { InsertBatcher } from "./commands/insertBatcher.ts"
import { QuotaBatcher } from "./commands/quotaBatcher.ts"
import { AppConfig, type AppConfigShape, type LogLevelName } from "./config.ts"
import { DispatcherLive } from "./delivery/dispatcherLive.ts"
import { Executor } from "./delivery/executor.ts"
import { DashboardJobs } from "./jobs/dashboardJobs.ts"
import { ClaimBatcher } from "./scheduler/claimBatcher.ts"
import { MarkBatcher } from "./scheduler/markBatcher.ts"
import { Heartbeats } from "./scheduler/heartbeats.ts"
import { HousekeepingLive } from "./scheduler/housekeeping.ts"
import { Gatekeeper } from "./gates/gatekeeper.ts"
import { TagPolicyCache } from "./gates/tagPolicyCache.ts"
import { TargetPolicyCache } from "./gates/targetPolicyCache.ts"
import { ShardManagerLive } from "./scheduler/shardManager.ts"
import { WakeRouterLive } from "./scheduler/wakeRouter.ts"
import { Metrics, makeMetrics } from "./metrics/metrics.ts"
import { OpsServerLive } from "./ops/opsServer.ts"
import { apiTracingLayer, tracingLayer } from "./ops/tracing.ts"
import { DatabaseLive, ShardCount } from "./store/db.ts"
import { nodeApplicationName } from "./store/nodePresence.ts"
import { Notifications } from "./store/notifications.ts"
import { encryptionKeysLayer } from "./store/sealedRequests.ts"

const LOG_LEVEL: Record<LogLevelName, LogLevel> = {
  all: "All", trace: "Trace", debug: "Debug", info: "Info", warn: "Warn", error: "Error", fatal: "Fatal", none: "None"
}

/**
 * LOG_FORMAT=json: one JSON object per line on stdout — `timestamp`, `level`, `node` (this node's
 * id), `message`, then the line's annotations (`event` and its fields, e.g. `shards`), and `cause`
 * when there is one (its text, newlines escaped).
 */
const jsonLogger = (node: string) =>
  Logger.withConsoleLog(Logger.map(Logger.formatStructured, (entry) => {
    const line: Record<string, unknown> = { timestamp: entry.timestamp, level: entry.level, node, message: entry.message }
    for (const [key, value] of Object.entries(entry.annotations)) if (!(key in line)) line[key] = value
    if (entry.cause !== undefined) line.cause = entry.cause
    return Formatter.formatJson(line)
  }))

/**
 * Logging at the configured level and format (logfmt text, or JSON lines carrying `node`); tracing
 * spans off: every HTTP request and SQL statement would otherwise build one. With tracing on
 * (ops/tracing.ts) the API's requests turn them on for themselves, and delivery makes its own.
 */
export const loggingLayer = (config: AppConfigShape, node: string) =>
  Layer.mergeAll(
    Logger.layer([config.logFormat === "json" ? jsonLogger(node) : Logger.consoleLogFmt]),
    Layer.succeed(References.MinimumLogLevel)(LOG_LEVEL[config.logLevel]),
    Layer.succeed(References.TracerEnabled)(false)
  )

/** Connections of a node's pool (its shard-lock session and LISTENs included). */
const POOL_CONNECTIONS = 20

export interface ServiceOptions {
  /** Connect timeout of deliveries (docs/retries.md "Timeouts": a fixed 10 s); tests may shorten it. */
  readonly connectTimeoutMs?: number
  /** This node's id (else a random UUID): main.ts passes it to log its own lines with it. */
  readonly nodeId?: string
}

export const ServiceLive = (
  config: AppConfigShape,
  tls: { readonly cert: string; readonly key: string },
  options: ServiceOptions = {}
) => {
  const node = options.nodeId ?? crypto.randomUUID()
  // every connection of the node announces it (store/nodePresence.ts)
  const database = DatabaseLive(config, { applicationName: nodeApplicationName(node), maxConnections: POOL_CONNECTIONS }).pipe(
    Layer.provideMerge(Layer.succeed(AppConfig)(config))
  )
  // stored headers and bodies sealed with ENCRYPTION_KEYS; a key missing for stored rows stops the start
  const stored = encryptionKeysLayer(config.encryptionKeys).pipe(Layer.provideMerge(database))
  const notifications = Notifications.layer.pipe(Layer.provideMerge(stored))
  const core = Layer.mergeAll(
    ShardCount.layer,
    Heartbeats.layer,
    DashboardSessionsLive,
    DashboardJobs.layer,
    ApiKeyCache.layer,
    TagPolicyCache.layer,
    TargetPolicyCache.layer,
    Layer.succeed(NodeIdentity)({ id: node }),
    Layer.succeed(Metrics)(makeMetrics()),
    QuotaBatcher.layer,
    InsertBatcher.layer,
    WakeRouterLive,
    Executor.layer({
      blockPrivateTargets: config.blockPrivateTargets,
      ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs })
    })
  ).pipe(Layer.provideMerge(notifications))
  const gates = Gatekeeper.layer.pipe(Layer.provideMerge(core))
  const delivery = Layer.mergeAll(DispatcherLive, ClaimBatcher.layer, MarkBatcher.layer).pipe(Layer.provideMerge(gates))
  const scheduler = Layer.mergeAll(ShardManagerLive, HousekeepingLive, BulkActionRunner.layer).pipe(Layer.provideMerge(delivery))
  return Layer.mergeAll(
    HttpsServerLive(tls).pipe(Layer.provide(apiTracingLayer(config.tracing))),
    OpsServerLive({ poolConnections: POOL_CONNECTIONS })
  ).pipe(
    Layer.provideMerge(scheduler),
    Layer.provide(tracingLayer(config.tracing)),
    Layer.provide(loggingLayer(config, node))
  )
}
