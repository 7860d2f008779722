// The dashboard's alert endpoints (docs/dashboard.md: a dashboard session only, 401
// to an API key in either header): GET /alerts (the project's webhook URL, e-mail recipients,
// whether SMTP is configured, the latest messages), PUT /alerts (replaces the settings; 415, empty
// 400 for invalid JSON, 400 naming a bad field), POST /alerts/test (sends a test message to every
// target now and answers each outcome; 400 without a target).
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { getAlerts, putAlerts, sendTestAlert } from "../commands/alerts.ts"
import { authenticateSession } from "./auth.ts"
import { jsonResponse } from "./errors.ts"
import { handle } from "./handle.ts"
import { readJsonBody, requireExactPath } from "./requestParts.ts"

const ALERTS = /^\/alerts$/
const TEST = /^\/alerts\/test$/

export const AlertRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("GET", "/alerts", handle(Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* requireExactPath(request, ALERTS)
    const { projectId } = yield* authenticateSession(request)
    return jsonResponse(200, yield* getAlerts(projectId))
  })))
  yield* router.add("PUT", "/alerts", handle(Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* requireExactPath(request, ALERTS)
    const { projectId } = yield* authenticateSession(request)
    const body = yield* readJsonBody(request, 64 * 1024)
    return jsonResponse(200, yield* putAlerts(projectId, body))
  })))
  yield* router.add("POST", "/alerts/test", handle(Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* requireExactPath(request, TEST)
    const { projectId } = yield* authenticateSession(request)
    return jsonResponse(200, yield* sendTestAlert(projectId))
  })))
}))
