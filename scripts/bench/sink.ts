// The HTTP sink every system delivers to: a keep-alive node:http server on loopback, in its own child
// process, recording the arrival instant (performance.timeOrigin + performance.now()) of
// `POST /hit?run=<run>&id=<i>`. The parent arms it for one run (`expect`), is told when all ids have
// arrived, and collects the arrival times. Requests of another run (a late straggler) are counted apart.
// A run may ask the sink to answer each request `delayMs` after reading it (the gated workload: a
// target that takes 10 ms); the sink also keeps the largest number of requests it held unanswered at
// once, and the arrival times of repeated ids (every start the target saw). With no delay it answers
// as soon as the body is read, as it always did.
import { fork } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { childMessage } from "./childMessage.ts"
import { trackChild, waitForExit } from "./common.ts"

type ToSink =
  | { readonly type: "expect"; readonly run: string; readonly count: number; readonly delayMs: number }
  | { readonly type: "collect" }

type FromSink =
  | { readonly type: "listening"; readonly port: number }
  | { readonly type: "armed"; readonly anchorMs: number }
  | { readonly type: "complete" }
  | {
    readonly type: "arrivals"
    readonly arrivals: Float64Array
    readonly duplicates: number
    readonly strays: number
    readonly repeatArrivals: Float64Array
    readonly peakInFlight: number
  }

export interface Arrivals {
  /** Arrival instant (wall-clock ms, anchored when the run was armed) per id; NaN when it never arrived. */
  readonly arrivals: Float64Array
  readonly duplicates: number
  readonly strays: number
  /** Arrival instants (same clock) of the requests for an id that had already arrived, in arrival order. */
  readonly repeatArrivals: Float64Array
  /** The most requests the sink held at once (arrived, not yet answered) since the run was armed. */
  readonly peakInFlight: number
}

export interface ExpectOptions {
  /** Answer each request this long after its body was read (default 0: at once). */
  readonly delayMs?: number
}

export interface Sink {
  readonly port: number
  readonly url: (run: string, id: number) => string
  /** Arms the sink for a run of `count` ids (0..count-1), forgetting the previous run. */
  readonly expect: (run: string, count: number, options?: ExpectOptions) => Promise<void>
  /** Resolves true when every id has arrived, false at `deadlineMs` (wall clock). */
  readonly waitComplete: (deadlineMs: number) => Promise<boolean>
  readonly collect: () => Promise<Arrivals>
  readonly stop: () => Promise<void>
}

// ---------------------------------------------------------------------------------------------------------
// Child side

/**
 * Date.now() minus performance.timeOrigin + performance.now(), averaged over 50 samples (Date.now() has
 * 1 ms steps): added to the recorded instants it puts them on the wall clock the due instants use, even
 * if the wall clock was slewed since this process started.
 */
const wallClockAnchor = () => {
  let sum = 0
  for (let i = 0; i < 50; i++) sum += Date.now() - (performance.timeOrigin + performance.now())
  return sum / 50 + 0.5 // Date.now() truncates: on average it is 0.5 ms behind the true instant
}

const runSink = () => {
  const send = (message: FromSink) => process.send!(message)
  let run = ""
  let arrivals = new Float64Array(0)
  let arrived = 0
  let duplicates = 0
  let strays = 0
  let delayMs = 0
  let repeatArrivals: Array<number> = []
  /** Requests arrived and not yet answered, now and at most since the run was armed. */
  let inFlight = 0
  let peakInFlight = 0

  const server = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
    const at = performance.timeOrigin + performance.now()
    if (++inFlight > peakInFlight) peakInFlight = inFlight
    const query = req.url === undefined ? "" : req.url.slice(req.url.indexOf("?") + 1)
    const params = new URLSearchParams(query)
    const id = Number(params.get("id"))
    if (params.get("run") !== run || !Number.isInteger(id) || id < 0 || id >= arrivals.length) strays++
    else if (Number.isNaN(arrivals[id]!)) {
      arrivals[id] = at
      if (++arrived === arrivals.length) send({ type: "complete" })
    } else {
      duplicates++
      repeatArrivals.push(at)
    }
    const answer = () => {
      inFlight--
      res.writeHead(200, { "content-type": "text/plain", "content-length": "2" })
      res.end("ok")
    }
    const delay = delayMs
    req.resume()
    req.on("end", () => {
      if (delay > 0) setTimeout(answer, delay)
      else answer()
    })
  })
  server.maxRequestsPerSocket = 0
  server.headersTimeout = 60_000

  process.on("message", (message: ToSink) => {
    if (message.type === "expect") {
      run = message.run
      arrivals = new Float64Array(message.count).fill(Number.NaN)
      arrived = duplicates = strays = 0
      delayMs = message.delayMs
      repeatArrivals = []
      peakInFlight = inFlight
      send({ type: "armed", anchorMs: wallClockAnchor() })
      if (message.count === 0) send({ type: "complete" })
    } else if (message.type === "collect") {
      send({ type: "arrivals", arrivals, duplicates, strays, repeatArrivals: Float64Array.from(repeatArrivals), peakInFlight })
    }
  })
  process.on("disconnect", () => process.exit(0)) // the parent is gone
  server.listen(0, "127.0.0.1", () => send({ type: "listening", port: (server.address() as AddressInfo).port }))
}

// ---------------------------------------------------------------------------------------------------------
// Parent side

const nextMessage = <T extends FromSink["type"]>(child: ChildProcess, type: T, timeoutMs: number) =>
  childMessage<FromSink, T>(child, type, timeoutMs, "the sink")

export const startSink = async (): Promise<Sink> => {
  const child = trackChild(fork(new URL(import.meta.url).pathname, [], {
    execPath: process.execPath,
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  }))
  const { port } = await nextMessage(child, "listening", 30_000)
  let complete = false
  let anchorMs = 0
  child.on("message", (message: FromSink) => {
    if (message.type === "complete") complete = true
  })
  const send = (message: ToSink) => child.send(message)
  return {
    port,
    url: (run, id) => `http://127.0.0.1:${port}/hit?run=${run}&id=${id}`,
    expect: async (run, count, options) => {
      complete = false
      const armed = nextMessage(child, "armed", 10_000)
      send({ type: "expect", run, count, delayMs: options?.delayMs ?? 0 })
      anchorMs = (await armed).anchorMs
    },
    waitComplete: async (deadlineMs) => {
      while (!complete && Date.now() < deadlineMs) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      return complete
    },
    collect: async () => {
      const reply = nextMessage(child, "arrivals", 30_000)
      send({ type: "collect" })
      const { arrivals, duplicates, strays, repeatArrivals, peakInFlight } = await reply
      return {
        arrivals: arrivals.map((at) => at + anchorMs),
        duplicates,
        strays,
        repeatArrivals: repeatArrivals.map((at) => at + anchorMs),
        peakInFlight
      }
    },
    stop: async () => {
      child.kill("SIGTERM")
      await waitForExit(child, 5_000)
    }
  }
}

if (import.meta.main) runSink()
