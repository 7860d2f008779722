// The delivery ceiling: the sink the delivery workload uses, driven by undici alone from a child
// process of its own, no database: n `POST /hit` requests sent as fast as they go, with the Agent
// options and in-flight limit of the service's delivery path (src/delivery/executor.ts: 256
// connections, pipelining 1, keep-alive 4 s; MAX_IN_FLIGHT 256) through undici's `dispatch`, as the
// executor sends them. Connections start cold, as the service's do when a burst comes due. Reported
// like a delivery row: arrivals per second from the start of sending to the last arrival at the sink.
import { fork } from "node:child_process"
import * as crypto from "node:crypto"
import { Agent } from "undici"
import type { Dispatcher } from "undici"
import { nowMs, peakRssKiB, trackChild, waitForExit } from "./common.ts"
import type { Sink } from "./sink.ts"

export const CEILING_CONNECTIONS = 256
export const CEILING_IN_FLIGHT = 256

export const DELIVERY_CEILING_SETTINGS = {
  client: "undici dispatch, one Agent",
  connections: CEILING_CONNECTIONS,
  pipelining: 1,
  keepAliveTimeoutMs: 4_000,
  inFlight: CEILING_IN_FLIGHT
} as const

type ToSender = { readonly type: "send"; readonly urls: ReadonlyArray<string>; readonly body: string }
type FromSender =
  | { readonly type: "sent"; readonly startMs: number; readonly failures: number; readonly firstFailure: string | null; readonly peakRssKiB: number }

export interface DeliveryCeilingMetrics {
  readonly n: number
  readonly arrived: number
  readonly missing: number
  readonly failures: number
  readonly firstFailure: string | null
  /** From the start of sending to the first / last arrival at the sink. */
  readonly firstArrivalMs: number
  readonly lastArrivalMs: number
  /** Arrivals per second over [start, last arrival]. */
  readonly ratePerS: number
  readonly peakRssMiB: number
}

// ---------------------------------------------------------------------------------------------------------
// Child side

/** Reads the head and drains the body; one callback when the exchange ends. */
class Exchange implements Dispatcher.DispatchHandler {
  #status = 0
  readonly #done: (error: string | null) => void
  constructor(done: (error: string | null) => void) {
    this.#done = done
  }
  /** Present so that undici treats this as a handler of its current API (as the executor's is). */
  onRequestStart(): void {}
  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    this.#status = statusCode
  }
  onResponseData(): void {} // the body ("ok") is not kept
  onResponseEnd(): void {
    this.#done(this.#status >= 200 && this.#status < 300 ? null : `the sink answered ${this.#status}`)
  }
  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.#done(error.message)
  }
}

const send = async (urls: ReadonlyArray<string>, body: string) => {
  const agent = new Agent({ connections: CEILING_CONNECTIONS, pipelining: 1, keepAliveTimeout: 4_000, headersTimeout: 0, bodyTimeout: 0 })
  const headers = ["content-type", "application/json"]
  let next = 0
  let failures = 0
  let firstFailure: string | null = null
  const startMs = nowMs()
  await new Promise<void>((resolve) => {
    let inFlight = 0
    const pump = () => {
      while (inFlight < CEILING_IN_FLIGHT && next < urls.length) {
        const url = new URL(urls[next++]!)
        inFlight++
        agent.dispatch({ origin: url.origin, path: url.pathname + url.search, method: "POST", headers, body }, new Exchange((error) => {
          inFlight--
          if (error !== null) {
            failures++
            firstFailure ??= error
          }
          if (next < urls.length) pump()
          else if (inFlight === 0) resolve()
        }))
      }
    }
    pump()
  })
  await agent.close()
  return { startMs, failures, firstFailure }
}

const runSender = () => {
  process.on("message", (message: ToSender) => {
    send(message.urls, message.body).then((result) =>
      process.send!({ type: "sent", ...result, peakRssKiB: peakRssKiB("self") } satisfies FromSender, () => process.exit(0))
    )
  })
  process.on("disconnect", () => process.exit(1)) // the parent is gone
}

// ---------------------------------------------------------------------------------------------------------
// Parent side

/** Sends n requests to the sink from a fresh child process; the sink's arrivals give the rate. */
export const runDeliveryCeiling = async (sink: Sink, n: number): Promise<DeliveryCeilingMetrics> => {
  const run = crypto.randomBytes(4).toString("hex")
  await sink.expect(run, n)
  const urls = Array.from({ length: n }, (_, i) => sink.url(run, i))
  const child = trackChild(fork(new URL(import.meta.url).pathname, [], {
    execPath: process.execPath,
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  }))
  try {
    const answer = new Promise<Extract<FromSender, { type: "sent" }>>((resolve, reject) => {
      child.once("message", resolve)
      child.once("exit", (code) => reject(new Error(`the undici sender exited (${code}) before it was done`)))
    })
    child.send({ type: "send", urls, body: JSON.stringify({ n: 0 }) } satisfies ToSender)
    const sent = await answer
    await sink.waitComplete(Date.now() + 10_000)
    const { arrivals } = await sink.collect()
    let first = Number.POSITIVE_INFINITY
    let last = Number.NEGATIVE_INFINITY
    let arrived = 0
    for (const at of arrivals) {
      if (Number.isNaN(at)) continue
      arrived++
      first = Math.min(first, at)
      last = Math.max(last, at)
    }
    const round = (x: number) => Math.round(x * 10) / 10
    return {
      n,
      arrived,
      missing: n - arrived,
      failures: sent.failures,
      firstFailure: sent.firstFailure,
      firstArrivalMs: round(first - sent.startMs),
      lastArrivalMs: round(last - sent.startMs),
      ratePerS: Math.round(arrived / ((last - sent.startMs) / 1000)),
      peakRssMiB: round(sent.peakRssKiB / 1024)
    }
  } finally {
    await waitForExit(child, 5_000)
  }
}

if (import.meta.main) runSender()
