// The service under test: built once (`node scripts/build.ts`, what `npm start` runs first) in the
// working tree, or in an export of a given commit (`--commit`, `git archive` into a temporary
// directory sharing this checkout's node_modules); each node is `node dist/main.js` in a child process
// with its own DATA_DIR, PORT=0, HOST=127.0.0.1, LOG_LEVEL=info, ready when it logs
// `timewheel listening on https://HOST:PORT`. Also the operator CLI (`node dist/cli/main.js`).
import { execFile, spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { REPO_ROOT, trackChild } from "../bench/common.ts"
import { serviceLaunch } from "../serviceLaunch.ts"
import { captureLog, type LogCapture, type LogSummary } from "./logs.ts"
import { tempDir } from "./lifecycle.ts"

const execFileAsync = promisify(execFile)

export interface Service {
  /** Directory holding dist/ (the repository, or the export of `--commit`). */
  readonly dir: string
  /** Short commit, with "(with uncommitted changes)" when the working tree differs from it. */
  readonly commit: string
}

const git = async (args: ReadonlyArray<string>) => (await execFileAsync("git", args, { cwd: REPO_ROOT, maxBuffer: 1 << 28 })).stdout.trim()

/** Builds the service: in the working tree, or from `commit` exported next to the run's other files. */
export const prepareService = async (commit: string | undefined): Promise<Service> => {
  let dir = REPO_ROOT
  let description: string
  if (commit === undefined) {
    description = await git(["rev-parse", "--short", "HEAD"]).catch(() => "unknown")
    const dirty = await git(["--no-optional-locks", "status", "--porcelain", "--untracked-files=no", "--", "src", "scripts/build.ts", "tsconfig.build.json"]).catch(() => "")
    if (dirty !== "") description += " (with uncommitted changes in src/)"
  } else {
    description = await git(["rev-parse", "--short", `${commit}^{commit}`])
    dir = tempDir(`service-${description}`)
    fs.chmodSync(dir, 0o755) // readable by the nodes' own uids
    await new Promise<void>((resolve, reject) => {
      const archive = spawn("git", ["archive", "--format=tar", description], { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "inherit"] })
      const tar = spawn("tar", ["-x", "-C", dir], { stdio: ["pipe", "inherit", "inherit"] })
      archive.stdout.pipe(tar.stdin)
      tar.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`extracting ${description} failed (tar exit ${code})`))))
    })
    fs.symlinkSync(path.join(REPO_ROOT, "node_modules"), path.join(dir, "node_modules"))
  }
  try {
    await execFileAsync(process.execPath, [path.join(dir, "scripts/build.ts")], { cwd: dir, timeout: 300_000 })
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? ""
    throw new Error(`building the service in ${dir} failed:\n${stderr || String(error)}`)
  }
  return { dir, commit: description }
}

/** Settings a node takes from the environment, cleared so the shell's values do not leak in. */
const SERVICE_SETTINGS = [
  "DATABASE_URL", "DATA_DIR", "HOST", "PORT", "TLS_CERT_FILE", "TLS_KEY_FILE", "PREFIX", "SHARDS",
  "DEFAULT_MONTHLY_QUOTA", "BLOCK_PRIVATE_TARGETS", "LOG_LEVEL", "MAX_IN_FLIGHT"
]

export const serviceEnv = (databaseUrl: string, extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of SERVICE_SETTINGS) delete env[name]
  return { ...env, DATABASE_URL: databaseUrl, BLOCK_PRIVATE_TARGETS: "false", LOG_LEVEL: "info", ...extra }
}

/**
 * Run as root, node i runs as uid/gid NODE_UID_BASE + i (no account needed): the kernel then records
 * which node owns each socket, which is how the target attributes arrivals (sockets.ts). Otherwise
 * every node runs as the harness's user.
 */
const NODE_UID_BASE = 47_100

export interface NodeProcess {
  readonly index: number
  readonly pid: number
  readonly uid: number | undefined
  /** https://127.0.0.1:PORT */
  readonly origin: string
  readonly child: ChildProcess
  /** Wall-clock instant the process exited, undefined while it runs. */
  readonly exitedAt: () => number | undefined
  /** "code 0", "SIGKILL", …; undefined while it runs. */
  readonly exitStatus: () => string | undefined
  readonly alive: () => boolean
  /** Sends a signal; returns the wall-clock instant it was sent. */
  readonly signal: (signal: NodeJS.Signals) => number
  /** Resolves true when the process exited by `deadlineMs`, false otherwise. */
  readonly waitExit: (deadlineMs: number) => Promise<boolean>
  readonly logs: () => LogSummary
  readonly log: LogCapture
}

const LISTENING = /timewheel listening on https:\/\/([^\s":]+):(\d+)/

/** Starts one node and resolves when it logs its listening line (at most 90 s). */
export const startNode = async (service: Service, index: number, databaseUrl: string, logFile: string, origin: number): Promise<NodeProcess> => {
  const dataDir = tempDir(`node${index}`)
  const uid = os.userInfo().uid === 0 ? NODE_UID_BASE + index : undefined
  if (uid !== undefined) fs.chownSync(dataDir, uid, uid)
  const child = trackChild(spawn(process.execPath, [...serviceLaunch(service.dir).nodeFlags, path.join(service.dir, "dist/main.js")], {
    ...(uid === undefined ? {} : { uid, gid: uid }),
    cwd: service.dir,
    env: { ...serviceEnv(databaseUrl, { DATA_DIR: dataDir, HOST: "127.0.0.1", PORT: "0" }), ...serviceLaunch(service.dir).env },
    stdio: ["ignore", "pipe", "pipe"]
  }))
  let exitedAt: number | undefined
  let exitStatus: string | undefined
  const exited = new Promise<void>((resolve) => {
    child.once("exit", (code, signal) => {
      exitedAt = Date.now()
      exitStatus = signal ?? `code ${code}`
      resolve()
    })
  })
  const log = captureLog([child.stdout, child.stderr], logFile, origin)
  const failed = () => (exitStatus === undefined ? undefined : `node ${index} exited (${exitStatus}) before listening:\n${log.tail().join("\n")}`)
  const match = await log.waitFor(LISTENING, Date.now() + 90_000, failed).catch((error: unknown) => {
    child.kill("SIGKILL")
    throw error
  })
  return {
    index,
    pid: child.pid!,
    uid,
    origin: `https://${match[1]}:${match[2]}`,
    child,
    exitedAt: () => exitedAt,
    exitStatus: () => exitStatus,
    alive: () => exitStatus === undefined,
    signal: (signal) => {
      const at = Date.now()
      child.kill(signal)
      return at
    },
    waitExit: async (deadlineMs) => {
      if (exitStatus !== undefined) return true
      const remaining = deadlineMs - Date.now()
      if (remaining <= 0) return false
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, remaining)
      })
      await Promise.race([exited, timeout])
      clearTimeout(timer)
      return exitStatus !== undefined
    },
    logs: () => log.summary(),
    log
  }
}

/** Runs the operator CLI against `databaseUrl`; returns its trimmed stdout. */
export const cli = async (service: Service, databaseUrl: string, args: ReadonlyArray<string>): Promise<string> => {
  const { stdout } = await execFileAsync(process.execPath, [path.join(service.dir, "dist/cli/main.js"), ...args], {
    cwd: service.dir,
    env: serviceEnv(databaseUrl, { DATA_DIR: tempDir("cli") }),
    timeout: 60_000
  })
  return stdout.trim()
}
