// classifyError on constructed errors shaped like those undici and node raise, including
// the classes that cannot be provoked on loopback (dns, unreachable) and the after-the-head rule.
import { assert, describe, it } from "@effect/vitest"
import { errors } from "undici"
import { ERROR_KINDS } from "../../src/domain/errorKind.ts"
import { classifyError, InvalidRequestError } from "../../src/delivery/classify.ts"

const sysError = (code: string, syscall: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(`${syscall} ${code}`), { code, syscall, ...extra })

const kind = (err: unknown, head = false) => classifyError(err, head).errorKind

describe("classifyError", () => {
  it("dns: resolver codes and getaddrinfo failures", () => {
    const notFound = sysError("ENOTFOUND", "getaddrinfo", { hostname: "nope.invalid" })
    assert.deepStrictEqual(classifyError(notFound, false), {
      errorKind: "dns",
      errorCode: "ENOTFOUND",
      errorMessage: "DNS lookup failed for nope.invalid (ENOTFOUND)"
    })
    for (const code of ["EAI_AGAIN", "EAI_NONAME", "EAI_NODATA", "EAI_FAIL", "ESERVFAIL"]) {
      assert.strictEqual(kind(sysError(code, "getaddrinfo")), "dns", code)
    }
    assert.strictEqual(kind(sysError("EWHATEVER", "getaddrinfo")), "dns")
  })

  it("connect_timeout: undici's ConnectTimeoutError, ETIMEDOUT on connect, an AggregateError of timeouts", () => {
    const undici = new errors.ConnectTimeoutError("Connect Timeout Error (attempted address: 10.9.9.9:443, timeout: 10000ms)")
    assert.deepStrictEqual(classifyError(undici, false), {
      errorKind: "connect_timeout",
      errorCode: "UND_ERR_CONNECT_TIMEOUT",
      errorMessage: "Timed out connecting to 10.9.9.9:443 after 10000 ms"
    })
    assert.strictEqual(kind(sysError("ETIMEDOUT", "connect", { address: "10.9.9.9", port: 443 })), "connect_timeout")
    const aggregate = Object.assign(new AggregateError([sysError("ETIMEDOUT", "connect")], "all failed"), { code: "ETIMEDOUT" })
    assert.strictEqual(kind(aggregate), "connect_timeout")
    assert.strictEqual(kind(sysError("ETIMEDOUT", "read")), "timeout")
  })

  it("connection_refused with the address in the message", () => {
    const err = sysError("ECONNREFUSED", "connect", { address: "127.0.0.1", port: 9 })
    assert.deepStrictEqual(classifyError(err, false), {
      errorKind: "connection_refused",
      errorCode: "ECONNREFUSED",
      errorMessage: "Connection refused by 127.0.0.1:9"
    })
    const v6 = sysError("ECONNREFUSED", "connect", { address: "::1", port: 9 })
    assert.strictEqual(classifyError(v6, false).errorMessage, "Connection refused by [::1]:9")
  })

  it("unreachable: host and network", () => {
    const host = classifyError(sysError("EHOSTUNREACH", "connect", { address: "10.1.2.3", port: 80 }), false)
    assert.strictEqual(host.errorKind, "unreachable")
    assert.strictEqual(host.errorMessage, "Host unreachable: 10.1.2.3:80 (EHOSTUNREACH)")
    const network = classifyError(sysError("ENETUNREACH", "connect"), false)
    assert.strictEqual(network.errorKind, "unreachable")
    assert.strictEqual(network.errorMessage, "Network unreachable (ENETUNREACH)")
  })

  it("tls: certificate and OpenSSL codes, a reset during the handshake", () => {
    for (
      const code of [
        "DEPTH_ZERO_SELF_SIGNED_CERT",
        "SELF_SIGNED_CERT_IN_CHAIN",
        "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
        "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
        "CERT_HAS_EXPIRED",
        "ERR_TLS_CERT_ALTNAME_INVALID",
        "ERR_SSL_WRONG_VERSION_NUMBER",
        "ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE"
      ]
    ) assert.strictEqual(kind(Object.assign(new Error("x"), { code })), "tls", code)
    const handshakeReset = Object.assign(
      new Error("Client network socket disconnected before secure TLS connection was established"),
      { code: "ECONNRESET" }
    )
    assert.strictEqual(kind(handshakeReset), "tls")
  })

  it("connection_reset before the head", () => {
    assert.strictEqual(kind(sysError("ECONNRESET", "read")), "connection_reset")
    assert.strictEqual(kind(sysError("EPIPE", "write")), "connection_reset")
    assert.strictEqual(kind(new errors.SocketError("other side closed")), "connection_reset")
  })

  it("timeout: our deadline (DOMException TimeoutError, numeric code), AbortError, headers timeout", () => {
    const dom = new DOMException("The operation was aborted due to timeout", "TimeoutError")
    assert.deepStrictEqual(classifyError(dom, false), {
      errorKind: "timeout",
      errorCode: "TimeoutError",
      errorMessage: "Request timed out"
    })
    assert.strictEqual(classifyError(dom, true).errorKind, "timeout") // the deadline wins after the head too
    assert.strictEqual(kind(new errors.RequestAbortedError()), "timeout")
    assert.strictEqual(kind(new errors.HeadersTimeoutError()), "timeout")
  })

  it("protocol: parser errors and oversized headers", () => {
    // undici's HTTPParserError(message, code) sets code `HPE_<code>` when llhttp reports one
    const parser = Object.assign(new Error("Response does not match the HTTP/1.1 protocol"), {
      name: "HTTPParserError",
      code: "HPE_INVALID_CONSTANT"
    })
    assert.strictEqual(classifyError(parser, false).errorKind, "protocol")
    assert.strictEqual(classifyError(parser, false).errorCode, "HPE_INVALID_CONSTANT")
    const noCode = new errors.HTTPParserError("Expected HTTP/")
    assert.deepStrictEqual(classifyError(noCode, false).errorCode, "HTTPParserError")
    assert.strictEqual(kind(noCode), "protocol")
    assert.strictEqual(kind(new errors.HeadersOverflowError()), "protocol")
  })

  it("body_read: anything after the head except our deadline", () => {
    const closed = classifyError(new errors.SocketError("other side closed"), true)
    assert.deepStrictEqual(closed, {
      errorKind: "body_read",
      errorCode: "UND_ERR_SOCKET",
      errorMessage: "Failed to read the response body: other side closed"
    })
    assert.strictEqual(kind(sysError("ECONNRESET", "read"), true), "body_read")
    assert.strictEqual(kind(new errors.BodyTimeoutError(), true), "body_read")
    assert.strictEqual(kind(new errors.ResponseContentLengthMismatchError(), false), "body_read")
  })

  it("invalid_request: ours, undici's argument errors, bad URLs", () => {
    const ours = new InvalidRequestError("FORBIDDEN_HEADER", "Header Upgrade cannot be sent in a delivered request")
    assert.deepStrictEqual(classifyError(ours, false), {
      errorKind: "invalid_request",
      errorCode: "FORBIDDEN_HEADER",
      errorMessage: "Header Upgrade cannot be sent in a delivered request"
    })
    assert.strictEqual(kind(new errors.InvalidArgumentError("invalid x header")), "invalid_request")
    assert.strictEqual(kind(new errors.NotSupportedError("expect header not supported")), "invalid_request")
    let urlError: unknown
    try {
      new URL("not a url")
    } catch (e) {
      urlError = e
    }
    assert.strictEqual(classifyError(urlError, false).errorKind, "invalid_request")
    assert.strictEqual(classifyError(urlError, false).errorCode, "ERR_INVALID_URL")
  })

  it("code from the cause; unknown for anything else, never throwing", () => {
    const wrapped = new Error("fetch failed", { cause: sysError("ECONNREFUSED", "connect") })
    assert.strictEqual(kind(wrapped), "connection_refused")
    assert.deepStrictEqual(classifyError(new Error("boom"), false), {
      errorKind: "unknown",
      errorCode: "Error",
      errorMessage: "boom"
    })
    assert.deepStrictEqual(classifyError("a string", false), { errorKind: "unknown", errorCode: null, errorMessage: "a string" })
    assert.deepStrictEqual(classifyError(undefined, false), {
      errorKind: "unknown",
      errorCode: null,
      errorMessage: "Unknown delivery error"
    })
    assert.strictEqual(kind(null), "unknown")
    assert.strictEqual(kind({ code: 42 }), "unknown")
  })

  it("only produces kinds from the documented list", () => {
    const samples: Array<unknown> = [
      sysError("ENOTFOUND", "getaddrinfo"),
      new errors.ConnectTimeoutError(),
      sysError("ECONNREFUSED", "connect"),
      sysError("EHOSTUNREACH", "connect"),
      Object.assign(new Error("x"), { code: "CERT_HAS_EXPIRED" }),
      sysError("ECONNRESET", "read"),
      new DOMException("t", "TimeoutError"),
      new errors.HTTPParserError("x"),
      new InvalidRequestError("X", "y"),
      new Error("z")
    ]
    for (const s of samples) assert.include(ERROR_KINDS, kind(s))
    assert.include(ERROR_KINDS, kind(new errors.SocketError("x"), true))
  })
})
