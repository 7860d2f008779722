// Any method /schedule (create or edit a trigger) and DELETE /cancel: raw routes, because the method,
// headers and body of /schedule are the request to replay later.
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as ByteSize from "effect/ByteSize"
import { AppConfig } from "../config.ts"
import { cancelTrigger } from "../commands/cancel.ts"
import { scheduleTrigger } from "../commands/schedule.ts"
import { BadRequest, MalformedRequest } from "../domain/errors.ts"
import { CANCEL_HEADERS, missingHeaderHint } from "../domain/headerHints.ts"
import { skippedWarning } from "../domain/scheduledAt.ts"
import { cancelTargetOf } from "../domain/scheduleInput.ts"
import { authenticateKey } from "./auth.ts"
import { asciiLine, jsonResponse, WARNING_HEADER } from "./errors.ts"
import { handle } from "./handle.ts"
import { headerNamesOf, MAX_BODY_BYTES, readScheduleRequest } from "./scheduleRequest.ts"

const scheduleHandler = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const config = yield* AppConfig
  const nowMs = yield* Clock.currentTimeMillis
  const command = yield* readScheduleRequest(request, config.prefix, nowMs).pipe(
    Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES))
  )
  const result = yield* scheduleTrigger(command, nowMs)
  const response = request.method === "HEAD" ? HttpServerResponse.empty({ status: 200 }) : jsonResponse(200, result)
  if (result.status !== "skipped") return response
  const warning = skippedWarning(request.headers[`${config.prefix}-scheduled-at`] ?? "", Date.parse(result.scheduledAt), `${config.prefix}-run-missed`)
  return HttpServerResponse.setHeader(response, WARNING_HEADER, asciiLine(warning))
})

const cancelHandler = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { prefix } = yield* AppConfig
  const key = request.headers[`${prefix}-api-key`]
  if (key === undefined) {
    return yield* Effect.fail(new MalformedRequest(missingHeaderHint(prefix, "api-key", CANCEL_HEADERS, headerNamesOf(request), "/cancel")))
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
  yield* router.add("*", "/schedule", handle(scheduleHandler))
  yield* router.add("DELETE", "/cancel", handle(cancelHandler))
}))
