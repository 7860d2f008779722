// Dashboard-only reads and actions besides keys and alerts (docs/dashboard.md; a session only, 401
// to an API key): GET /overview?hours=1|6|24 (default 24), the project's charts from the rollup
// (commands/overview.ts); GET /dead-letters?limit&cursor, the triggers that end in a dead letter now
// with their last attempt and how many there are (commands/deadLetters.ts); POST /jobs/{id}/cancel, the dashboard's cancel button, which runs the same
// command as DELETE /cancel by id with the same answers (204, 404 `Job not found`, 410 …): the
// session never authenticates /cancel itself (docs/README.md "Authentication").
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { cancelTrigger } from "../commands/cancel.ts"
import { listDeadLetters } from "../commands/deadLetters.ts"
import { OVERVIEW_HOURS, projectOverview } from "../commands/overview.ts"
import type { OverviewHours } from "../domain/overview.ts"
import { BadRequest } from "../domain/errors.ts"
import { authenticateSession } from "./auth.ts"
import { jsonResponse } from "./errors.ts"
import { handle } from "./handle.ts"
import { pageLimit, queryParams, requireExactPath } from "./requestParts.ts"

export const OverviewRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("GET", "/overview", handle(Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* requireExactPath(request, /^\/overview$/)
    const { projectId } = yield* authenticateSession(request)
    const hours = Number((yield* (yield* queryParams).get("hours")) ?? "24")
    if (!(OVERVIEW_HOURS as ReadonlyArray<number>).includes(hours)) {
      return yield* Effect.fail(new BadRequest(`hours must be one of ${OVERVIEW_HOURS.join(", ")}`))
    }
    return jsonResponse(200, yield* projectOverview(projectId, hours as OverviewHours))
  })))
  yield* router.add("GET", "/dead-letters", handle(Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* requireExactPath(request, /^\/dead-letters$/)
    const { projectId } = yield* authenticateSession(request)
    const query = yield* queryParams
    return jsonResponse(200, yield* listDeadLetters(projectId, { limit: yield* pageLimit(query), cursor: yield* query.get("cursor") }))
  })))
  yield* router.add("POST", "/jobs/:id/cancel", handle(Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* requireExactPath(request, /^\/jobs\/[^/]+\/cancel$/)
    const { projectId } = yield* authenticateSession(request)
    const id = (yield* HttpRouter.params)["id"] ?? ""
    yield* cancelTrigger(projectId, { _tag: "Id", id }, yield* Clock.currentTimeMillis)
    return HttpServerResponse.empty({ status: 204 })
  })))
}))
