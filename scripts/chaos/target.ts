// The recording target every trigger is sent to: a node:http server on 127.0.0.1 in its own child
// process (so its timestamps do not wait on the harness's event loop). It records every arrival — the
// trigger number (`?n=` of the URL, else the JSON body's `n`; the `timewheel-trigger-id` header too
// when the service sends one), the arrival instant (Date.now(), the clock the due times use) and which
// node sent it (the connection's source port, resolved to a node process through /proc) — and answers
// 200 after a configurable delay (0 ms fast, 2 s slow). The parent configures it per scenario, polls
// counts and collects the arrivals.
import { fork } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { childMessage } from "../bench/childMessage.ts"
import { trackChild, waitForExit } from "../bench/common.ts"
import { connectionOwners, type OwnedProcess } from "./sockets.ts"

export const TRIGGER_ID_HEADER = "timewheel-trigger-id"
/** Connections live on (keep-alive), so a scan shortly after they open still finds them. */
const SCAN_EVERY_MS = 20

/** One arrival: trigger number (-1 when none could be read), instant, node index (-1 unknown), header id. */
export type Arrival = readonly [n: number, atMs: number, node: number, triggerId: string | null]

export interface TargetStats {
  readonly arrivals: number
  /** Distinct trigger numbers in 0..expected-1 that arrived at least once. */
  readonly distinct: number
  /** Requests received and not yet answered, by node index (key -1: unknown sender). */
  readonly openByNode: Readonly<Record<string, number>>
  /** Requests received, by node index (key -1: unknown sender, or not yet attributed). */
  readonly arrivalsByNode: Readonly<Record<string, number>>
  /** Instant of the latest arrival of a trigger number not seen before; 0 when none. */
  readonly lastFirstArrivalMs: number
}

/** Cost of the /proc scans that attribute connections to nodes (they run on the target's event loop). */
export interface ScanStats {
  readonly count: number
  readonly totalMs: number
  readonly maxMs: number
}

type ToTarget =
  | { readonly type: "configure"; readonly delayMs: number; readonly expected: number; readonly nodes: ReadonlyArray<OwnedProcess> }
  | { readonly type: "stats" }
  | { readonly type: "collect" }

type FromTarget =
  | { readonly type: "listening"; readonly port: number }
  | { readonly type: "configured" }
  | { readonly type: "stats"; readonly stats: TargetStats }
  | { readonly type: "arrivals"; readonly arrivals: ReadonlyArray<Arrival>; readonly scans: ScanStats }

// ---------------------------------------------------------------------------------------------------------
// Child side

interface Connection {
  readonly port: number
  node: number
}

interface Received {
  n: number
  readonly atMs: number
  readonly connection: Connection
  readonly triggerId: string | null
  open: boolean
}

const runTarget = () => {
  const send = (message: FromTarget) => process.send!(message)
  let delayMs = 0
  let expected = 0
  let nodes: ReadonlyArray<OwnedProcess> = []
  let received: Array<Received> = []
  let seen = new Uint8Array(0)
  let distinct = 0
  let lastFirstArrivalMs = 0
  let listenPort = 0

  // connections are attributed to a node by a /proc scan made after they were accepted (at most one
  // scan per SCAN_EVERY_MS; a burst of new connections shares one)
  const connections = new WeakMap<Socket, Connection>()
  let pending: Array<Connection> = []
  let scanTimer: NodeJS.Timeout | undefined
  let lastScanMs = 0
  // one scan at a time; a scan also takes the connections accepted while the previous one ran
  let scans = { count: 0, totalMs: 0, maxMs: 0 }
  let scanning = false
  const scan = async () => {
    scanTimer = undefined
    scanning = true
    const started = performance.now()
    lastScanMs = Date.now()
    const batch = pending
    pending = []
    try {
      const owners = await connectionOwners(nodes, listenPort)
      for (const connection of batch) connection.node = owners.get(connection.port) ?? -1
    } finally {
      const tookMs = performance.now() - started
      scans = { count: scans.count + 1, totalMs: scans.totalMs + tookMs, maxMs: Math.max(scans.maxMs, tookMs) }
      scanning = false
      if (pending.length > 0) scheduleScan()
    }
  }
  const scheduleScan = () => {
    if (scanning) return
    scanTimer ??= setTimeout(() => void scan(), Math.max(0, lastScanMs + SCAN_EVERY_MS - Date.now()))
  }

  const firstSeen = (record: Received) => {
    if (record.n < 0 || record.n >= expected || seen[record.n] === 1) return
    seen[record.n] = 1
    distinct++
    lastFirstArrivalMs = Math.max(lastFirstArrivalMs, record.atMs)
  }

  const server = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
    const atMs = Date.now()
    const url = new URL(req.url ?? "/", "http://target")
    const raw = url.searchParams.get("n")
    const header = req.headers[TRIGGER_ID_HEADER]
    const connection = connections.get(req.socket) ?? { port: req.socket.remotePort ?? 0, node: -1 }
    const record: Received = {
      n: raw !== null && /^-?\d+$/.test(raw) ? Number(raw) : -1,
      atMs,
      connection,
      triggerId: typeof header === "string" ? header : null,
      open: true
    }
    received.push(record)
    firstSeen(record)
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      if (record.n === -1 && raw === null) {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { n?: unknown }
          if (typeof body.n === "number" && Number.isInteger(body.n)) {
            record.n = body.n
            firstSeen(record)
          }
        } catch { /* not ours */ }
      }
      const answer = () => {
        record.open = false
        if (res.destroyed) return
        res.writeHead(200, { "content-type": "text/plain", "content-length": "2" })
        res.end("ok")
      }
      if (delayMs === 0) answer()
      else setTimeout(answer, delayMs)
    })
    res.on("close", () => {
      record.open = false
    })
  })
  server.on("connection", (socket: Socket) => {
    const connection: Connection = { port: socket.remotePort ?? 0, node: -1 }
    connections.set(socket, connection)
    pending.push(connection)
    scheduleScan()
  })
  server.maxRequestsPerSocket = 0
  server.headersTimeout = 60_000

  process.on("message", (message: ToTarget) => {
    if (message.type === "configure") {
      delayMs = message.delayMs
      expected = message.expected
      nodes = message.nodes
      received = []
      seen = new Uint8Array(expected)
      distinct = 0
      lastFirstArrivalMs = 0
      scans = { count: 0, totalMs: 0, maxMs: 0 }
      send({ type: "configured" })
    } else if (message.type === "stats") {
      const openByNode: Record<string, number> = {}
      const arrivalsByNode: Record<string, number> = {}
      for (const record of received) {
        const node = record.connection.node
        arrivalsByNode[node] = (arrivalsByNode[node] ?? 0) + 1
        if (record.open) openByNode[node] = (openByNode[node] ?? 0) + 1
      }
      send({ type: "stats", stats: { arrivals: received.length, distinct, openByNode, arrivalsByNode, lastFirstArrivalMs } })
    } else if (message.type === "collect") {
      void (async () => {
        for (let i = 0; i < 200 && (scanning || scanTimer !== undefined); i++) await new Promise((resolve) => setTimeout(resolve, 10))
        if (pending.length > 0) await scan()
        send({
          type: "arrivals",
          arrivals: received.map((record): Arrival => [record.n, record.atMs, record.connection.node, record.triggerId]),
          scans: { count: scans.count, totalMs: Math.round(scans.totalMs * 10) / 10, maxMs: Math.round(scans.maxMs * 10) / 10 }
        })
      })()
    }
  })
  process.on("disconnect", () => process.exit(0)) // the harness is gone
  server.listen(0, "127.0.0.1", () => {
    listenPort = (server.address() as AddressInfo).port
    send({ type: "listening", port: listenPort })
  })
}

// ---------------------------------------------------------------------------------------------------------
// Parent side

export interface Target {
  readonly port: number
  /** URL of trigger `n` (n < 0: a probe that is not counted). */
  readonly url: (n: number) => string
  /** Forgets earlier arrivals; answers after `delayMs`; expects trigger numbers 0..expected-1 from `nodes`. */
  readonly configure: (delayMs: number, expected: number, nodes: ReadonlyArray<OwnedProcess>) => Promise<void>
  readonly stats: () => Promise<TargetStats>
  readonly collect: () => Promise<{ readonly arrivals: ReadonlyArray<Arrival>; readonly scans: ScanStats }>
  readonly stop: () => Promise<void>
}

const nextMessage = <T extends FromTarget["type"]>(child: ChildProcess, type: T, timeoutMs: number) =>
  childMessage<FromTarget, T>(child, type, timeoutMs, "the target")

export const startTarget = async (): Promise<Target> => {
  const child = trackChild(fork(new URL(import.meta.url).pathname, [], {
    execPath: process.execPath,
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  }))
  const { port } = await nextMessage(child, "listening", 30_000)
  // one request at a time: replies are matched by type
  let chain: Promise<unknown> = Promise.resolve()
  const ask = <T extends FromTarget["type"]>(message: ToTarget, reply: T, timeoutMs: number) => {
    const result = chain.then(() => {
      const answer = nextMessage(child, reply, timeoutMs)
      child.send(message)
      return answer
    })
    chain = result.catch(() => {})
    return result
  }
  return {
    port,
    url: (n) => `http://127.0.0.1:${port}/t?n=${n}`,
    configure: async (delayMs, expected, nodes) => {
      await ask({ type: "configure", delayMs, expected, nodes }, "configured", 10_000)
    },
    stats: async () => (await ask({ type: "stats" }, "stats", 10_000)).stats,
    collect: async () => {
      const { arrivals, scans } = await ask({ type: "collect" }, "arrivals", 30_000)
      return { arrivals, scans }
    },
    stop: async () => {
      child.kill("SIGTERM")
      await waitForExit(child, 5_000)
    }
  }
}

if (import.meta.main) runTarget()
