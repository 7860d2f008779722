// Local targets for the delivery tests: HTTP, raw TCP and HTTPS servers on 127.0.0.1, ephemeral ports, closed
// with the test's scope. Nothing here talks to anything but loopback.
import { spawn } from "node:child_process"
import * as http from "node:http"
import * as https from "node:https"
import * as net from "node:net"
import * as tls from "node:tls"
import { Effect } from "effect"
import type { Scope } from "effect"
import { generate } from "selfsigned"

export interface Received {
  readonly method: string
  readonly path: string
  /** [name, value, name, value, …] as on the wire. */
  readonly rawHeaders: ReadonlyArray<string>
  readonly body: Buffer
}

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, received: Received) => void

const listen = (server: net.Server): Promise<number> =>
  new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen({ port: 0, host: "127.0.0.1" }, () => resolve((server.address() as net.AddressInfo).port))
  })

/** Values of a header (case-insensitive) from raw headers, in wire order. */
export const headerValues = (rawHeaders: ReadonlyArray<string>, name: string): Array<string> => {
  const out: Array<string> = []
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === name.toLowerCase()) out.push(rawHeaders[i + 1]!)
  }
  return out
}

/** An HTTP server recording every request; the default handler answers 200 "ok". */
export const httpServer = (
  handler: Handler = (_req, res) => res.end("ok")
): Effect.Effect<{ url: string; port: number; received: Array<Received>; connections: () => number }, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const received: Array<Received> = []
      let connections = 0
      const server = http.createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", () => {
          const r = { method: req.method!, path: req.url!, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks) }
          received.push(r)
          handler(req, res, r)
        })
      })
      server.on("connection", () => connections++)
      const port = await listen(server)
      return { server, port, url: `http://127.0.0.1:${port}`, received, connections: () => connections }
    }),
    ({ server }) =>
      Effect.promise(() => {
        server.closeAllConnections()
        return new Promise<void>((resolve) => server.close(() => resolve()))
      })
  )

/** A raw TCP server; `onSocket` decides what the client gets. */
export const tcpServer = (
  onSocket: (socket: net.Socket) => void
): Effect.Effect<{ port: number; sockets: Set<net.Socket> }, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const sockets = new Set<net.Socket>()
      const server = net.createServer((socket) => {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
        socket.on("error", () => {})
        onSocket(socket)
      })
      const port = await listen(server)
      return { server, port, sockets }
    }),
    ({ server, sockets }) =>
      Effect.promise(() => {
        for (const s of sockets) s.destroy()
        return new Promise<void>((resolve) => server.close(() => resolve()))
      })
  )

/** A port nothing listens on (bound, then released). */
export const closedPort: Effect.Effect<number> = Effect.promise(async () => {
  const server = net.createServer()
  const port = await listen(server)
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
})

/** An HTTPS server with a self-signed certificate for `localhost`; records the SNI names it was asked for. */
export const httpsServer: Effect.Effect<{ port: number; serverNames: Array<string> }, never, Scope.Scope> =
  Effect.acquireRelease(
    Effect.promise(async () => {
      const pems = await generate([{ name: "commonName", value: "localhost" }], { keyType: "ec", algorithm: "sha256" })
      const serverNames: Array<string> = []
      const context = tls.createSecureContext({ key: pems.private, cert: pems.cert })
      const server = https.createServer({
        key: pems.private,
        cert: pems.cert,
        SNICallback: (name, cb) => {
          serverNames.push(name)
          cb(null, context)
        }
      }, (_req, res) => res.end("secure"))
      server.on("tlsClientError", () => {})
      const port = await listen(server)
      return { server, port, serverNames }
    }),
    ({ server }) =>
      Effect.promise(() => {
        server.closeAllConnections()
        return new Promise<void>((resolve) => server.close(() => resolve()))
      })
  )

/**
 * A listener whose accept queue is full: a child node process listens with backlog 1 and is stopped
 * (SIGSTOP) so it never accepts; fillers take the queue, so further SYNs are dropped.
 */
export const fullBacklogPort: Effect.Effect<number, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(async () => {
    const child = spawn(process.execPath, [
      "-e",
      "const s=require('net').createServer().listen({port:0,host:'127.0.0.1',backlog:1},()=>console.log(s.address().port))"
    ], { stdio: ["ignore", "pipe", "ignore"] })
    const port = await new Promise<number>((resolve) => child.stdout!.once("data", (d) => resolve(Number(String(d).trim()))))
    child.kill("SIGSTOP")
    const fillers = [0, 1, 2].map(() => net.connect(port, "127.0.0.1").on("error", () => {}))
    await new Promise((resolve) => setTimeout(resolve, 50))
    return { child, port, fillers }
  }),
  ({ child, fillers }) =>
    Effect.sync(() => {
      for (const f of fillers) f.destroy()
      child.kill("SIGKILL")
    })
).pipe(Effect.map(({ port }) => port))
