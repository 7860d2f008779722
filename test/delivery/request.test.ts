// prepareRequest (pure): header rules of docs/declare-and-bulk.md "Headers", content type defaults, URL handling;
// plus the executor's pure helpers (private address check, UTF-8 truncation).
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { utf8Text } from "../../src/delivery/executor.ts"
import { isPrivateAddress } from "../../src/lib/privateTargets.ts"
import { prepareRequest } from "../../src/delivery/request.ts"
import type { DeliveryRequest, PreparedRequest } from "../../src/delivery/request.ts"

const base: DeliveryRequest = {
  url: "https://api.example.com/hooks/1?a=b#frag",
  method: "POST",
  headers: [],
  body: null,
  contentType: null,
  timeoutSeconds: 300
}

const ok = (req: Partial<DeliveryRequest>): PreparedRequest => {
  const r = prepareRequest({ ...base, ...req })
  if (Result.isFailure(r)) throw new Error(`unexpected failure: ${r.failure.message}`)
  return r.success
}

const failure = (req: Partial<DeliveryRequest>) => {
  const r = prepareRequest({ ...base, ...req })
  if (Result.isSuccess(r)) throw new Error("expected a failure")
  return { code: r.failure.code, message: r.failure.message }
}

describe("prepareRequest", () => {
  it("origin, path without fragment, method as given, SNI from the url's host, deadline in ms", () => {
    const p = ok({ method: "PURGE", timeoutSeconds: 0.25 })
    assert.strictEqual(p.origin, "https://api.example.com")
    assert.strictEqual(p.path, "/hooks/1?a=b")
    assert.strictEqual(p.hostname, "api.example.com")
    assert.strictEqual(p.method, "PURGE")
    assert.strictEqual(p.servername, "api.example.com")
    assert.strictEqual(p.timeoutMs, 250)
    assert.strictEqual(ok({ url: "https://[::1]:8443/x" }).hostname, "::1")
    assert.strictEqual(ok({ url: "https://[::1]:8443/x" }).servername, null)
    assert.strictEqual(ok({ url: "http://example.com" }).servername, null)
    assert.strictEqual(ok({ url: "http://example.com" }).path, "/")
  })

  it("keeps stored headers in order with repeats and original case; drops Content-Length and Expect", () => {
    const p = ok({
      headers: [
        ["X-A", "1"],
        ["Content-Length", "12345"],
        ["x-a", "2"],
        ["Expect", "100-continue"],
        ["Authorization", "Bearer t"],
        ["Host", "tenant.example"]
      ]
    })
    assert.deepStrictEqual(p.headers, [
      "X-A", "1",
      "x-a", "2",
      "Authorization", "Bearer t",
      "Host", "tenant.example",
      "user-agent", "timewheel"
    ])
  })

  it("content type: header wins, else the stored one, else octet-stream for a body", () => {
    const body = new Uint8Array([1, 2, 3])
    assert.deepStrictEqual(ok({ headers: [["Content-Type", "text/plain"]], contentType: "text/plain", body }).headers, [
      "Content-Type", "text/plain",
      "user-agent", "timewheel"
    ])
    assert.deepStrictEqual(ok({ contentType: "application/json", body }).headers, [
      "content-type", "application/json",
      "user-agent", "timewheel"
    ])
    assert.deepStrictEqual(ok({ body }).headers, ["content-type", "application/octet-stream", "user-agent", "timewheel"])
    assert.deepStrictEqual(ok({}).headers, ["user-agent", "timewheel"])
    assert.strictEqual(ok({ body: new Uint8Array(0) }).body, null)
    assert.deepStrictEqual(ok({ body: new Uint8Array(0) }).headers, ["user-agent", "timewheel"])
  })

  it("a User-Agent in any case replaces the default", () => {
    assert.deepStrictEqual(ok({ headers: [["USER-AGENT", "mine"]] }).headers, ["USER-AGENT", "mine"])
  })

  it("a URL sent to again gives the same request (its parse is kept), per attempt headers still its own", () => {
    const first = ok({ url: "https://u:p@again.example.com:8443/x?y=1", identity: { triggerId: "t1", attempt: 1, signingSecrets: ["whsec_a"], timestampSeconds: 1 } })
    const second = ok({ url: "https://u:p@again.example.com:8443/x?y=1", identity: { triggerId: "t2", attempt: 2, signingSecrets: ["whsec_a"], timestampSeconds: 2 } })
    for (const p of [first, second]) {
      assert.strictEqual(p.origin, "https://again.example.com:8443")
      assert.strictEqual(p.path, "/x?y=1")
      assert.strictEqual(p.servername, "again.example.com")
      assert.include(p.headers, `Basic ${Buffer.from("u:p").toString("base64")}`)
    }
    assert.include(first.headers, "t1")
    assert.include(second.headers, "t2")
    assert.notInclude(second.headers, "t1")
    // a URL that cannot be sent is refused every time (never kept)
    assert.strictEqual(failure({ url: "ftp://again.example.com/" }).code, "INVALID_URL")
    assert.strictEqual(failure({ url: "ftp://again.example.com/" }).code, "INVALID_URL")
  })

  it("credentials in the url become Basic authorization unless one is stored", () => {
    const p = ok({ url: "https://us%40er:p%3Ass@api.example.com/" })
    assert.deepStrictEqual(p.headers.slice(-2), ["authorization", `Basic ${Buffer.from("us@er:p:ss").toString("base64")}`])
    assert.strictEqual(p.origin, "https://api.example.com")
    const stored = ok({ url: "https://u:p@api.example.com/", headers: [["authorization", "Bearer x"]] })
    assert.deepStrictEqual(stored.headers, ["authorization", "Bearer x", "user-agent", "timewheel"])
  })

  it("forbidden headers, in any case, and Connection values other than close / keep-alive", () => {
    for (const name of ["Keep-Alive", "TRANSFER-ENCODING", "upgrade"]) {
      assert.deepStrictEqual(failure({ headers: [[name, "x"]] }), {
        code: "FORBIDDEN_HEADER",
        message: `Header ${name} cannot be sent in a delivered request`
      })
    }
    assert.strictEqual(failure({ headers: [["Connection", "Upgrade"]] }).code, "FORBIDDEN_HEADER")
    assert.strictEqual(failure({ headers: [["connection", "close, x-foo"]] }).code, "FORBIDDEN_HEADER")
    assert.deepStrictEqual(ok({ headers: [["Connection", "Close"]] }).headers, ["Connection", "Close", "user-agent", "timewheel"])
    assert.deepStrictEqual(ok({ headers: [["connection", " keep-alive "]] }).headers.slice(0, 2), ["connection", " keep-alive "])
  })

  it("invalid URL, method, header name or value, duplicate Host, bad timeout", () => {
    assert.deepStrictEqual(failure({ url: "not a url" }), { code: "INVALID_URL", message: "Invalid URL: not a url" })
    assert.strictEqual(failure({ url: "file:///etc/passwd" }).code, "INVALID_URL")
    assert.strictEqual(failure({ method: "GE T" }).code, "INVALID_METHOD")
    assert.strictEqual(failure({ method: "CONNECT" }).code, "INVALID_METHOD")
    assert.strictEqual(failure({ headers: [["bad name", "x"]] }).code, "INVALID_HEADER")
    assert.strictEqual(failure({ headers: [["x-bad", "a\nb"]] }).code, "INVALID_HEADER")
    assert.strictEqual(failure({ headers: [["x-euro", "€"]] }).code, "INVALID_HEADER")
    assert.strictEqual(failure({ contentType: "text/plain\r\nx: y" }).code, "INVALID_HEADER")
    assert.deepStrictEqual(failure({ headers: [["Host", "a"], ["host", "b"]] }), {
      code: "INVALID_HEADER",
      message: "Header Host is given more than once"
    })
    assert.strictEqual(failure({ timeoutSeconds: 0 }).code, "INVALID_TIMEOUT")
    assert.strictEqual(failure({ timeoutSeconds: Number.NaN }).code, "INVALID_TIMEOUT")
  })
})

describe("isPrivateAddress", () => {
  it("blocks loopback, private, link-local, metadata, unspecified and their IPv4-mapped forms", () => {
    for (
      const a of [
        "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
        "169.254.1.1", "0.0.0.0", "100.100.100.200", "::1", "::", "fc00::1", "fd00:ec2::254", "fe80::1",
        "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:0.0.0.0"
      ]
    ) assert.isTrue(isPrivateAddress(a), a)
  })

  it("lets public addresses and non-addresses through", () => {
    for (
      const a of ["8.8.8.8", "1.1.1.1", "172.32.0.1", "192.169.0.1", "11.0.0.1", "2001:4860:4860::8888", "::ffff:8.8.8.8", "example.com"]
    ) assert.isFalse(isPrivateAddress(a), a)
  })
})

describe("utf8Text", () => {
  it("drops an incomplete trailing character only when the bytes were cut short", () => {
    const euro = new TextEncoder().encode("a€") // 61 e2 82 ac
    assert.strictEqual(utf8Text(euro.subarray(0, 3), false), "a")
    assert.strictEqual(utf8Text(euro.subarray(0, 2), false), "a")
    assert.strictEqual(utf8Text(euro, false), "a€")
    assert.strictEqual(utf8Text(euro.subarray(0, 3), true), "a\uFFFD")
    assert.strictEqual(utf8Text(new Uint8Array(0), false), "")
    const emoji = new TextEncoder().encode("😀") // 4 bytes
    assert.strictEqual(utf8Text(emoji.subarray(0, 3), false), "")
    assert.strictEqual(utf8Text(emoji, false), "😀")
  })
})
