// The ingest ceiling's bare server: a `node:https` server in a child process of its own, with a
// self-signed certificate made the way the service makes its own (src/api/tls.ts) and the service's
// keep-alive timeout, answering every request 200 with a tiny JSON body. What the same wrk client gets
// from it is the most any Node HTTPS handler gets on this machine; its peak RSS is reported on stop.
import { fork } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { loadTls } from "../../src/api/tls.ts"
import { childMessage } from "./childMessage.ts"
import { makeTempDir, peakRssKiB, removeTempDir, trackChild, waitForExit } from "./common.ts"

type FromServer = { readonly type: "listening"; readonly port: number } | { readonly type: "rss"; readonly peakRssKiB: number }

const BODY = JSON.stringify({ status: "ok" })

const runServer = async () => {
  const dataDir = makeTempDir("bare-https")
  const tls = await loadTls({ tls: undefined, dataDir })
  removeTempDir(dataDir) // the pair is in memory now
  const server = https.createServer({ cert: tls.cert, key: tls.key, keepAliveTimeout: 65_000 }, (req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(BODY) })
      res.end(BODY)
    })
  })
  process.on("message", (message: { type: "rss" }) => {
    if (message.type === "rss") process.send!({ type: "rss", peakRssKiB: peakRssKiB("self") } satisfies FromServer)
  })
  process.on("disconnect", () => process.exit(0)) // the parent is gone
  server.listen(0, "127.0.0.1", () => process.send!({ type: "listening", port: (server.address() as AddressInfo).port } satisfies FromServer))
}

const nextMessage = <T extends FromServer["type"]>(child: ChildProcess, type: T, timeoutMs: number) =>
  childMessage<FromServer, T>(child, type, timeoutMs, "the bare HTTPS server")

export interface BareServer {
  readonly url: string
  /** Stops the server; resolves its peak RSS (VmHWM, KiB). */
  readonly stop: () => Promise<number>
}

export const startBareHttps = async (): Promise<BareServer> => {
  const child = trackChild(fork(new URL(import.meta.url).pathname, [], {
    execPath: process.execPath,
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  }))
  const { port } = await nextMessage(child, "listening", 60_000)
  return {
    url: `https://127.0.0.1:${port}/`,
    stop: async () => {
      const answer = nextMessage(child, "rss", 10_000)
      child.send({ type: "rss" })
      const rss = await answer.then((m) => m.peakRssKiB, () => Number.NaN)
      child.kill("SIGTERM")
      await waitForExit(child, 5_000)
      return rss
    }
  }
}

if (import.meta.main) await runServer()
