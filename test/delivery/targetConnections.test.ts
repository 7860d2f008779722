// The delivery connections against a local HTTP server: one exchange at a time per connection, reuse
// of a freed connection, the per-origin bound (exchanges beyond it queue), connections closed by the
// target forgotten, and refusal after close. Also the response head joined in place (executor.ts).
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Dispatcher } from "undici"
import { joinHeaders } from "../../src/delivery/executor.ts"
import { makeTargetConnections } from "../../src/delivery/targetConnections.ts"
import type { TargetConnections } from "../../src/delivery/targetConnections.ts"
import { httpServer } from "../support/servers.ts"

interface Result {
  readonly status: number | null
  readonly body: string
  readonly error: Error | null
}

/** One GET through `connections`, released when it ends, as undici's handler API sees it. */
const get = (connections: TargetConnections, url: string): Promise<Result> =>
  new Promise((resolve) => {
    const { origin, pathname } = new URL(url)
    let status: number | null = null
    const chunks: Array<Buffer> = []
    let release = () => {}
    let ended = false
    const end = (error: Error | null) => {
      ended = true
      release()
      resolve({ status, body: Buffer.concat(chunks).toString(), error })
    }
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: () => {},
      onResponseStart: (_c, statusCode) => {
        status = statusCode
      },
      onResponseData: (_c, chunk) => void chunks.push(Buffer.from(chunk)),
      onResponseEnd: () => end(null),
      onResponseError: (_c, error) => end(error)
    }
    const connection = connections.dispatch({ origin, path: pathname, method: "GET" }, handler)
    if (connection !== null) {
      if (ended) connection.release()
      else release = () => connection.release()
    }
  })

const withConnections = (connections: number) =>
  Effect.acquireRelease(
    Effect.sync(() => makeTargetConnections({ connections, pipelining: 1, keepAliveTimeout: 4_000 })),
    (c) => Effect.promise(() => c.destroy())
  )

const waitFor = (condition: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200 && !condition(); i++) yield* Effect.sleep("10 millis")
    assert.isTrue(condition())
  })

describe("target connections", () => {
  it.live("exchanges one after another reuse one connection", () =>
    Effect.gen(function*() {
      const target = yield* httpServer()
      const connections = yield* withConnections(8)
      for (let i = 0; i < 5; i++) {
        const result = yield* Effect.promise(() => get(connections, `${target.url}/n${i}`))
        assert.strictEqual(result.status, 200)
        assert.strictEqual(result.body, "ok")
      }
      assert.strictEqual(target.connections(), 1)
      assert.strictEqual(connections.size(), 1)
      assert.deepStrictEqual(target.received.map((r) => r.path), ["/n0", "/n1", "/n2", "/n3", "/n4"])
    }))

  it.live("one exchange at a time per connection; past the bound per origin, exchanges queue on the open ones", () =>
    Effect.gen(function*() {
      const answers: Array<() => void> = []
      let open = 0
      let mostOpen = 0
      const target = yield* httpServer((_req, res) => {
        open++
        mostOpen = Math.max(mostOpen, open)
        answers.push(() => {
          open--
          res.end("ok")
        })
      })
      const connections = yield* withConnections(2)
      const all = Promise.all(Array.from({ length: 6 }, (_, i) => get(connections, `${target.url}/q${i}`)))
      yield* waitFor(() => answers.length === 2)
      assert.strictEqual(connections.size(), 2)
      // answer as they come: each freed connection takes a queued exchange
      for (let answered = 0; answered < 6; answered++) {
        yield* waitFor(() => answers.length > 0)
        answers.shift()!()
      }
      const results = yield* Effect.promise(() => all)
      assert.deepStrictEqual(results.map((r) => r.status), [200, 200, 200, 200, 200, 200])
      assert.strictEqual(target.connections(), 2)
      assert.strictEqual(mostOpen, 2)
    }))

  it.live("a connection the target closes while it is free is forgotten, and so is its origin", () =>
    Effect.gen(function*() {
      const target = yield* httpServer((_req, res) => {
        res.setHeader("connection", "close")
        res.end("bye")
      })
      const connections = yield* withConnections(4)
      const first = yield* Effect.promise(() => get(connections, `${target.url}/a`))
      assert.strictEqual(first.body, "bye")
      yield* waitFor(() => connections.size() === 0)
      const second = yield* Effect.promise(() => get(connections, `${target.url}/b`))
      assert.strictEqual(second.status, 200)
      assert.strictEqual(target.connections(), 2)
    }))

  it.live("a refused connection is not kept", () =>
    Effect.gen(function*() {
      const connections = yield* withConnections(4)
      const result = yield* Effect.promise(() => get(connections, "http://127.0.0.1:1/x"))
      assert.strictEqual(result.status, null)
      assert.isNotNull(result.error)
      yield* waitFor(() => connections.size() === 0)
    }))

  it.live("after close, exchanges are refused through the handler", () =>
    Effect.gen(function*() {
      const target = yield* httpServer()
      const connections = yield* withConnections(4)
      yield* Effect.promise(() => get(connections, `${target.url}/before`))
      yield* Effect.promise(() => connections.close())
      assert.strictEqual(connections.size(), 0)
      const result = yield* Effect.promise(() => get(connections, `${target.url}/after`))
      assert.strictEqual(result.status, null)
      assert.strictEqual((result.error as { code?: string }).code, "UND_ERR_CLOSED")
      assert.strictEqual(target.received.length, 1)
    }))
})

describe("joinHeaders", () => {
  it("joins a repeated header's values with \", \" in the object undici made, and copies only when a value is missing", () => {
    const headers: Record<string, string | Array<string> | undefined> = { a: "1", "set-cookie": ["x=1", "y=2"], b: "2" }
    const joined = joinHeaders(headers as Dispatcher.ResponseData["headers"])
    assert.strictEqual(joined, headers)
    assert.deepStrictEqual(joined, { a: "1", "set-cookie": "x=1, y=2", b: "2" })
    const withHole = { a: "1", gone: undefined, c: ["3", "4"] }
    assert.deepStrictEqual(joinHeaders(withHole as unknown as Dispatcher.ResponseData["headers"]), { a: "1", c: "3, 4" })
  })
})
