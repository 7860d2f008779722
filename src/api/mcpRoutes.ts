// /mcp as the router sees it: one route whose handler loads the MCP server (mcpServer.ts, effect/ai
// and the tool definitions: about 8 MB of resident memory) on the first request and hands every
// request to it. A service nobody asks for tools never loads them.
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { HttpRouter } from "effect/http"
import { MCP_PATH } from "./mcpOpenApi.ts"
import type { McpServerRoutes } from "./mcpServer.ts"

/** What the MCP server's routes need from the service (the commands' services). */
type McpServices = Layer.Services<ReturnType<typeof McpServerRoutes>>

export const McpRoutes = (prefix: string) =>
  HttpRouter.use(Effect.fn(function*(router) {
    const services = yield* Effect.context<McpServices>()
    const scope = yield* Effect.scope
    const mcp = yield* Effect.cached(Effect.gen(function*() {
      const { McpServerRoutes } = yield* Effect.promise(() => import("./mcpServer.ts"))
      // a router of its own: not the service's router, nor layers memoized while the service was built
      return yield* HttpRouter.toHttpEffect(McpServerRoutes(prefix)).pipe(
        Effect.provideContext(Context.omit(HttpRouter.HttpRouter, Layer.CurrentMemoMap)(services)),
        Effect.provideService(Scope.Scope, scope)
      )
    }))
    yield* router.add("*", MCP_PATH, Effect.flatten(mcp))
  }))
