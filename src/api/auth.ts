// Authentication (docs/README.md "Authentication"). Keys resolve to their project (commands/apiKeys.ts) and
// every query is then scoped to it. Two families:
// - `/schedule`, `/cancel`: only the key header; its absence is an empty 400 (checked by the
//   handler in the documented order), an empty or unknown key is 401 `Invalid api key`.
// - everything else: the key header (wins when both are sent), or `Authorization: Bearer <key>`
//   (scheme case-insensitive), or a dashboard session (not on `/mcp`); nothing usable is 401
//   `Unauthorized`. A session (docs/dashboard.md, sign-in and sessions) acts on the project its
//   `Timewheel-Project` header names (missing or unknown: 400), and its mutations must carry this
//   host's `Origin` (else 403). What belongs to no project (GET /docs) takes any session.
// - the dashboard's own endpoints: only a session; an API key in either header is 401.
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { HttpServerRequest } from "effect/http"
import { projectOfApiKey } from "../commands/apiKeys.ts"
import { AppConfig } from "../config.ts"
import { BadRequest, Forbidden, type ServiceUnavailable, Unauthorized } from "../domain/errors.ts"

export interface Principal {
  readonly projectId: string
}

/** The administrator a dashboard session belongs to. */
export interface SessionAdmin {
  readonly adminId: string
  readonly email: string
  /** When the session ends at the latest (ISO). */
  readonly expiresAt: string
}

/**
 * The seam for the dashboard (api/dashboardSessions.ts is the live one): the signed-in admin of a
 * request's session cookie, and the project its `Timewheel-Project` header names.
 */
export class DashboardSessions extends Context.Service<DashboardSessions, {
  /** The admin of the request's live session, if any. */
  readonly sessionOf: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<SessionAdmin | undefined, ServiceUnavailable>
  /** The project id of the `Timewheel-Project` header; 400 when it is missing or names no project. */
  readonly projectOf: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<string, BadRequest | ServiceUnavailable>
}>()("timewheel/DashboardSessions") {
  /** No request carries a session (tests of the API alone). */
  static readonly none = Layer.succeed(DashboardSessions)({
    sessionOf: () => Effect.succeed(undefined),
    projectOf: () => Effect.fail(new BadRequest("No dashboard"))
  })
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

/**
 * A session's mutation must come from the dashboard's own pages: an `Origin` header naming this
 * very host over HTTPS (browsers send it with every POST, PUT and DELETE), else 403.
 */
export const checkOrigin = (request: HttpServerRequest.HttpServerRequest) => {
  if (SAFE_METHODS.has(request.method)) return Effect.void
  const origin = request.headers["origin"]
  const host = request.headers["host"]
  return origin !== undefined && host !== undefined && origin === `https://${host}`
    ? Effect.void
    : Effect.fail(new Forbidden("Cross-origin request refused"))
}

/** A signed-in session's admin (401 `Unauthorized` without one) whose mutations pass the Origin check. */
export const requireSession = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const admin = yield* (yield* DashboardSessions).sessionOf(request)
    if (admin === undefined) return yield* Effect.fail(new Unauthorized("Unauthorized", "no dashboard session: sign in at /dashboard/"))
    yield* checkOrigin(request)
    return admin
  })

/** A session acting on the project its `Timewheel-Project` header names (400 when missing or unknown). */
const sessionPrincipal = (request: HttpServerRequest.HttpServerRequest, admin: SessionAdmin) =>
  Effect.gen(function*() {
    yield* checkOrigin(request)
    const projectId = yield* (yield* DashboardSessions).projectOf(request)
    return { projectId, admin } satisfies Principal & { readonly admin: SessionAdmin }
  })

export const keyHeaderName = Effect.map(AppConfig, (config) => `${config.prefix}-api-key`)

/** Resolves a key to its principal, or fails with 401 `Invalid api key`. */
export const authenticateKey = (key: string) => Effect.map(projectOfApiKey(key), (projectId): Principal => ({ projectId }))

const BEARER = /^bearer[ \t]+(.*)$/i

/**
 * The key of the key header (wins when both are sent), else of a Bearer token; undefined when neither
 * has one. `header` reads a header by its lower-case name.
 */
export const keyOrBearerOf = (header: (name: string) => string | undefined, keyHeader: string): string | undefined => {
  const key = header(keyHeader)
  if (key !== undefined && key !== "") return key
  const bearer = BEARER.exec(header("authorization") ?? "")?.[1]?.trim()
  return bearer !== undefined && bearer !== "" ? bearer : undefined
}

const requestKey = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(keyHeaderName, (keyHeader) => keyOrBearerOf((name) => request.headers[name], keyHeader))

/** The 401 of a request with no usable credentials, its hint naming what it sent instead, if anything. */
const noCredentials = (request: HttpServerRequest.HttpServerRequest, header: string, accepted: string) => {
  const authorization = request.headers["authorization"]
  const hint = request.headers[header] === ""
    ? `header ${header} is empty`
    : authorization !== undefined && !BEARER.test(authorization)
    ? `Authorization must be "Bearer <key>", got scheme ${authorization.split(" ", 1)[0]}`
    : `no credentials: send ${accepted}`
  return new Unauthorized("Unauthorized", hint)
}

/** Key header, else Bearer, and no dashboard session (POST /mcp: docs/mcp.md). */
export const authenticateKeyOrBearer = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const key = yield* requestKey(request)
    if (key !== undefined) return yield* authenticateKey(key)
    const header = yield* keyHeaderName
    return yield* Effect.fail(noCredentials(request, header, `the ${header} header or Authorization: Bearer <key>`))
  })

/** Key header, else Bearer, else dashboard session; see the header comment. */
export const authenticate = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const key = yield* requestKey(request)
    if (key !== undefined) return yield* authenticateKey(key)
    const admin = yield* (yield* DashboardSessions).sessionOf(request)
    if (admin !== undefined) return (yield* sessionPrincipal(request, admin)) as Principal
    const header = yield* keyHeaderName
    return yield* Effect.fail(noCredentials(request, header, `the ${header} header, Authorization: Bearer <key>, or a dashboard session`))
  })

/**
 * What belongs to no project (GET /docs, the API reference): the key header or Bearer (a live key of
 * any project), or any signed-in dashboard session, which needs no `Timewheel-Project` here; else
 * 401 `Unauthorized`.
 */
export const authenticateAnyProject = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const key = yield* requestKey(request)
    if (key !== undefined) return void (yield* authenticateKey(key))
    if ((yield* (yield* DashboardSessions).sessionOf(request)) !== undefined) return
    const header = yield* keyHeaderName
    return yield* Effect.fail(noCredentials(request, header, `the ${header} header, Authorization: Bearer <key>, or a dashboard session`))
  })

/**
 * The dashboard's own endpoints (`/keys`, `/alerts`, …): a dashboard session only. An API key, in
 * the key header or as Bearer, is refused with 401 whatever else the request carries
 * (docs/dashboard.md); then the session (401), the Origin of a mutation (403) and, unless `project` is
 * false, the `Timewheel-Project` header (400).
 */
export const authenticateSession = (request: HttpServerRequest.HttpServerRequest, options: { readonly project?: boolean } = {}) =>
  Effect.gen(function*() {
    if ((yield* requestKey(request)) !== undefined) {
      return yield* Effect.fail(new Unauthorized("API keys are not accepted here: sign in to the dashboard"))
    }
    const admin = yield* requireSession(request)
    if (options.project === false) return { projectId: "", admin }
    return yield* sessionPrincipal(request, admin)
  })
