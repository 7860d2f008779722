// The OpenAPI 3.1 documents. Both are made from the path fragments of the mounted endpoint modules
// (openapi/documents.ts lists them), so they describe exactly what the server serves; every operation
// that needs the database (all but GET /openapi/json) also lists the 503 of a database that cannot
// be reached, and every 4xx answer its `Timewheel-Error` header. The fragments name each operation's
// credentials as security requirements (openapi/parts.ts) and give each operation its own id:
// - `generatorDocument`, for client generators (`npm run --silent cli -- openapi`, and the /docs
//   reference): the credentials as security schemes, a `servers` entry, the /schedule body as raw
//   bytes; Redocly's recommended rules find nothing in it (test/api/openapiClient.test.ts);
// - `specDocument`, served at GET /openapi/json, public, with `Access-Control-Allow-Origin: *` (the
//   only CORS header the service sends), exact path only (a trailing slash or a query: 404): as
//   the API's reference (docs/README.md, "Other public paths") describes it — no `servers`, the key
//   as header parameters, /schedule's five methods sharing one operation id.
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { EmptyNotFound } from "../errors.ts"
import { handle } from "../handle.ts"
import { emptyResponse, errorSchema, type PathItem, type Paths, PUBLIC, securitySchemes } from "./parts.ts"
import { specPaths } from "./specForm.ts"

export interface OpenApiDocument {
  readonly openapi: "3.1.0"
  readonly info: {
    readonly title: string
    readonly version: string
    readonly description: string
    readonly license: { readonly name: string; readonly identifier: string }
  }
  readonly servers?: ReadonlyArray<{ readonly url: string; readonly description: string }>
  readonly paths: Paths
  readonly components: { readonly schemas: Record<string, unknown>; readonly securitySchemes?: Record<string, unknown> }
}

const info = {
  title: "timewheel",
  version: "0.1.0",
  description: "Stores HTTP requests and sends them later: once at a given time, or on a cron schedule. " +
    "Every 4xx answer names what was wrong in its `Timewheel-Error` header; bodies are as the API's specification says.",
  license: { name: "MIT", identifier: "MIT" }
}

/** The fragments' paths, each operation with its 503 and its 4xx hints. */
export const assemblePaths = (fragments: ReadonlyArray<Paths>): Paths => withErrorHints(withDatabaseUnavailable(Object.assign({}, ...fragments)))

/** The document for client generators, its server at `serverUrl` (e.g. https://localhost:8443). */
export const generatorDocument = (prefix: string, paths: Paths, serverUrl: string): OpenApiDocument => ({
  openapi: "3.1.0",
  info,
  servers: [{ url: serverUrl, description: "The timewheel service." }],
  paths,
  components: { schemas: { Error: errorSchema }, securitySchemes: securitySchemes(prefix) }
})

/** The document GET /openapi/json serves. */
export const specDocument = (prefix: string, paths: Paths): OpenApiDocument => ({
  openapi: "3.1.0",
  info,
  paths: specPaths(prefix, paths),
  components: { schemas: { Error: errorSchema } }
})

const errorHintHeader = {
  description: "What was wrong, in one line of plain ASCII (also when the body is empty).",
  schema: { type: "string" }
}

/** Adds the `Timewheel-Error` header to every 4xx response. */
const withErrorHints = (paths: Paths): Paths =>
  mapResponses(paths, (status, response) =>
    status.startsWith("4") ? { ...response, headers: { ...(response.headers as object | undefined), "Timewheel-Error": errorHintHeader } } : response)

/** The document's paths with each response of each operation replaced by `f(status, response)`. */
const mapResponses = (paths: Paths, f: (status: string, response: Record<string, unknown>) => Record<string, unknown>): Paths =>
  Object.fromEntries(Object.entries(paths).map(([path, item]) => [
    path,
    Object.fromEntries(Object.entries(item).map(([method, operation]) => {
      const op = operation as { readonly responses?: Record<string, Record<string, unknown>> }
      if (op.responses === undefined) return [method, operation]
      return [method, { ...op, responses: Object.fromEntries(Object.entries(op.responses).map(([status, r]) => [status, f(status, r)])) }]
    }))
  ]))

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
      security: PUBLIC,
      summary: "This OpenAPI 3.1 document",
      responses: {
        200: { description: "The document.", content: { "application/json": { schema: { type: "object" } } } },
        404: emptyResponse("Any other path: a trailing slash or a query (empty body).")
      }
    }
  }
})
