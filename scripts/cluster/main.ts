// `npm run cluster -- [--nodes 3] [--port 8443] [--data-dir ./data/cluster]`: the topology of
// docker-compose.yml as local processes: one PostgreSQL and N timewheel nodes (`node dist/main.js`,
// built first like `npm start`) sharing it. The database is DATABASE_URL when set, else a private
// embedded PostgreSQL in <data dir>/pg held by a detached helper (database.ts). Node i listens on
// --port + i - 1 (0: free ports) and its ops listener on OPS_PORT + i - 1 (default 9464; 0 and off
// as given), with its own DATA_DIR <data dir>/node-i for its certificate; every other setting comes
// from the environment. Prints each node's output prefixed with its name, then
// each node's URL once all listen. Ctrl-C (SIGINT) or SIGTERM stops every node (each drains, at most
// DRAIN_TIMEOUT_SECONDS), then the database; a second one kills them at once.
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import { ConfigError, loadConfig } from "../../src/config.ts"
import { serviceLaunch } from "../serviceLaunch.ts"

const REPO_ROOT = path.resolve(import.meta.dirname, "../..")

const USAGE = `usage: npm run cluster -- [--nodes N] [--port P] [--data-dir DIR]
  --nodes     timewheel processes, 1-8 (default 3)
  --port      HTTPS port of the first node; node i listens on P + i - 1; 0 picks free ports (default 8443)
  --data-dir  the embedded PostgreSQL (pg/) and each node's certificate (node-i/) (default ./data/cluster)
Settings (DATABASE_URL, SHARDS, LOG_LEVEL, LOG_FORMAT, …) come from the environment, as for npm start.`

const say = (line: string) => process.stdout.write(`${line}\n`)

const fail = (message: string): never => {
  process.stderr.write(`cluster: ${message}\n`)
  process.exit(1)
}

const parseOptions = (args: ReadonlyArray<string>) => {
  const options = { nodes: 3, port: 8443, dataDir: "./data/cluster" }
  for (let i = 0; i < args.length; i++) {
    const name = args[i]!
    if (name === "--help" || name === "-h") {
      say(USAGE)
      process.exit(0)
    }
    const value = args[++i]
    if (value === undefined) fail(`${name} needs a value\n${USAGE}`)
    const integer = (min: number, max: number) =>
      /^\d+$/.test(value!) && Number(value) >= min && Number(value) <= max ? Number(value) : fail(`${name} must be an integer from ${min} to ${max}, got "${value}"\n${USAGE}`)
    if (name === "--nodes") options.nodes = integer(1, 8)
    else if (name === "--port") options.port = integer(0, 65535)
    else if (name === "--data-dir") options.dataDir = value!
    else fail(`unknown option ${name}\n${USAGE}`)
  }
  if (options.port !== 0 && options.port + options.nodes - 1 > 65535) fail(`--port ${options.port} leaves no room for ${options.nodes} nodes`)
  return { ...options, dataDir: path.resolve(options.dataDir) }
}

const options = parseOptions(process.argv.slice(2))

// every node reads the same settings: a bad one is reported once, here, as npm start would
const settings = (() => {
  try {
    return loadConfig({ ...process.env, PORT: String(options.port) })
  } catch (error) {
    return fail(error instanceof ConfigError ? error.message : String(error))
  }
})()
const host = settings.host === "0.0.0.0" && process.env.HOST === undefined ? "127.0.0.1" : settings.host
if (settings.opsPort !== null && settings.opsPort !== 0 && settings.opsPort + options.nodes - 1 > 65535) {
  fail(`OPS_PORT ${settings.opsPort} leaves no room for ${options.nodes} nodes`)
}

/** Node i's OPS_PORT: one port each from OPS_PORT (free ports with --port 0 or OPS_PORT=0), or off. */
const opsPortOf = (index: number): string =>
  settings.opsPort === null ? "off"
  : options.port === 0 || settings.opsPort === 0 ? "0"
  : String(settings.opsPort + index - 1)

/** Copies a child's output line by line, each prefixed with the child's name. */
const relay = (name: string, child: ChildProcess, onLine: (line: string) => void = () => {}) => {
  for (const stream of [child.stdout, child.stderr]) {
    if (stream === null) continue
    readline.createInterface({ input: stream }).on("line", (line) => {
      say(`${name.padEnd(8)}│ ${line}`)
      onLine(line)
    })
  }
}

interface Node {
  readonly name: string
  readonly child: ChildProcess
  /** Its ops listener's URL, once it logged it (none with OPS_PORT=off). */
  readonly ops: () => string | undefined
  readonly listening: Promise<string>
  readonly exited: Promise<number | null>
}

const exitOf = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode)
    else child.on("exit", (code) => resolve(code))
  })

let database: ChildProcess | undefined
const nodes: Array<Node> = []
let stopping = false
/** When the first stop signal came: a Ctrl-C reaches this process twice (from the terminal, and from npm). */
let firstSignalAt = 0

/** Stops every node (SIGTERM: each drains), then the database; with `force`, SIGKILL at once. */
const stopAll = async (force: boolean) => {
  const live = nodes.filter((node) => node.child.exitCode === null && node.child.signalCode === null)
  for (const node of live) node.child.kill(force ? "SIGKILL" : "SIGTERM")
  const bound = (settings.drainTimeoutSeconds + 30) * 1000
  const timer = setTimeout(() => {
    for (const node of live) node.child.kill("SIGKILL")
  }, bound)
  const codes = await Promise.all(live.map((node) => node.exited))
  clearTimeout(timer)
  if (database !== undefined && database.exitCode === null && database.signalCode === null) {
    database.kill(force ? "SIGKILL" : "SIGTERM")
    await exitOf(database)
  }
  return codes
}

const onSignal = (signal: NodeJS.Signals) => {
  if (stopping) {
    if (performance.now() - firstSignalAt < 1_000) return
    say(`cluster: ${signal} again: killing every node and the database`)
    void stopAll(true).then(() => process.exit(130))
    return
  }
  stopping = true
  firstSignalAt = performance.now()
  say(`cluster: ${signal}: stopping ${nodes.length} nodes (each finishes its deliveries, at most ${settings.drainTimeoutSeconds} s), then the database`)
  void stopAll(false).then((codes) => {
    const failed = codes.filter((code) => code !== 0).length
    say(failed === 0 ? "cluster: stopped" : `cluster: stopped; ${failed} nodes did not exit cleanly`)
    process.exit(failed === 0 ? 0 : 1)
  })
}
process.on("SIGINT", onSignal)
process.on("SIGTERM", onSignal)

/** The private embedded PostgreSQL, in a process group of its own (Ctrl-C does not reach it). */
const startDatabase = async (): Promise<string> => {
  fs.mkdirSync(options.dataDir, { recursive: true })
  const child = spawn(process.execPath, [path.join(import.meta.dirname, "database.ts"), options.dataDir], {
    cwd: REPO_ROOT,
    stdio: ["pipe", "pipe", "pipe"],
    detached: true
  })
  database = child
  const lines = readline.createInterface({ input: child.stdout! })
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => process.stderr.write(chunk))
  const url = await new Promise<string | undefined>((resolve) => {
    lines.once("line", resolve)
    child.once("exit", () => resolve(undefined))
  })
  return url ?? fail(`the embedded PostgreSQL in ${path.join(options.dataDir, "pg")} did not start`)
}

/** Relative to the working directory when under it, else absolute. */
const displayPath = (dir: string) => {
  const relative = path.relative(process.cwd(), dir)
  return relative === "" ? "." : relative.startsWith("..") ? dir : `./${relative}`
}

const LISTENING = /timewheel listening on https:\/\/([^\s:]+):(\d+)/
const OPS_LISTENING = /timewheel ops listening on (http:\/\/[^\s"]+)/

const startNode = (index: number, url: string): Node => {
  const name = `node-${index}`
  const child = spawn(process.execPath, [...serviceLaunch(REPO_ROOT).nodeFlags, path.join(REPO_ROOT, "dist", "main.js")], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      ...serviceLaunch(REPO_ROOT).env,
      DATABASE_URL: url,
      DATA_DIR: path.join(options.dataDir, name),
      HOST: host,
      PORT: String(options.port === 0 ? 0 : options.port + index - 1),
      OPS_PORT: opsPortOf(index)
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let resolveListening: (origin: string) => void = () => {}
  const listening = new Promise<string>((resolve) => (resolveListening = resolve))
  let ops: string | undefined
  relay(name, child, (line) => {
    const match = LISTENING.exec(line)
    if (match !== null) resolveListening(`https://${host === "0.0.0.0" ? "127.0.0.1" : host}:${match[2]}`)
    ops ??= OPS_LISTENING.exec(line)?.[1]
  })
  const exited = exitOf(child)
  void exited.then((code) => {
    if (!stopping) say(`cluster: ${name} exited with code ${code}; the other nodes take its shards over`)
  })
  return { name, child, ops: () => ops, listening, exited }
}

const databaseLabel = settings.databaseUrl === undefined
  ? `embedded PostgreSQL in ${displayPath(path.join(options.dataDir, "pg"))}`
  : "DATABASE_URL"
const url = settings.databaseUrl ?? await startDatabase()
for (let index = 1; index <= options.nodes; index++) nodes.push(startNode(index, url))

const origins = await Promise.all(nodes.map((node) =>
  Promise.race([
    node.listening,
    node.exited.then((code) => {
      if (!stopping) {
        stopping = true
        void stopAll(false).then(() => fail(`${node.name} exited with code ${code} before listening`))
      }
      return new Promise<string>(() => {})
    })
  ])
))

if (!stopping) {
  say(`cluster: ${nodes.length} timewheel nodes on one database (${databaseLabel}):`)
  nodes.forEach((node, i) => {
    const ops = node.ops()
    say(`cluster:   ${node.name}  ${origins[i]}${ops === undefined ? "" : `  (ops ${ops})`}`)
  })
  say(settings.databaseUrl === undefined
    ? `cluster: the CLI reaches it with DATA_DIR=${displayPath(options.dataDir)} npm run --silent cli -- <command>`
    : "cluster: the CLI reaches it with the same DATABASE_URL")
  say("cluster: Ctrl-C stops every node (each drains first), then the database")
}
