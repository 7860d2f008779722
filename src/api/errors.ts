// The spec's errors as HTTP responses (SPEC "Errors"): a domain failure with a message becomes
// `{"_tag","message"}` JSON with the status its tag stands for; the empty-body 400 (MalformedRequest)
// and 404 (EmptyNotFound), and the plain-text 415, have no JSON. A 503 (the database cannot be
// reached, DECISIONS "Faults") also says `Retry-After: 1`, a 429 (dashboard sign-in
// throttling) its own Retry-After. Unexpected failures become a 500 carrying
// only a request id.
import * as Data from "effect/Data"
import { HttpServerResponse } from "effect/http"
import { isSpecFailure, type SpecFailure } from "../domain/errors.ts"

/** `404` with an empty body: unknown path, or a method the endpoint does not accept. */
export class EmptyNotFound extends Data.TaggedError("EmptyNotFound")<{}> {}
/** `415` plain text. */
export class UnsupportedContentType extends Data.TaggedError("UnsupportedContentType")<{ readonly contentType: string }> {}
/** `413` `{"_tag":"ContentTooLarge"}`: a request body over the endpoint's limit (`maxBytes`). */
export class ContentTooLarge extends Data.TaggedError("ContentTooLarge")<{ readonly maxBytes: number }> {}

export type ApiError = SpecFailure | EmptyNotFound | UnsupportedContentType | ContentTooLarge

const STATUS: Record<Exclude<SpecFailure["_tag"], "MalformedRequest" | "TooManyRequests">, number> = {
  BadRequest: 400,
  Unauthorized: 401,
  QuotaExceeded: 402,
  NotFound: 404,
  Conflict: 409,
  Gone: 410,
  Forbidden: 403,
  ServiceUnavailable: 503
}

/** Seconds a client should wait before retrying a 503. */
export const RETRY_AFTER_SECONDS = 1

export const isApiError = (error: unknown): error is ApiError =>
  isSpecFailure(error) || error instanceof EmptyNotFound || error instanceof UnsupportedContentType ||
  error instanceof ContentTooLarge

export const jsonResponse = (status: number, body: unknown) =>
  HttpServerResponse.text(JSON.stringify(body), { status, contentType: "application/json" })

export const renderApiError = (error: ApiError): HttpServerResponse.HttpServerResponse => {
  switch (error._tag) {
    case "MalformedRequest":
      return HttpServerResponse.empty({ status: 400 })
    case "EmptyNotFound":
      return HttpServerResponse.empty({ status: 404 })
    case "UnsupportedContentType":
      return HttpServerResponse.text(`Unsupported content-type: ${error.contentType}`, { status: 415 })
    case "ContentTooLarge":
      return jsonResponse(413, { _tag: error._tag, message: `Request body larger than ${error.maxBytes} bytes` })
    case "TooManyRequests":
      return jsonResponse(429, { _tag: error._tag, message: error.message }).pipe(
        HttpServerResponse.setHeader("retry-after", String(error.retryAfterSeconds))
      )
    case "ServiceUnavailable":
      return jsonResponse(503, { _tag: error._tag, message: error.message }).pipe(
        HttpServerResponse.setHeader("retry-after", String(RETRY_AFTER_SECONDS))
      )
    default:
      return jsonResponse(STATUS[error._tag], { _tag: error._tag, message: error.message })
  }
}

export const internalError = (requestId: string) =>
  jsonResponse(500, { _tag: "InternalServerError", message: "Internal server error", requestId })
