// Authentication (SPEC "Authentication"). Keys resolve to their project (commands/apiKeys.ts) and
// every query is then scoped to it. Two families:
// - `/schedule`, `/cancel`: only the key header; its absence is an empty 400 (checked by the
//   handler in the spec's order), an empty or unknown key is 401 `Invalid api key`.
// - everything else: the key header (wins when both are sent), or `Authorization: Bearer <key>`
//   (scheme case-insensitive), or a dashboard session (not on `/mcp`); nothing usable is 401
//   `Unauthorized`.
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { HttpServerRequest } from "effect/http"
import { projectOfApiKey } from "../commands/apiKeys.ts"
import { AppConfig } from "../config.ts"
import { Unauthorized } from "../domain/errors.ts"

export interface Principal {
  readonly projectId: string
}

/**
 * The seam for the dashboard: resolves a signed-in session (cookie) to its project. Until the
 * dashboard exists, no request carries a session.
 */
export class DashboardSessions extends Context.Service<DashboardSessions, {
  readonly projectOf: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<string | undefined>
}>()("timewheel/DashboardSessions") {
  static readonly none = Layer.succeed(DashboardSessions)({ projectOf: () => Effect.succeed(undefined) })
}

export const keyHeaderName = Effect.map(AppConfig, (config) => `${config.prefix}-api-key`)

/** Resolves a key to its principal, or fails with 401 `Invalid api key`. */
export const authenticateKey = (key: string) => Effect.map(projectOfApiKey(key), (projectId): Principal => ({ projectId }))

const BEARER = /^bearer[ \t]+(.*)$/i

/** The key of the key header (wins when both are sent), else of a Bearer token; undefined when neither has one. */
const requestKey = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(keyHeaderName, (header) => {
    const key = request.headers[header]
    if (key !== undefined && key !== "") return key
    const bearer = BEARER.exec(request.headers["authorization"] ?? "")?.[1]?.trim()
    return bearer !== undefined && bearer !== "" ? bearer : undefined
  })

/** Key header, else Bearer, and no dashboard session (POST /mcp: SPEC "Bearer or key header"). */
export const authenticateKeyOrBearer = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.flatMap(requestKey(request), (key) =>
    key === undefined ? Effect.fail(new Unauthorized("Unauthorized")) : authenticateKey(key))

/** Key header, else Bearer, else dashboard session; see the header comment. */
export const authenticate = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const key = yield* requestKey(request)
    if (key !== undefined) return yield* authenticateKey(key)
    const sessions = yield* DashboardSessions
    const projectId = yield* sessions.projectOf(request)
    if (projectId !== undefined) return { projectId } satisfies Principal
    return yield* Effect.fail(new Unauthorized("Unauthorized"))
  })
