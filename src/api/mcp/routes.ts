// /mcp as the router sees it: one route whose handler loads the MCP server (mcp/server.ts, effect/ai
// and the tool definitions: about 8 MB of resident memory) on the first request and hands every
// request to it. A service nobody asks for tools never loads them.
import * as Effect from "effect/Effect"
import { HttpRouter } from "effect/http"
import { MCP_PATH } from "../openapi/mcp.ts"
import type { McpServices } from "./server.ts"

export const McpRoutes = (prefix: string) =>
  HttpRouter.use(Effect.fn(function*(router) {
    const services = yield* Effect.context<McpServices>()
    const scope = yield* Effect.scope
    const mcp = yield* Effect.cached(Effect.flatMap(
      Effect.promise(() => import("./server.ts")),
      ({ mcpHttpEffect }) => mcpHttpEffect(prefix, services, scope)
    ))
    yield* router.add("*", MCP_PATH, Effect.flatten(mcp))
  }))
