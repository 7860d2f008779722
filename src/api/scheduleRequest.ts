// Reads a /schedule request in the order of SPEC's check table: missing key or URL (empty 400),
// body, URL, tags, key (401), then the scheduling value and the other headers. The result is a
// command for commands/schedule.ts; every rejection is the spec's exact status and message. Last, a
// header (name or value) holding a character PostgreSQL cannot store is a 400 naming the header:
// Node's HTTP parser already refuses NUL and other control characters in headers and decodes other
// bytes as Latin-1, which PostgreSQL stores, so this guards the store against any other way in.
import * as Effect from "effect/Effect"
import type { HttpServerRequest } from "effect/http"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { BadRequest, MalformedRequest } from "../domain/errors.ts"
import { parseRetryHeaders } from "../domain/retry.ts"
import { parseScheduleValue, type ScheduleCommand } from "../domain/schedule.ts"
import { unstorableCharacter, unstorableMessage } from "../domain/storableText.ts"
import { parseTagsHeader } from "../domain/tags.ts"
import type { HeaderPairs, TriggerDefinition } from "../domain/trigger.ts"
import { authenticateKey } from "./auth.ts"

/** Request headers that describe the call to timewheel itself, never stored (DECISIONS). */
const NOT_STORED = new Set([
  "host", "content-length", "content-type", "connection", "keep-alive", "transfer-encoding", "te", "trailer",
  "upgrade", "proxy-connection", "expect"
])

const NO_BODY_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

export const MAX_BODY_BYTES = 10 * 1024 * 1024

/** The headers to store and forward: every header without the prefix, in wire order, repeats kept. */
export const forwardedHeaders = (rawHeaders: ReadonlyArray<string>, prefix: string): HeaderPairs => {
  const own = `${prefix}-`
  const pairs: Array<readonly [string, string]> = []
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!
    const lower = name.toLowerCase()
    if (lower.startsWith(own) || NOT_STORED.has(lower)) continue
    pairs.push([name, rawHeaders[i + 1]!])
  }
  return pairs
}

const isAbsoluteHttpUrl = (value: string) => {
  try {
    const url = new URL(value)
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== ""
  } catch {
    return false
  }
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/

const booleanHeader = (name: string, value: string | undefined) => {
  if (value === undefined) return Effect.succeed(false)
  const lower = value.trim().toLowerCase()
  if (lower === "true") return Effect.succeed(true)
  if (lower === "false" || lower === "") return Effect.succeed(false)
  return Effect.fail(new BadRequest(`Invalid ${name}: ${value} (true or false)`))
}

const readBody = (request: HttpServerRequest.HttpServerRequest) =>
  NO_BODY_METHODS.has(request.method)
    ? Effect.succeed(null)
    : request.arrayBuffer.pipe(
      Effect.map((buffer) => (buffer.byteLength === 0 ? null : new Uint8Array(buffer))),
      Effect.mapError(() => new BadRequest("Failed to read request body"))
    )

/** The 400 message for the first header (name or value) holding a character PostgreSQL cannot store. */
export const unstorableHeader = (rawHeaders: ReadonlyArray<string>): string | undefined => {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!
    const character = unstorableCharacter(name) ?? unstorableCharacter(rawHeaders[i + 1]!)
    if (character !== undefined) return unstorableMessage(`header ${name.toLowerCase()}`, character)
  }
  return undefined
}

export const readScheduleRequest = (request: HttpServerRequest.HttpServerRequest, prefix: string, nowMs: number) =>
  Effect.gen(function*() {
    const header = (name: string): string | undefined => request.headers[`${prefix}-${name}`]
    const key = header("api-key")
    const url = header("url")
    if (key === undefined || url === undefined) return yield* Effect.fail(new MalformedRequest())
    const body = yield* readBody(request)
    if (!isAbsoluteHttpUrl(url.trim())) return yield* Effect.fail(new BadRequest(`Invalid URL: ${url}`))
    const tags = parseTagsHeader(header("tags"))
    if (tags._tag === "Err") return yield* Effect.fail(new BadRequest(tags.message))
    const principal = yield* authenticateKey(key)

    const parsedValue = parseScheduleValue(header("scheduled-at") ?? "", nowMs)
    if (parsedValue._tag === "Err") return yield* Effect.fail(new BadRequest(parsedValue.message))
    const value = parsedValue.value

    const retry = parseRetryHeaders((name) => request.headers[name.toLowerCase()], prefix)
    if (retry._tag === "Err") return yield* Effect.fail(new BadRequest(retry.message))
    // svc-title and svc-run-missed have no effect on recurring triggers: not even read for cron
    const recurring = value._tag === "Cron"
    const title = recurring ? undefined : header("title")
    if (title !== undefined && !PRINTABLE_ASCII.test(title)) {
      return yield* Effect.fail(new BadRequest(`Invalid ${prefix}-title: ASCII text only`))
    }
    const runMissed = recurring ? false : yield* booleanHeader(`${prefix}-run-missed`, header("run-missed"))
    const customKey = header("custom-key")
    const triggerId = header("trigger-id")
    const rawHeaders = NodeHttpServerRequest.toIncomingMessage(request).rawHeaders
    const unstorable = unstorableHeader(rawHeaders)
    if (unstorable !== undefined) return yield* Effect.fail(new BadRequest(unstorable))
    const definition: TriggerDefinition = {
      url: url.trim(),
      method: request.method,
      headers: forwardedHeaders(rawHeaders, prefix),
      body,
      contentType: request.headers["content-type"] ?? null,
      title: title === undefined || title === "" ? null : title,
      tags: tags.tags,
      customKey: customKey === undefined || customKey === "" ? null : customKey,
      retry: retry.policy
    }
    return {
      projectId: principal.projectId,
      value,
      definition,
      triggerId: triggerId === undefined || triggerId === "" ? null : triggerId,
      runMissed
    } satisfies ScheduleCommand
  })
