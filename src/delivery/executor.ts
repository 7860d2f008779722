// Delivery executor: sends one stored request with undici and classifies the outcome; never fails.
// One Agent per process (closed with the layer), a semaphore bounding requests in flight, one deadline
// covering head and body, and an optional guard refusing private target addresses (BLOCK_PRIVATE_TARGETS).
import * as dns from "node:dns"
import * as net from "node:net"
import type { Readable } from "node:stream"
import { Agent, buildConnector, request } from "undici"
import type { Dispatcher } from "undici"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as Semaphore from "effect/Semaphore"
import type { ErrorKind } from "../domain/errorKind.ts"
import { classifyError, InvalidRequestError } from "./classify.ts"
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
  readonly maxInFlight: number
  readonly blockPrivateTargets: boolean
  /** Connect (DNS, TCP, TLS) timeout; SPEC fixes 10 s, tests may lower it. */
  readonly connectTimeoutMs?: number
  /** Resolver used for host names (default `dns.lookup`); tests inject one so no query leaves the machine. */
  readonly lookup?: net.LookupFunction
}

export const MAX_RESPONSE_BODY_BYTES = 64 * 1024
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000

// ---------------------------------------------------------------------------------------------------------
// Private target guard

const blocked = new net.BlockList()
for (const [prefix, bits] of [
  ["0.0.0.0", 8], // "this network", incl. unspecified 0.0.0.0
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // shared address space (some clouds' metadata, e.g. 100.100.100.200)
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, incl. metadata 169.254.169.254
  ["172.16.0.0", 12],
  ["192.168.0.0", 16]
] as const) blocked.addSubnet(prefix, bits, "ipv4")
for (const [prefix, bits] of [
  ["::", 96], // unspecified ::, loopback ::1, IPv4-compatible
  ["fc00::", 7], // unique local, incl. metadata fd00:ec2::254
  ["fe80::", 10], // link-local
  ["fec0::", 10] // site-local (deprecated)
] as const) blocked.addSubnet(prefix, bits, "ipv6")

/** Loopback, private, link-local, metadata or unspecified, IPv4-mapped IPv6 forms included. */
export const isPrivateAddress = (address: string): boolean => {
  const family = net.isIP(address)
  if (family === 0) return false
  return blocked.check(address, family === 6 ? "ipv6" : "ipv4")
}

const privateTargetError = (address: string, host?: string) =>
  new InvalidRequestError(
    "PRIVATE_TARGET",
    `Target address ${address}${host !== undefined && host !== address ? ` (of ${host})` : ""} is private and BLOCK_PRIVATE_TARGETS is on`
  )

/** Resolves all addresses and keeps the public ones; the socket connects only to what passed the check. */
const guardedLookup = (base: net.LookupFunction): net.LookupFunction => (hostname, options, callback) => {
  base(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, [])
    const all = typeof addresses === "string" ? [{ address: addresses, family: net.isIP(addresses) }] : addresses
    const allowed = all.filter((a) => !isPrivateAddress(a.address))
    if (allowed.length === 0) {
      const none = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
        code: "ENOTFOUND",
        syscall: "getaddrinfo",
        hostname
      })
      return callback(all.length > 0 ? privateTargetError(all[0]!.address, hostname) : none, [])
    }
    if (options.all === true) return callback(null, allowed)
    callback(null, allowed[0]!.address, allowed[0]!.family)
  })
}

const makeAgent = (options: ExecutorOptions, connectTimeoutMs: number): Agent => {
  const base: net.LookupFunction = options.lookup ?? (dns.lookup as net.LookupFunction)
  const connector = buildConnector({
    timeout: connectTimeoutMs,
    allowH2: false,
    lookup: options.blockPrivateTargets ? guardedLookup(base) : base
  })
  const connect: buildConnector.connector = (opts, callback) => {
    // IP literals never reach the lookup: check them here.
    if (options.blockPrivateTargets && isPrivateAddress(opts.hostname)) {
      return callback(privateTargetError(opts.hostname), null)
    }
    connector(opts, callback)
  }
  return new Agent({
    connect,
    connections: 256,
    pipelining: 1,
    keepAliveTimeout: 4_000,
    headersTimeout: 0, // our deadline decides
    bodyTimeout: 0,
    maxHeaderSize: 64 * 1024
  })
}

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

/** Reads at most `limit` bytes, then destroys the stream: never buffers more than the limit. */
const readCapped = async (body: Readable, limit: number): Promise<{ text: string; error: unknown }> => {
  // chunks are kept as they come and joined once: most bodies are tiny, so no 64 KiB buffer per call
  const chunks: Array<Uint8Array> = []
  let length = 0
  let complete = true
  let error: unknown = undefined
  body.on("error", () => {}) // destroying an unfinished undici body emits RequestAbortedError: expected, not a crash
  try {
    for await (const chunk of body as AsyncIterable<Uint8Array>) {
      const take = Math.min(chunk.byteLength, limit - length)
      chunks.push(take === chunk.byteLength ? chunk : chunk.subarray(0, take))
      length += take
      if (take < chunk.byteLength || length === limit) {
        complete = take === chunk.byteLength && body.readableEnded
        break
      }
    }
  } catch (e) {
    error = e
    complete = false
  }
  if (!body.destroyed) body.destroy()
  const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length)
  return { text: utf8Text(bytes, complete), error }
}

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

const send = async (agent: Agent, prepared: PreparedRequest, interrupt: AbortSignal): Promise<Attempt> => {
  const deadline = AbortSignal.timeout(prepared.timeoutMs)
  const signal = AbortSignal.any([deadline, interrupt])
  // Our deadline's message names the timeout that applied.
  const timedOut = (a: Attempt): Attempt => {
    if (!deadline.aborted || a.errorKind !== "timeout") return a
    const during = a.httpStatus === null ? "" : " while reading the response body"
    return { ...a, errorMessage: `Request timed out after ${prepared.timeoutMs / 1000} s${during}` }
  }
  let res: Dispatcher.ResponseData<unknown>
  try {
    res = await request(`${prepared.origin}${prepared.path}`, {
      dispatcher: agent,
      method: prepared.method as Dispatcher.HttpMethod,
      headers: prepared.headers as Array<string>,
      body: prepared.body,
      signal,
      ...(prepared.servername === null ? {} : { servername: prepared.servername })
    } as Parameters<typeof request>[1])
  } catch (err) {
    return timedOut(failed(err, false))
  }
  const head = { httpStatus: res.statusCode, responseHeaders: joinHeaders(res.headers) }
  const { text, error } = await readCapped(res.body, MAX_RESPONSE_BODY_BYTES)
  if (error !== undefined) return timedOut(failed(error, true, { ...head, responseBody: text }))
  return { ...head, responseBody: text, errorKind: null, errorCode: null, errorMessage: null }
}

/** One attempt, start to finish; every failure is a classified result, never a rejection. */
export const attempt = async (agent: Agent, req: DeliveryRequest, interrupt: AbortSignal): Promise<Attempt> => {
  try {
    const prepared = prepareRequest(req)
    if (Result.isFailure(prepared)) return failed(prepared.failure, false)
    return await send(agent, prepared.success, interrupt)
  } catch (err) {
    return failed(err, false)
  }
}

// ---------------------------------------------------------------------------------------------------------
// Service

export interface ExecutorShape {
  readonly send: (req: DeliveryRequest) => Effect.Effect<DeliveryOutcome>
}

const make = (options: ExecutorOptions) =>
  Effect.gen(function*() {
    const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
    const agent = yield* Effect.acquireRelease(
      Effect.sync(() => makeAgent(options, connectTimeoutMs)),
      (agent) => Effect.promise(() => closeAgent(agent))
    )
    const permits = yield* Semaphore.make(Math.max(1, options.maxInFlight))
    const sendOne = (req: DeliveryRequest): Effect.Effect<DeliveryOutcome> =>
      Effect.gen(function*() {
        const startedAtMs = yield* Clock.currentTimeMillis
        const result = yield* Effect.promise((signal) => attempt(agent, req, signal))
        const finishedAtMs = yield* Clock.currentTimeMillis
        return {
          startedAtMs,
          finishedAtMs,
          durationMs: finishedAtMs - startedAtMs,
          ...result,
          connectTimeoutSeconds: connectTimeoutMs / 1000,
          timeoutSeconds: req.timeoutSeconds
        }
      }).pipe(Semaphore.withPermit(permits))
    return { send: sendOne } satisfies ExecutorShape
  })

export class Executor extends Context.Service<Executor, ExecutorShape>()("timewheel/Executor") {
  static readonly layer = (options: ExecutorOptions): Layer.Layer<Executor> => Layer.effect(Executor, make(options))
}
