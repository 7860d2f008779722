// What `npm start` logs (child processes, bounded times). LOG_FORMAT=json: every line the service
// writes is one JSON object with timestamp, level, message and this node's id, and each event of an
// operator's interest is there with its fields — the start, the shards taken, a recovery of a trigger
// left running by a node that is gone, a dead letter, the stop and the shards released on it.
// By default the same events are human-readable logfmt lines.
import { assert, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import * as fs from "node:fs"
import { request } from "undici"
import { programLines, runCli, type RunningService, startService } from "../support/cli.ts"
import { freshDatabaseUrl, makeTempDir } from "../support/database.ts"
import { ensureProject, insertTrigger, projectIdOfKey } from "../support/fixtures.ts"
import { insecureAgent } from "../support/server.ts"
import { target } from "../support/target.ts"
import { waitUntilAsync } from "../support/wait.ts"

const SHARDS = 8

/** The lines the service wrote: npm's own (its `> script` banners, warnings) left out. */
const serviceLines = (output: string) => programLines(output).filter((line) => !line.startsWith("> "))

type Entry = Record<string, unknown> & { readonly event?: string }

const jsonEntries = (output: string): Array<Entry> =>
  serviceLines(output).map((line) => {
    try {
      return JSON.parse(line) as Entry
    } catch {
      return assert.fail(`not a JSON line: ${line}`)
    }
  })

describe("npm start with LOG_FORMAT=json", () => {
  it("writes one JSON object per line, with the node id, for start, shard moves, recoveries, dead letters and stop", { timeout: 180_000 }, async () => {
    const scope = Effect.runSync(Scope.make())
    const dataDir = makeTempDir("json-logs")
    let service: RunningService | undefined
    try {
      const databaseUrl = await Effect.runPromise(Scope.provide(scope)(freshDatabaseUrl))
      const recorder = await Effect.runPromise(Scope.provide(scope)(target))
      recorder.reply("/fail", { status: 500 })
      service = await startService({
        DATABASE_URL: databaseUrl, DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", SHARDS: String(SHARDS), LOG_FORMAT: "json"
      })
      const running = service
      const created = await runCli(["project", "create", "logs"], { env: { DATABASE_URL: databaseUrl } })
      assert.strictEqual(created.code, 0, created.stderr)
      const key = (await runCli(["key", "create", "logs"], { env: { DATABASE_URL: databaseUrl } })).stdout.trim()

      // a trigger left `running` by a node that is gone: the owner of its shard recovers it
      const left = await Effect.runPromise(Effect.gen(function*() {
        const projectId = yield* projectIdOfKey(key)
        yield* ensureProject(projectId)
        return yield* insertTrigger({
          projectId, shard: 3, status: "running", claimedBy: "gone-node", attempts: 1,
          scheduledAt: new Date(Date.now() - 60_000), dueAt: new Date(Date.now() - 60_000), url: `${recorder.origin}/left`
        })
      }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 1 }))))

      // one attempt only, answered 500: a dead letter
      const response = await request(`${running.baseUrl}/schedule`, {
        method: "POST",
        dispatcher: insecureAgent,
        headers: { "ttr-api-key": key, "ttr-url": `${recorder.origin}/fail`, "ttr-scheduled-at": "now", "ttr-retry-strategy": "none" }
      })
      assert.strictEqual(response.statusCode, 200)
      const failed = (await response.body.json() as { triggerId: string }).triggerId

      const events = () => jsonEntries(running.output()).map((entry) => entry.event)
      // the recovery is logged when the trigger is taken back; its delivery arrives a moment later
      await waitUntilAsync(() => events().includes("dead_letter") && events().includes("recovered") && recorder.at("/left").length > 0, 60_000,
        `the dead letter, the recovery and the recovered delivery\n${running.output()}`)
      assert.strictEqual(recorder.at("/left").length, 1)
      assert.strictEqual(await running.stop(), 0)

      const entries = jsonEntries(running.output())
      const nodes = new Set(entries.map((entry) => entry.node))
      assert.strictEqual(nodes.size, 1, `one node id on every line: ${[...nodes].join(", ")}`)
      assert.match(String([...nodes][0]), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      for (const entry of entries) {
        assert.match(String(entry.timestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        assert.include(["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"], entry.level)
        assert.isString(entry.message)
      }
      const byEvent = (event: string) => entries.filter((entry) => entry.event === event)

      const [start] = byEvent("start")
      assert.strictEqual(start!.message, `timewheel listening on https://127.0.0.1:${running.port}`)
      assert.strictEqual(start!.port, running.port)

      const taken = byEvent("shards_taken")
      assert.deepStrictEqual(taken.flatMap((entry) => entry.shards as Array<number>).sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7])
      assert.strictEqual(taken[taken.length - 1]!.owned, SHARDS)

      assert.deepStrictEqual(
        byEvent("recovered").map(({ level, shard, triggers }) => ({ level, shard, triggers })),
        [{ level: "INFO", shard: 3, triggers: 1 }]
      )
      assert.deepStrictEqual(
        byEvent("dead_letter").map(({ level, triggerId, attempt, httpStatus, errorKind }) => ({ level, triggerId, attempt, httpStatus, errorKind })),
        [{ level: "WARN", triggerId: failed, attempt: 1, httpStatus: 500, errorKind: null }]
      )
      assert.notInclude(byEvent("dead_letter").map((entry) => entry.triggerId), left)

      // the stop: announced, the shards released, then the last line
      const order = entries.map((entry) => entry.event)
      const stop = order.indexOf("stop")
      assert.isAbove(stop, order.indexOf("start"))
      const released = byEvent("shards_released")
      assert.deepStrictEqual(released[released.length - 1]!.shards, [0, 1, 2, 3, 4, 5, 6, 7])
      assert.isAbove(order.lastIndexOf("shards_released"), stop)
      assert.strictEqual(order[order.length - 1], "stopped")
    } finally {
      service?.kill()
      await Effect.runPromise(Scope.close(scope, Exit.void))
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe("npm start with the default LOG_FORMAT", () => {
  it("writes the same events as human-readable logfmt lines", { timeout: 120_000 }, async () => {
    const dataDir = makeTempDir("text-logs")
    let service: RunningService | undefined
    try {
      service = await startService({
        DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", SHARDS: String(SHARDS),
        // tracing on, toward a closed loopback port (nothing is traced here: no request is made)
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://user:s3cret@127.0.0.1:9", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_HEADERS: "x-key=s3cret"
      })
      const running = service
      await waitUntilAsync(() => running.output().includes("event=shards_taken"), 30_000, `the shards taken\n${running.output()}`)
      assert.strictEqual(await running.stop(), 0)
      const lines = serviceLines(running.output()).filter((line) => line.includes(" level="))
      for (const line of lines) assert.match(line, /^timestamp=\S+ level=[A-Z]+ fiber=#\d+ message=/)
      assert.isTrue(lines.some((line) => line.includes(`message="timewheel listening on https://127.0.0.1:${running.port}"`)))
      // tracing on: the start log says so, and where the spans go (never the export headers)
      assert.isTrue(lines.some((line) => line.includes(`message="tracing on: spans exported to http://127.0.0.1:9/v1/traces (OTLP http/json) as service timewheel"`)), lines.join("\n"))
      assert.isFalse(running.output().includes("s3cret"))
      assert.isTrue(lines.some((line) => line.includes(`message="took ${SHARDS} shards (owns ${SHARDS} of ${SHARDS}, 1 node present)"`)))
      assert.isTrue(lines.some((line) => line.includes(`message="timewheel stopped"`)))
      assert.isFalse(lines.some((line) => line.startsWith("{")))
    } finally {
      service?.kill()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
