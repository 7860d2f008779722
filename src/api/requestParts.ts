// Reading the parts of a JSON-API request the same way everywhere: the exact path (the router
// forgives a trailing or doubled slash, the API does not), query parameters with one clear 400
// message per bad value (also a character PostgreSQL cannot store, e.g. `%00`), and a JSON body under the API's rules (another Content-Type → 415 plain
// text; a missing one is read as JSON; unreadable or invalid JSON, or nested deeper than
// MAX_JSON_DEPTH → empty 400; over the caller's size limit → 413).
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Effect from "effect/Effect"
import { HttpIncomingMessage, type HttpServerError, HttpServerRequest } from "effect/http"
import { BadRequest, MalformedRequest } from "../domain/errors.ts"
import { nestsDeeperThan } from "../domain/jsonDepth.ts"
import { unstorableCharacter, unstorableMessage } from "../domain/storableText.ts"
import { readBodyText } from "./bodyText.ts"
import { ContentTooLarge, EmptyNotFound, UnsupportedContentType } from "./errors.ts"

/** Fails with the router's empty 404 unless the path (query excluded) matches `pattern` exactly. */
export const requireExactPath = (request: HttpServerRequest.HttpServerRequest, pattern: RegExp) => {
  const path = request.url.split("?", 1)[0] ?? ""
  return pattern.test(path) ? Effect.void : Effect.fail(new EmptyNotFound({ hint: `no endpoint ${request.method} ${path} (paths are exact: no trailing slash)` }))
}

/** The query parameters of the current request; a parameter sent twice is a 400. */
export const queryParams = Effect.gen(function*() {
  const params = yield* HttpServerRequest.ParsedSearchParams
  return {
    /**
     * The value, or undefined when absent; an empty value, or one holding a character PostgreSQL
     * cannot store (NUL), is a 400 naming the parameter.
     */
    get: (name: string): Effect.Effect<string | undefined, BadRequest> => {
      const value = params[name]
      if (typeof value !== "string" && value !== undefined) return Effect.fail(new BadRequest(`${name} must be given at most once`))
      return textParam(name, value)
    }
  }
})

/**
 * A text filter or cursor as the log reads take it, from a query or from an MCP tool's arguments:
 * an empty value, or one holding a character PostgreSQL cannot store (NUL), is a 400 naming it.
 */
export const textParam = (name: string, value: string | undefined): Effect.Effect<string | undefined, BadRequest> => {
  if (value === undefined) return Effect.succeed(undefined)
  if (value === "") return Effect.fail(new BadRequest(`${name} must not be empty`))
  const unstorable = unstorableCharacter(value)
  if (unstorable !== undefined) return Effect.fail(new BadRequest(unstorableMessage(name, unstorable)))
  return Effect.succeed(value)
}

/** A whole number within [min, max] (a query's digits already read as a number, or an MCP tool's argument). */
export const integerInRange = (name: string, value: number | undefined, min: number, max: number) =>
  value === undefined || (Number.isInteger(value) && value >= min && value <= max)
    ? Effect.succeed(value)
    : bad(`${name} must be an integer between ${min} and ${max}`)

export type QueryParams = Effect.Success<typeof queryParams>

const bad = (message: string) => Effect.fail(new BadRequest(message))

export const MAX_PAGE_SIZE = 500
export const DEFAULT_PAGE_SIZE = 50

/** `limit`: an integer from 1 to 500, default 50 (MCP tools: a number argument). */
export const pageLimitOf = (limit: number | undefined) =>
  Effect.map(integerInRange("limit", limit, 1, MAX_PAGE_SIZE), (n) => n ?? DEFAULT_PAGE_SIZE)

export const pageLimit = (query: QueryParams) => integerParam(query, "limit", 1, MAX_PAGE_SIZE).pipe(Effect.flatMap(pageLimitOf))

/** A parameter restricted to a list of values. */
export const oneOf = <const A extends string>(query: QueryParams, name: string, values: ReadonlyArray<A>) =>
  Effect.flatMap(query.get(name), (raw): Effect.Effect<A | undefined, BadRequest> =>
    raw === undefined || (values as ReadonlyArray<string>).includes(raw)
      ? Effect.succeed(raw as A | undefined)
      : bad(`${name} must be one of ${values.join(", ")}`))

/** `true` or `false`. */
export const booleanParam = (query: QueryParams, name: string) =>
  Effect.flatMap(query.get(name), (raw): Effect.Effect<boolean | undefined, BadRequest> =>
    raw === undefined ? Effect.succeed(undefined)
    : raw === "true" ? Effect.succeed(true)
    : raw === "false" ? Effect.succeed(false)
    : bad(`${name} must be true or false`))

/** A whole number within [min, max], written as plain digits. */
export const integerParam = (query: QueryParams, name: string, min: number, max: number) =>
  Effect.flatMap(query.get(name), (raw): Effect.Effect<number | undefined, BadRequest> =>
    raw === undefined ? Effect.succeed(undefined)
    : /^\d+$/.test(raw) ? integerInRange(name, Number(raw), min, max)
    : bad(`${name} must be an integer between ${min} and ${max}`))

const JSON_MEDIA_TYPE = "application/json"

/**
 * The request's JSON body: a Content-Type other than application/json (parameters such as
 * charset allowed) → 415; no Content-Type (or an empty one) → read as JSON; unreadable or
 * invalid JSON, or JSON nested deeper than MAX_JSON_DEPTH → empty 400; with `maxBytes`, a larger
 * body → 413 (read to its end, not kept). With `optional`, an empty body is `undefined`.
 */
export const readJsonBody = (request: HttpServerRequest.HttpServerRequest, maxBytes?: number, optional = false) =>
  Effect.map(readJson(request, maxBytes, optional), (read) => read?.json)

/** As readJsonBody (not optional), with the body's text as well (to decode it again later from one string). */
export const readJsonBodyAndText = (request: HttpServerRequest.HttpServerRequest, maxBytes?: number) =>
  Effect.map(readJson(request, maxBytes, false), (read) => read!)

const readJson = (request: HttpServerRequest.HttpServerRequest, maxBytes: number | undefined, optional: boolean) =>
  Effect.gen(function*() {
    const contentType = request.headers["content-type"]
    if (contentType !== undefined && contentType.trim() !== "") {
      const mediaType = (contentType.split(";", 1)[0] ?? "").trim().toLowerCase()
      if (mediaType !== JSON_MEDIA_TYPE) return yield* Effect.fail(new UnsupportedContentType({ contentType }))
    }
    // read by bodyText.ts, not the HTTP layer's reader, which keeps the body's bytes on the request
    const limit = maxBytes ?? (yield* HttpIncomingMessage.MaxBodySize)
    const text = yield* readBodyText(NodeHttpServerRequest.toIncomingMessage(request), limit === undefined ? undefined : Number(limit)).pipe(
      Effect.mapError((failure) =>
        maxBytes !== undefined && failure === "TooLarge" ? new ContentTooLarge({ maxBytes }) : new MalformedRequest("body could not be read")
      )
    )
    if (text.trim() === "") {
      if (optional) return undefined
      return yield* Effect.fail(new MalformedRequest("body is empty: send a JSON object"))
    }
    if (nestsDeeperThan(text)) return yield* Effect.fail(new MalformedRequest("body nests deeper than 256 levels"))
    try {
      return { json: JSON.parse(text) as unknown, text }
    } catch (error) {
      return yield* Effect.fail(new MalformedRequest(`body is not valid JSON: ${(error as Error).message}`))
    }
  })

/** The server's failure for a body over `HttpIncomingMessage.MaxBodySize`. */
export const isBodyTooLarge = (error: HttpServerError.HttpServerError): boolean =>
  error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge"
