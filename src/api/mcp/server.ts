// POST /mcp (docs/mcp.md; without sessions, as it says): a Model Context
// Protocol server over the streamable HTTP transport (protocol versions 2025-06-18 and 2025-03-26,
// effect/ai's McpServer.layerHttp) whose tools (mcp/tools.ts, mcp/handlers.ts) call the same commands
// as the HTTP endpoints, run without sessions behind the front of mcp/stateless.ts: that front checks
// path, origin and credentials, hands each request to this server as an in-process web request with
// the key's project as McpCaller, and ends the server's session of each exchange with it.
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { McpProtocol, McpServer } from "effect/ai"
import { HttpEffect, HttpRouter, type HttpServerRequest } from "effect/http"
import { MCP_PATH } from "../openapi/mcp.ts"
import { mcpHandlers } from "./handlers.ts"
import { statelessMcp } from "./stateless.ts"
import type { McpCaller } from "./toolParts.ts"
import { mcpInstructions, mcpToolkit } from "./tools.ts"

/** The MCP server's routes; DELETE ends a session (the front's own, never a client's). */
const McpServerRoutes = (prefix: string) => {
  const tools = mcpToolkit(prefix)
  return McpServer.layerHttp({
    name: "timewheel",
    version: "0.1.0",
    instructions: mcpInstructions(prefix),
    path: MCP_PATH,
    protocols: [McpProtocol.v2025_06_18, McpProtocol.v2025_03_26],
    allowSessionTermination: true,
    registrations: McpServer.toolkit(tools).pipe(Layer.provide(mcpHandlers(tools)))
  })
}

/** What the MCP server needs from the service (the commands' services; McpCaller comes per request). */
export type McpServices = HttpRouter.Request.Without<Layer.Services<ReturnType<typeof McpServerRoutes>>>

/**
 * /mcp as one HTTP effect: the server built once, in a router of its own (not the service's router,
 * nor layers memoized while the service was built), living as long as `scope`, behind the front.
 */
export const mcpHttpEffect = (prefix: string, services: Context.Context<McpServices>, scope: Scope.Scope) =>
  Effect.map(
    HttpRouter.toHttpEffect(McpServerRoutes(prefix)).pipe(
      Effect.provideContext(Context.omit(HttpRouter.HttpRouter, Layer.CurrentMemoMap)(services)),
      Effect.provideService(Scope.Scope, scope)
    ),
    (server) =>
      statelessMcp(HttpEffect.toWebHandlerWith<McpServices, Scope.Scope | HttpServerRequest.HttpServerRequest | McpCaller>(services)(server))
  )
