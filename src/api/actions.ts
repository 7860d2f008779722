// The bulk actions' endpoints (docs/bulk-actions.md): POST /actions — the JSON body read first (a
// Content-Type other than JSON → 415, invalid JSON → empty 400), then the credentials (key header,
// Bearer or dashboard session: 401), then the body's fields (400 naming the first bad one,
// domain/bulkAction.ts), then the command: 200 `{matched}` for a dry run, else 202 with the action
// (commands/bulkActions.ts); GET /actions (newest first, paged) and GET /actions/{id} (404 `Action not
// found`). Everything is scoped to the caller's project.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { getBulkAction, listBulkActions, startBulkAction } from "../commands/bulkActions.ts"
import { AppConfig } from "../config.ts"
import { decodeActionBody } from "../domain/bulkAction.ts"
import { BadRequest } from "../domain/errors.ts"
import { authenticate } from "./auth.ts"
import { jsonResponse } from "./errors.ts"
import { handle } from "./handle.ts"
import { pageLimit, queryParams, readJsonBody, requireExactPath } from "./requestParts.ts"

const ACTIONS = /^\/actions$/
const ACTION = /^\/actions\/[^/]+$/

/** Bodies of POST /actions are small (a filter and a few headers): 64 KiB at most. */
const MAX_ACTION_BODY_BYTES = 64 * 1024

const startRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, ACTIONS)
  const body = yield* readJsonBody(request, MAX_ACTION_BODY_BYTES)
  const { projectId } = yield* authenticate(request)
  const decoded = decodeActionBody(body, (yield* AppConfig).prefix)
  if (decoded._tag === "Err") return yield* Effect.fail(new BadRequest(decoded.message))
  const answer = yield* startBulkAction(projectId, decoded.request, yield* Clock.currentTimeMillis)
  return answer._tag === "DryRun" ? jsonResponse(200, { matched: answer.matched }) : jsonResponse(202, answer.action)
})

const listRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, ACTIONS)
  const { projectId } = yield* authenticate(request)
  const query = yield* queryParams
  return jsonResponse(200, yield* listBulkActions(projectId, { limit: yield* pageLimit(query), cursor: yield* query.get("cursor") }))
})

const getRoute = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  yield* requireExactPath(request, ACTION)
  const { projectId } = yield* authenticate(request)
  const id = (yield* HttpRouter.params)["id"] ?? ""
  return jsonResponse(200, yield* getBulkAction(projectId, id))
})

export const ActionRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("POST", "/actions", handle(startRoute))
  yield* router.add("GET", "/actions", handle(listRoute))
  yield* router.add("GET", "/actions/:id", handle(getRoute))
}))
