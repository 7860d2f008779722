// A node killed with SIGKILL while it holds deliveries it fired (two `npm start` nodes on one
// database, a target that never answers): the other node takes its shards at its next turn (every
// second) and, seeing the killed node's presence lock gone with its session, logs each attempt it
// had made as interrupted and sends the trigger again at once — it does not take the killed node
// for alive because the list of live nodes it read up to a second earlier still named it, which
// left those triggers to crash recovery, seconds later (docs/cluster.md).
import { Effect, Exit, Scope } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { request } from "undici"
import { afterAll, describe, expect, it } from "vitest"
import { runQuery } from "../../scripts/chaos/postgres.ts"
import { runCli, type RunningService, startService } from "../support/cli.ts"
import { freshDatabaseUrl, makeTempDir } from "../support/database.ts"
import { insecureAgent } from "../support/server.ts"
import { waitUntilAsync } from "../support/wait.ts"

const TRIGGERS = 60

/** The `took_over` log lines of a node's JSON output, from character `from` on. */
const takeovers = (service: RunningService, from: number) =>
  service.output().slice(from).split("\n").flatMap((line) => {
    if (!line.includes('"took_over"')) return []
    const entry = JSON.parse(line) as { triggers: number; alive: boolean }
    return [{ triggers: entry.triggers, alive: entry.alive }]
  })

describe("a killed node's shards", () => {
  const scope = Effect.runSync(Scope.make())
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  it("are taken over within about a second of the kill, and its fired triggers sent again at once", async () => {
    const databaseUrl = await Effect.runPromise(Scope.provide(freshDatabaseUrl, scope))
    const env = { DATABASE_URL: databaseUrl, DATA_DIR: makeTempDir("killed"), PORT: "0", HOST: "127.0.0.1", SHARDS: "16", LOG_FORMAT: "json" }

    // the target never answers; it records when each trigger's request arrived, every time
    const arrivals = new Map<number, Array<number>>()
    const open: Array<http.ServerResponse> = []
    const target = http.createServer((req, res) => {
      const n = Number(new URL(req.url!, "http://x").searchParams.get("n"))
      arrivals.set(n, [...(arrivals.get(n) ?? []), Date.now()])
      open.push(res)
    })
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve))
    const targetPort = (target.address() as AddressInfo).port

    const victim = await startService(env)
    let survivor: RunningService | undefined
    try {
      expect((await runCli(["project", "create", "killed"], { env })).code).toBe(0)
      const key = (await runCli(["key", "create", "killed"], { env })).stdout.trim()
      survivor = await startService(env)
      // the victim gives the newcomer its share of the shards
      await waitUntilAsync(() => victim.output().includes('"shards_released"'), 20_000, "the first node to share its shards")
      const dueMs = Date.now() + 2_000
      for (let n = 0; n < TRIGGERS; n++) {
        const response = await request(`${victim.baseUrl}/schedule`, {
          method: "POST",
          dispatcher: insecureAgent,
          headers: { "ttr-api-key": key, "ttr-url": `http://127.0.0.1:${targetPort}/hit?n=${n}`, "ttr-scheduled-at": new Date(dueMs + n * 5).toISOString() }
        })
        expect(response.statusCode).toBe(200)
        await response.body.text()
      }
      await waitUntilAsync(() => arrivals.size === TRIGGERS, 20_000, "every trigger to reach the target")

      // the victim's: the triggers of the shards whose mark it moved
      const victimNode = (JSON.parse(victim.output().split("\n").find((line) => line.startsWith("{"))!) as { node: string }).node
      const rows = await runQuery<{ url: string; node: string }>(databaseUrl,
        "SELECT t.url, m.node FROM triggers t JOIN shard_marks m ON m.shard = t.shard")
      const victims = rows.filter((row) => row.node === victimNode).map((row) => Number(new URL(row.url).searchParams.get("n")))
      expect(victims.length).toBeGreaterThan(0)

      // for 10 s after the database starts every previous holder counts as alive (docs/cluster.md: its
      // nodes may not have reconnected yet); this test's embedded server may be younger: wait past that
      const upMs = (await runQuery<{ up_ms: number }>(databaseUrl,
        "SELECT (extract(epoch FROM now() - pg_postmaster_start_time()) * 1000)::int AS up_ms"))[0]!.up_ms
      if (upMs < 11_000) await new Promise((resolve) => setTimeout(resolve, 11_000 - upMs))
      const killedAt = Date.now()
      const survivorOutputAtKill = survivor.output().length
      process.kill(victim.servicePid, "SIGKILL")
      await waitUntilAsync(() => victims.every((n) => arrivals.get(n)!.length >= 2), 15_000, "the killed node's triggers to be sent again")
      const resentAfterMs = Math.max(...victims.map((n) => arrivals.get(n)![1]! - killedAt))

      const seen = takeovers(survivor, survivorOutputAtKill).filter((entry) => entry.triggers > 0)
      expect(seen.length).toBeGreaterThan(0)
      expect(seen.filter((entry) => entry.alive), "no takeover took the killed node for alive").toEqual([])
      expect(seen.reduce((sum, entry) => sum + entry.triggers, 0)).toBe(victims.length)
      // the survivor's next turn comes within a second of the kill; crash recovery would take up to 5 s more
      expect(resentAfterMs).toBeLessThan(2_500)
      // nothing of the survivor's own was sent twice
      expect([...arrivals].filter(([n, times]) => !victims.includes(n) && times.length > 1)).toEqual([])
    } finally {
      victim.kill()
      for (const res of open) res.destroy()
      await survivor?.stop().catch(() => survivor?.kill())
      target.close()
    }
  }, 180_000)
})
