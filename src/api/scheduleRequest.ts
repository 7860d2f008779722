// Reads a /schedule request in the order of SPEC's check table: missing key or URL (empty 400),
// body, URL, tags, key (401), then the scheduling value and the other headers (the checks and
// messages shared with the MCP tool are domain/scheduleInput.ts). The result is a
// command for commands/schedule.ts; every rejection is the spec's exact status and message. Last, a
// header (name or value) holding a character PostgreSQL cannot store is a 400 naming the header:
// Node's HTTP parser already refuses NUL and other control characters in headers and decodes other
// bytes as Latin-1, which PostgreSQL stores, so this guards the store against any other way in.
import * as Effect from "effect/Effect"
import type { HttpServerRequest } from "effect/http"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { BadRequest, MalformedRequest } from "../domain/errors.ts"
import { NOT_STORED_HEADERS } from "../domain/httpHeaders.ts"
import { missingHeaderHint, type RequestHeaderNames, SCHEDULE_HEADERS } from "../domain/headerHints.ts"
import { parseRetryHeaders } from "../domain/retry.ts"
import type { ScheduleCommand } from "../domain/schedule.ts"
import { type Checked, checkScheduleTarget, scheduleCommandOf } from "../domain/scheduleInput.ts"
import { unstorableCharacter, unstorableMessage } from "../domain/storableText.ts"
import type { HeaderPairs } from "../domain/trigger.ts"
import { authenticateKey } from "./auth.ts"

const NO_BODY_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

/** SPEC "/schedule" other request parts 1: for GET, HEAD and OPTIONS no body is read or stored. */
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

const readBody = (request: HttpServerRequest.HttpServerRequest) =>
  storesBody(request.method)
    ? request.arrayBuffer.pipe(
      Effect.map((buffer) => (buffer.byteLength === 0 ? null : new Uint8Array(buffer))),
      Effect.mapError(() => new BadRequest("Failed to read request body"))
    )
    : Effect.succeed(null)

/** The 400 message for the first header (name or value) holding a character PostgreSQL cannot store. */
export const unstorableHeader = (rawHeaders: ReadonlyArray<string>): string | undefined => {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!
    const character = unstorableCharacter(name) ?? unstorableCharacter(rawHeaders[i + 1]!)
    if (character !== undefined) return unstorableMessage(`header ${name.toLowerCase()}`, character)
  }
  return undefined
}

const BEARER = /^bearer[ \t]/i

/** The names of the request's headers, and whether it carries a Bearer token, for the hints of a missing header. */
export const headerNamesOf = (request: HttpServerRequest.HttpServerRequest): RequestHeaderNames => ({
  names: Object.keys(request.headers),
  bearer: BEARER.test(request.headers["authorization"] ?? "")
})

export const readScheduleRequest = (request: HttpServerRequest.HttpServerRequest, prefix: string, nowMs: number) =>
  Effect.gen(function*() {
    const header = (name: string): string | undefined => request.headers[`${prefix}-${name}`]
    const missing = (name: string) => missingHeaderHint(prefix, name, SCHEDULE_HEADERS, headerNamesOf(request), "/schedule")
    const key = header("api-key")
    const url = header("url")
    if (key === undefined) return yield* Effect.fail(new MalformedRequest(missing("api-key")))
    if (url === undefined) return yield* Effect.fail(new MalformedRequest(missing("url")))
    const body = yield* readBody(request)
    const target = checkScheduleTarget(url, (header("tags") ?? "").split(","))
    if (target._tag === "Err") return yield* Effect.fail(new BadRequest(target.message))
    const principal = yield* authenticateKey(key)
    const rawHeaders = NodeHttpServerRequest.toIncomingMessage(request).rawHeaders
    const scheduledAt = header("scheduled-at")
    const command = scheduleCommandOf({
      projectId: principal.projectId,
      target: target.value,
      scheduledAt: scheduledAt ?? "",
      retry: () => {
        const retry = parseRetryHeaders((name) => request.headers[name.toLowerCase()], prefix)
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
      body,
      contentType: request.headers["content-type"] ?? null
    }, nowMs)
    if (command._tag === "Err") {
      // the value is read first: without the header, the failure is its `Invalid date: `
      return yield* Effect.fail(new BadRequest(command.message, scheduledAt === undefined ? missing("scheduled-at") : undefined))
    }
    return command.value satisfies ScheduleCommand
  })
