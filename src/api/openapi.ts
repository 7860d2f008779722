// GET /openapi/json: the OpenAPI 3.1 document, public, with `Access-Control-Allow-Origin: *`
// (the only CORS header the service sends). Exact path only: a trailing slash or a query → 404.
// The document is assembled from the path fragments of the mounted endpoint modules, so it lists
// exactly what the server serves. No `servers` entry; keys are header parameters.
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { EmptyNotFound } from "./errors.ts"
import { handle } from "./handle.ts"
import { errorSchema, type Paths } from "./openapiParts.ts"

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
  paths: Object.assign({}, ...fragments),
  components: { schemas: { Error: errorSchema } }
})

export const OpenApiRoutes = (document: OpenApiDocument) =>
  HttpRouter.use(Effect.fn(function*(router) {
    const body = JSON.stringify(document)
    yield* router.add("GET", "/openapi/json", handle(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (request.url !== "/openapi/json") return yield* Effect.fail(new EmptyNotFound())
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
