// The HTTP sink every system delivers to: a keep-alive node:http server on loopback, in its own child
// process, recording the arrival instant (performance.timeOrigin + performance.now()) of
// `POST /hit?run=<run>&id=<i>`. The parent arms it for one run (`expect`), is told when all ids have
// arrived, and collects the arrival times. Requests of another run (a late straggler) are counted apart.
// A run may ask the sink to answer each request `delayMs` after reading it (the gated workload: a
// target that takes 10 ms), and to refuse the requests arriving between two instants with `429` and
// a `Retry-After` (the gated workload's hold) or with another status (`500`: an origin that is down);
// it listens on more ports when asked (more origins, for target policies); the sink also keeps the largest number of requests it
// held unanswered at once, the arrival times (and ids) of repeated ids (every start the target saw),
// the instants it refused, and how late its own event loop ran (its stamps are that late at most).
// Requests of the run `bg` (a background load) are counted apart and answered at once. With no
// delay it answers as soon as the body is read, as it always did.
import { fork } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { childMessage } from "./childMessage.ts"
import { trackChild, waitForExit } from "./common.ts"

/**
 * Requests arriving between these wall-clock instants are answered `status` (default `429`) with
 * this Retry-After (none: a target that is down, e.g. `500`).
 */
export interface Refusal {
  readonly fromMs: number
  readonly untilMs: number
  readonly retryAfterSeconds?: number
  readonly status?: number
}

type ToSink =
  | { readonly type: "expect"; readonly run: string; readonly count: number; readonly delayMs: number; readonly refuse: Refusal | null }
  | { readonly type: "collect" }
  | { readonly type: "ports"; readonly count: number }

type FromSink =
  | { readonly type: "listening"; readonly port: number }
  | { readonly type: "ports"; readonly ports: ReadonlyArray<number> }
  | { readonly type: "armed"; readonly anchorMs: number }
  | { readonly type: "complete" }
  | {
    readonly type: "arrivals"
    readonly arrivals: Float64Array
    readonly duplicates: number
    readonly strays: number
    readonly repeatArrivals: Float64Array
    readonly repeatIds: Int32Array
    readonly peakInFlight: number
    readonly peakInFlightPerOrigin: number
    readonly meanInFlight: number
    readonly refusedAt: Float64Array
    readonly background: number
    readonly loopDelayP99Ms: number
    readonly loopDelayMaxMs: number
  }

export interface Arrivals {
  /** Arrival instant (wall-clock ms, anchored when the run was armed) per id; NaN when it never arrived. */
  readonly arrivals: Float64Array
  readonly duplicates: number
  readonly strays: number
  /** Arrival instants (same clock) of the requests for an id that had already arrived, in arrival order. */
  readonly repeatArrivals: Float64Array
  /** The id of each repeated arrival. */
  readonly repeatIds: Int32Array
  /** The most requests the sink held at once (arrived, not yet answered) since the run was armed. */
  readonly peakInFlight: number
  /** The most requests one of its ports (one origin) held at once since the run was armed. */
  readonly peakInFlightPerOrigin: number
  /** The requests it held on average from the run's first arrival to its last answer. */
  readonly meanInFlight: number
  /** When the sink answered 429 (same clock), in order. */
  readonly refusedAt: Float64Array
  /** Requests of the background run (`run=bg`) since the run was armed. */
  readonly background: number
  /** The sink's event-loop delay over the run (ms): how late it may have stamped an arrival. */
  readonly loopDelayP99Ms: number
  readonly loopDelayMaxMs: number
}

export interface ExpectOptions {
  /** Answer each request this long after its body was read (default 0: at once). */
  readonly delayMs?: number
  /** Refuse the requests arriving in this span (wall clock) with 429. */
  readonly refuse?: Refusal
}

export interface Sink {
  readonly port: number
  readonly url: (run: string, id: number) => string
  /**
   * `count` more ports of the sink (each another origin for a target policy, all on loopback,
   * answering as the main one), made when first asked.
   */
  readonly originPorts: (count: number) => Promise<ReadonlyArray<number>>
  /** The url of an id on one of those ports. */
  readonly urlAt: (port: number, run: string, id: number) => string
  /** Where the background load's requests go (counted apart). */
  readonly backgroundUrl: string
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
 * Date.now() minus performance.timeOrigin + performance.now(), taken the moment Date.now() steps to its
 * next millisecond (then it reads the true instant, to a few microseconds; samples taken in one tight
 * loop all fall in one millisecond, and their average was off by up to half a millisecond): added to
 * the recorded instants it puts them on the wall clock the due instants use, even if the wall clock was
 * slewed since this process started. The median of five such steps.
 */
const wallClockAnchor = () => {
  const steps: Array<number> = []
  for (let i = 0; i < 5; i++) {
    const from = Date.now()
    let now = from
    let at = 0
    while (now === from) {
      at = performance.timeOrigin + performance.now()
      now = Date.now()
    }
    // the step happened between `at` and the read that saw it: the middle of that read
    steps.push(now - (performance.timeOrigin + performance.now() + at) / 2)
  }
  return steps.sort((a, b) => a - b)[2]!
}

const runSink = () => {
  const send = (message: FromSink) => process.send!(message)
  let run = ""
  let arrivals = new Float64Array(0)
  let arrived = 0
  let duplicates = 0
  let strays = 0
  let background = 0
  let delayMs = 0
  let refuse: Refusal | null = null
  /** The wall clock minus this process's clock, for the refusal's span. */
  let anchorMs = 0
  let repeatArrivals: Array<number> = []
  let repeatIds: Array<number> = []
  let refusedAt: Array<number> = []
  /** Requests arrived and not yet answered, now and at most since the run was armed; their time integral. */
  let inFlight = 0
  let peakInFlight = 0
  let inFlightArea = 0
  let inFlightSince = Number.NaN
  let lastChangeAt = Number.NaN
  let lastAnswerAt = Number.NaN
  const inFlightChange = (at: number, by: number) => {
    if (!Number.isNaN(lastChangeAt)) inFlightArea += inFlight * (at - lastChangeAt)
    if (Number.isNaN(inFlightSince)) inFlightSince = at
    lastChangeAt = at
    inFlight += by
  }
  const loopDelay = monitorEventLoopDelay({ resolution: 5 })
  /** Requests held per port (one origin each), and the most one port held. */
  const heldByPort = new Map<number, number>()
  let peakPerOrigin = 0

  const handle = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const at = performance.timeOrigin + performance.now()
    const query = req.url === undefined ? "" : req.url.slice(req.url.indexOf("?") + 1)
    const params = new URLSearchParams(query)
    if (params.get("run") === "bg") {
      background++
      req.resume()
      req.on("end", () => res.writeHead(200, { "content-length": "2" }).end("ok"))
      return
    }
    inFlightChange(at, 1)
    if (inFlight > peakInFlight) peakInFlight = inFlight
    const port = req.socket.localPort ?? 0
    const held = (heldByPort.get(port) ?? 0) + 1
    heldByPort.set(port, held)
    if (held > peakPerOrigin) peakPerOrigin = held
    const id = Number(params.get("id"))
    if (params.get("run") !== run || !Number.isInteger(id) || id < 0 || id >= arrivals.length) strays++
    else if (Number.isNaN(arrivals[id]!)) {
      arrivals[id] = at
      if (++arrived === arrivals.length) send({ type: "complete" })
    } else {
      duplicates++
      repeatArrivals.push(at)
      repeatIds.push(id)
    }
    const refused = refuse !== null && at + anchorMs >= refuse.fromMs && at + anchorMs < refuse.untilMs
    const answer = () => {
      lastAnswerAt = performance.timeOrigin + performance.now()
      inFlightChange(lastAnswerAt, -1)
      heldByPort.set(port, heldByPort.get(port)! - 1)
      if (refused) {
        refusedAt.push(performance.timeOrigin + performance.now())
        const retryAfter = refuse!.retryAfterSeconds === undefined ? {} : { "retry-after": String(refuse!.retryAfterSeconds) }
        res.writeHead(refuse!.status ?? 429, { "content-type": "text/plain", "content-length": "4", ...retryAfter })
        res.end("busy")
        return
      }
      res.writeHead(200, { "content-type": "text/plain", "content-length": "2" })
      res.end("ok")
    }
    const delay = delayMs
    req.resume()
    req.on("end", () => {
      if (delay > 0) setTimeout(answer, delay)
      else answer()
    })
  }
  const makeServer = () => {
    const made = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 0 }, handle)
    made.maxRequestsPerSocket = 0
    made.headersTimeout = 60_000
    return made
  }
  const server = makeServer()
  const extraPorts: Array<number> = []

  process.on("message", (message: ToSink) => {
    if (message.type === "expect") {
      run = message.run
      arrivals = new Float64Array(message.count).fill(Number.NaN)
      arrived = duplicates = strays = background = 0
      delayMs = message.delayMs
      refuse = message.refuse
      repeatArrivals = []
      repeatIds = []
      refusedAt = []
      peakInFlight = inFlight
      peakPerOrigin = Math.max(0, ...heldByPort.values())
      inFlightArea = 0
      inFlightSince = lastChangeAt = lastAnswerAt = Number.NaN
      anchorMs = wallClockAnchor()
      loopDelay.disable()
      loopDelay.reset()
      loopDelay.enable()
      send({ type: "armed", anchorMs })
      if (message.count === 0) send({ type: "complete" })
    } else if (message.type === "ports") {
      const more = Array.from({ length: Math.max(0, message.count - extraPorts.length) }, () =>
        new Promise<number>((resolve) => {
          const extra = makeServer()
          extra.listen(0, "127.0.0.1", () => resolve((extra.address() as AddressInfo).port))
        }))
      void Promise.all(more).then((ports) => {
        extraPorts.push(...ports)
        send({ type: "ports", ports: extraPorts.slice(0, message.count) })
      })
    } else if (message.type === "collect") {
      send({
        type: "arrivals", arrivals, duplicates, strays, repeatArrivals: Float64Array.from(repeatArrivals),
        repeatIds: Int32Array.from(repeatIds), peakInFlight, peakInFlightPerOrigin: peakPerOrigin, refusedAt: Float64Array.from(refusedAt), background,
        meanInFlight: inFlightArea / (lastAnswerAt - inFlightSince),
        loopDelayP99Ms: loopDelay.percentile(99) / 1e6, loopDelayMaxMs: loopDelay.max / 1e6
      })
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
    originPorts: async (count) => {
      const reply = nextMessage(child, "ports", 30_000)
      send({ type: "ports", count })
      return (await reply).ports
    },
    urlAt: (at, run, id) => `http://127.0.0.1:${at}/hit?run=${run}&id=${id}`,
    backgroundUrl: `http://127.0.0.1:${port}/hit?run=bg`,
    expect: async (run, count, options) => {
      complete = false
      const armed = nextMessage(child, "armed", 10_000)
      send({ type: "expect", run, count, delayMs: options?.delayMs ?? 0, refuse: options?.refuse ?? null })
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
      const figures = await reply
      return {
        ...figures,
        arrivals: figures.arrivals.map((at) => at + anchorMs),
        repeatArrivals: figures.repeatArrivals.map((at) => at + anchorMs),
        refusedAt: figures.refusedAt.map((at) => at + anchorMs)
      }
    },
    stop: async () => {
      child.kill("SIGTERM")
      await waitForExit(child, 5_000)
    }
  }
}

if (import.meta.main) runSink()
