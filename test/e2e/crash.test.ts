// Crash safety (issue: "a process killed with SIGKILL while triggers are queued or running loses
// none of them"): a real `npm start` child delivers to a target that never answers, is killed with
// SIGKILL mid-delivery, and a second start on the same database delivers every trigger (again).
import { Effect, Exit, Scope } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { request } from "undici"
import { afterAll, describe, expect, it } from "vitest"
import { freshDatabaseUrl, makeTempDir } from "../support/database.ts"
import { runCli, startService, waitUntil } from "../support/cli.ts"
import { insecureAgent } from "../support/server.ts"

const TRIGGERS = 20

describe("crash safety", () => {
  const scope = Effect.runSync(Scope.make())
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  it("delivers every trigger that was running when the process was killed", async () => {
    const databaseUrl = await Effect.runPromise(Scope.provide(freshDatabaseUrl, scope))
    const env = { DATABASE_URL: databaseUrl, DATA_DIR: makeTempDir("crash"), PORT: "0", HOST: "127.0.0.1", SHARDS: "4" }

    // the target hangs while `answering` is false, then answers 200; it records ids that got a 200
    let answering = false
    const received = new Set<string>()
    const delivered = new Set<string>()
    const hanging: Array<http.ServerResponse> = []
    const target = http.createServer((req, res) => {
      const id = new URL(req.url!, "http://x").searchParams.get("n")!
      received.add(id)
      if (!answering) return void hanging.push(res)
      delivered.add(id)
      res.end("ok")
    })
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve))
    const targetPort = (target.address() as AddressInfo).port

    const first = await startService(env)
    try {
      expect((await runCli(["project", "create", "crash"], { env })).code).toBe(0)
      const key = (await runCli(["key", "create", "crash"], { env })).stdout.trim()
      for (let n = 0; n < TRIGGERS; n++) {
        const response = await request(`${first.baseUrl}/schedule`, {
          method: "POST",
          dispatcher: insecureAgent,
          headers: { "ttr-api-key": key, "ttr-url": `http://127.0.0.1:${targetPort}/hit?n=${n}`, "ttr-scheduled-at": "now" },
          body: "payload"
        })
        expect(response.statusCode).toBe(200)
        await response.body.text()
      }
      await waitUntil(() => received.size === TRIGGERS, 20_000, "every trigger to reach the hanging target")
      process.kill(first.servicePid, "SIGKILL")
    } finally {
      first.kill()
    }
    for (const res of hanging) res.destroy()
    expect(delivered.size).toBe(0)

    answering = true
    const second = await startService(env)
    try {
      await waitUntil(() => delivered.size === TRIGGERS, 30_000, "every trigger to be delivered after the restart")
      expect([...delivered].sort()).toEqual(Array.from({ length: TRIGGERS }, (_, n) => String(n)).sort())
    } finally {
      await second.stop().catch(() => second.kill())
      target.close()
    }
  }, 120_000)
})
