// `npm start`: reads the settings (a bad one stops the start with one line, exit 1), then runs every
// role of timewheel in this process until SIGTERM/SIGINT, which shuts it down gracefully.
import "./nodeVersion.ts" // first: before any package loads
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import * as crypto from "node:crypto"
import { HttpServer } from "effect/http"
import { loadTls } from "./api/tls.ts"
import { ConfigError, loadConfig } from "./config.ts"
import { EncryptionKeysMissing } from "./domain/sealing.ts"
import { loggingLayer, ServiceLive } from "./service.ts"

const fatal = (message: string): never => {
  process.stderr.write(`timewheel: ${message}\n`)
  process.exit(1)
}

const config = (() => {
  try {
    return loadConfig(process.env)
  } catch (error) {
    return fatal(error instanceof ConfigError ? error.message : String(error))
  }
})()

const tls = await loadTls(config).catch((error: unknown) => fatal(`cannot prepare TLS in ${config.dataDir}/tls: ${String(error)}`))

/** This node's id: every connection announces it (node presence), and every JSON log line carries it. */
const node = crypto.randomUUID()

/** The start line once the API listens; the stop begins when it is released (first, before the service). */
const announce = Layer.effectDiscard(Effect.gen(function*() {
  const server = yield* HttpServer.HttpServer
  const port = "port" in server.address ? server.address.port : config.port
  yield* Effect.log(`timewheel listening on https://${config.host}:${port}`).pipe(
    Effect.annotateLogs({ event: "start", host: config.host, port })
  )
  yield* Effect.addFinalizer(() =>
    Effect.log("timewheel stopping: no new claims, shards handed over, deliveries in flight finished").pipe(
      Effect.annotateLogs({ event: "stop" })
    )
  )
}))

/** A shutdown asked for by SIGTERM/SIGINT that completed cleanly is a success (exit 0). */
const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)

const stopped = Effect.log("timewheel stopped").pipe(Effect.annotateLogs({ event: "stopped" }))

NodeRuntime.runMain(
  Layer.launch(announce.pipe(Layer.provideMerge(ServiceLive(config, tls, { nodeId: node })))).pipe(
    // a refusal to start is one line, like a bad setting
    Effect.catchIf((error) => error instanceof EncryptionKeysMissing, (error) => Effect.sync(() => fatal(error.message))),
    Effect.ensuring(stopped),
    Effect.provide(loggingLayer(config, node))
  ),
  { teardown }
)
