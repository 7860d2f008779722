// A graceful stop causes no duplicate (docs/cluster.md "On stop"): two real `npm start` nodes share one
// database and deliver to a target that takes 2 s to answer; one node is stopped with SIGTERM while it
// holds requests in flight. It stops claiming and hands its shards to the other node at once, but stays
// present until it has received and recorded every answer, so the other node never sends its in-flight
// requests again: each trigger arrives exactly once. And a stop while triggers come due every few
// milliseconds abandons none (docs/internals.md "The delivery engine", faults): what the stopping node
// fired it sends, what it did not it gives back at once.
import { Effect, Exit, Scope } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { request } from "undici"
import { afterAll, describe, expect, it } from "vitest"
import { runCli, startService } from "../support/cli.ts"
import { freshDatabaseUrl, makeTempDir } from "../support/database.ts"
import { insecureAgent } from "../support/server.ts"
import { target } from "../support/target.ts"
import { waitUntilAsync } from "../support/wait.ts"

const TRIGGERS = 120
const ANSWER_AFTER_MS = 2_000

describe("graceful stop with a slow target", () => {
  const scope = Effect.runSync(Scope.make())
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  it("SIGTERM to one of two nodes while it holds deliveries: every trigger arrives exactly once", async () => {
    const databaseUrl = await Effect.runPromise(Scope.provide(freshDatabaseUrl, scope))
    const env = (name: string) => ({
      DATABASE_URL: databaseUrl, DATA_DIR: makeTempDir(`stop-${name}`), PORT: "0", HOST: "127.0.0.1", SHARDS: "8"
    })

    const arrivals = new Map<string, number>()
    const answered = new Set<string>()
    const slow = http.createServer((req, res) => {
      const n = new URL(req.url!, "http://x").searchParams.get("n")!
      arrivals.set(n, (arrivals.get(n) ?? 0) + 1)
      setTimeout(() => {
        answered.add(n)
        res.end("ok")
      }, ANSWER_AFTER_MS)
    })
    await new Promise<void>((resolve) => slow.listen(0, "127.0.0.1", resolve))
    const targetPort = (slow.address() as AddressInfo).port

    const a = await startService(env("a"))
    const b = await startService(env("b"))
    try {
      expect((await runCli(["project", "create", "stop"], { env: env("cli") })).code).toBe(0)
      const key = (await runCli(["key", "create", "stop"], { env: env("cli") })).stdout.trim()
      // scheduled through both nodes, due once both own shards
      for (let n = 0; n < TRIGGERS; n++) {
        const node = n % 2 === 0 ? a : b
        const response = await request(`${node.baseUrl}/schedule`, {
          method: "POST",
          dispatcher: insecureAgent,
          headers: { "ttr-api-key": key, "ttr-url": `http://127.0.0.1:${targetPort}/hit?n=${n}`, "ttr-scheduled-at": "now | add 3s" },
          body: "payload"
        })
        expect(response.statusCode).toBe(200)
        await response.body.text()
      }
      // every request is at the target (and none answered yet): stop one node now
      await waitUntilAsync(() => arrivals.size === TRIGGERS, 20_000, "every trigger to reach the slow target")
      expect(answered.size).toBe(0)
      expect(await a.stop(30_000)).toBe(0)
      const draining = /draining: (\d+) deliveries in flight/.exec(a.output())
      expect(Number(draining?.[1] ?? 0)).toBeGreaterThan(0) // the stopped node did hold requests
      // it left only after its requests were answered
      await waitUntilAsync(() => answered.size === TRIGGERS, 20_000, "every request to be answered")
      // the other node had every chance to send something twice: recovery runs when it takes a shard
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      const twice = [...arrivals].filter(([, count]) => count > 1).map(([n]) => n)
      expect(twice).toEqual([])
      expect(arrivals.size).toBe(TRIGGERS)
    } finally {
      a.kill()
      await b.stop().catch(() => b.kill())
      slow.close()
    }
  }, 180_000)

  it("SIGTERM while triggers come due every few ms: none is abandoned, each arrives once, none logged as interrupted", async () => {
    const databaseUrl = await Effect.runPromise(Scope.provide(freshDatabaseUrl, scope))
    const env = (name: string) => ({
      DATABASE_URL: databaseUrl, DATA_DIR: makeTempDir(`stop-due-${name}`), PORT: "0", HOST: "127.0.0.1", SHARDS: "8"
    })
    const due = new Map<string, number>()
    const hooks = await Effect.runPromise(Scope.provide(target, scope))
    /** The arrival times of each trigger (by its `n`). */
    const arrivals = () => new Map([...Map.groupBy(hooks.at("/hit"), (arrival) => new URL(arrival.url, "http://x").searchParams.get("n")!)]
      .map(([n, list]) => [n, list.map((arrival) => arrival.arrivedAtMs)]))

    const a = await startService(env("a"))
    const b = await startService(env("b"))
    try {
      expect((await runCli(["project", "create", "stop-due"], { env: env("cli") })).code).toBe(0)
      const key = (await runCli(["key", "create", "stop-due"], { env: env("cli") })).stdout.trim()
      // 200 triggers, one every 5 ms over a second starting 4 s from now; the signal comes half way
      const firstAtMs = Date.now() + 4_000
      for (let n = 0; n < 200; n++) {
        const atMs = firstAtMs + n * 5
        due.set(String(n), atMs)
        const response = await request(`${b.baseUrl}/schedule`, {
          method: "POST",
          dispatcher: insecureAgent,
          headers: { "ttr-api-key": key, "ttr-url": `${hooks.origin}/hit?n=${n}`, "ttr-scheduled-at": new Date(atMs).toISOString() }
        })
        expect(response.statusCode).toBe(200)
        await response.body.text()
      }
      await new Promise((resolve) => setTimeout(resolve, firstAtMs + 500 - Date.now()))
      expect(await a.stop(30_000)).toBe(0)
      await waitUntilAsync(() => arrivals().size === 200, 20_000, "every trigger to arrive")
      await new Promise((resolve) => setTimeout(resolve, 1_000)) // a window of silence: nothing arrives a second time
      expect([...arrivals()].filter(([, at]) => at.length > 1).map(([n]) => n)).toEqual([])
      // given back at once and sent by the other node: late by its takeover, never by crash recovery's seconds
      const late = [...arrivals()].map(([n, [at]]) => at! - due.get(n)!)
      expect(Math.max(...late)).toBeLessThan(3_000)
      const logged = await request(`${b.baseUrl}/executions?limit=500`, { dispatcher: insecureAgent, headers: { "ttr-api-key": key } })
      const executions = ((await logged.body.json()) as { executions: Array<{ errorCode?: string }> }).executions
      expect(executions.length).toBe(200)
      expect(executions.filter((execution) => execution.errorCode === "INTERRUPTED")).toEqual([])
    } finally {
      a.kill()
      await b.stop().catch(() => b.kill())
    }
  }, 180_000)
})
