// Several delivery targets for the target-policy tests, each its own origin (a node:http server on
// its own loopback port): per origin, the requests it received (path and query, arrival time), how
// many it holds open now and at most, with the time each count changed; and how it answers — a
// status (with headers) after a delay, holding the request until released, or closing the
// connection without an answer (a network error for the sender). A request whose client went away
// (a killed node's connection) counts as ended. Loopback only; closed with the scope or `close`.
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export type Behaviour =
  | { readonly status?: number; readonly headers?: Readonly<Record<string, string>>; readonly delayMs?: number }
  | { readonly hold: true }
  | { readonly close: true }

export interface Origin {
  /** `http://127.0.0.1:<port>` */
  origin: string
  readonly arrivals: Array<{ readonly url: string; readonly atMs: number }>
  open: number
  peak: number
  /** [time, open count] at each change. */
  readonly openAt: Array<readonly [number, number]>
  /** How it answers from now on (default: 200 at once). */
  behave: (how: Behaviour) => void
  /** Answers the held requests (200), and holds no more. */
  release: () => void
}

const makeOrigin = async (): Promise<{ readonly origin: Origin; readonly server: http.Server }> => {
  let how: Behaviour = {}
  const held: Array<() => void> = []
  const state: Origin = {
    origin: "",
    arrivals: [],
    open: 0,
    peak: 0,
    openAt: [],
    behave: (next) => {
      how = next
    },
    release: () => {
      how = {}
      held.splice(0).forEach((answer) => answer())
    }
  }
  const server = http.createServer((req, res) => {
    state.arrivals.push({ url: req.url ?? "", atMs: Date.now() })
    state.open++
    state.peak = Math.max(state.peak, state.open)
    state.openAt.push([Date.now(), state.open])
    let ended = false
    const end = () => {
      if (ended) return
      ended = true
      state.open--
      state.openAt.push([Date.now(), state.open])
    }
    res.on("close", end)
    req.resume()
    const now = how
    if ("close" in now) return void req.socket.destroy()
    const answer = () => {
      const status = "status" in now ? now.status ?? 200 : 200
      res.writeHead(status, { "content-type": "text/plain", ...("headers" in now ? now.headers : {}) }).end(`status ${status}`)
      end()
    }
    if ("hold" in now) held.push(answer)
    else setTimeout(answer, "delayMs" in now ? now.delayMs ?? 0 : 0)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  state.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { origin: state, server }
}

/** `count` origins, and a way to close them all. */
export const makeOrigins = async (count: number) => {
  const made = await Promise.all(Array.from({ length: count }, makeOrigin))
  return {
    origins: made.map((m) => m.origin),
    close: () => {
      for (const { server } of made) {
        server.closeAllConnections()
        server.close()
      }
    }
  }
}
