// Turns a stored trigger into what undici sends (docs/scheduling.md "What is stored and sent").
// Pure: a request that can never be sent (bad URL, method, header) is an InvalidRequestError, not an exception.
// With an identity, the headers of docs/signatures.md are added
// (domain/signing.ts), signed over the exact body bytes sent; a stored header of the same name is dropped.
// With a trace context (tracing on), `traceparent` and `tracestate` are ours too, replacing stored ones.
import * as Result from "effect/Result"
import {
  ATTEMPT_HEADER, SIGNING_HEADERS_LOWER, TRIGGER_ID_HEADER, WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER, webhookSignature
} from "../domain/signing.ts"
import { InvalidRequestError } from "./classify.ts"
import { targetOf } from "./targets.ts"

/** Who sends what: the trigger, its attempt, and the project's signing secrets (current first). */
export interface DeliveryIdentity {
  readonly triggerId: string
  /** 1-based. */
  readonly attempt: number
  readonly signingSecrets: ReadonlyArray<string>
  /** `webhook-timestamp`: unix seconds when the request leaves. */
  readonly timestampSeconds: number
  /** The W3C trace context to send (tracing on): the attempt's span, and the stored `tracestate`. */
  readonly trace?: OutgoingTraceContext | undefined
}

export interface OutgoingTraceContext {
  readonly traceparent: string
  readonly tracestate: string | null
}

const TRACE_HEADERS_LOWER: ReadonlySet<string> = new Set(["traceparent", "tracestate"])

/** A stored request, as the executor receives it. */
export interface DeliveryRequest {
  readonly url: string
  readonly method: string
  /** Stored header pairs in wire order; a repeated header appears once per value. */
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: Uint8Array | null
  readonly contentType: string | null
  /** Whole-exchange deadline (head and body); fractions allowed. */
  readonly timeoutSeconds: number
  /** The trigger id, attempt and signature headers to add (every delivery of the service has one). */
  readonly identity?: DeliveryIdentity
}

/** What the executor hands to undici. */
export interface PreparedRequest {
  readonly origin: string
  readonly path: string
  /** The url's host without IPv6 brackets: where the connection goes, whatever Host says. */
  readonly hostname: string
  readonly method: string
  /** Flat name/value list (undici's array form): order and repeats kept. */
  readonly headers: ReadonlyArray<string>
  readonly body: Uint8Array | null
  /** TLS server name (SNI and certificate check): the url's host name; null for IP literals and plain HTTP. */
  readonly servername: string | null
  readonly timeoutMs: number
}

export const USER_AGENT = "timewheel"
export const DEFAULT_CONTENT_TYPE = "application/octet-stream"

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const INVALID_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/
/** Hop-by-hop headers that would change the framing of the connection: never sent. */
const FORBIDDEN = new Set(["keep-alive", "transfer-encoding", "upgrade"])
/** Recomputed (content-length) or meaningless for a replayed request that undici cannot send (expect). */
const DROPPED = new Set(["content-length", "expect"])

const invalid = (code: string, message: string) => Result.fail(new InvalidRequestError(code, message))

export const prepareRequest = (req: DeliveryRequest): Result.Result<PreparedRequest, InvalidRequestError> => {
  const target = targetOf(req.url)
  if (target instanceof InvalidRequestError) return Result.fail(target)
  if (!TOKEN.test(req.method) || req.method.toUpperCase() === "CONNECT") {
    return invalid("INVALID_METHOD", `Method ${JSON.stringify(req.method)} cannot be sent`)
  }
  if (!Number.isFinite(req.timeoutSeconds) || req.timeoutSeconds <= 0) {
    return invalid("INVALID_TIMEOUT", `Invalid request timeout: ${req.timeoutSeconds} s`)
  }

  const headers: Array<string> = []
  // the stored headers that replace a default of ours (plain flags: no Set per request)
  let hasHost = false
  let hasContentType = false
  let hasUserAgent = false
  let hasAuthorization = false
  const identity = req.identity
  for (const [name, value] of req.headers) {
    const lower = name.toLowerCase()
    if (!TOKEN.test(name)) return invalid("INVALID_HEADER", `Invalid header name ${JSON.stringify(name)}`)
    if (INVALID_VALUE_CHAR.test(value)) return invalid("INVALID_HEADER", `Invalid value for header ${name}`)
    if (FORBIDDEN.has(lower)) {
      return invalid("FORBIDDEN_HEADER", `Header ${name} cannot be sent in a delivered request`)
    }
    if (lower === "connection" && !/^(close|keep-alive)$/i.test(value.trim())) {
      return invalid("FORBIDDEN_HEADER", `Header ${name}: ${value} cannot be sent (only close or keep-alive)`)
    }
    if (DROPPED.has(lower)) continue
    if (identity !== undefined && SIGNING_HEADERS_LOWER.has(lower)) continue // ours replace it
    if (identity?.trace !== undefined && TRACE_HEADERS_LOWER.has(lower)) continue // so does our trace context
    if (lower === "host") {
      if (hasHost) return invalid("INVALID_HEADER", "Header Host is given more than once")
      hasHost = true
    } else if (lower === "content-type") hasContentType = true
    else if (lower === "user-agent") hasUserAgent = true
    else if (lower === "authorization") hasAuthorization = true
    headers.push(name, value)
  }

  const body = req.body !== null && req.body.byteLength > 0 ? req.body : null
  if (!hasContentType) {
    if (req.contentType !== null && INVALID_VALUE_CHAR.test(req.contentType)) {
      return invalid("INVALID_HEADER", "Invalid stored content type")
    }
    if (req.contentType !== null) headers.push("content-type", req.contentType)
    else if (body !== null) headers.push("content-type", DEFAULT_CONTENT_TYPE)
  }
  if (!hasUserAgent) headers.push("user-agent", USER_AGENT)
  if (target.basicCredentials !== null && !hasAuthorization) {
    headers.push("authorization", `Basic ${target.basicCredentials}`)
  }
  if (identity !== undefined) {
    const { signingSecrets: secrets, timestampSeconds: t, triggerId, trace } = identity
    headers.push(
      TRIGGER_ID_HEADER, triggerId,
      ATTEMPT_HEADER, String(identity.attempt),
      WEBHOOK_ID_HEADER, triggerId,
      WEBHOOK_TIMESTAMP_HEADER, String(t),
      WEBHOOK_SIGNATURE_HEADER, webhookSignature(secrets, triggerId, t, body)
    )
    if (trace !== undefined) {
      headers.push("traceparent", trace.traceparent)
      if (trace.tracestate !== null) headers.push("tracestate", trace.tracestate)
    }
  }

  return Result.succeed({
    origin: target.origin,
    path: target.path,
    hostname: target.hostname,
    method: req.method,
    headers,
    body,
    servername: target.servername,
    timeoutMs: Math.ceil(req.timeoutSeconds * 1000)
  })
}
