// A keep-alive connection and a request whose body the answer did not need: a GET or a DELETE
// carrying a body, on every kind of route (the fast lane, an Effect route answering before it read
// the body, the router's 404 and 405). On one TLS connection, such a request, then a plain
// `GET /health`: when the first answer says `Connection: keep-alive`, the second is answered on the
// same socket, never reset. A small body with a Content-Length is drained and the connection kept;
// a chunked one left unread (its size unknown when the answer's head is written) gets
// `Connection: close`, where it used to get keep-alive and a reset once it passed 256 KiB.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as tls from "node:tls"
import { TestServer, testServerLayer } from "../support/server.ts"

/** Writes `first`, reads its answer, writes `second` on the same socket: both answers' heads, or how it ended. */
const twoOnOneSocket = (baseUrl: string, first: string, second: string) =>
  Effect.promise(() =>
    new Promise<{ readonly first: string; readonly second: string }>((resolve) => {
      const url = new URL(baseUrl)
      const socket = tls.connect({ host: url.hostname, port: Number(url.port), rejectUnauthorized: false })
      let received = ""
      let firstHead: string | undefined
      const finish = (second: string) => {
        socket.destroy()
        resolve({ first: firstHead ?? received.split("\r\n")[0] ?? "", second })
      }
      const timer = setTimeout(() => finish(`no answer within 5 s (received ${JSON.stringify(received.slice(0, 400))})`), 5_000)
      socket.on("secureConnect", () => socket.write(first))
      socket.on("data", (chunk: Buffer) => {
        received += chunk.toString("latin1")
        const answers = received.split(/(?=HTTP\/1\.1 \d{3})/)
        if (firstHead === undefined && answerComplete(answers[0]!)) {
          firstHead = answers[0]!.split("\r\n\r\n")[0]!
          socket.write(second)
        }
        if (answers.length > 1 && answerComplete(answers[1]!)) {
          clearTimeout(timer)
          finish(answers[1]!.split("\r\n")[0]!)
        }
      })
      socket.on("error", (error: NodeJS.ErrnoException) => {
        clearTimeout(timer)
        finish(error.code ?? error.message)
      })
      socket.on("close", () => {
        clearTimeout(timer)
        finish(firstHead === undefined ? "closed before the first answer" : "closed after the first answer")
      })
    }))

/** The answer is whole: its head, and its body (of its Content-Length, or chunked up to the last chunk). */
const answerComplete = (answer: string) => {
  const end = answer.indexOf("\r\n\r\n")
  if (end < 0) return false
  const head = answer.slice(0, end)
  const body = answer.slice(end + 4)
  const length = /content-length: (\d+)/i.exec(head)
  if (length !== null) return body.length >= Number(length[1])
  return !/transfer-encoding: chunked/i.test(head) || body.endsWith("0\r\n\r\n")
}

/** A request with `body` sent with a Content-Length, or chunked (in chunks of 16 KiB). */
const request = (method: string, path: string, headers: Record<string, string>, body: string, chunked = false) => {
  const head = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("")}`
  if (!chunked) return `${head}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  let chunks = ""
  for (let at = 0; at < body.length; at += 16_384) {
    const chunk = body.slice(at, at + 16_384)
    chunks += `${Buffer.byteLength(chunk).toString(16)}\r\n${chunk}\r\n`
  }
  return `${head}Transfer-Encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`
}

layer(testServerLayer(), { timeout: "60 seconds" })("keep-alive after a request whose body is not read", (it) => {
  it.effect("a GET or DELETE with a body, then a second request on the same connection: answered, not reset", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const key = yield* server.newKey()
      const auth = { "ttr-api-key": key }
      const health = request("GET", "/health", auth, "")
      const body = JSON.stringify({ some: "body", padding: "x".repeat(2_000) })
      const cases: ReadonlyArray<readonly [string, string, Record<string, string>]> = [
        ["GET", "/mcp", auth], // 405
        ["DELETE", "/mcp", auth],
        ["GET", "/nothing-here", auth], // the router's 404
        ["DELETE", "/nothing-here", auth],
        ["GET", "/declare", auth],
        ["GET", "/bulk", auth],
        ["DELETE", "/cancel", auth], // no id: 400
        ["DELETE", "/cancel", { ...auth, "ttr-trigger-id": "00000000-0000-7000-8000-000000000000" }], // 404
        ["GET", "/jobs", auth],
        ["GET", "/health", auth], // the fast lane
        ["GET", "/schedule", auth], // the fast lane, a method whose body is not stored
        ["DELETE", "/schedule", auth],
        ["GET", "/openapi/json", {}],
        ["GET", "/tag-policies", auth],
        ["GET", "/actions", auth]
      ]
      const broken: Array<string> = []
      const bodies = [["2 KiB", body, false], ["100 KiB chunked", "y".repeat(100 * 1024), true], ["300 KiB chunked", "y".repeat(300 * 1024), true],
        ["300 KiB", "y".repeat(300 * 1024), false]] as const
      for (const [size, payload, chunked] of bodies) {
        for (const [method, path, headers] of cases) {
          const answers = yield* twoOnOneSocket(server.baseUrl, request(method, path, { ...headers, "content-type": "application/json" }, payload, chunked), health)
          const keepsAlive = !/^connection: close$/im.test(answers.first)
          if (keepsAlive && !answers.second.startsWith("HTTP/1.1 200")) {
            broken.push(`${method} ${path}, ${size} (${answers.first.split("\r\n")[0]}): then ${answers.second.slice(0, 60)}`)
          }
          if (size === "2 KiB" && !keepsAlive) broken.push(`${method} ${path}, ${size}: closed a connection it could keep`)
        }
      }
      assert.deepStrictEqual(broken, [])
      // a route that reads its chunked body before answering keeps the connection
      const read = yield* twoOnOneSocket(server.baseUrl,
        request("POST", "/declare", { ...auth, "content-type": "application/json" }, "y".repeat(100 * 1024), true), health)
      assert.match(read.first, /^HTTP\/1\.1 400/)
      assert.notMatch(read.first, /^connection: close$/im)
      assert.match(read.second, /^HTTP\/1\.1 200/)
    }))
})
