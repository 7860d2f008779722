// GET /openapi/json: the OpenAPI 3.1 document, public, with `Access-Control-Allow-Origin: *`
// (the only CORS header the service sends). Exact path only: a trailing slash or a query → 404.
// The document is assembled from the path fragments of the mounted endpoint modules, so it lists
// exactly what the server serves. No `servers` entry; keys are header parameters. Every operation
// that needs the database (all but this document's) also lists the 503 of DECISIONS "Faults".
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { EmptyNotFound } from "./errors.ts"
import { handle } from "./handle.ts"
import { errorSchema, type PathItem, type Paths } from "./openapiParts.ts"

export interface OpenApiDocument {
  readonly openapi: "3.1.0"
  readonly info: { readonly title: string; readonly version: string; readonly description: string }
  readonly paths: Paths
  readonly components: { readonly schemas: Record<string, unknown> }
}

export const openApiDocument = (fragments: ReadonlyArray<Paths>): OpenApiDocument => ({
  openapi: "3.1.0",
  info: {
    title: "timewheel",
    version: "0.1.0",
    description: "Stores HTTP requests and sends them later: once at a given time, or on a cron schedule."
  },
  paths: withDatabaseUnavailable(Object.assign({}, ...fragments)),
  components: { schemas: { Error: errorSchema } }
})

const databaseUnavailable = {
  description: "The database cannot be reached: `ServiceUnavailable` `Database unavailable`; retry after the `Retry-After` seconds.",
  headers: { "Retry-After": { description: "Seconds to wait before retrying (1).", schema: { type: "integer" } } },
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } }
}

/** Adds the 503 to every operation needing the database that does not describe its own. */
const withDatabaseUnavailable = (paths: Paths): Paths =>
  Object.fromEntries(Object.entries(paths).map(([path, item]): [string, PathItem] => {
    if (path === "/openapi/json") return [path, item]
    const operations = Object.entries(item).map(([method, operation]) => {
      const op = operation as { readonly responses?: Record<string, unknown> }
      if (op.responses === undefined || "503" in op.responses) return [method, operation]
      return [method, { ...op, responses: { ...op.responses, 503: databaseUnavailable } }]
    })
    return [path, Object.fromEntries(operations)]
  }))

export const OpenApiRoutes = (document: OpenApiDocument) =>
  HttpRouter.use(Effect.fn(function*(router) {
    const body = JSON.stringify(document)
    yield* router.add("GET", "/openapi/json", handle(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (request.url !== "/openapi/json") {
        return yield* Effect.fail(new EmptyNotFound({ hint: "the document is at exactly /openapi/json (no trailing slash, no query)" }))
      }
      return HttpServerResponse.text(body, {
        contentType: "application/json",
        headers: { "access-control-allow-origin": "*" }
      })
    })))
  }))

export const openApiPaths = (): Paths => ({
  "/openapi/json": {
    get: {
      operationId: "openapi",
      summary: "This OpenAPI 3.1 document",
      responses: { 200: { description: "The document.", content: { "application/json": { schema: { type: "object" } } } } }
    }
  }
})
