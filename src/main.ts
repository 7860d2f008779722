// `npm start`: reads the settings (a bad one stops the start with one line, exit 1), then runs every
// role of timewheel in this process until SIGTERM/SIGINT, which shuts it down gracefully. Once it
// listens it says where the dashboard is and what a newcomer does next (commands/firstSteps.ts); a
// start that fails before that ends with one line saying what to do (startupFailure.ts), exit 1.
import "./nodeVersion.ts" // first: before any package loads
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import * as crypto from "node:crypto"
import * as net from "node:net"
import { HttpServer } from "effect/http"
import { loadTls } from "./api/tls.ts"
import { ConfigError, loadConfig } from "./config.ts"
import { startupGuidance } from "./commands/firstSteps.ts"
import { tracingStartLine } from "./ops/tracing.ts"
import { loggingLayer, ServiceLive } from "./service.ts"
import { startupFailureLine } from "./startupFailure.ts"
import { enableStageTrace } from "./lib/stageTrace.ts"

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

// lateness diagnostics, off unless asked for (lib/stageTrace.ts)
if (process.env.STAGE_TRACE_FILE) enableStageTrace(process.env.STAGE_TRACE_FILE)

const tls = await loadTls(config).catch((error: unknown) => fatal(`cannot prepare TLS in ${config.dataDir}/tls: ${String(error)}`))

/**
 * The API's address taken (a second `npm start` here), or not ours to take, is found before the
 * database starts: the one line comes out alone, with no shutdown of half-started roles before it.
 */
const listenable = (host: string, port: number) =>
  new Promise<void>((resolve, reject) => {
    if (port === 0) return resolve()
    const probe = net.createServer()
    probe.once("error", reject)
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()))
  })
await listenable(config.host, config.port).catch((error: unknown) => fatal(startupFailureLine(error, config)))

/** This node's id: every connection announces it (node presence), and every JSON log line carries it. */
const node = crypto.randomUUID()

/** Whether the service got as far as listening: a failure before that is a start-up failure. */
let started = false
/** A start-up failure was reported (its one line): the process exits with 1. */
let startupFailed = false

/**
 * The start line once the API listens, then the dashboard's address and the next steps; the stop
 * begins when it is released (first, before the service).
 */
const announce = Layer.effectDiscard(Effect.gen(function*() {
  const server = yield* HttpServer.HttpServer
  const port = "port" in server.address ? server.address.port : config.port
  started = true
  yield* Effect.log(`timewheel listening on https://${config.host}:${port}`).pipe(
    Effect.annotateLogs({ event: "start", host: config.host, port })
  )
  if (config.tracing !== null) {
    yield* Effect.log(tracingStartLine(config.tracing)).pipe(Effect.annotateLogs({ event: "tracing" }))
  }
  const guidance = yield* startupGuidance(config.host, port).pipe(Effect.orElseSucceed((): ReadonlyArray<string> => []))
  for (const line of guidance) yield* Effect.log(line).pipe(Effect.annotateLogs({ event: "next_step" }))
  yield* Effect.addFinalizer(() =>
    Effect.log("timewheel stopping: no new claims, shards handed over, deliveries in flight finished").pipe(
      Effect.annotateLogs({ event: "stop" })
    )
  )
}))

/** A shutdown asked for by SIGTERM/SIGINT that completed cleanly is a success (exit 0); a reported start-up failure is 1. */
const teardown: Runtime.Teardown = (exit, onExit) =>
  startupFailed ? onExit(1)
  : Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0)
  : Runtime.defaultTeardown(exit, onExit)

const stopped = Effect.suspend(() => started ? Effect.log("timewheel stopped").pipe(Effect.annotateLogs({ event: "stopped" })) : Effect.void)

/** A failure before listening: its one line on stderr (what was built is already released). */
const reportStartupFailure = (cause: Cause.Cause<unknown>) =>
  started || Cause.hasInterruptsOnly(cause)
    ? Effect.failCause(cause)
    : Effect.sync(() => {
      startupFailed = true
      process.stderr.write(`timewheel: ${startupFailureLine(Cause.squash(cause), config)}\n`)
    })

NodeRuntime.runMain(
  Layer.launch(announce.pipe(Layer.provideMerge(ServiceLive(config, tls, { nodeId: node })))).pipe(
    Effect.catchCause(reportStartupFailure),
    Effect.ensuring(stopped),
    Effect.provide(loggingLayer(config, node))
  ),
  { teardown }
)
