// Executor against real local targets on 127.0.0.1: what the target receives, how each failure is classified,
// response recording and truncation, aborting on close, and BLOCK_PRIVATE_TARGETS.
import type { LookupFunction } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { Executor } from "../../src/delivery/executor.ts"
import type { DeliveryOutcome, ExecutorOptions } from "../../src/delivery/executor.ts"
import type { DeliveryRequest } from "../../src/delivery/request.ts"
import { closedPort, fullBacklogPort, headerValues, httpServer, httpsServer, tcpServer } from "../support/servers.ts"

const layer = (options: Partial<ExecutorOptions> = {}) =>
  Executor.layer({ blockPrivateTargets: false, connectTimeoutMs: 1_000, ...options })

const request = (req: Partial<DeliveryRequest> & { readonly url: string }): DeliveryRequest => ({
  method: "GET",
  headers: [],
  body: null,
  contentType: null,
  timeoutSeconds: 5,
  ...req
})

const send = (req: Partial<DeliveryRequest> & { readonly url: string }, options: Partial<ExecutorOptions> = {}) =>
  Effect.gen(function*() {
    const executor = yield* Executor
    return yield* Effect.promise(() => executor.send(request(req)))
  }).pipe(Effect.provide(layer(options)))

const bytes = (s: string) => new TextEncoder().encode(s)

const assertFailed = (o: DeliveryOutcome, kind: string, code: string | null) => {
  assert.strictEqual(o.errorKind, kind, `${o.errorKind} ${o.errorCode} ${o.errorMessage}`)
  assert.strictEqual(o.errorCode, code)
  assert.isString(o.errorMessage)
  assert.isAbove(o.errorMessage!.length, 0)
}

/** Resolves one made-up name to 127.0.0.1 without any DNS query; everything else is ENOTFOUND. */
const fakeLookup = (name: string, address = "127.0.0.1"): LookupFunction => (hostname, options, callback) => {
  if (hostname !== name) {
    const err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
      code: "ENOTFOUND",
      syscall: "getaddrinfo",
      hostname
    })
    return process.nextTick(() => callback(err, []))
  }
  const family = address.includes(":") ? 6 : 4
  process.nextTick(() => options.all ? callback(null, [{ address, family }]) : callback(null, address, family))
}

describe("what the target receives", () => {
  it.live("method, repeated headers, Authorization, Host override, default User-Agent, recomputed Content-Length, body", () =>
    Effect.gen(function*() {
      const target = yield* httpServer()
      const outcome = yield* send({
        url: `${target.url}/hook?x=1`,
        method: "PURGE",
        headers: [
          ["X-Rep", "one"],
          ["Authorization", "Bearer s3cret"],
          ["x-rep", "two"],
          ["HOST", "tenant.example"],
          ["Content-Length", "999"]
        ],
        body: bytes("hello body")
      })
      assert.strictEqual(outcome.errorKind, null)
      assert.strictEqual(outcome.httpStatus, 200)
      const [got] = target.received
      assert.strictEqual(got!.method, "PURGE")
      assert.strictEqual(got!.path, "/hook?x=1")
      assert.deepStrictEqual(headerValues(got!.rawHeaders, "x-rep"), ["one", "two"])
      assert.deepStrictEqual(headerValues(got!.rawHeaders, "authorization"), ["Bearer s3cret"])
      assert.deepStrictEqual(headerValues(got!.rawHeaders, "host"), ["tenant.example"])
      assert.deepStrictEqual(headerValues(got!.rawHeaders, "user-agent"), ["timewheel"])
      assert.deepStrictEqual(headerValues(got!.rawHeaders, "content-length"), ["10"])
      assert.deepStrictEqual(headerValues(got!.rawHeaders, "content-type"), ["application/octet-stream"])
      assert.strictEqual(got!.body.toString(), "hello body")
    }))

  it.live("a body on GET, the stored content type, a custom User-Agent, binary bytes unchanged", () =>
    Effect.gen(function*() {
      const target = yield* httpServer()
      const body = new Uint8Array([0, 255, 1, 254, 10, 13])
      yield* send({
        url: target.url,
        headers: [["user-agent", "custom/1.0"]],
        body,
        contentType: "application/x-thing; charset=binary"
      })
      const [got] = target.received
      assert.strictEqual(got!.method, "GET")
      assert.deepStrictEqual(new Uint8Array(got!.body), body)
      assert.deepStrictEqual(headerValues(got!.rawHeaders, "content-type"), ["application/x-thing; charset=binary"])
      assert.deepStrictEqual(headerValues(got!.rawHeaders, "user-agent"), ["custom/1.0"])
      assert.deepStrictEqual(headerValues(got!.rawHeaders, "content-length"), ["6"])
    }))

  it.live("a Content-Type header is sent once even when the content type is also stored; no body → no length", () =>
    Effect.gen(function*() {
      const target = yield* httpServer()
      yield* send({
        url: target.url,
        method: "DELETE",
        headers: [["Content-Type", "application/json"]],
        contentType: "application/json"
      })
      const [got] = target.received
      assert.deepStrictEqual(headerValues(got!.rawHeaders, "content-type"), ["application/json"])
      assert.strictEqual(got!.body.byteLength, 0)
      assert.deepStrictEqual(headerValues(got!.rawHeaders, "transfer-encoding"), [])
    }))
})

describe("response recording", () => {
  it.live("status, headers (repeats joined), body text, timestamps and timeouts", () =>
    Effect.gen(function*() {
      const target = yield* httpServer((_req, res) => {
        res.setHeader("Set-Cookie", ["a=1", "b=2"])
        res.setHeader("X-Answer", "42")
        res.writeHead(503, { "content-type": "text/plain; charset=utf-8" })
        res.end("service unavailable – réessayez")
      })
      const outcome = yield* send({ url: target.url, timeoutSeconds: 7 })
      assert.strictEqual(outcome.httpStatus, 503)
      assert.strictEqual(outcome.responseHeaders!["set-cookie"], "a=1, b=2")
      assert.strictEqual(outcome.responseHeaders!["x-answer"], "42")
      assert.strictEqual(outcome.responseHeaders!["content-type"], "text/plain; charset=utf-8")
      assert.strictEqual(outcome.responseBody, "service unavailable – réessayez")
      assert.strictEqual(outcome.errorKind, null)
      assert.strictEqual(outcome.errorCode, null)
      assert.strictEqual(outcome.errorMessage, null)
      assert.strictEqual(outcome.timeoutSeconds, 7)
      assert.strictEqual(outcome.connectTimeoutSeconds, 1)
      assert.strictEqual(outcome.durationMs, outcome.finishedAtMs - outcome.startedAtMs)
      assert.isAtLeast(outcome.durationMs, 0)
      assert.isBelow(Math.abs(outcome.startedAtMs - Date.now()), 10_000)
    }))

  it.live("a 200 KiB body is recorded as its first 64 KiB and the attempt succeeds", () =>
    Effect.gen(function*() {
      const big = Buffer.alloc(200 * 1024, "a")
      big.write("START", 0)
      const target = yield* httpServer((_req, res) => res.end(big))
      const outcome = yield* send({ url: target.url })
      assert.strictEqual(outcome.errorKind, null)
      assert.strictEqual(outcome.httpStatus, 200)
      assert.strictEqual(outcome.responseBody!.length, 65536)
      assert.isTrue(outcome.responseBody!.startsWith("STARTaaa"))
      assert.strictEqual(outcome.responseHeaders!["content-length"], String(200 * 1024))
    }))

  it.live("truncation never splits a UTF-8 character", () =>
    Effect.gen(function*() {
      const target = yield* httpServer((_req, res) => res.end("€".repeat(30_000))) // 3 bytes each
      const outcome = yield* send({ url: target.url })
      assert.strictEqual(outcome.errorKind, null)
      assert.strictEqual(Buffer.byteLength(outcome.responseBody!), 65535)
      assert.strictEqual(outcome.responseBody, "€".repeat(21845))
    }))

  it.effect("timestamps come from Effect's Clock (TestClock at 0 here)", () =>
    Effect.gen(function*() {
      const target = yield* httpServer()
      const outcome = yield* send({ url: target.url })
      assert.strictEqual(outcome.httpStatus, 200)
      assert.strictEqual(outcome.startedAtMs, 0)
      assert.strictEqual(outcome.finishedAtMs, 0)
      assert.strictEqual(outcome.durationMs, 0)
    }))
})

describe("classification on loopback", () => {
  it.live("connection_refused: closed port", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      const o = yield* send({ url: `http://127.0.0.1:${port}/` })
      assertFailed(o, "connection_refused", "ECONNREFUSED")
      assert.strictEqual(o.errorMessage, `Connection refused by 127.0.0.1:${port}`)
      assert.strictEqual(o.httpStatus, null)
      assert.strictEqual(o.responseBody, null)
    }))

  it.live("timeout: a server that never answers, our deadline covers the head", () =>
    Effect.gen(function*() {
      const target = yield* tcpServer(() => {})
      const o = yield* send({ url: `http://127.0.0.1:${target.port}/`, timeoutSeconds: 0.3 })
      assertFailed(o, "timeout", "TimeoutError")
      assert.strictEqual(o.errorMessage, "Request timed out after 0.3 s")
      assert.strictEqual(o.timeoutSeconds, 0.3)
      assert.isAtLeast(o.durationMs, 290)
      assert.isBelow(o.durationMs, 3_000)
    }))

  it.live("timeout: the same deadline covers the body read (head recorded)", () =>
    Effect.gen(function*() {
      const target = yield* httpServer((_req, res) => {
        res.writeHead(200, { "content-length": "100" })
        res.write("partial")
      })
      const o = yield* send({ url: target.url, timeoutSeconds: 0.3 })
      assertFailed(o, "timeout", "TimeoutError")
      assert.strictEqual(o.errorMessage, "Request timed out after 0.3 s while reading the response body")
      assert.strictEqual(o.httpStatus, 200)
      assert.strictEqual(o.responseBody, "partial")
    }))

  it.live("connect_timeout: TCP accepted but the TLS handshake never answered", () =>
    Effect.gen(function*() {
      const target = yield* tcpServer(() => {})
      const o = yield* send({ url: `https://127.0.0.1:${target.port}/`, timeoutSeconds: 5 }, { connectTimeoutMs: 200 })
      assertFailed(o, "connect_timeout", "UND_ERR_CONNECT_TIMEOUT")
      assert.strictEqual(o.errorMessage, `Timed out connecting to 127.0.0.1:${target.port} after 200 ms`)
      assert.strictEqual(o.connectTimeoutSeconds, 0.2)
      assert.isBelow(o.durationMs, 2_000)
    }))

  it.live("connect_timeout: a listener whose accept queue is full (SYN dropped)", () =>
    Effect.gen(function*() {
      const port = yield* fullBacklogPort
      const o = yield* send({ url: `http://127.0.0.1:${port}/`, timeoutSeconds: 5 }, { connectTimeoutMs: 300 })
      assertFailed(o, "connect_timeout", "UND_ERR_CONNECT_TIMEOUT")
      assert.isBelow(o.durationMs, 2_500)
    }))

  it.live("connection_reset: RST on accept", () =>
    Effect.gen(function*() {
      const target = yield* tcpServer((socket) => socket.resetAndDestroy())
      const o = yield* send({ url: `http://127.0.0.1:${target.port}/` })
      assertFailed(o, "connection_reset", "ECONNRESET")
    }))

  it.live("connection_reset: RST after the request arrived", () =>
    Effect.gen(function*() {
      const target = yield* tcpServer((socket) => socket.once("data", () => socket.resetAndDestroy()))
      const o = yield* send({ url: `http://127.0.0.1:${target.port}/` })
      assertFailed(o, "connection_reset", "ECONNRESET")
    }))

  it.live("connection_reset: connection closed before any response", () =>
    Effect.gen(function*() {
      const target = yield* tcpServer((socket) => socket.once("data", () => socket.end()))
      const o = yield* send({ url: `http://127.0.0.1:${target.port}/` })
      assertFailed(o, "connection_reset", "UND_ERR_SOCKET")
    }))

  it.live("protocol: a TCP server replying garbage", () =>
    Effect.gen(function*() {
      const target = yield* tcpServer((socket) => socket.once("data", () => socket.end("SSH-2.0-OpenSSH\r\n\r\n")))
      const o = yield* send({ url: `http://127.0.0.1:${target.port}/` })
      assertFailed(o, "protocol", "HTTPParserError")
      assert.match(o.errorMessage!, /^Invalid HTTP response from the target: /)
      assert.strictEqual(o.httpStatus, null)
    }))

  it.live("body_read: head and a short body, then the connection closes", () =>
    Effect.gen(function*() {
      const target = yield* tcpServer((socket) =>
        socket.once("data", () => socket.end("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabc"))
      )
      const o = yield* send({ url: `http://127.0.0.1:${target.port}/` })
      assertFailed(o, "body_read", "UND_ERR_SOCKET")
      assert.strictEqual(o.httpStatus, 200)
      assert.strictEqual(o.responseHeaders!["content-length"], "100")
      assert.strictEqual(o.responseBody, "abc")
    }))

  it.live("tls: self-signed certificate; SNI is the url's host even with a Host override", () =>
    Effect.gen(function*() {
      const target = yield* httpsServer
      const o = yield* send({ url: `https://localhost:${target.port}/`, headers: [["host", "tenant.example"]] }, {
        lookup: fakeLookup("localhost")
      })
      assertFailed(o, "tls", "DEPTH_ZERO_SELF_SIGNED_CERT")
      assert.strictEqual(o.errorMessage, "TLS handshake with the target failed: self-signed certificate")
      assert.deepStrictEqual(target.serverNames, ["localhost"])
    }))

  it.live("tls: TLS spoken to a plain HTTP port", () =>
    Effect.gen(function*() {
      const target = yield* httpServer()
      const o = yield* send({ url: target.url.replace("http:", "https:") })
      assertFailed(o, "tls", "ERR_SSL_WRONG_VERSION_NUMBER")
      assert.strictEqual(o.errorMessage, "TLS handshake with the target failed: wrong version number")
    }))

  it.live("dns: a name the resolver does not know (injected lookup, no query leaves the machine)", () =>
    Effect.gen(function*() {
      const o = yield* send({ url: "http://no-such-host.invalid/" }, { lookup: fakeLookup("other.test") })
      assertFailed(o, "dns", "ENOTFOUND")
      assert.strictEqual(o.errorMessage, "DNS lookup failed for no-such-host.invalid (ENOTFOUND)")
    }))

  it.live("invalid_request: forbidden hop-by-hop headers are never sent", () =>
    Effect.gen(function*() {
      const target = yield* httpServer()
      for (
        const header of [
          ["Transfer-Encoding", "chunked"],
          ["keep-alive", "timeout=5"],
          ["Upgrade", "websocket"],
          ["Connection", "upgrade"]
        ] as const
      ) {
        const o = yield* send({ url: target.url, headers: [header], body: bytes("x") })
        assertFailed(o, "invalid_request", "FORBIDDEN_HEADER")
      }
      const ok = yield* send({ url: target.url, headers: [["Connection", "close"]] })
      assert.strictEqual(ok.httpStatus, 200)
      assert.strictEqual(target.connections(), 1)
      assert.strictEqual(target.received.length, 1)
    }))

  it.live("invalid_request: a header value undici cannot send, an unsupported scheme", () =>
    Effect.gen(function*() {
      const bad = yield* send({ url: "http://127.0.0.1:1/", headers: [["x-bad", "a\r\nInjected: yes"]] })
      assertFailed(bad, "invalid_request", "INVALID_HEADER")
      const scheme = yield* send({ url: "ftp://127.0.0.1/file" })
      assertFailed(scheme, "invalid_request", "INVALID_URL")
      assert.strictEqual(scheme.errorMessage, "Unsupported URL scheme ftp: in ftp://127.0.0.1/file")
    }))
})

describe("BLOCK_PRIVATE_TARGETS", () => {
  it.live("a private IP literal is refused before connecting", () =>
    Effect.gen(function*() {
      const target = yield* httpServer()
      const o = yield* send({ url: target.url }, { blockPrivateTargets: true })
      assertFailed(o, "invalid_request", "PRIVATE_TARGET")
      assert.strictEqual(o.errorMessage, "Target address 127.0.0.1 is private and BLOCK_PRIVATE_TARGETS is on")
      assert.strictEqual(target.connections(), 0)
    }))

  it.live("a name resolving to a private address is refused on the address actually resolved", () =>
    Effect.gen(function*() {
      const target = yield* httpServer()
      const url = `http://tenant.test:${target.port}/`
      const blocked = yield* send({ url }, { blockPrivateTargets: true, lookup: fakeLookup("tenant.test") })
      assertFailed(blocked, "invalid_request", "PRIVATE_TARGET")
      assert.strictEqual(
        blocked.errorMessage,
        "Target address 127.0.0.1 (of tenant.test) is private and BLOCK_PRIVATE_TARGETS is on"
      )
      const mapped = yield* send({ url }, { blockPrivateTargets: true, lookup: fakeLookup("tenant.test", "::ffff:127.0.0.1") })
      assertFailed(mapped, "invalid_request", "PRIVATE_TARGET")
      assert.strictEqual(target.connections(), 0)
      // Same lookup, guard off: it connects and the target sees the name it was addressed by.
      const allowed = yield* send({ url }, { blockPrivateTargets: false, lookup: fakeLookup("tenant.test") })
      assert.strictEqual(allowed.httpStatus, 200)
      assert.deepStrictEqual(headerValues(target.received[0]!.rawHeaders, "host"), [`tenant.test:${target.port}`])
    }))
})

describe("onLeave: when the request is written to its connection", () => {
  const sendWatched = (url: string, options: Partial<ExecutorOptions> = {}) =>
    Effect.gen(function*() {
      const executor = yield* Executor
      const leaves: Array<number> = []
      const outcome = yield* Effect.promise(() => executor.send(request({ url, timeoutSeconds: 5 }), () => leaves.push(Date.now())))
      return { outcome, leaves }
    }).pipe(Effect.provide(layer(options)))

  it.live("called once, after the attempt started and before the target read the request", () =>
    Effect.gen(function*() {
      let readAtMs = 0
      const target = yield* httpServer((_req, res) => {
        readAtMs = Date.now()
        res.end("ok")
      })
      const { outcome, leaves } = yield* sendWatched(`${target.url}/leave`)
      assert.strictEqual(outcome.httpStatus, 200)
      assert.strictEqual(leaves.length, 1)
      assert.isAtLeast(leaves[0]!, Math.floor(outcome.startedAtMs))
      assert.isAtMost(leaves[0]!, readAtMs)
    }))

  it.live("never called for a request that never left: refused, or a connection that never completed", () =>
    Effect.gen(function*() {
      const refused = yield* sendWatched(`http://127.0.0.1:${yield* closedPort}/`)
      assertFailed(refused.outcome, "connection_refused", "ECONNREFUSED")
      const silent = yield* tcpServer(() => {})
      const handshake = yield* sendWatched(`https://127.0.0.1:${silent.port}/`, { connectTimeoutMs: 200 })
      assertFailed(handshake.outcome, "connect_timeout", "UND_ERR_CONNECT_TIMEOUT")
      assert.deepStrictEqual([refused.leaves, handshake.leaves], [[], []])
    }))
})

describe("closing", () => {
  it.live("closing the executor aborts a request in flight", () =>
    Effect.gen(function*() {
      const arrived = yield* Deferred.make<void>()
      const closed = yield* Deferred.make<void>()
      const target = yield* tcpServer((socket) => {
        socket.once("data", () => Deferred.doneUnsafe(arrived, Effect.void))
        socket.once("close", () => Deferred.doneUnsafe(closed, Effect.void))
      })
      let pending: Promise<DeliveryOutcome> | undefined
      yield* Effect.gen(function*() {
        const executor = yield* Executor
        pending = executor.send(request({ url: `http://127.0.0.1:${target.port}/`, timeoutSeconds: 60 }))
        yield* Deferred.await(arrived)
      }).pipe(Effect.provide(layer())) // the layer is released here, with the request still waiting
      yield* Deferred.await(closed).pipe(Effect.timeout("2 seconds"))
      const outcome = yield* Effect.promise(() => pending!)
      assert.strictEqual(outcome.httpStatus, null)
      // interrupted by the service stopping: no verdict from the target, and the log says so
      assert.strictEqual(outcome.errorKind, "unknown")
      assert.strictEqual(outcome.errorCode, "INTERRUPTED")
      assert.strictEqual(target.sockets.size, 0)
    }))

  it.live("abortAll interrupts every attempt in flight, finished ones aside, and the executor goes on", () =>
    Effect.gen(function*() {
      let arrivals = 0
      const target = yield* tcpServer((socket) =>
        socket.on("data", (data) => {
          arrivals++
          if (data.toString().startsWith("GET /answer")) socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        })
      )
      const url = `http://127.0.0.1:${target.port}`
      yield* Effect.gen(function*() {
        const executor = yield* Executor
        const answered = yield* Effect.promise(() => executor.send(request({ url: `${url}/answer` })))
        assert.strictEqual(answered.httpStatus, 200)
        const pending = [1, 2, 3].map((i) => executor.send(request({ url: `${url}/hang${i}`, timeoutSeconds: 60 })))
        while (arrivals < 4) yield* Effect.sleep("10 millis")
        executor.abortAll()
        const outcomes = yield* Effect.promise(() => Promise.all(pending))
        assert.deepStrictEqual(outcomes.map((o) => o.errorCode), ["INTERRUPTED", "INTERRUPTED", "INTERRUPTED"])
        const after = yield* Effect.promise(() => executor.send(request({ url: `${url}/answer` })))
        assert.strictEqual(after.httpStatus, 200)
      }).pipe(Effect.provide(layer()))
    }))

  it.live("idle keep-alive connections are closed with the layer", () =>
    Effect.gen(function*() {
      const target = yield* tcpServer((socket) =>
        socket.on("data", () => socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"))
      )
      const url = `http://127.0.0.1:${target.port}/`
      const bodies = yield* Effect.gen(function*() {
        const executor = yield* Executor
        const first = yield* Effect.promise(() => executor.send(request({ url })))
        const second = yield* Effect.promise(() => executor.send(request({ url })))
        assert.isAbove(target.sockets.size, 0) // kept open between and after the sends
        return [first.responseBody, second.responseBody]
      }).pipe(Effect.provide(layer())) // the layer (and its Agent) is released here
      assert.deepStrictEqual(bodies, ["ok", "ok"])
      // Without the finalizer undici would keep the idle sockets for its 4 s keep-alive timeout.
      const deadline = Date.now() + 1_000
      while (target.sockets.size > 0 && Date.now() < deadline) yield* Effect.sleep("20 millis")
      assert.strictEqual(target.sockets.size, 0)
    }))
})
