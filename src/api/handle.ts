// Wraps every route handler so that nothing escapes as a stack trace: the API's errors become their
// responses (JSON, empty 400/404, plain-text 415) and anything unexpected a 500 JSON carrying a
// request id, logged with its cause.
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type { HttpServerResponse } from "effect/http"
import * as crypto from "node:crypto"
import { internalError, isApiError, renderApiError } from "./errors.ts"

export const handle = <E, R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  Effect.catchCause(handler, (cause) => {
    const failure = Cause.findErrorOption(cause)
    if (failure._tag === "Some" && isApiError(failure.value)) return Effect.succeed(renderApiError(failure.value))
    if (Cause.hasInterruptsOnly(cause)) return Effect.interrupt
    const requestId = crypto.randomUUID()
    return Effect.as(
      Effect.logError("request failed", cause).pipe(Effect.annotateLogs({ requestId })),
      internalError(requestId)
    )
  })
