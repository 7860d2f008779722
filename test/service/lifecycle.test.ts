// `npm start` as an operator runs it (child processes, bounded times): a fresh embedded DATA_DIR,
// a key made with the CLI, HTTPS, graceful SIGTERM that also stops the embedded PostgreSQL, and a
// restart on the same DATA_DIR that keeps the data and the generated certificate. Then two
// processes started at once on one database (a cluster's first start: migrations serialise).
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { request } from "undici"
import {
  type ChildEnv,
  type CliResult,
  postgresProcessesOf,
  type RunningService,
  runCli,
  startService
} from "../support/cli.ts"
import { freshDatabaseUrl, makeTempDir } from "../support/database.ts"
import { insecureAgent } from "../support/server.ts"

const output = (result: CliResult): string => {
  assert.deepStrictEqual({ code: result.code, stderr: result.stderr }, { code: 0, stderr: "" })
  return result.stdout.trim()
}

const health = async (service: RunningService, key: string | undefined) => {
  const response = await request(`${service.baseUrl}/health`, {
    dispatcher: insecureAgent,
    headers: key === undefined ? {} : { "ttr-api-key": key }
  })
  return { status: response.statusCode, body: await response.body.json() as Record<string, unknown> }
}

/** The generated certificate and key, with their modification times. */
const tlsFiles = (dataDir: string) =>
  Object.fromEntries(["cert.pem", "key.pem"].map((name) => {
    const file = path.join(dataDir, "tls", name)
    return [name, { content: fs.readFileSync(file, "utf8"), mtimeMs: fs.statSync(file).mtimeMs }]
  }))

/** After a graceful stop: exited by itself (not killed), and its embedded PostgreSQL is gone. */
const assertStopped = (code: number | null, dataDir: string) => {
  // a graceful shutdown (SIGTERM) exits with code 0 (src/main.ts maps the interrupt to success)
  assert.strictEqual(code, 0)
  assert.deepStrictEqual(postgresProcessesOf(dataDir), [])
  assert.isFalse(fs.existsSync(path.join(dataDir, "pg", "postmaster.pid")))
}

describe("npm start on an embedded DATA_DIR", () => {
  it("serves a CLI-made key over HTTPS, stops PostgreSQL on SIGTERM, and restarts on the same DATA_DIR with the same key and certificate", { timeout: 240_000 }, async () => {
    const dataDir = makeTempDir("lifecycle")
    const env = { DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", SHARDS: "8" }
    const services: Array<RunningService> = []
    try {
      const first = await startService(env)
      services.push(first)
      assert.isTrue(fs.existsSync(path.join(dataDir, "pg", "PG_VERSION")))
      assert.strictEqual(postgresProcessesOf(dataDir).length, 1)

      output(await runCli(["project", "create", "lifecycle"], { env: { DATA_DIR: dataDir } }))
      const key = output(await runCli(["key", "create", "lifecycle"], { env: { DATA_DIR: dataDir } }))
      const authenticated = await health(first, key)
      assert.strictEqual(authenticated.status, 200)
      assert.strictEqual(authenticated.body.status, "ok")
      assert.deepStrictEqual(await health(first, undefined), { status: 401, body: { _tag: "Unauthorized", message: "Unauthorized" } })
      const certificate = tlsFiles(dataDir)
      assert.include(certificate["cert.pem"]!.content, "-----BEGIN CERTIFICATE-----")

      assertStopped(await first.stop(), dataDir)

      const second = await startService(env)
      services.push(second)
      assert.deepStrictEqual((await health(second, key)).status, 200)
      assert.deepStrictEqual(tlsFiles(dataDir), certificate)
      assertStopped(await second.stop(), dataDir)

      console.log(
        `startup of npm start (spawn → "listening"): fresh DATA_DIR ${Math.round(first.startupMs)} ms, ` +
          `existing DATA_DIR ${Math.round(second.startupMs)} ms`
      )
    } finally {
      for (const service of services) service.kill()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe("two npm start processes at once on one database", () => {
  it("both start and serve the same data", { timeout: 240_000 }, async () => {
    const scope = Effect.runSync(Scope.make())
    const dirs = [makeTempDir("pair-a"), makeTempDir("pair-b")]
    const services: Array<RunningService> = []
    try {
      // On DATABASE_URL's server: a fresh database, each process with its own DATA_DIR (certificate).
      // Embedded: both on one DATA_DIR; one starts its PostgreSQL, the other joins that server.
      const serverUrl = process.env.DATABASE_URL
      const shared: ChildEnv = serverUrl !== undefined && serverUrl !== ""
        ? { DATABASE_URL: await Effect.runPromise(Scope.provide(scope)(freshDatabaseUrl)) }
        : { DATA_DIR: dirs[0]! }
      const envs = dirs.map((dir) => ({ DATA_DIR: dir, ...shared, PORT: "0", HOST: "127.0.0.1", SHARDS: "8" }))

      const started = await Promise.allSettled(envs.map((env) => startService(env)))
      for (const result of started) if (result.status === "fulfilled") services.push(result.value)
      for (const result of started) if (result.status === "rejected") throw result.reason
      assert.strictEqual(services.length, 2)
      assert.notStrictEqual(services[0]!.port, services[1]!.port)

      output(await runCli(["project", "create", "pair"], { env: shared }))
      const key = output(await runCli(["key", "create", "pair"], { env: shared }))
      for (const service of services) assert.strictEqual((await health(service, key)).status, 200)

      const codes = await Promise.all(services.map((service) => service.stop()))
      for (const code of codes) assert.strictEqual(code, 0)
      for (const dir of dirs) assert.deepStrictEqual(postgresProcessesOf(dir), [])
    } finally {
      for (const service of services) service.kill()
      await Effect.runPromise(Scope.close(scope, Exit.void))
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
