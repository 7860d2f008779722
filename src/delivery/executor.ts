// Delivery executor: sends one stored request with undici and classifies the outcome; never fails.
// One set of connections per process (targetConnections.ts; closed with the layer, aborting what is
// still in flight), one deadline covering head and body, and the guard refusing private target
// addresses when BLOCK_PRIVATE_TARGETS is on (lib/privateTargets.ts, shared with the alert webhooks).
import type * as net from "node:net"
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
import { makeTargetConnections } from "./targetConnections.ts"
import type { Connection, TargetConnections } from "./targetConnections.ts"

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

/** The connections of deliveries: they go through the private-target guard when it is on. */
const makeConnections = (options: ExecutorOptions, connectTimeoutMs: number): TargetConnections =>
  makeTargetConnections({
    connect: targetConnector({ blockPrivateTargets: options.blockPrivateTargets, timeoutMs: connectTimeoutMs, lookup: options.lookup }),
    connections: 256, // per origin
    pipelining: 1,
    keepAliveTimeout: 4_000,
    headersTimeout: 0, // our deadline decides
    bodyTimeout: 0,
    maxHeaderSize: 64 * 1024
  })

const closeConnections = async (connections: TargetConnections): Promise<void> => {
  let timer: NodeJS.Timeout | undefined
  const grace = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, 2_000)
  })
  await Promise.race([connections.close(), grace])
  clearTimeout(timer)
  await connections.destroy()
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

/**
 * The response head as recorded: undici's object of it (lower-case names, made for this response),
 * a repeated header's values joined with ", " in place; no copy unless a value is missing.
 */
export const joinHeaders = (headers: Dispatcher.ResponseData["headers"]): Record<string, string> => {
  for (const name in headers) {
    const value = headers[name]
    if (typeof value === "string") continue
    if (value === undefined) {
      const out: Record<string, string> = {}
      for (const [n, v] of Object.entries(headers)) if (v !== undefined) out[n] = typeof v === "string" ? v : v.join(", ")
      return out
    }
    headers[name] = value.join(", ")
  }
  return headers as Record<string, string>
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
  /** The body limit was reached: the abort that follows is ours, the attempt a success. */
  #cut = false
  #done = false
  /** The connection the exchange was given to: it takes the next one once this has ended. */
  connection: Connection | null = null
  /** Neighbours in the executor's list of attempts in flight (InFlight). */
  prev: AttemptHandler | null = null
  next: AttemptHandler | null = null
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

  get ended(): boolean {
    return this.#done
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
      this.#cut = true
      controller.abort(BODY_LIMIT_REACHED) // before the connection is released: the next exchange gets a new socket
      this.#succeed(false)
    }
  }

  onResponseEnd(): void {
    this.#succeed(true)
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.#done || this.#cut) return
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
    const connection = this.connection
    this.connection = null
    connection?.release() // before the outcome: the send it frees may go to this connection
    this.#finish(attempt)
  }
}

/** An attempt in flight: `abort` cancels it, and its callback is then called with the classified reason. */
export interface RunningAttempt {
  readonly abort: (reason: Error) => void
}

const NOT_RUNNING: RunningAttempt = { abort: () => {} }

/** The attempts in flight, linked through their handlers: no Set entry (nor identity hash) per request. */
class InFlight {
  #head: AttemptHandler | null = null
  add(handler: AttemptHandler): void {
    handler.next = this.#head
    if (this.#head !== null) this.#head.prev = handler
    this.#head = handler
  }
  remove(handler: AttemptHandler): void {
    if (handler.prev !== null) handler.prev.next = handler.next
    else if (this.#head === handler) this.#head = handler.next
    else return // not in the list
    if (handler.next !== null) handler.next.prev = handler.prev
    handler.prev = null
    handler.next = null
  }
  /** Aborts every attempt in the list (each leaves it as it ends). */
  abortAll(reason: Error): void {
    const all: Array<AttemptHandler> = []
    for (let h = this.#head; h !== null; h = h.next) all.push(h)
    for (const handler of all) handler.abort(reason)
  }
}

/**
 * Starts one attempt and calls `done` once with its result; every failure is a classified result,
 * never an exception (a request that cannot be sent is answered on the next microtask, as a sent
 * one is later). `onLeave` is called when the request is written to a connection (after any wait
 * for one, and its connect), not when the attempt starts; never if it fails before.
 */
export const startAttempt = (
  connections: TargetConnections,
  req: DeliveryRequest,
  done: (attempt: Attempt) => void,
  onLeave?: () => void
): RunningAttempt => {
  let prepared: PreparedRequest
  try {
    const result = prepareRequest(req)
    if (Result.isFailure(result)) {
      const attempt = failed(result.failure, false)
      queueMicrotask(() => done(attempt))
      return NOT_RUNNING
    }
    prepared = result.success
  } catch (err) {
    const attempt = failed(err, false)
    queueMicrotask(() => done(attempt))
    return NOT_RUNNING
  }
  const handler = new AttemptHandler(prepared.timeoutMs, done, onLeave)
  const connection = connections.dispatch({
    origin: prepared.origin,
    path: prepared.path,
    method: prepared.method as Dispatcher.HttpMethod,
    headers: prepared.headers as Array<string>,
    body: prepared.body,
    servername: prepared.servername ?? undefined
  } as Dispatcher.DispatchOptions & { readonly origin: string }, handler)
  if (connection !== null) {
    // the exchange may have ended already (undici refusing the request at once): release it now
    if (handler.ended) connection.release()
    else handler.connection = connection
  }
  return handler
}

// ---------------------------------------------------------------------------------------------------------
// Service

export interface ExecutorShape {
  /**
   * One attempt: `done` is called once with its outcome (never an exception). No promise or fiber
   * per request: this is the delivery hot path. Requests still in flight when the layer closes are
   * aborted. Concurrency is the caller's to bound. `onLeave` is called when the request is actually
   * written to a connection (see startAttempt).
   */
  readonly start: (req: DeliveryRequest, done: (outcome: DeliveryOutcome) => void, onLeave?: () => void) => void
  /** The same attempt as a promise (tests, and callers off the hot path); it never rejects. */
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
    const inFlight = new InFlight()
    const connections = yield* Effect.acquireRelease(
      Effect.sync(() => makeConnections(options, connectTimeoutMs)),
      (connections) =>
        Effect.promise(() => {
          inFlight.abortAll(INTERRUPTED)
          return closeConnections(connections)
        })
    )

    const start = (req: DeliveryRequest, done: (outcome: DeliveryOutcome) => void, onLeave?: () => void): void => {
      const startedAtMs = clock.currentTimeMillisUnsafe()
      let running: RunningAttempt | undefined
      let finished = false
      running = startAttempt(connections, req, (result) => {
        finished = true // possibly before startAttempt returns (undici may refuse the request at once)
        if (running !== undefined && running !== NOT_RUNNING) inFlight.remove(running as AttemptHandler)
        const finishedAtMs = clock.currentTimeMillisUnsafe()
        done({
          startedAtMs,
          finishedAtMs,
          durationMs: finishedAtMs - startedAtMs,
          httpStatus: result.httpStatus,
          responseHeaders: result.responseHeaders,
          responseBody: result.responseBody,
          errorKind: result.errorKind,
          errorCode: result.errorCode,
          errorMessage: result.errorMessage,
          connectTimeoutSeconds,
          timeoutSeconds: req.timeoutSeconds
        })
      }, onLeave)
      if (!finished && running !== NOT_RUNNING) inFlight.add(running as AttemptHandler)
    }
    const send = (req: DeliveryRequest, onLeave?: () => void): Promise<DeliveryOutcome> =>
      new Promise((resolve) => start(req, resolve, onLeave))
    const abortAll = () => {
      inFlight.abortAll(INTERRUPTED)
    }
    return { start, send, abortAll } satisfies ExecutorShape
  })

export class Executor extends Context.Service<Executor, ExecutorShape>()("timewheel/Executor") {
  static readonly layer = (options: ExecutorOptions): Layer.Layer<Executor> => Layer.effect(Executor, make(options))
}
