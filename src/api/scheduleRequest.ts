// Reads a /schedule request in the order of docs/scheduling.md "Errors": missing key or URL (empty 400),
// body, URL, tags, key (401), then the scheduling value and the other headers (the checks and
// messages shared with the MCP tool are domain/scheduleInput.ts). The result is a
// command for commands/schedule.ts; every rejection is the documented status and message. The
// request is read through `ScheduleRequest`, the parts these checks use, which the Effect route
// (`scheduleRequestOf`) and the fast lane (fastLane.ts, from Node's own request) both give, and the
// checks are three pure steps around the two that need I/O (the body, the key), which the Effect
// route runs as `readScheduleRequest` and the fast lane runs synchronously with a remembered key. Last, a
// header (name or value) holding a character PostgreSQL cannot store is a 400 naming the header:
// Node's HTTP parser already refuses NUL and other control characters in headers and decodes other
// bytes as Latin-1, which PostgreSQL stores, so this guards the store against any other way in.
import * as ByteSize from "effect/ByteSize"
import * as Effect from "effect/Effect"
import { HttpIncomingMessage, type HttpServerRequest } from "effect/http"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { BadRequest, MalformedRequest } from "../domain/errors.ts"
import { missingHeaderHint, type RequestHeaderNames, SCHEDULE_HEADERS } from "../domain/headerHints.ts"
import { NOT_STORED_HEADERS } from "../domain/httpHeaders.ts"
import { parseRetryHeaders } from "../domain/retry.ts"
import { scheduledAtHint } from "../domain/scheduledAtHints.ts"
import type { ScheduleCommand } from "../domain/schedule.ts"
import { type Checked, checkScheduleTarget, scheduleCommandOf, type ScheduleTarget } from "../domain/scheduleInput.ts"
import { unstorableCharacter, unstorableMessage } from "../domain/storableText.ts"
import type { HeaderPairs } from "../domain/trigger.ts"
import { authenticateKey } from "./auth.ts"
import { ContentTooLarge } from "./errors.ts"
import { isBodyTooLarge } from "./requestParts.ts"

const NO_BODY_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

/** docs/scheduling.md "What is stored and sent": for GET, HEAD and OPTIONS no body is read or stored. */
export const storesBody = (method: string): boolean => !NO_BODY_METHODS.has(method)

export const MAX_BODY_BYTES = 10 * 1024 * 1024

/** The headers to store and forward: every header without the prefix, in wire order, repeats kept. */
export const forwardedHeaders = (rawHeaders: ReadonlyArray<string>, prefix: string): HeaderPairs => {
  const own = `${prefix}-`
  const pairs: Array<readonly [string, string]> = []
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!
    const lower = name.toLowerCase()
    if (lower.startsWith(own) || NOT_STORED_HEADERS.has(lower)) continue
    pairs.push([name, rawHeaders[i + 1]!])
  }
  return pairs
}

const booleanHeader = (name: string, value: string | undefined): Checked<boolean> => {
  if (value === undefined) return { _tag: "Ok", value: false }
  const lower = value.trim().toLowerCase()
  if (lower === "true") return { _tag: "Ok", value: true }
  if (lower === "false" || lower === "") return { _tag: "Ok", value: false }
  return { _tag: "Err", message: `Invalid ${name}: ${value} (true or false)` }
}

/** The parts of a /schedule request its checks read. */
export interface ScheduleRequest {
  readonly method: string
  /** The value of a header by its lower-case name (repeats joined, as Node joins them). */
  readonly header: (name: string) => string | undefined
  /** Names and values in wire order, as sent. */
  readonly rawHeaders: ReadonlyArray<string>
  /** The body (null when empty), read only for a method that stores one: `storesBody`. */
  readonly body: Effect.Effect<Uint8Array | null, BadRequest | ContentTooLarge>
}

/**
 * The request as the Effect server gives it: its body read up to MAX_BODY_BYTES, a larger one a 413
 * naming the limit (docs/internals.md "Fine print": a request over the size limits may be refused in
 * another format than its check table's; below it, an unreadable body is `Failed to read request body`).
 */
export const scheduleRequestOf = (request: HttpServerRequest.HttpServerRequest): ScheduleRequest => ({
  method: request.method,
  header: (name) => request.headers[name],
  rawHeaders: NodeHttpServerRequest.toIncomingMessage(request).rawHeaders,
  body: request.arrayBuffer.pipe(
    Effect.map((buffer) => (buffer.byteLength === 0 ? null : new Uint8Array(buffer))),
    Effect.mapError((error) => (isBodyTooLarge(error) ? new ContentTooLarge({ maxBytes: MAX_BODY_BYTES }) : new BadRequest("Failed to read request body"))),
    Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES))
  )
})

const BEARER = /^bearer[ \t]/i

/** The names of the request's headers, and whether it carries a Bearer token, for the hints of a missing header. */
export const headerNamesOf = (request: Pick<ScheduleRequest, "header" | "rawHeaders">): RequestHeaderNames => ({
  names: request.rawHeaders.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase()),
  bearer: BEARER.test(request.header("authorization") ?? "")
})

/** The `Timewheel-Error` hint for a missing header of /schedule (docs/errors.md "Error hints"). */
const missingHint = (request: ScheduleRequest, prefix: string, name: string) =>
  missingHeaderHint(prefix, name, SCHEDULE_HEADERS, headerNamesOf(request), "/schedule")

/** First: the key and URL headers, both required (without either, the empty 400 and its hint). */
export const scheduleKeyAndUrl = (
  request: ScheduleRequest,
  prefix: string
): { readonly _tag: "Ok"; readonly key: string; readonly url: string } | { readonly _tag: "Missing"; readonly error: MalformedRequest } => {
  const key = request.header(`${prefix}-api-key`)
  const url = request.header(`${prefix}-url`)
  if (key === undefined) return { _tag: "Missing", error: new MalformedRequest(missingHint(request, prefix, "api-key")) }
  if (url === undefined) return { _tag: "Missing", error: new MalformedRequest(missingHint(request, prefix, "url")) }
  return { _tag: "Ok", key, url }
}

/**
 * The 400 of a bad scheduling value or header; the value is read first, so without its header the
 * failure is its `Invalid date: ` and the hint says the header is missing; a bad value's hint shows
 * the accepted forms (domain/scheduledAtHints.ts).
 */
export const scheduleCommandFailure = (request: ScheduleRequest, prefix: string, message: string): BadRequest =>
  new BadRequest(
    message,
    request.header(`${prefix}-scheduled-at`) === undefined ? missingHint(request, prefix, "scheduled-at") : scheduledAtHint(message)
  )

/** After the body, before the key: the URL, then the tags. */
export const scheduleTargetOf = (request: ScheduleRequest, prefix: string, url: string): Checked<ScheduleTarget> =>
  checkScheduleTarget(url, (request.header(`${prefix}-tags`) ?? "").split(","))

/** After the key: the scheduling value and the other headers, giving the command (or the 400 message). */
export const scheduleCommandFrom = (
  request: ScheduleRequest,
  prefix: string,
  checked: { readonly projectId: string; readonly target: ScheduleTarget; readonly body: Uint8Array | null },
  nowMs: number
): Checked<ScheduleCommand> => {
  const header = (name: string): string | undefined => request.header(`${prefix}-${name}`)
  const rawHeaders = request.rawHeaders
  return scheduleCommandOf({
    projectId: checked.projectId,
    target: checked.target,
    scheduledAt: header("scheduled-at") ?? "",
    retry: () => {
      const retry = parseRetryHeaders((name) => request.header(name.toLowerCase()), prefix)
      return retry._tag === "Err" ? retry : { _tag: "Ok", value: retry.policy }
    },
    title: header("title"),
    titleName: `${prefix}-title`,
    customKeyName: `${prefix}-custom-key`,
    runMissed: () => booleanHeader(`${prefix}-run-missed`, header("run-missed")),
    customKey: header("custom-key"),
    triggerId: header("trigger-id"),
    unstorable: () => unstorableHeader(rawHeaders),
    method: request.method,
    headers: forwardedHeaders(rawHeaders, prefix),
    body: checked.body,
    contentType: request.header("content-type") ?? null
  }, nowMs)
}

/** The 400 message for the first header (name or value) holding a character PostgreSQL cannot store. */
export const unstorableHeader = (rawHeaders: ReadonlyArray<string>): string | undefined => {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!
    const character = unstorableCharacter(name) ?? unstorableCharacter(rawHeaders[i + 1]!)
    if (character !== undefined) return unstorableMessage(`header ${name.toLowerCase()}`, character)
  }
  return undefined
}

/** The checks in their order, the body and the key read through Effect. */
export const readScheduleRequest = (request: ScheduleRequest, prefix: string, nowMs: number) =>
  Effect.gen(function*() {
    const head = scheduleKeyAndUrl(request, prefix)
    if (head._tag === "Missing") return yield* Effect.fail(head.error)
    const body = storesBody(request.method) ? yield* request.body : null
    const target = scheduleTargetOf(request, prefix, head.url)
    if (target._tag === "Err") return yield* Effect.fail(new BadRequest(target.message))
    const principal = yield* authenticateKey(head.key)
    const command = scheduleCommandFrom(request, prefix, { projectId: principal.projectId, target: target.value, body }, nowMs)
    if (command._tag === "Err") return yield* Effect.fail(scheduleCommandFailure(request, prefix, command.message))
    return command.value satisfies ScheduleCommand
  })
