// Classifies a failed attempt into its errorKind (docs/retries.md "Error kinds"), code and readable message.
// Pure: looks at `code` (own, then `cause`, then an AggregateError's first member), `syscall` and `name`.
import type { ErrorKind } from "../domain/errorKind.ts"

export interface Classified {
  readonly errorKind: ErrorKind
  readonly errorCode: string | null
  readonly errorMessage: string
}

/** A request timewheel refuses to send: it could never succeed (forbidden header, bad URL). */
export class InvalidRequestError extends Error {
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.name = "InvalidRequestError"
    this.code = code
  }
}

const DNS_CODES = new Set([
  "ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "EAI_NODATA", "EAI_FAIL", "EAI_ADDRFAMILY", "EAI_SERVICE",
  "ENODATA", "ESERVFAIL", "ENONAME", "EBADNAME", "EBADRESP", "EREFUSED", "ETIMEOUT", "ENOTINITIALIZED"
])
const UNREACHABLE_CODES = new Set(["EHOSTUNREACH", "ENETUNREACH", "EHOSTDOWN", "ENETDOWN", "EADDRNOTAVAIL"])
const RESET_CODES = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED", "UND_ERR_SOCKET"])
const TLS_CODES = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT", "SELF_SIGNED_CERT_IN_CHAIN", "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "INVALID_CA", "PATH_LENGTH_EXCEEDED", "INVALID_PURPOSE", "HOSTNAME_MISMATCH", "EPROTO"
])
const TLS_PREFIXES = ["ERR_SSL_", "ERR_TLS_", "ERR_OSSL_", "CERT_", "CRL_", "UNABLE_TO_", "ERROR_IN_CERT_", "ERROR_IN_CRL_"]
const PROTOCOL_CODES = new Set(["UND_ERR_HEADERS_OVERFLOW"])
const BODY_CODES = new Set(["UND_ERR_RES_CONTENT_LENGTH_MISMATCH", "UND_ERR_BODY_TIMEOUT", "UND_ERR_RES_EXCEEDED_MAX_SIZE"])
const INVALID_REQUEST_CODES = new Set([
  "UND_ERR_INVALID_ARG", "UND_ERR_NOT_SUPPORTED", "UND_ERR_REQ_CONTENT_LENGTH_MISMATCH",
  "ERR_INVALID_URL", "ERR_INVALID_HTTP_TOKEN", "ERR_INVALID_CHAR", "ERR_UNESCAPED_CHARACTERS",
  "PRIVATE_TARGET" // lib/privateTargets.ts: BLOCK_PRIVATE_TARGETS refused the address
])

const str = (value: unknown, key: string): string | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const v = (value as Record<string, unknown>)[key]
  return typeof v === "string" && v.length > 0 ? v : undefined
}

const causeOf = (err: unknown): unknown =>
  typeof err === "object" && err !== null ? (err as { cause?: unknown }).cause : undefined

const firstAggregated = (err: unknown): unknown =>
  err instanceof AggregateError && err.errors.length > 0 ? err.errors[0] : undefined

/** The code string of an error: its own, its cause's, or that of the first error of an AggregateError. */
const codeOf = (err: unknown): string | undefined =>
  str(err, "code") ?? str(causeOf(err), "code") ?? str(firstAggregated(err), "code")

const messageOf = (err: unknown): string => {
  if (typeof err === "object" && err !== null) return (str(err, "message") ?? "").trim()
  return err === undefined ? "" : String(err)
}

const isTlsCode = (code: string): boolean => TLS_CODES.has(code) || TLS_PREFIXES.some((p) => code.startsWith(p))

/** The kind for an error that happened before the response head arrived. */
const kindOf = (err: unknown, code: string | undefined, name: string | undefined): ErrorKind => {
  const syscall = str(err, "syscall") ?? str(causeOf(err), "syscall")
  if (name === "InvalidRequestError") return "invalid_request"
  if (name === "TimeoutError" || name === "AbortError") return "timeout"
  if (code !== undefined) {
    if (INVALID_REQUEST_CODES.has(code)) return "invalid_request"
    if (DNS_CODES.has(code) || syscall === "getaddrinfo" || syscall?.startsWith("query")) return "dns"
    if (code === "UND_ERR_CONNECT_TIMEOUT") return "connect_timeout"
    if (code === "ETIMEDOUT") return syscall === undefined || syscall === "connect" ? "connect_timeout" : "timeout"
    if (code === "ECONNREFUSED") return "connection_refused"
    if (UNREACHABLE_CODES.has(code)) return "unreachable"
    if (isTlsCode(code)) return "tls"
    if (code === "ECONNRESET" && /secure TLS connection/i.test(messageOf(err))) return "tls"
    if (RESET_CODES.has(code)) return "connection_reset"
    if (code === "UND_ERR_HEADERS_TIMEOUT") return "timeout"
    if (code.startsWith("HPE_") || PROTOCOL_CODES.has(code)) return "protocol"
    if (BODY_CODES.has(code)) return "body_read"
  }
  switch (name) {
    case "ConnectTimeoutError": return "connect_timeout"
    case "HTTPParserError": return "protocol"
    case "SocketError": return "connection_reset"
    case "HeadersTimeoutError": return "timeout"
    case "InvalidArgumentError": return "invalid_request"
  }
  return "unknown"
}

const endpoint = (err: unknown): string | undefined => {
  const target = str(err, "address") !== undefined ? err : causeOf(err)
  const address = str(target, "address")
  if (address === undefined) return undefined
  const port = (target as { port?: unknown }).port
  return typeof port === "number" ? `${address.includes(":") ? `[${address}]` : address}:${port}` : address
}

const messageFor = (kind: ErrorKind, err: unknown, code: string | undefined): string => {
  const detail = messageOf(err)
  const at = endpoint(err)
  switch (kind) {
    case "dns": {
      const host = str(err, "hostname") ?? str(causeOf(err), "hostname")
      return `DNS lookup failed for ${host ?? "the target host"} (${code ?? "unknown error"})`
    }
    case "connect_timeout": {
      const m = /attempted address(?:es)?: (.+?), timeout: (\d+)ms/.exec(detail)
      if (m) return `Timed out connecting to ${m[1]} after ${m[2]} ms`
      return at ? `Timed out connecting to ${at}` : `Timed out connecting to the target${detail ? ` (${detail})` : ""}`
    }
    case "connection_refused":
      return `Connection refused by ${at ?? "the target"}`
    case "unreachable":
      return `${code === "ENETUNREACH" || code === "ENETDOWN" ? "Network" : "Host"} unreachable${at ? `: ${at}` : ""} (${code})`
    case "tls": {
      // Node 24 appends an operator hint (--use-system-ca) that means nothing to the trigger's owner.
      const reason = (str(err, "reason") ?? detail).replace(/; if the root CA is installed locally.*$/s, "")
      return `TLS handshake with the target failed: ${reason}`
    }
    case "connection_reset":
      return code === "UND_ERR_SOCKET"
        ? `Connection closed by the target before a response arrived (${detail})`
        : `Connection reset before a response arrived${at ? ` (${at})` : ""}: ${detail}`
    case "timeout":
      return code === "UND_ERR_HEADERS_TIMEOUT" ? `Timed out waiting for the response headers` : `Request timed out`
    case "protocol":
      return `Invalid HTTP response from the target: ${detail}`
    case "body_read":
      return `Failed to read the response body: ${detail}`
    case "invalid_request":
      return detail || "The request cannot be sent"
    case "unknown":
      return detail || "Unknown delivery error"
  }
}

/**
 * Classifies a delivery failure. `responseHeadArrived`: the status line and headers had been received;
 * any failure after that is `body_read`, except our own deadline (`TimeoutError` / `AbortError`) → `timeout`.
 */
export const classifyError = (err: unknown, responseHeadArrived: boolean): Classified => {
  const code = codeOf(err)
  const name = str(err, "name")
  const ownDeadline = name === "TimeoutError" || name === "AbortError"
  const errorKind: ErrorKind = responseHeadArrived && !ownDeadline ? "body_read" : kindOf(err, code, name)
  return { errorKind, errorCode: code ?? name ?? null, errorMessage: messageFor(errorKind, err, code) }
}
