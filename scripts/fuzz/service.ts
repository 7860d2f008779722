// A started timewheel for the probes of scripts/ (fuzz, list memory): the service as `npm start` runs
// it (`node dist/main.js`, built first) in a child process on loopback, its ops listener on a free
// loopback port, on a fresh database of DATABASE_URL's server (or of an embedded server in a
// temporary directory), with a project and key made by the CLI, and the CLI itself for more.
// `root` may name another checkout of the repository (e.g. an older commit, to measure before and
// after a change); its node_modules are used.
import { execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { promisify } from "node:util"
import { Agent, request } from "undici"
import { freeLoopbackPort, installExitHandlers, makeTempDir, removeTempDir, REPO_ROOT, sleep, tailOf, trackChild, waitForExit } from "../bench/common.ts"
import { serviceLaunch } from "../serviceLaunch.ts"
import { freshDatabase, openDatabaseServer } from "../bench/database.ts"

const execFileAsync = promisify(execFile)

export interface StartedService {
  readonly origin: string
  /** The ops listener (`http://127.0.0.1:PORT`). */
  readonly opsOrigin: string
  readonly key: string
  /** Runs the CLI (`node dist/cli/main.js`) against the service's database; its stdout, trimmed. */
  readonly cli: (...args: Array<string>) => Promise<string>
  readonly pid: number
  /** The service's recent log lines (stderr, then stdout). */
  readonly recentLogs: () => ReadonlyArray<string>
  /** Whether the process still runs. */
  readonly alive: () => boolean
  readonly stop: () => Promise<void>
}

export const insecureAgent = (connections: number) =>
  new Agent({ connect: { rejectUnauthorized: false }, connections, keepAliveTimeout: 10_000 })

/** Current resident set size (VmRSS) of a live process in KiB; NaN if it cannot be read. */
export const rssKiB = (pid: number): number => {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return match ? Number(match[1]) : Number.NaN
  } catch {
    return Number.NaN
  }
}
/**
 * Where a live process's resident memory is, in KiB (/proc/PID/smaps): the brk heap (glibc's main
 * arena), other anonymous mappings (V8's heap pages, glibc's other arenas and its mmapped chunks,
 * thread stacks) and files (code, libraries). Zeros if it cannot be read.
 */
export const rssBreakdownKiB = (pid: number): { readonly brkHeap: number; readonly anonymous: number; readonly files: number } => {
  const out = { brkHeap: 0, anonymous: 0, files: 0 }
  let kind: keyof typeof out = "anonymous"
  try {
    for (const line of fs.readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
      const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line)
      if (mapping !== null) {
        const name = mapping[1]!.trim()
        kind = name === "[heap]" ? "brkHeap" : name.startsWith("/") ? "files" : "anonymous"
      } else if (line.startsWith("Rss:")) {
        out[kind] += Number(line.split(/\s+/)[1])
      }
    }
  } catch {
    // the process is gone: zeros
  }
  return out
}

export const startService = async (options: { readonly root?: string; readonly env?: Record<string, string> } = {}): Promise<StartedService> => {
  const root = path.resolve(options.root ?? REPO_ROOT)
  // built first: a failed build leaves no database behind
  await execFileAsync(process.execPath, [path.join(root, "scripts/build.ts")], { cwd: root, timeout: 300_000 })
  const server = await openDatabaseServer()
  const database = await freshDatabase(server, "probe")
  const dataDir = makeTempDir("probe-data")
  const cleanup = async () => {
    await database.drop().catch(() => {})
    await server.stop().catch(() => {})
    removeTempDir(dataDir)
  }
  installExitHandlers(cleanup)
  const port = await freeLoopbackPort()
  const opsPort = await freeLoopbackPort()
  const env = {
    ...process.env, DATABASE_URL: database.url, HOST: "127.0.0.1", PORT: String(port), OPS_HOST: "127.0.0.1", OPS_PORT: String(opsPort),
    DATA_DIR: dataDir, LOG_LEVEL: "warn",
    ...options.env,
    ...serviceLaunch(root).env
  }
  const child = trackChild(spawn(process.execPath, [...serviceLaunch(root).nodeFlags, path.join(root, "dist/main.js")], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] }))
  const logs = tailOf(child.stderr, 200)
  const out = tailOf(child.stdout, 200)
  const alive = () => child.exitCode === null && child.signalCode === null
  const origin = `https://127.0.0.1:${port}`
  const agent = insecureAgent(1)
  const deadline = Date.now() + 90_000
  for (;;) {
    if (!alive()) throw new Error(`the service exited: ${[...logs, ...out].join("\n")}`)
    try {
      const response = await request(`${origin}/openapi/json`, { dispatcher: agent })
      await response.body.dump()
      break
    } catch {
      if (Date.now() > deadline) throw new Error("the service did not answer within 90 s")
      await sleep(100)
    }
  }
  await agent.close()
  const cli = async (...args: Array<string>) =>
    (await execFileAsync(process.execPath, [path.join(root, "dist/cli/main.js"), ...args], { cwd: root, env, timeout: 60_000 })).stdout.trim()
  await cli("project", "create", "probe", "--monthly-quota", "100000000")
  const key = await cli("key", "create", "probe")
  return {
    origin,
    opsOrigin: `http://127.0.0.1:${opsPort}`,
    key,
    cli,
    pid: child.pid!,
    recentLogs: () => [...logs, ...out],
    alive,
    stop: async () => {
      child.kill("SIGTERM")
      await waitForExit(child, 15_000)
      await cleanup()
    }
  }
}
