// `npm run cluster` as an operator runs it (a child process group, bounded times): three nodes on one
// database (the cluster's own embedded PostgreSQL, or a fresh database on DATABASE_URL's server), a
// project and key made with the CLI, each node taking shards and ready on its own ops listener, one
// trigger scheduled through each node and delivered, then a terminal's Ctrl-C (SIGINT to the whole process group): every node drains and exits, then the
// database, and npm exits with code 0.
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { request } from "undici"
import { childEnv, type ChildEnv, postgresProcessesOf, REPO_ROOT, runCli } from "../support/cli.ts"
import { freshDatabaseUrl, makeTempDir } from "../support/database.ts"
import { insecureAgent } from "../support/server.ts"
import { target } from "../support/target.ts"
import { waitUntilAsync } from "../support/wait.ts"

const NODES = 3
const NODE_LINE = /^cluster: {3}(node-\d+) {2}(https:\/\/\S+) {2}\(ops (http:\/\/\S+)\)$/gm

describe("npm run cluster", () => {
  it("starts three nodes on one database, delivers what each one schedules, and stops them all on Ctrl-C", { timeout: 240_000 }, async () => {
    const scope = Effect.runSync(Scope.make())
    const dataDir = makeTempDir("cluster")
    let groupId: number | undefined
    try {
      const serverUrl = process.env.DATABASE_URL
      const database: ChildEnv = serverUrl !== undefined && serverUrl !== ""
        ? { DATABASE_URL: await Effect.runPromise(Scope.provide(scope)(freshDatabaseUrl)) }
        : {}
      const child = spawn("npm", ["run", "cluster", "--", "--nodes", String(NODES), "--port", "0", "--data-dir", dataDir], {
        cwd: REPO_ROOT,
        env: childEnv({ ...database, SHARDS: "8", LOG_LEVEL: "info" }),
        stdio: ["ignore", "pipe", "pipe"],
        detached: true // a process group of its own, as a terminal's foreground job
      })
      groupId = child.pid!
      let output = ""
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
      let exitCode: number | null | undefined
      child.on("exit", (code) => (exitCode = code))

      await waitUntilAsync(() => output.includes("cluster: Ctrl-C stops every node") || exitCode !== undefined, 180_000, `the cluster to start\n${output}`)
      const nodes = [...output.matchAll(NODE_LINE)].map((match) => ({ name: match[1]!, origin: match[2]!, ops: match[3]! }))
      assert.deepStrictEqual(nodes.map((node) => node.name), ["node-1", "node-2", "node-3"], output)
      assert.strictEqual(new Set(nodes.map((node) => node.origin)).size, NODES)
      assert.strictEqual(new Set(nodes.map((node) => node.ops)).size, NODES)

      // the shards spread over the nodes (each logs the shards it takes), and each node gets ready
      await waitUntilAsync(
        () => nodes.every((node) => output.split("\n").some((line) => line.startsWith(`${node.name} `) && line.includes("event=shards_taken"))),
        30_000,
        `every node to take shards\n${output}`
      )
      for (const node of nodes) {
        const ready = await request(`${node.ops}/readyz`)
        assert.strictEqual(ready.statusCode, 200, `${node.name}: ${await ready.body.text()}`)
        await ready.body.dump()
      }

      // the CLI on the same database: the cluster's data directory (embedded), or DATABASE_URL
      const cli: ChildEnv = database.DATABASE_URL === undefined ? { DATA_DIR: dataDir } : database
      const created = await runCli(["project", "create", "cluster"], { env: cli })
      assert.strictEqual(created.code, 0, created.stderr)
      const keyed = await runCli(["key", "create", "cluster"], { env: cli })
      assert.strictEqual(keyed.code, 0, keyed.stderr)
      const key = keyed.stdout.trim()

      const recorder = await Effect.runPromise(Scope.provide(scope)(target))
      for (const node of nodes) {
        const response = await request(`${node.origin}/schedule`, {
          method: "POST",
          dispatcher: insecureAgent,
          headers: {
            "ttr-api-key": key,
            "ttr-url": `${recorder.origin}/${node.name}`,
            "ttr-scheduled-at": "now",
            "content-type": "text/plain"
          },
          body: `through ${node.name}`
        })
        assert.strictEqual(response.statusCode, 200, await response.body.text())
        await response.body.dump()
      }
      await waitUntilAsync(() => nodes.every((node) => recorder.at(`/${node.name}`).length > 0), 30_000, "a delivery of each node's trigger")
      for (const node of nodes) {
        assert.deepStrictEqual(recorder.at(`/${node.name}`).map((arrival) => arrival.body.toString()), [`through ${node.name}`])
      }

      // Ctrl-C in a terminal: SIGINT to every process of the foreground group
      process.kill(-groupId, "SIGINT")
      await waitUntilAsync(() => exitCode !== undefined, 90_000, `npm run cluster to exit after SIGINT\n${output}`)
      assert.strictEqual(exitCode, 0, output)
      assert.include(output, "cluster: stopped")
      assert.notInclude(output, "did not exit cleanly")
      await waitUntilAsync(() => postgresProcessesOf(dataDir).length === 0, 30_000, "the cluster's PostgreSQL to stop")
    } finally {
      if (groupId !== undefined) {
        try {
          process.kill(-groupId, "SIGKILL")
        } catch {
          // already gone
        }
      }
      await Effect.runPromise(Scope.close(scope, Exit.void))
      for (const pid of postgresProcessesOf(dataDir)) process.kill(pid, "SIGKILL")
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
