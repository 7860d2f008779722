// The guarantee of docs/errors.md "Error hints" for answers that errors.ts did not render: a global
// middleware of the router. The router's own empty 404 (no route for this method and path) gets a
// hint naming the methods the path takes, read from the OpenAPI document (so an endpoint added
// later is known without a word here); any other 4xx answer without `Timewheel-Error` (a handler
// or a library building its answer by hand) gets one naming its status, so no 4xx leaves unnamed.
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerError, HttpServerRequest, type HttpServerResponse } from "effect/http"
import { EmptyNotFound, ERROR_HEADER, renderApiError, withHint } from "./errors.ts"
import type { Paths } from "./openapi/parts.ts"

const HTTP_METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"])

/** `/jobs/{id}/executions` as a pattern matching `/jobs/<anything>/executions`. */
const patternOf = (template: string) =>
  new RegExp(`^${template.split(/\{[^}]+\}/).map((part) => part.replace(/[.*+?^$()|[\]\\]/g, "\\$&")).join("[^/]+")}$`)

/** For a path, the methods the document lists for it (upper case); empty when no path matches. */
export const allowedMethods = (paths: Paths) => {
  const templates = Object.entries(paths).map(([template, item]) => ({
    pattern: patternOf(template),
    methods: Object.keys(item).filter((key) => HTTP_METHODS.has(key)).map((key) => key.toUpperCase())
  }))
  return (path: string): ReadonlyArray<string> => [...new Set(templates.filter((t) => t.pattern.test(path)).flatMap((t) => t.methods))]
}

/** The hint of a request no route takes. */
export const noRouteHint = (paths: Paths) => {
  const methodsOf = allowedMethods(paths)
  return (method: string, path: string): string => {
    const methods = methodsOf(path)
    if (methods.length > 0) return `${method} is not accepted by ${path}: use ${methods.join(" or ")}`
    return `no endpoint ${method} ${path} (the API is described at /openapi/json and /docs)`
  }
}

const isRouteNotFound = (error: unknown): boolean =>
  HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound"

/** What a 4xx answer without a hint says: its status and the request. */
const statusHint = (response: HttpServerResponse.HttpServerResponse, request: HttpServerRequest.HttpServerRequest) =>
  `HTTP ${response.status} for ${request.method} ${request.url.split("?", 1)[0]}`

/**
 * The global middleware; `paths` are the OpenAPI document's. A success costs one `flatMap`: the
 * request is looked at only for a 4xx.
 */
export const ErrorHints = (paths: Paths) => {
  const hintOfNoRoute = noRouteHint(paths)
  const withStatusHint = (response: HttpServerResponse.HttpServerResponse) =>
    response.status < 400 || response.status >= 500 || response.headers[ERROR_HEADER] !== undefined
      ? Effect.succeed(response)
      : Effect.map(HttpServerRequest.HttpServerRequest, (request) => withHint(statusHint(response, request))(response))
  return HttpRouter.middleware((httpEffect) =>
    httpEffect.pipe(
      Effect.catchIf(isRouteNotFound, () =>
        Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
          renderApiError(new EmptyNotFound({ hint: hintOfNoRoute(request.method, request.url.split("?", 1)[0]!) })))),
      Effect.flatMap(withStatusHint)
    ), { global: true })
}
