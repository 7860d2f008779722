// Reads a /schedule request in the order of SPEC's check table: missing key or URL (empty 400),
// body, URL, tags, key (401), then the scheduling value and the other headers. The result is a
// command for commands/schedule.ts; every rejection is the spec's exact status and message.
import * as Effect from "effect/Effect"
import type { HttpServerRequest } from "effect/http"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { isCronValue, nextFireAfter, parseCronValue } from "../domain/cron/index.ts"
import { parseRetryHeaders } from "../domain/retry.ts"
import { parseDateValue } from "../domain/scheduledAt.ts"
import { parseTagsHeader } from "../domain/tags.ts"
import type { HeaderPairs, TriggerDefinition } from "../domain/trigger.ts"
import { authenticateKey } from "./auth.ts"
import { BadRequest, EmptyBadRequest } from "./errors.ts"

/** Request headers that describe the call to timewheel itself, never stored (DECISIONS). */
const NOT_STORED = new Set([
  "host", "content-length", "content-type", "connection", "keep-alive", "transfer-encoding", "te", "trailer",
  "upgrade", "proxy-connection", "expect"
])

const NO_BODY_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

export const MAX_BODY_BYTES = 10 * 1024 * 1024

export type ScheduleValue =
  | { readonly _tag: "Once"; readonly fireAtMs: number; readonly nowBased: boolean }
  | { readonly _tag: "Cron"; readonly cronExpr: string; readonly cronTz: string }

export interface ScheduleCommand {
  readonly projectId: string
  readonly value: ScheduleValue
  readonly definition: TriggerDefinition
  readonly triggerId: string | null
  readonly runMissed: boolean
}

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
  return Effect.fail(new BadRequest({ message: `Invalid ${name}: ${value} (true or false)` }))
}

const readBody = (request: HttpServerRequest.HttpServerRequest) =>
  NO_BODY_METHODS.has(request.method)
    ? Effect.succeed(null)
    : request.arrayBuffer.pipe(
      Effect.map((buffer) => (buffer.byteLength === 0 ? null : new Uint8Array(buffer))),
      Effect.mapError(() => new BadRequest({ message: "Failed to read request body" }))
    )

/** `svc-scheduled-at`: a date (with operations) or a `cron(...)` value; its 400 messages. */
export const readScheduleValue = (scheduledAt: string, nowMs: number): Effect.Effect<ScheduleValue, BadRequest> => {
  if (isCronValue(scheduledAt)) {
    const parsed = parseCronValue(scheduledAt)
    if (parsed._tag === "Err") return Effect.fail(new BadRequest({ message: parsed.message }))
    if (nextFireAfter(parsed.schedule, nowMs) === null) {
      return Effect.fail(new BadRequest({ message: `Invalid cron expression: ${parsed.schedule.expression} never fires` }))
    }
    return Effect.succeed({ _tag: "Cron", cronExpr: parsed.schedule.expression, cronTz: parsed.schedule.timeZone })
  }
  const parsed = parseDateValue(scheduledAt, nowMs)
  if (parsed._tag === "Err") return Effect.fail(new BadRequest({ message: parsed.message }))
  return Effect.succeed({ _tag: "Once", fireAtMs: parsed.fireAtMs, nowBased: parsed.nowBased })
}

export const readScheduleRequest = (request: HttpServerRequest.HttpServerRequest, prefix: string, nowMs: number) =>
  Effect.gen(function*() {
    const header = (name: string): string | undefined => request.headers[`${prefix}-${name}`]
    const key = header("api-key")
    const url = header("url")
    if (key === undefined || url === undefined) return yield* Effect.fail(new EmptyBadRequest())
    const body = yield* readBody(request)
    if (!isAbsoluteHttpUrl(url.trim())) return yield* Effect.fail(new BadRequest({ message: `Invalid URL: ${url}` }))
    const tags = parseTagsHeader(header("tags"))
    if (tags._tag === "Err") return yield* Effect.fail(new BadRequest({ message: tags.message }))
    const principal = yield* authenticateKey(key)

    const value = yield* readScheduleValue(header("scheduled-at") ?? "", nowMs)

    const retry = parseRetryHeaders((name) => request.headers[name.toLowerCase()], prefix)
    if (retry._tag === "Err") return yield* Effect.fail(new BadRequest({ message: retry.message }))
    // svc-title and svc-run-missed have no effect on recurring triggers: not even read for cron
    const recurring = value._tag === "Cron"
    const title = recurring ? undefined : header("title")
    if (title !== undefined && !PRINTABLE_ASCII.test(title)) {
      return yield* Effect.fail(new BadRequest({ message: `Invalid ${prefix}-title: ASCII text only` }))
    }
    const runMissed = recurring ? false : yield* booleanHeader(`${prefix}-run-missed`, header("run-missed"))
    const customKey = header("custom-key")
    const triggerId = header("trigger-id")
    const rawHeaders = NodeHttpServerRequest.toIncomingMessage(request).rawHeaders
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
