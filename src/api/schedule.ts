// Any method /schedule (create or edit a trigger) and DELETE /cancel: raw routes, because the method,
// headers and body of /schedule are the request to replay later.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { AppConfig } from "../config.ts"
import { cancelTrigger } from "../commands/cancel.ts"
import { type ScheduleResult, scheduleTrigger } from "../commands/schedule.ts"
import { BadRequest, MalformedRequest } from "../domain/errors.ts"
import { CANCEL_HEADERS, missingHeaderHint } from "../domain/headerHints.ts"
import { skippedWarning } from "../domain/scheduledAt.ts"
import { cancelTargetOf } from "../domain/scheduleInput.ts"
import { authenticateKey } from "./auth.ts"
import { asciiLine, jsonResponse, WARNING_HEADER } from "./errors.ts"
import { handle } from "./handle.ts"
import { headerNamesOf, readScheduleRequest, type ScheduleRequest, scheduleRequestOf } from "./scheduleRequest.ts"

/**
 * The 200 of /schedule (the route's and the fast lane's): the result as JSON (no body to a HEAD
 * request, docs/scheduling.md "The answer"); a skipped one-shot's answer says why in
 * `Timewheel-Warning` (docs/scheduling.md "Past dates").
 */
export const scheduleAnswer = (request: ScheduleRequest, prefix: string, result: ScheduleResult) => {
  const response = request.method === "HEAD" ? HttpServerResponse.empty({ status: 200 }) : jsonResponse(200, result)
  if (result.status !== "skipped") return response
  const warning = skippedWarning(request.header(`${prefix}-scheduled-at`) ?? "", Date.parse(result.scheduledAt), `${prefix}-run-missed`)
  return HttpServerResponse.setHeader(response, WARNING_HEADER, asciiLine(warning))
}

/** The answer to a /schedule request, its failures rendered: the Effect route's, and the fast lane's when it cannot answer alone. */
export const scheduleResponse = (request: ScheduleRequest) =>
  handle(Effect.gen(function*() {
    const config = yield* AppConfig
    const nowMs = yield* Clock.currentTimeMillis
    const command = yield* readScheduleRequest(request, config.prefix, nowMs)
    return scheduleAnswer(request, config.prefix, yield* scheduleTrigger(command, nowMs))
  }))

const cancelHandler = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { prefix } = yield* AppConfig
  const key = request.headers[`${prefix}-api-key`]
  if (key === undefined) {
    const names = headerNamesOf(scheduleRequestOf(request))
    return yield* Effect.fail(new MalformedRequest(missingHeaderHint(prefix, "api-key", CANCEL_HEADERS, names, "/cancel")))
  }
  // a custom key is looked up as text (Node's parser already refuses NUL in headers; see scheduleRequest.ts)
  const target = cancelTargetOf(request.headers[`${prefix}-trigger-id`], request.headers[`${prefix}-custom-key`], {
    id: `${prefix}-trigger-id`,
    customKey: `${prefix}-custom-key`,
    noun: "header"
  })
  if (target._tag === "Err") return yield* Effect.fail(new BadRequest(target.message))
  const principal = yield* authenticateKey(key)
  yield* cancelTrigger(principal.projectId, target.value, yield* Clock.currentTimeMillis)
  return HttpServerResponse.empty({ status: 204 })
})

export const ScheduleRoutes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add("*", "/schedule", Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => scheduleResponse(scheduleRequestOf(request))))
  yield* router.add("DELETE", "/cancel", handle(cancelHandler))
}))
