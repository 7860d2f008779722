// `npm start` as an operator runs it (child processes, bounded times): a fresh embedded DATA_DIR,
// a key made with the CLI, HTTPS, graceful SIGTERM that also stops the embedded PostgreSQL, and a
// restart on the same DATA_DIR that keeps the data and the generated certificate. Ctrl-C at the
// terminal of npm start (SIGINT to its whole process group, npm and the embedded PostgreSQL
// included): the node drains, records the delivery in flight, and only then stops the database — no
// FATAL line, no error. Then two processes started at once on one database (a cluster's first
// start: migrations serialise).
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { request } from "undici"
import {
  type ChildEnv,
  type CliResult,
  postgresProcessesOf,
  programLines,
  type RunningService,
  runChild,
  runCli,
  startService
} from "../support/cli.ts"
import { freshDatabaseUrl, makeTempDir } from "../support/database.ts"
import { insecureAgent } from "../support/server.ts"
import { waitUntilAsync } from "../support/wait.ts"

/** The messages of the lines npm start logs after listening (event next_step), in order. */
const nextSteps = (log: string): Array<string> =>
  log.split("\n").filter((line) => line.includes("event=next_step")).map((line) => /message="((?:[^"\\]|\\.)*)"/.exec(line)![1]!)

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
      // a newcomer is told where the dashboard is and the one command for each missing thing
      await waitUntilAsync(() => first.output().includes("admin create"), 10_000, "the next steps")
      assert.deepStrictEqual(nextSteps(first.output()), [
        `dashboard: https://127.0.0.1:${first.port}/dashboard/ (the certificate is self-signed unless TLS_CERT_FILE is set: the browser asks to trust it once)`,
        "next: create a project: npm run --silent cli -- project create my-project",
        "next: create an API key: npm run --silent cli -- key create my-project",
        "next: create a dashboard administrator: npm run --silent cli -- admin create you@example.com"
      ])

      // a second npm start here ends with one line saying what to do, and leaves the first alone
      const second = await runChild("npm", ["start"], { env: { ...env, PORT: String(first.port) }, timeoutMs: 60_000 })
      assert.strictEqual(second.code, 1, second.stdout + second.stderr)
      assert.deepStrictEqual(programLines(second.stderr), [
        `timewheel: cannot listen on 127.0.0.1:${first.port}: the address is in use (is timewheel already running here? stop it, or start this one with another PORT)`
      ])
      assert.deepStrictEqual(second.stdout.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("> ")), [], "nothing else is printed")

      output(await runCli(["project", "create", "lifecycle"], { env: { DATA_DIR: dataDir } }))
      const key = output(await runCli(["key", "create", "lifecycle"], { env: { DATA_DIR: dataDir } }))
      const authenticated = await health(first, key)
      assert.strictEqual(authenticated.status, 200)
      assert.strictEqual(authenticated.body.status, "ok")
      assert.deepStrictEqual(await health(first, undefined), { status: 401, body: { _tag: "Unauthorized", message: "Unauthorized" } })
      const certificate = tlsFiles(dataDir)
      assert.include(certificate["cert.pem"]!.content, "-----BEGIN CERTIFICATE-----")

      assertStopped(await first.stop(), dataDir)

      const restarted = await startService(env)
      services.push(restarted)
      assert.deepStrictEqual((await health(restarted, key)).status, 200)
      assert.deepStrictEqual(tlsFiles(dataDir), certificate)
      // a project and a key exist now: only the administrator is left to make
      await waitUntilAsync(() => restarted.output().includes("admin create"), 10_000, "the next steps")
      assert.deepStrictEqual(nextSteps(restarted.output()).slice(1), [
        "next: create a dashboard administrator: npm run --silent cli -- admin create you@example.com"
      ])
      assertStopped(await restarted.stop(), dataDir)

      console.log(
        `startup of npm start (spawn → "listening"): fresh DATA_DIR ${Math.round(first.startupMs)} ms, ` +
          `existing DATA_DIR ${Math.round(restarted.startupMs)} ms`
      )
    } finally {
      for (const service of services) service.kill()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe("Ctrl-C at the terminal of npm start on an embedded DATA_DIR", () => {
  it("drains the node first (the delivery in flight recorded), then stops PostgreSQL: no FATAL line, no error, exit 0", { timeout: 240_000 }, async () => {
    const dataDir = makeTempDir("ctrl-c")
    const env = { DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", SHARDS: "8", OPS_PORT: "off" }
    const services: Array<RunningService> = []
    // a target that answers 1.5 s after a request arrives: the delivery is in flight at the Ctrl-C
    let arrived = 0
    const target = http.createServer((request, response) => {
      arrived++
      request.resume()
      setTimeout(() => response.end("late but fine"), 1_500)
    })
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve))
    const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/slow`
    try {
      const service = await startService(env)
      services.push(service)
      output(await runCli(["project", "create", "ctrl-c"], { env: { DATA_DIR: dataDir } }))
      const key = output(await runCli(["key", "create", "ctrl-c"], { env: { DATA_DIR: dataDir } }))
      const scheduled = await request(`${service.baseUrl}/schedule`, {
        method: "POST",
        dispatcher: insecureAgent,
        headers: { "ttr-api-key": key, "ttr-url": targetUrl, "ttr-scheduled-at": "now" }
      })
      assert.strictEqual(scheduled.statusCode, 200)
      const { triggerId } = await scheduled.body.json() as { triggerId: string }
      await waitUntilAsync(() => arrived === 1, 30_000, "the delivery to reach the target")

      // Ctrl-C: the terminal sends SIGINT to every process of the foreground group
      process.kill(-service.npmPid, "SIGINT")
      const code = await service.exited(60_000)
      assertStopped(code, dataDir)
      const log = service.output()
      const lines = log.split("\n")
      assert.deepStrictEqual(lines.filter((line) => /FATAL|PANIC|level=ERROR|level=WARN/.test(line)), [], log)
      assert.isTrue(lines.some((line) => /event=stop$/.test(line)), log)
      assert.match(lines.filter((line) => line.trim() !== "").at(-1)!, /event=stopped/, log)

      // the attempt in flight was finished and recorded before the database stopped
      const restarted = await startService(env)
      services.push(restarted)
      const job = await request(`${restarted.baseUrl}/jobs/${triggerId}`, { dispatcher: insecureAgent, headers: { "ttr-api-key": key } })
      const view = await job.body.json() as { status: string; outcome: string; attempts: number }
      assert.deepStrictEqual([view.status, view.outcome, view.attempts], ["completed", "delivered", 1])
      assert.strictEqual(arrived, 1, "sent once")
      assertStopped(await restarted.stop(), dataDir)
    } finally {
      for (const service of services) service.kill()
      target.close()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe("a start that cannot succeed", () => {
  it("ends with one line on stderr saying what to do, exit 1: a database that cannot be reached", { timeout: 120_000 }, async () => {
    const dataDir = makeTempDir("unreachable")
    try {
      const result = await runChild("npm", ["start"], {
        env: { DATA_DIR: dataDir, PORT: "0", HOST: "127.0.0.1", OPS_PORT: "off", DATABASE_URL: "postgres://postgres:secret@127.0.0.1:1/none" },
        timeoutMs: 60_000
      })
      assert.strictEqual(result.code, 1, result.stdout + result.stderr)
      assert.deepStrictEqual(programLines(result.stderr), [
        "timewheel: cannot use DATABASE_URL postgres://postgres@127.0.0.1:1/none: connect ECONNREFUSED 127.0.0.1:1"
      ])
      assert.deepStrictEqual(result.stdout.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("> ")), [])
    } finally {
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
