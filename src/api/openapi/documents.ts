// The OpenAPI documents of the endpoints the server mounts (openapi.ts makes them): the path
// fragment of every endpoint module, in one list, so an endpoint family added later is described
// by adding its fragment here. `servedDocument` is GET /openapi/json's; `clientDocument` is the one
// for client generators (`npm run --silent cli -- openapi`, the /docs reference), its server the
// service's URL.
import { actionPaths } from "./actions.ts"
import { dashboardPaths } from "./dashboard.ts"
import { declarePaths } from "./declare.ts"
import { healthPaths } from "../health.ts"
import { logPaths } from "./logs.ts"
import { mcpPaths } from "./mcp.ts"
import { assemblePaths, generatorDocument, openApiPaths, specDocument } from "./openapi.ts"
import type { Paths } from "./parts.ts"
import { retryPolicyPaths } from "../retryPolicy.ts"
import { schedulePaths } from "./schedule.ts"
import { tagPolicyPaths } from "./tagPolicies.ts"
import { targetPolicyPaths } from "./targetPolicies.ts"

/** Every path of the API, with its hints and 503s. */
export const apiPaths = (prefix: string): Paths =>
  assemblePaths([
    schedulePaths(prefix), declarePaths(), healthPaths(), logPaths(), actionPaths(), retryPolicyPaths(), tagPolicyPaths(),
    targetPolicyPaths(), mcpPaths(), dashboardPaths(),
    openApiPaths()
  ])

/** GET /openapi/json's document. */
export const servedDocument = (prefix: string) => specDocument(prefix, apiPaths(prefix))

/** The document for client generators, its server at `serverUrl`. */
export const clientDocument = (prefix: string, serverUrl: string) => generatorDocument(prefix, apiPaths(prefix), serverUrl)

/**
 * The service's URL for a listener on `host`:`port`: a wildcard listener (0.0.0.0, ::) is named by
 * the loopback address its generated certificate names too (127.0.0.1, ::1); IPv6 in brackets.
 */
export const serviceUrl = (host: string, port: number) => {
  const name = host === "0.0.0.0" || host === "" ? "127.0.0.1" : host === "::" ? "::1" : host
  return `https://${name.includes(":") ? `[${name}]` : name}:${port}`
}
