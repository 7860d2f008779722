// The API's errors as HTTP responses (docs/errors.md): a domain failure with a message becomes
// `{"_tag","message"}` JSON with the status its tag stands for; the empty-body 400 (MalformedRequest)
// and 404 (EmptyNotFound), the empty 403 of a browser at /mcp (EmptyForbidden), and the plain-text
// 415, have no JSON. A 503 (the database cannot be reached, docs/errors.md "The format") also says
// `Retry-After: 1`, a 429 (dashboard sign-in throttling) its own Retry-After. Unexpected failures
// become a 500 carrying only a request id.
//
// Error hints (docs/errors.md "Error hints") are rendered here and nowhere else: every 4xx answer carries
// `Timewheel-Error`, one line of plain ASCII naming what was wrong — the error's `hint` when it has
// one, else its message — while the body stays exactly as docs/errors.md says. A new error gets its hint
// by failing with one of these errors (a domain error built with a hint, or its message); the
// router's own 404s and any 4xx built by hand get theirs from errorHints.ts.
import * as Data from "effect/Data"
import { HttpServerResponse } from "effect/http"
import { isSpecFailure, type SpecFailure } from "../domain/errors.ts"

/** `404` with an empty body: unknown path, or a method the endpoint does not accept. */
export class EmptyNotFound extends Data.TaggedError("EmptyNotFound")<{ readonly hint: string }> {}
/** `403` with an empty body: a browser's request (an `Origin` header) to an endpoint for servers only. */
export class EmptyForbidden extends Data.TaggedError("EmptyForbidden")<{ readonly hint: string }> {}
/** `415` plain text. */
export class UnsupportedContentType extends Data.TaggedError("UnsupportedContentType")<{ readonly contentType: string }> {}
/** `413` `{"_tag":"ContentTooLarge"}`: a request body over the endpoint's limit (`maxBytes`). */
export class ContentTooLarge extends Data.TaggedError("ContentTooLarge")<{ readonly maxBytes: number }> {}

export type ApiError = SpecFailure | EmptyNotFound | EmptyForbidden | UnsupportedContentType | ContentTooLarge

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

/** The header naming what was wrong in a 4xx answer. */
export const ERROR_HEADER = "timewheel-error"
/** The header of a success that may not be what the caller meant (a skipped one-shot). */
export const WARNING_HEADER = "timewheel-warning"

/** Seconds a client should wait before retrying a 503. */
export const RETRY_AFTER_SECONDS = 1

/** Longest header value sent: a hint quoting a 16 KB URL is cut. */
const MAX_HINT_LENGTH = 400

const ASCII_SPELLINGS: Record<string, string> = { "≥": ">=", "≤": "<=", "→": "->", "—": "-", "–": "-", "…": "..." }

/** `\uXXXX` for each UTF-16 unit of a character. */
const escaped = (character: string): string => {
  let text = ""
  for (let i = 0; i < character.length; i++) text += `\\u${character.charCodeAt(i).toString(16).padStart(4, "0")}`
  return text
}

/**
 * Text as a header value: one line of printable ASCII (line breaks and tabs become spaces, the
 * messages' `≥` and `≤` become `>=` and `<=`, any other character its `\uXXXX` escape), at most 400
 * characters. Node refuses other characters in a header, which would turn the answer into a 500.
 */
export const asciiLine = (text: string): string => {
  let line = ""
  for (const character of text) {
    const code = character.codePointAt(0)!
    if (code >= 0x20 && code < 0x7f) line += character
    else if (character === "\n" || character === "\r" || character === "\t") line += " "
    else line += ASCII_SPELLINGS[character] ?? escaped(character)
    if (line.length > MAX_HINT_LENGTH) return `${line.slice(0, MAX_HINT_LENGTH - 3)}...`
  }
  return line
}

export const isApiError = (error: unknown): error is ApiError =>
  isSpecFailure(error) || error instanceof EmptyNotFound || error instanceof EmptyForbidden ||
  error instanceof UnsupportedContentType || error instanceof ContentTooLarge

/** `10 MiB`, `64 KiB`, else bytes. */
const sizeName = (bytes: number) =>
  bytes % 1_048_576 === 0 ? `${bytes / 1_048_576} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`

/** What the `Timewheel-Error` header says of an error. */
export const hintOf = (error: ApiError): string => {
  switch (error._tag) {
    case "EmptyNotFound":
    case "EmptyForbidden":
      return error.hint
    case "UnsupportedContentType":
      return `Content-Type must be application/json, got ${error.contentType}`
    case "ContentTooLarge":
      return `request body over this endpoint's limit of ${sizeName(error.maxBytes)} (${error.maxBytes} bytes)`
    default:
      return error.hint ?? error.message
  }
}

/** The response with its `Timewheel-Error` header. */
export const withHint = (hint: string) => HttpServerResponse.setHeader(ERROR_HEADER, asciiLine(hint))

export const jsonResponse = (status: number, body: unknown) => jsonTextResponse(status, JSON.stringify(body))

/** A JSON answer already written as text. */
export const jsonTextResponse = (status: number, text: string) =>
  HttpServerResponse.text(text, { status, contentType: "application/json" })

const bodyOf = (error: ApiError): HttpServerResponse.HttpServerResponse => {
  switch (error._tag) {
    case "MalformedRequest":
      return HttpServerResponse.empty({ status: 400 })
    case "EmptyNotFound":
      return HttpServerResponse.empty({ status: 404 })
    case "EmptyForbidden":
      return HttpServerResponse.empty({ status: 403 })
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

/** An error's answer: the documented status and body, and on a 4xx the `Timewheel-Error` header. */
export const renderApiError = (error: ApiError): HttpServerResponse.HttpServerResponse => {
  const response = bodyOf(error)
  return response.status >= 400 && response.status < 500 ? withHint(hintOf(error))(response) : response
}

export const internalError = (requestId: string) =>
  jsonResponse(500, { _tag: "InternalServerError", message: "Internal server error", requestId })
