// Delivery executor: sends one stored request with undici and classifies the outcome; never fails.
// One Agent per process (closed with the layer, aborting what is still in flight), one deadline covering
// head and body, and the guard refusing private target addresses when BLOCK_PRIVATE_TARGETS is on
// (lib/privateTargets.ts, shared with the alert webhooks).
import type * as net from "node:net"
import { Agent } from "undici"
import type { Dispatcher } from "undici"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import type { ErrorKind } from "../domain/errorKind.ts"
import { targetConnector } from "../lib/privateTargets.ts"
import { classifyError } from "./classify.ts"
import { prepareRequest } from "./request.ts"
import type { DeliveryRequest, PreparedRequest } from "./request.ts"

export interface DeliveryOutcome {
  readonly startedAtMs: number
  readonly finishedAtMs: number
  readonly durationMs: number
  readonly httpStatus: number | null
  /** Lower-case names; a repeated header's values joined with ", ". */
  readonly responseHeaders: Record<string, string> | null
  /** UTF-8 text of at most the first 64 KiB of the body. */
  readonly responseBody: string | null
  readonly errorKind: ErrorKind | null
  readonly errorCode: string | null
  readonly errorMessage: string | null
  readonly connectTimeoutSeconds: number
  readonly timeoutSeconds: number
}

export interface ExecutorOptions {
  readonly blockPrivateTargets: boolean
  /** Connect (DNS, TCP, TLS) timeout; fixed at 10 s (docs/retries.md "Timeouts"), tests may lower it. */
  readonly connectTimeoutMs?: number
  /** Resolver used for host names (default `dns.lookup`); tests inject one so no query leaves the machine. */
  readonly lookup?: net.LookupFunction
}

export const MAX_RESPONSE_BODY_BYTES = 64 * 1024
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000

/** The Agent of deliveries: its connections go through the private-target guard when it is on. */
const makeAgent = (options: ExecutorOptions, connectTimeoutMs: number): Agent =>
  new Agent({
    connect: targetConnector({ blockPrivateTargets: options.blockPrivateTargets, timeoutMs: connectTimeoutMs, lookup: options.lookup }),
    connections: 256,
    pipelining: 1,
    keepAliveTimeout: 4_000,
    headersTimeout: 0, // our deadline decides
    bodyTimeout: 0,
    maxHeaderSize: 64 * 1024
  })

const closeAgent = async (agent: Agent): Promise<void> => {
  let timer: NodeJS.Timeout | undefined
  const grace = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, 2_000)
  })
  await Promise.race([agent.close().catch(() => {}), grace])
  clearTimeout(timer)
  await agent.destroy().catch(() => {})
}

// ---------------------------------------------------------------------------------------------------------
// One attempt

interface Attempt {
  readonly httpStatus: number | null
  readonly responseHeaders: Record<string, string> | null
  readonly responseBody: string | null
  readonly errorKind: ErrorKind | null
  readonly errorCode: string | null
  readonly errorMessage: string | null
}

const joinHeaders = (headers: Dispatcher.ResponseData["headers"]): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value
  }
  return out
}

/** UTF-8 text of `bytes`; when they were cut short, a trailing incomplete character is left out. */
export const utf8Text = (bytes: Uint8Array, complete: boolean): string => {
  let end = bytes.length
  if (!complete && end > 0) {
    let i = end - 1
    while (i > 0 && end - i < 4 && (bytes[i]! & 0xc0) === 0x80) i--
    const lead = bytes[i]!
    const size = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1
    if (i + size > end) end = i
  }
  return UTF8.decode(bytes.subarray(0, end))
}

const UTF8 = new TextDecoder("utf-8", { ignoreBOM: true })

const failed = (err: unknown, headArrived: boolean, partial?: Partial<Attempt>): Attempt => {
  const c = classifyError(err, headArrived)
  return {
    httpStatus: null,
    responseHeaders: null,
    responseBody: null,
    ...partial,
    errorKind: c.errorKind,
    errorCode: c.errorCode,
    errorMessage: c.errorMessage
  }
}

/** Our whole-exchange deadline as an abort reason; classified as `timeout`. */
const deadlineError = (): Error => Object.assign(new Error("Request deadline reached"), { name: "TimeoutError" })
/** The body limit was reached: the rest of the response is not read (the connection is dropped). */
const BODY_LIMIT_REACHED = new Error("Response body limit reached")

/**
 * One exchange through undici's dispatch API: the response head and at most MAX_RESPONSE_BODY_BYTES
 * of the body are kept, one timer is the deadline for head and body, and `abort` cancels it from
 * outside (shutdown). No stream, promise or signal per request: this is the delivery hot path.
 */
class AttemptHandler implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | null = null
  #pendingAbort: Error | null = null
  #httpStatus: number | null = null
  #headers: Record<string, string> | null = null
  #chunks: Array<Uint8Array> = []
  #length = 0
  #deadlineHit = false
  #done = false
  readonly #timer: NodeJS.Timeout
  readonly #timeoutMs: number
  readonly #finish: (attempt: Attempt) => void
  readonly #onLeave: (() => void) | undefined

  constructor(timeoutMs: number, finish: (attempt: Attempt) => void, onLeave: (() => void) | undefined) {
    this.#timeoutMs = timeoutMs
    this.#finish = finish
    this.#onLeave = onLeave
    this.#timer = setTimeout(() => {
      this.#deadlineHit = true
      this.abort(deadlineError())
    }, timeoutMs)
    this.#timer.unref()
  }

  /** Cancels the exchange; its result is the classified `reason`. Before the request has a socket, on getting one. */
  abort(reason: Error): void {
    if (this.#done) return
    if (this.#controller !== null) this.#controller.abort(reason)
    else this.#pendingAbort = reason
  }

  /** Called by undici on a connection, right before it writes the request: the request leaves now. */
  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#onLeave?.()
    this.#controller = controller
    if (this.#pendingAbort !== null) controller.abort(this.#pendingAbort)
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Dispatcher.ResponseData["headers"]): void {
    if (statusCode < 200) return // informational (1xx): the final response follows
    this.#httpStatus = statusCode
    this.#headers = joinHeaders(headers)
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Uint8Array): void {
    if (this.#done) return
    const take = Math.min(chunk.byteLength, MAX_RESPONSE_BODY_BYTES - this.#length)
    if (take > 0) {
      this.#chunks.push(take === chunk.byteLength ? chunk : chunk.subarray(0, take))
      this.#length += take
    }
    if (take < chunk.byteLength) {
      this.#succeed(false)
      controller.abort(BODY_LIMIT_REACHED)
    }
  }

  onResponseEnd(): void {
    this.#succeed(true)
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.#done) return
    const headArrived = this.#httpStatus !== null
    const result = headArrived
      ? failed(err, true, { httpStatus: this.#httpStatus, responseHeaders: this.#headers, responseBody: this.#bodyText(false) })
      : failed(err, false)
    this.#end(this.#deadlineHit && result.errorKind === "timeout"
      ? {
        ...result,
        errorMessage: `Request timed out after ${this.#timeoutMs / 1000} s${headArrived ? " while reading the response body" : ""}`
      }
      : result)
  }

  #bodyText(complete: boolean): string {
    const chunks = this.#chunks
    const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.#length)
    return utf8Text(bytes, complete)
  }

  #succeed(complete: boolean): void {
    if (this.#done) return
    this.#end({
      httpStatus: this.#httpStatus,
      responseHeaders: this.#headers,
      responseBody: this.#bodyText(complete),
      errorKind: null,
      errorCode: null,
      errorMessage: null
    })
  }

  #end(attempt: Attempt): void {
    this.#done = true
    clearTimeout(this.#timer)
    this.#chunks = []
    this.#finish(attempt)
  }
}

/** An attempt in flight: `abort` cancels it, and `result` then resolves with the classified reason. */
export interface RunningAttempt {
  readonly result: Promise<Attempt>
  readonly abort: (reason: Error) => void
}

/**
 * Starts one attempt; every failure is a classified result, never a rejection. `onLeave` is called
 * when the request is written to a connection (after any wait for one, and its connect), not when
 * the attempt starts; never if it fails before.
 */
export const startAttempt = (agent: Agent, req: DeliveryRequest, onLeave?: () => void): RunningAttempt => {
  let prepared: PreparedRequest
  try {
    const result = prepareRequest(req)
    if (Result.isFailure(result)) return { result: Promise.resolve(failed(result.failure, false)), abort: () => {} }
    prepared = result.success
  } catch (err) {
    return { result: Promise.resolve(failed(err, false)), abort: () => {} }
  }
  let handler!: AttemptHandler
  const result = new Promise<Attempt>((resolve) => {
    handler = new AttemptHandler(prepared.timeoutMs, resolve, onLeave)
    try {
      agent.dispatch({
        origin: prepared.origin,
        path: prepared.path,
        method: prepared.method as Dispatcher.HttpMethod,
        headers: prepared.headers as Array<string>,
        body: prepared.body,
        ...(prepared.servername === null ? {} : { servername: prepared.servername })
      } as Dispatcher.DispatchOptions, handler)
    } catch (err) {
      handler.onResponseError(null as unknown as Dispatcher.DispatchController, err as Error)
    }
  })
  return { result, abort: (reason) => handler.abort(reason) }
}

// ---------------------------------------------------------------------------------------------------------
// Service

export interface ExecutorShape {
  /**
   * One attempt, as a promise (the delivery hot path has no fiber per request); it never rejects.
   * Requests still in flight when the layer closes are aborted. Concurrency is the caller's to bound.
   * `onLeave` is called when the request is actually written to a connection (see startAttempt).
   */
  readonly send: (req: DeliveryRequest, onLeave?: () => void) => Promise<DeliveryOutcome>
  /** Cancels every attempt in flight (a stopping node past its drain timeout); each ends as interrupted. */
  readonly abortAll: () => void
}

/** Ends an attempt cut short by the service stopping: no verdict from the target (errorKind `unknown`). */
const INTERRUPTED = Object.assign(
  new Error("Attempt interrupted: the service stopped before the target answered (the request may have reached it)"),
  { name: "InterruptedError", code: "INTERRUPTED" }
)

const make = (options: ExecutorOptions) =>
  Effect.gen(function*() {
    const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
    const connectTimeoutSeconds = connectTimeoutMs / 1000
    const clock = yield* Clock.Clock
    const inFlight = new Set<RunningAttempt>()
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() => makeAgent(options, connectTimeoutMs)),
      (agent) =>
        Effect.promise(() => {
          for (const running of inFlight) running.abort(INTERRUPTED)
          return closeAgent(agent)
        })
    )

    const send = async (req: DeliveryRequest, onLeave?: () => void): Promise<DeliveryOutcome> => {
      const startedAtMs = clock.currentTimeMillisUnsafe()
      const running = startAttempt(agent, req, onLeave)
      inFlight.add(running)
      const result = await running.result
      inFlight.delete(running)
      const finishedAtMs = clock.currentTimeMillisUnsafe()
      return {
        startedAtMs,
        finishedAtMs,
        durationMs: finishedAtMs - startedAtMs,
        ...result,
        connectTimeoutSeconds,
        timeoutSeconds: req.timeoutSeconds
      }
    }
    const abortAll = () => {
      for (const running of inFlight) running.abort(INTERRUPTED)
    }
    return { send, abortAll } satisfies ExecutorShape
  })

export class Executor extends Context.Service<Executor, ExecutorShape>()("timewheel/Executor") {
  static readonly layer = (options: ExecutorOptions): Layer.Layer<Executor> => Layer.effect(Executor, make(options))
}
