// The HTTPS listener's stop (src/api/server.ts): keep-alive clients are sent away, so a client whose
// connection is busy at the stop does not hold the server for its 10 s grace. A request in flight at
// the stop is answered, with `Connection: close`, and its connection then ends; an idle keep-alive
// connection is closed at once.
import { assert, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import * as fs from "node:fs"
import * as tls from "node:tls"
import { httpsListener } from "../../src/api/server.ts"
import { loadTls } from "../../src/api/tls.ts"
import { makeTempDir } from "../support/database.ts"
import { waitUntil } from "../support/wait.ts"

/** A keep-alive TLS connection that sends one request and collects what comes back, and when it ends. */
const connection = (port: number) =>
  Effect.promise(() =>
    new Promise<{ readonly socket: tls.TLSSocket; readonly received: () => string; readonly ended: Promise<number> }>((resolve) => {
      let text = ""
      const socket = tls.connect({ host: "127.0.0.1", port, rejectUnauthorized: false }, () =>
        resolve({ socket, received: () => text, ended }))
      socket.on("data", (chunk) => void (text += chunk.toString()))
      const ended = new Promise<number>((done) => socket.on("close", () => done(performance.now())))
    }))

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n`

it.live("a stop answers the request in flight with Connection: close, ends its connection and closes idle ones at once", () =>
  Effect.gen(function*() {
    const dataDir = makeTempDir("tls")
    const { cert, key } = yield* Effect.promise(() => loadTls({ dataDir, tls: undefined }))
    fs.rmSync(dataDir, { recursive: true, force: true })
    const release = yield* Deferred.make<void>()
    const arrived = yield* Deferred.make<void>()
    const routes = HttpRouter.use(Effect.fn(function*(router) {
      yield* router.add("GET", "/slow", Effect.gen(function*() {
        yield* Deferred.succeed(arrived, undefined)
        yield* Deferred.await(release)
        return HttpServerResponse.text("done")
      }))
      yield* router.add("GET", "/fast", Effect.succeed(HttpServerResponse.text("ok")))
    }))
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provideMerge(httpsListener({ host: "127.0.0.1", port: 0, cert, key }))
      ),
      scope
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    const port = "port" in address ? address.port : 0

    // an idle keep-alive connection (one request answered) and a busy one (a request in flight)
    const idle = yield* connection(port)
    idle.socket.write(get("/fast"))
    yield* waitUntil("the idle connection's answer", () => idle.received().includes("ok"))
    const busy = yield* connection(port)
    busy.socket.write(get("/slow"))
    yield* Deferred.await(arrived)

    const stopping = yield* Effect.forkChild(Scope.close(scope, Exit.void))
    const idleClosedAt = yield* Effect.promise(() => idle.ended)
    const releasedAt = performance.now()
    yield* Deferred.succeed(release, undefined)
    const busyClosedAt = yield* Effect.promise(() => busy.ended)
    yield* Fiber.join(stopping)

    assert.match(busy.received(), /^HTTP\/1\.1 200 OK\r\n/)
    assert.match(busy.received(), /\r\nconnection: close\r\n/i)
    assert.include(busy.received(), "done")
    assert.isBelow(idleClosedAt, releasedAt) // closed at the stop, before the answer in flight was released
    // the server's grace is 10 s: the busy connection ended when its answer was out, not at the grace
    assert.isBelow(busyClosedAt - releasedAt, 5_000)
  }))
