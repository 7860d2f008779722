// The whole service as one layer: configuration, database (migrated), heartbeats, the HTTPS API and
// the background roles. `npm start` launches it; the test helpers build it in-process.
import { Layer, Logger, References } from "effect"
import type { LogLevel } from "effect/LogLevel"
import { DashboardSessions } from "./api/auth.ts"
import { HttpsServerLive } from "./api/server.ts"
import { AppConfig, type AppConfigShape, type LogLevelName } from "./config.ts"
import { Heartbeats } from "./scheduler/heartbeats.ts"
import { DatabaseLive } from "./store/db.ts"

const LOG_LEVEL: Record<LogLevelName, LogLevel> = {
  all: "All", trace: "Trace", debug: "Debug", info: "Info", warn: "Warn", error: "Error", fatal: "Fatal", none: "None"
}

export const loggingLayer = (config: AppConfigShape) =>
  Layer.mergeAll(
    Logger.layer([Logger.consoleLogFmt]),
    Layer.succeed(References.MinimumLogLevel)(LOG_LEVEL[config.logLevel])
  )

export const ServiceLive = (config: AppConfigShape, tls: { readonly cert: string; readonly key: string }) => {
  const base = Layer.mergeAll(
    DatabaseLive({ applicationName: "timewheel", maxConnections: 20 }),
    Heartbeats.layer,
    DashboardSessions.none
  ).pipe(Layer.provideMerge(Layer.succeed(AppConfig)(config)))
  return HttpsServerLive(tls).pipe(Layer.provideMerge(base), Layer.provide(loggingLayer(config)))
}
