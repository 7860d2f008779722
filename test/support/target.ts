// A local delivery target for end-to-end tests: a node:http server on 127.0.0.1 that records every
// request it receives (method, url, raw headers, body bytes, arrival time) and answers per path:
// 200 (default), any status (with headers, after a delay), never (hang), or a script of answers, one per request.
// Closed with the scope; loopback only.
import * as http from "node:http"
import * as net from "node:net"
import { Effect } from "effect"
import type { Scope } from "effect"
import { pollUntil } from "./wait.ts"

export interface Arrival {
  readonly method: string
  /** Path and query as received. */
  readonly url: string
  /** [name, value, name, value, …] as on the wire. */
  readonly rawHeaders: ReadonlyArray<string>
  readonly body: Buffer
  /** Wall-clock ms (Date.now) when the request head arrived. */
  readonly arrivedAtMs: number
}

/**
 * How the target answers a path: a status (with a short text body and these headers, `delayMs` after
 * the request arrived), or never ("hang").
 */
export type Reply = { readonly status: number; readonly headers?: Readonly<Record<string, string>>; readonly delayMs?: number } | "hang"

export interface Target {
  readonly port: number
  /** `http://127.0.0.1:<port>` */
  readonly origin: string
  readonly arrivals: ReadonlyArray<Arrival>
  /** Arrivals on one path (query ignored). */
  readonly at: (path: string) => ReadonlyArray<Arrival>
  /** Sets the answer for a path (query ignored); unset paths answer 200 "ok". */
  readonly reply: (path: string, reply: Reply) => void
  /** The answers to the next requests of a path, in order; after them, its `reply` (or 200). */
  readonly script: (path: string, replies: ReadonlyArray<Reply>) => void
}

const listen = (server: net.Server): Promise<number> =>
  new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen({ port: 0, host: "127.0.0.1" }, () => resolve((server.address() as net.AddressInfo).port))
  })

const pathOf = (url: string) => url.split("?")[0]!

/** Values of a header (case-insensitive) from raw headers, in wire order. */
export const headerValues = (rawHeaders: ReadonlyArray<string>, name: string): Array<string> => {
  const out: Array<string> = []
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === name.toLowerCase()) out.push(rawHeaders[i + 1]!)
  }
  return out
}

/** Header names (lowercase) of raw headers, in wire order. */
export const headerNames = (rawHeaders: ReadonlyArray<string>): Array<string> =>
  rawHeaders.filter((_, i) => i % 2 === 0).map((name) => name.toLowerCase())

export const target: Effect.Effect<Target, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(async () => {
    const arrivals: Array<Arrival> = []
    const replies = new Map<string, Reply>()
    const scripts = new Map<string, Array<Reply>>()
    const server = http.createServer((req, res) => {
      const arrivedAtMs = Date.now()
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        arrivals.push({ method: req.method!, url: req.url!, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks), arrivedAtMs })
        const reply = scripts.get(pathOf(req.url!))?.shift() ?? replies.get(pathOf(req.url!)) ?? { status: 200 }
        if (reply === "hang") return
        const answer = () => {
          res.writeHead(reply.status, { "content-type": "text/plain", ...reply.headers })
          res.end(`status ${reply.status}`)
        }
        if (reply.delayMs === undefined) answer()
        else setTimeout(answer, reply.delayMs)
      })
    })
    const port = await listen(server)
    return {
      server,
      target: {
        port,
        origin: `http://127.0.0.1:${port}`,
        arrivals,
        at: (path: string) => arrivals.filter((a) => pathOf(a.url) === path),
        reply: (path: string, reply: Reply) => void replies.set(path, reply),
        script: (path: string, script: ReadonlyArray<Reply>) => void scripts.set(path, [...script])
      } satisfies Target
    }
  }),
  ({ server }) =>
    Effect.promise(() => {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    })
).pipe(Effect.map(({ target }) => target))

/** A loopback port nothing listens on (bound, then released). */
export const closedPort: Effect.Effect<number> = Effect.promise(async () => {
  const server = net.createServer()
  const port = await listen(server)
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
})

// the wait helpers live in wait.ts; re-exported for the files that import them from here
export { pollUntil, realSleep } from "./wait.ts"

/** The first `count` arrivals at a path, once there (20 s at most). */
export const arrivalsAt = (t: Pick<Target, "at">, path: string, count: number) =>
  pollUntil(`${count} arrivals at ${path}`, Effect.sync(() => (t.at(path).length >= count ? t.at(path) : undefined)), { deadlineMs: 20_000 })
