// POST /mcp (SPEC "Other endpoints", DECISIONS "Other endpoints", issue 14): a Model Context Protocol
// server over the streamable HTTP transport (protocol versions 2025-06-18 and 2025-03-26, effect/ai's
// McpServer.layerHttp) whose tools (mcpTools.ts, mcpHandlers.ts) call the same commands as the HTTP
// endpoints. Every request to /mcp is checked here first, in this order: the exact path (else the
// router's empty 404), no `Origin` header (a browser's request: empty 403, the API is for servers
// only), then the credentials — the key header, else `Authorization: Bearer <key>` (the key header
// wins when both are sent; no dashboard session) — as every endpoint answers them: 401
// `Unauthorized` without one, 401 `Invalid api key` for an unknown one, 503 while the database
// cannot be reached. The key's project is then the McpCaller of that request's tool calls, so a
// session started with one key never acts for another. Bodies over MAX_MCP_BODY_BYTES are refused.
import * as ByteSize from "effect/ByteSize"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { McpProtocol, McpServer } from "effect/ai"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest } from "effect/http"
import { ApiKeyCache } from "../commands/apiKeyCache.ts"
import { AppConfig } from "../config.ts"
import { authenticateKeyOrBearer } from "./auth.ts"
import { EmptyForbidden, EmptyNotFound, ERROR_HEADER, renderApiError, withHint } from "./errors.ts"
import { MCP_PATH } from "./mcpOpenApi.ts"
import { mcpHandlers } from "./mcpHandlers.ts"
import { mcpInstructions, mcpToolkit } from "./mcpTools.ts"
import { McpCaller } from "./mcpToolParts.ts"

/** The largest JSON-RPC message read (as /declare and /bulk bodies). */
export const MAX_MCP_BODY_BYTES = 16 * 1024 * 1024

/** What the transport's own 4xx answers mean (DECISIONS "Error hints"). */
const TRANSPORT_HINTS: Readonly<Record<number, string>> = {
  400: "not a valid MCP message, an unsupported MCP-Protocol-Version, or no Mcp-Session-Id after initialize",
  404: "unknown or ended Mcp-Session-Id: send initialize again",
  406: "Accept must list both application/json and text/event-stream",
  413: `request body larger than ${MAX_MCP_BODY_BYTES} bytes`,
  415: "Content-Type must be application/json"
}

/** Path, origin and credentials before the MCP transport sees the request; see the header comment. */
const McpAuthentication = HttpRouter.middleware<{ provides: McpCaller }>()(Effect.gen(function*() {
  const config = yield* AppConfig
  const keys = yield* ApiKeyCache
  return (httpEffect) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const path = request.url.split("?", 1)[0]
      if (path !== MCP_PATH) return renderApiError(new EmptyNotFound({ hint: `no endpoint ${request.method} ${path} (the MCP server is at exactly ${MCP_PATH})` }))
      if (request.headers["origin"] !== undefined) {
        return renderApiError(new EmptyForbidden({ hint: "a browser's request (Origin header) is refused: /mcp is for servers and local tools" }))
      }
      const principal = yield* authenticateKeyOrBearer(request).pipe(
        Effect.provideService(AppConfig, config),
        Effect.provideService(ApiKeyCache, keys),
        Effect.result
      )
      if (principal._tag === "Failure") return renderApiError(principal.failure)
      const response = yield* httpEffect.pipe(
        Effect.provideService(McpCaller, { projectId: principal.success.projectId }),
        Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_MCP_BODY_BYTES))
      )
      const hint = TRANSPORT_HINTS[response.status]
      return hint === undefined || response.headers[ERROR_HEADER] !== undefined ? response : withHint(hint)(response)
    })
}))

/** The MCP server's routes (loaded on the first request to /mcp by mcpRoutes.ts). */
export const McpServerRoutes = (prefix: string) => {
  const tools = mcpToolkit(prefix)
  return McpServer.layerHttp({
    name: "timewheel",
    version: "0.1.0",
    instructions: mcpInstructions(prefix),
    path: MCP_PATH,
    protocols: [McpProtocol.v2025_06_18, McpProtocol.v2025_03_26],
    allowSessionTermination: true,
    registrations: McpServer.toolkit(tools).pipe(Layer.provide(mcpHandlers(tools)))
  }).pipe(Layer.provide(McpAuthentication.layer))
}
