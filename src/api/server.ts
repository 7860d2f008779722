// The HTTPS listener: TLS (configured or self-signed), 16 KB header limit (→ 431 by Node), every
// endpoint module mounted on one router (each handler renders its own failures, see handle.ts).
// Unknown paths and methods get the router's empty 404, and every 4xx its `Timewheel-Error` hint
// (errorHints.ts). A keep-alive connection is kept only when the server will keep it (an unread
// chunked body closes it, and the answer says so). No CORS headers except on /openapi/json: the dashboard, the only page reading
// the hints, is served from the same origin, so it needs no Access-Control-Expose-Headers. The
// fast lane (fastLane.ts) takes the hottest requests before the router sees them.
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { HttpRouter } from "effect/http"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as https from "node:https"
import { AppConfig } from "../config.ts"
import { ActionRoutes } from "./actions.ts"
import { DashboardRoutes } from "./dashboardRoutes.ts"
import { DeclareRoutes } from "./declare.ts"
import { DocsRoutes } from "./docs.ts"
import { ErrorHints } from "./errorHints.ts"
import { type FastLane, makeFastLane } from "./fastLane.ts"
import { HealthRoutes } from "./health.ts"
import { LogRoutes } from "./logs.ts"
import { McpRoutes } from "./mcp/routes.ts"
import { OpenApiRoutes } from "./openapi/openapi.ts"
import { clientDocument, servedDocument, serviceUrl } from "./openapi/documents.ts"
import { RetryPolicyRoutes } from "./retryPolicy.ts"
import { ScheduleRoutes } from "./schedule.ts"
import { TagPolicyRoutes } from "./tagPolicies.ts"
import { TargetPolicyRoutes } from "./targetPolicies.ts"

export const MAX_HEADER_BYTES = 16 * 1024

/**
 * Every route of the API, and the OpenAPI documents describing them: GET /openapi/json's, and the
 * client generators' one that /docs shows (its server: the address the browser used, else `serviceUrl`).
 */
export const apiRoutes = (prefix: string, serviceUrl: string) => {
  const document = servedDocument(prefix)
  return Layer.mergeAll(
    ScheduleRoutes, DeclareRoutes, HealthRoutes, LogRoutes, ActionRoutes, RetryPolicyRoutes, TagPolicyRoutes, TargetPolicyRoutes,
    McpRoutes(prefix),
    OpenApiRoutes(document), DocsRoutes((server) => clientDocument(prefix, server ?? serviceUrl)), DashboardRoutes, ErrorHints(document.paths)
  )
}

/**
 * An answer written before the request's chunked body was read (a GET or a DELETE carrying one, an
 * unknown path) says `Connection: close`, and the connection is closed after it: the HTTP layer
 * drains at most 256 KiB of an unread body and closes the connection past that, and with no
 * Content-Length it cannot tell at the head whether it will, so it said `keep-alive` and a client's
 * next request on that connection was reset. A body read to its end first (every route that reads
 * one) keeps the connection. Bodies with a Content-Length are left to the HTTP layer, which decides
 * from it.
 */
const closeUnlessBodyRead = (request: IncomingMessage, response: ServerResponse) => {
  if (request.headers["transfer-encoding"] === undefined || request.httpVersionMajor !== 1) return
  response.setHeader("connection", "close")
  request.once("end", () => {
    if (!response.headersSent) response.removeHeader("connection")
  })
}

/**
 * The HTTPS listener. When the service stops it first sends its keep-alive clients away: idle
 * connections are closed at once, a request in flight is answered with `Connection: close` (or, its
 * head already sent, its connection is ended once the answer is out), and so is every request from
 * then on, so the server closes as soon as the requests in flight are answered, however busy its
 * clients keep it, not after its 10 s grace (chaos sigterm-fast, RELIABILITY.md). This happens in the
 * server's own close(), which the HTTP layer calls first thing when it stops: a finalizer of a layer
 * of ours ran only after that layer's grace. A request the fast lane takes (`fastLane`) is not
 * emitted to the HTTP layer's listener at all.
 */
export const httpsListener = (options: {
  readonly host: string
  readonly port: number
  readonly cert: string
  readonly key: string
  readonly fastLane?: FastLane
}) =>
  Layer.unwrap(Effect.sync(() => {
    let stopping = false
    const inFlight = new Set<ServerResponse>()
    const server = https.createServer({ cert: options.cert, key: options.key, maxHeaderSize: MAX_HEADER_BYTES, keepAliveTimeout: 65_000 })
    const track = (request: IncomingMessage, response: ServerResponse) => {
      if (stopping) return void response.setHeader("connection", "close")
      closeUnlessBodyRead(request, response)
      inFlight.add(response)
      response.on("close", () => {
        inFlight.delete(response)
        if (stopping) request.socket.end()
      })
    }
    // every request is tracked, then offered to the fast lane, and only otherwise emitted to the
    // listeners (the HTTP layer's)
    const fastLane = options.fastLane ?? (() => false)
    const emit = server.emit.bind(server) as (event: string | symbol, ...args: Array<unknown>) => boolean
    server.emit = ((event: string | symbol, ...args: Array<unknown>) => {
      if (event !== "request") return emit(event, ...args)
      const [request, response] = args as [IncomingMessage, ServerResponse]
      track(request, response)
      return fastLane(request, response) || emit(event, ...args)
    }) as typeof server.emit
    const close = server.close.bind(server)
    server.close = (callback?: (error?: Error) => void) => {
      stopping = true
      for (const response of inFlight) if (!response.headersSent) response.setHeader("connection", "close")
      server.closeIdleConnections()
      return close(callback)
    }
    return NodeHttpServer.layer(() => server, { host: options.host, port: options.port, gracefulShutdownTimeout: "10 seconds" })
  }))

/** Serves the API over HTTPS; needs the database, heartbeats and the other services of the routes. */
export const HttpsServerLive = (tls: { readonly cert: string; readonly key: string }) =>
  Layer.unwrap(Effect.gen(function*() {
    const config = yield* AppConfig
    // with tracing on every call goes through the Effect server, which makes its span (docs/tracing.md)
    const fastLane = config.tracing === null ? yield* makeFastLane : undefined
    return HttpRouter.serve(apiRoutes(config.prefix, serviceUrl(config.host, config.port)), { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provideMerge(httpsListener({ host: config.host, port: config.port, ...tls, ...(fastLane === undefined ? {} : { fastLane }) }))
    )
  }))
