// The dashboard's key endpoints (docs/dashboard.md: a dashboard session only, 401 to
// an API key in either header): GET /keys lists the project's keys (hint, label, created, last used,
// revoked), POST /keys creates one — with an optional JSON body `{label}` — and answers it with the
// clear key, the only time it is shown (201; a bad label: 400 naming it), DELETE /keys/{id} revokes
// it on every node at once (204; another project's or an unknown
// id: 404 `Key not found`). The project is the session's `Timewheel-Project`.
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createProjectApiKey, listProjectApiKeys, revokeProjectApiKey } from "../commands/apiKeys.ts"
import { parseKeyLabel } from "../domain/auth/apiKey.ts"
import { BadRequest } from "../domain/errors.ts"
import { authenticateSession } from "./auth.ts"
import { jsonResponse } from "./errors.ts"
import { handle } from "./handle.ts"
import { readJsonBody, requireExactPath } from "./requestParts.ts"

const sessionProject = (path: RegExp) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* requireExactPath(request, path)
    return (yield* authenticateSession(request)).projectId
  })

const KEYS = /^\/keys$/
const KEY = /^\/keys\/[^/]+$/

export const KeyRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("GET", "/keys", handle(Effect.gen(function*() {
    return jsonResponse(200, yield* listProjectApiKeys(yield* sessionProject(KEYS)))
  })))
  yield* router.add("POST", "/keys", handle(Effect.gen(function*() {
    const projectId = yield* sessionProject(KEYS)
    const body = yield* readJsonBody(yield* HttpServerRequest.HttpServerRequest, 4 * 1024, true)
    if (body !== undefined && (typeof body !== "object" || body === null || Array.isArray(body))) {
      return yield* Effect.fail(new BadRequest("body must be a JSON object"))
    }
    const label = parseKeyLabel((body as { label?: unknown } | undefined)?.label)
    if ("problem" in label) return yield* Effect.fail(new BadRequest(label.problem))
    const created = yield* createProjectApiKey(projectId, label.label)
    return jsonResponse(201, created).pipe(HttpServerResponse.setHeader("cache-control", "no-store"))
  })))
  yield* router.add("DELETE", "/keys/:id", handle(Effect.gen(function*() {
    const projectId = yield* sessionProject(KEY)
    yield* revokeProjectApiKey(projectId, (yield* HttpRouter.params)["id"] ?? "")
    return HttpServerResponse.empty({ status: 204 })
  })))
}))
