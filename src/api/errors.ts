// The service's errors as the spec renders them (SPEC "Errors"): tagged errors with a message become
// `{"_tag","message"}` JSON with the matching status; the empty-body 400/404 and the plain-text 415
// have their own classes. Unexpected failures become a 500 carrying only a request id.
import * as Data from "effect/Data"
import { HttpServerResponse } from "effect/http"

export class BadRequest extends Data.TaggedError("BadRequest")<{ readonly message: string }> {}
export class Unauthorized extends Data.TaggedError("Unauthorized")<{ readonly message: string }> {}
export class QuotaExceeded extends Data.TaggedError("QuotaExceeded")<{ readonly message: string }> {}
export class NotFound extends Data.TaggedError("NotFound")<{ readonly message: string }> {}
export class Gone extends Data.TaggedError("Gone")<{ readonly message: string }> {}
/** `400` with an empty body: a required header missing, or an unreadable JSON body. */
export class EmptyBadRequest extends Data.TaggedError("EmptyBadRequest")<{}> {}
/** `404` with an empty body: unknown path, or a method the endpoint does not accept. */
export class EmptyNotFound extends Data.TaggedError("EmptyNotFound")<{}> {}
/** `415` plain text. */
export class UnsupportedContentType extends Data.TaggedError("UnsupportedContentType")<{ readonly contentType: string }> {}

export type ApiError =
  | BadRequest
  | Unauthorized
  | QuotaExceeded
  | NotFound
  | Gone
  | EmptyBadRequest
  | EmptyNotFound
  | UnsupportedContentType

const STATUS = {
  BadRequest: 400,
  Unauthorized: 401,
  QuotaExceeded: 402,
  NotFound: 404,
  Gone: 410
} as const

export const isApiError = (error: unknown): error is ApiError =>
  typeof error === "object" && error !== null && "_tag" in error &&
  ["BadRequest", "Unauthorized", "QuotaExceeded", "NotFound", "Gone", "EmptyBadRequest", "EmptyNotFound", "UnsupportedContentType"]
    .includes((error as { _tag: string })._tag)

export const jsonResponse = (status: number, body: unknown) =>
  HttpServerResponse.text(JSON.stringify(body), { status, contentType: "application/json" })

export const renderApiError = (error: ApiError): HttpServerResponse.HttpServerResponse => {
  switch (error._tag) {
    case "EmptyBadRequest":
      return HttpServerResponse.empty({ status: 400 })
    case "EmptyNotFound":
      return HttpServerResponse.empty({ status: 404 })
    case "UnsupportedContentType":
      return HttpServerResponse.text(`Unsupported content-type: ${error.contentType}`, { status: 415 })
    default:
      return jsonResponse(STATUS[error._tag], { _tag: error._tag, message: error.message })
  }
}

export const internalError = (requestId: string) =>
  jsonResponse(500, { _tag: "InternalServerError", message: "Internal server error", requestId })
