// The fast lane: the two hottest requests, `/schedule` and `GET /health`, taken from Node's request
// event before Effect's HTTP server sees them (BENCHMARKS.md "Ingest: one /schedule call"). The
// generic server's work per request (wrapping the request, the router, the
// middleware, a fiber for the whole exchange, the body read as a stream of Effect, the response
// converted back) cost more than the call's own checks and its share of the insert.
// - `/schedule`: the body is collected from Node's events, then the same checks in the same order
//   (scheduleRequest.ts, its three pure steps around the body and the key) run synchronously with a
//   key the key cache remembers; a plain create (no key, no id, no cron) goes to the insert batcher
//   with a callback (commands/schedule.ts `plainCreates`: the same steps as its Effect use case). Anything else — a key not remembered, an edit or keyed upsert, a cron value, a
//   missing header, a wake-up to send, a failed insert — runs the route's own Effect
//   (schedule.ts `scheduleResponse`, or the rest of it) in one fiber. Every rejection is rendered
//   by the one error renderer (errors.ts `renderApiError`, or handle.ts in the fiber).
// - `GET /health` with a remembered key (key header, else Bearer): health.ts `healthAnswer`, run
//   synchronously; anything else goes to the Effect route.
// Taken at all, at the request's head: exactly `/schedule` (any method) whose body is absent or
// declared with a Content-Length of at most FAST_LANE_MAX_BODY_BYTES, and exactly `/health` by GET.
// Everything else (a query string, a trailing slash, a chunked or larger body, `Expect:
// 100-continue`, a dashboard session) goes to the Effect routes, and so does every request while
// tracing is on (server.ts): the Effect server makes each call's span.
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { HttpServerResponse } from "effect/http"
import * as Scope from "effect/Scope"
import type { IncomingMessage, ServerResponse } from "node:http"
import { Wakeups } from "../cluster/wakeups.ts"
import { AppConfig } from "../config.ts"
import { ApiKeyCache } from "../commands/apiKeyCache.ts"
import { type PlainCreated, plainCreates, plainOnceValue, scheduleTrigger } from "../commands/schedule.ts"
import { BadRequest } from "../domain/errors.ts"
import { keyOrBearerOf } from "./auth.ts"
import { renderApiError } from "./errors.ts"
import { handle } from "./handle.ts"
import { healthAnswer } from "./health.ts"
import { scheduleAnswer, scheduleResponse } from "./schedule.ts"
import {
  scheduleCommandFailure, scheduleCommandFrom, scheduleKeyAndUrl, type ScheduleRequest, scheduleTargetOf, storesBody
} from "./scheduleRequest.ts"

/** A /schedule body up to this size is collected by the lane; a larger one goes to the Effect route. */
export const FAST_LANE_MAX_BODY_BYTES = 1024 * 1024

/** Takes the request (and answers it) or leaves it to the Effect routes (false). */
export type FastLane = (request: IncomingMessage, response: ServerResponse) => boolean

/** Writes an answer of the routes' kinds (empty, or text/bytes) as one head and one `end`. */
const send = (request: IncomingMessage, response: ServerResponse, answer: HttpServerResponse.HttpServerResponse) => {
  if (response.writableEnded || response.destroyed) return
  const body = answer.body
  response.writeHead(answer.status, answer.headers)
  if (body._tag === "Uint8Array" && request.method !== "HEAD") response.end(body.text ?? body.body)
  else response.end()
}

/** The declared body size: 0 without one, undefined when it is chunked or over the lane's limit. */
const declaredBodyBytes = (request: IncomingMessage): number | undefined => {
  if (request.headers["transfer-encoding"] !== undefined) return undefined
  const length = request.headers["content-length"]
  if (length === undefined) return 0
  const bytes = Number(length)
  return Number.isSafeInteger(bytes) && bytes >= 0 && bytes <= FAST_LANE_MAX_BODY_BYTES ? bytes : undefined
}

/** The whole body as its own bytes (null when empty), then `done`; nothing when the request is cut short. */
const collectBody = (request: IncomingMessage, done: (body: Uint8Array | null) => void) => {
  const chunks: Array<Buffer> = []
  let size = 0
  request.on("data", (chunk: Buffer) => {
    chunks.push(chunk)
    size += chunk.length
  })
  request.on("end", () => {
    if (size === 0) return done(null)
    const body = new Uint8Array(size)
    let at = 0
    for (const chunk of chunks) {
      body.set(chunk, at)
      at += chunk.length
    }
    done(body)
  })
}

/** The parts of a Node request the /schedule checks read, its body already in. */
const scheduleRequestFrom = (request: IncomingMessage, body: Uint8Array | null): ScheduleRequest => ({
  method: request.method ?? "GET",
  header: (name) => request.headers[name] as string | undefined,
  rawHeaders: request.rawHeaders,
  body: Effect.succeed(body)
})

/** What the answers run in a fiber need. */
type LaneServices =
  | Effect.Services<ReturnType<typeof scheduleResponse>>
  | Effect.Services<ReturnType<typeof scheduleTrigger>>
  | Effect.Services<ReturnType<typeof healthAnswer>>
  | Effect.Services<typeof plainCreates>
  | Wakeups

export const makeFastLane = Effect.gen(function*() {
  const { prefix } = yield* AppConfig
  const keyHeader = `${prefix}-api-key`
  const clock = yield* Clock.Clock
  const keys = yield* ApiKeyCache
  const createPlain = yield* plainCreates
  // a scope of its own, made before the server's: it closes after the server's graceful stop, so a
  // request in flight at the stop is answered, as on the Effect routes
  const scope = yield* Scope.fork(yield* Effect.scope, "parallel")
  const context = yield* Effect.context<LaneServices>()
  const fork = Effect.runForkWith(context)
  const runSync = Effect.runSyncWith(context)

  /** Runs the answer in a fiber of the lane's scope (interrupted when the server stops) and writes it. */
  const answer = (
    request: IncomingMessage,
    response: ServerResponse,
    effect: Effect.Effect<HttpServerResponse.HttpServerResponse, never, LaneServices>
  ) => {
    const fiber = Fiber.runIn(fork(effect), scope)
    fiber.addObserver((exit) =>
      send(request, response, exit._tag === "Success"
        ? exit.value
        // the answers render every failure (handle.ts): this is an interruption, the server stopping
        : HttpServerResponse.empty({ status: Cause.hasInterruptsOnly(exit.cause) ? 503 : 500 }))
    )
  }

  /** A plain create's outcome, answered. */
  const created = (parts: ScheduleRequest, request: IncomingMessage, response: ServerResponse) => (outcome: PlainCreated) => {
    if (outcome._tag === "Failed") return answer(request, response, handle(outcome.failure))
    if (outcome._tag === "Refused") return send(request, response, renderApiError(outcome.error))
    if (outcome.wake === undefined) return send(request, response, scheduleAnswer(parts, prefix, outcome.result))
    const wake = outcome.wake
    answer(request, response, Effect.map(Effect.flatMap(Wakeups, (wakeups) => wakeups.wake([wake])), () => scheduleAnswer(parts, prefix, outcome.result)))
  }

  /** The checks in their order, synchronously while the key is remembered; the Effect route's otherwise. */
  const scheduleWithBody = (request: IncomingMessage, response: ServerResponse, body: Uint8Array | null) => {
    const parts = scheduleRequestFrom(request, body)
    const head = scheduleKeyAndUrl(parts, prefix)
    const projectId = head._tag === "Missing" ? undefined : keys.rememberedProjectOf(head.key)
    if (head._tag === "Missing" || projectId === undefined) return answer(request, response, scheduleResponse(parts))
    const target = scheduleTargetOf(parts, prefix, head.url)
    if (target._tag === "Err") return send(request, response, renderApiError(new BadRequest(target.message)))
    const nowMs = clock.currentTimeMillisUnsafe()
    const command = scheduleCommandFrom(parts, prefix, { projectId, target: target.value, body }, nowMs)
    if (command._tag === "Err") return send(request, response, renderApiError(scheduleCommandFailure(parts, prefix, command.message)))
    const plain = plainOnceValue(command.value)
    if (plain === undefined) {
      return answer(request, response, handle(Effect.map(scheduleTrigger(command.value, nowMs), (result) => scheduleAnswer(parts, prefix, result))))
    }
    createPlain(command.value, plain, nowMs, created(parts, request, response))
  }

  const schedule = (request: IncomingMessage, response: ServerResponse): boolean => {
    const declared = declaredBodyBytes(request)
    if (declared === undefined) return false
    if (declared === 0 || !storesBody(request.method ?? "GET")) scheduleWithBody(request, response, null)
    else collectBody(request, (body) => scheduleWithBody(request, response, body))
    return true
  }

  // the answer of a remembered key changes only with the clock's millisecond (the loops' ages) and
  // the flags the heartbeats keep: worked out at most once per millisecond of the service's clock
  // and of real time (a test's clock may stand still while the flags change), not per request
  let health = { atMs: Number.NaN, realMs: Number.NaN, answer: HttpServerResponse.empty() }
  const healthNow = () => {
    const atMs = clock.currentTimeMillisUnsafe()
    const realMs = Math.floor(performance.now())
    if (atMs !== health.atMs || realMs !== health.realMs) health = { atMs, realMs, answer: runSync(healthAnswer(true)) }
    return health.answer
  }

  const healthByKey = (request: IncomingMessage, response: ServerResponse): boolean => {
    const key = keyOrBearerOf((name) => request.headers[name] as string | undefined, keyHeader)
    if (key === undefined || keys.rememberedProjectOf(key) === undefined) return false
    send(request, response, healthNow())
    return true
  }

  const lane: FastLane = (request, response) => {
    const url = request.url
    if (url === "/schedule") return schedule(request, response)
    if (url === "/health" && request.method === "GET") return healthByKey(request, response)
    return false
  }
  return lane
})
