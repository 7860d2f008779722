// The operator's commands as child processes, exactly as the README runs them: the CLI
// (`npm run --silent cli -- …`) and the service (`npm start`), plus /proc helpers to find the
// service's node process and the embedded PostgreSQL of a DATA_DIR.
// Every child gets a bounded time; `startService` children run in their own process group so
// `kill()` removes npm, node and an embedded PostgreSQL together.
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { waitUntilAsync } from "./wait.ts"

export const REPO_ROOT = path.resolve(import.meta.dirname, "../..")

/** Every operator setting: removed from the inherited environment so a child sees only what a test sets. */
const SETTINGS = [
  "DATABASE_URL", "DATA_DIR", "HOST", "PORT", "TLS_CERT_FILE", "TLS_KEY_FILE", "PREFIX", "SHARDS",
  "DEFAULT_MONTHLY_QUOTA", "BLOCK_PRIVATE_TARGETS", "LOG_LEVEL", "LOG_FORMAT", "MAX_IN_FLIGHT", "DRAIN_TIMEOUT_SECONDS",
  "OPS_HOST", "OPS_PORT", "RETENTION_DAYS", "ENCRYPTION_KEYS", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
  "OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_SDK_DISABLED"
]

export type ChildEnv = Readonly<Record<string, string | undefined>>

/** The test process's environment without operator settings, plus `env` (undefined removes a variable). */
export const childEnv = (env: ChildEnv): NodeJS.ProcessEnv => {
  const result: NodeJS.ProcessEnv = { ...process.env }
  for (const name of SETTINGS) delete result[name]
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete result[name]
    else result[name] = value
  }
  return result
}

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a child to completion (SIGKILL after `timeoutMs`) and collects its output. */
export const runChild = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly env: ChildEnv; readonly stdin?: string; readonly timeoutMs?: number }
): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: REPO_ROOT, env: childEnv(options.env), stdio: ["pipe", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    const timeoutMs = options.timeoutMs ?? 60_000
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${command} ${args.join(" ")} did not finish within ${timeoutMs} ms\n${stdout}\n${stderr}`))
    }, timeoutMs)
    child.on("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    // a closed stdin: a command that reads it (admin create) sees end of input, never a hang
    child.stdin.on("error", () => {})
    child.stdin.end(options.stdin ?? "")
  })

/** `npm run --silent cli -- <args>` with the given settings (and stdin). */
export const runCli = (
  args: ReadonlyArray<string>,
  options: { readonly env: ChildEnv; readonly stdin?: string; readonly timeoutMs?: number }
): Promise<CliResult> => runChild("npm", ["run", "--silent", "cli", "--", ...args], options)

/** Lines of stderr that npm itself wrote (warnings about the local npmrc, etc.) are not the program's. */
export const programLines = (text: string): Array<string> =>
  text.split("\n").filter((line) => line !== "" && !/^npm (warn|notice|error|info)\b/.test(line))

// --- /proc ------------------------------------------------------------------------------------------

const readProc = (pid: number, file: string): string | undefined => {
  try {
    return fs.readFileSync(`/proc/${pid}/${file}`, "utf8")
  } catch {
    return undefined
  }
}

const allPids = (): Array<number> => fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name)).map(Number)

/** The command line of a live process (arguments joined by spaces), undefined when it is gone. */
export const commandLine = (pid: number): string | undefined => {
  const raw = readProc(pid, "cmdline")
  if (raw === undefined) return undefined
  const state = readProc(pid, "stat")
  if (state !== undefined && state.slice(state.lastIndexOf(")") + 2).startsWith("Z")) return undefined // zombie
  return raw.split("\0").filter((part) => part !== "").join(" ")
}

const parentOf = (pid: number): number | undefined => {
  const stat = readProc(pid, "stat")
  return stat === undefined ? undefined : Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
}

/** Every live descendant of `pid`. */
export const descendants = (pid: number): Array<number> => {
  const children = new Map<number, Array<number>>()
  for (const candidate of allPids()) {
    const parent = parentOf(candidate)
    if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), candidate])
  }
  const result: Array<number> = []
  const queue = [...(children.get(pid) ?? [])]
  while (queue.length > 0) {
    const next = queue.shift()!
    result.push(next)
    queue.push(...(children.get(next) ?? []))
  }
  return result
}

/**
 * Live `postgres` server processes whose command line names `dataDir` (the embedded server of that
 * DATA_DIR). A just-forked backend still shows its parent's command line for a moment: only
 * processes whose parent is not itself such a process count.
 */
export const postgresProcessesOf = (dataDir: string): Array<number> => {
  const matching = allPids().filter((pid) => {
    const line = commandLine(pid)
    return line !== undefined && /\bpostgres -D /.test(line) && line.includes(path.join(dataDir, "pg"))
  })
  return matching.filter((pid) => !matching.includes(parentOf(pid) ?? 0))
}

/** Resident set size of a process in kB (VmRSS), undefined when it is gone. */
export const rssKb = (pid: number): number | undefined => {
  const match = /VmRSS:\s+(\d+) kB/.exec(readProc(pid, "status") ?? "")
  return match === null ? undefined : Number(match[1])
}

// --- the service --------------------------------------------------------------------------------------

export interface RunningService {
  /** The `npm start` process. */
  readonly npmPid: number
  /** The service's own node process (`node dist/main.js`), which a supervisor signals. */
  readonly servicePid: number
  readonly port: number
  readonly baseUrl: string
  /** Milliseconds from spawning `npm start` to the "listening" log line. */
  readonly startupMs: number
  readonly output: () => string
  /** SIGTERM to the service process; resolves with npm's exit code once every process of it is gone. */
  readonly stop: (timeoutMs?: number) => Promise<number | null>
  /** Resolves with npm's exit code once every process of it is gone (a signal was sent otherwise: Ctrl-C). */
  readonly exited: (timeoutMs?: number) => Promise<number | null>
  /** SIGKILL to the whole process group (npm, node, embedded PostgreSQL); safe to call twice. */
  readonly kill: () => void
}

const LISTENING = /timewheel listening on https:\/\/[^\s:]+:(\d+)/

/**
 * Spawns `npm start` with `env` (use PORT=0, HOST=127.0.0.1) and resolves once it logs that it
 * listens. Rejects, after killing it, when it exits first or does not listen within `timeoutMs`.
 */
export const startService = (env: ChildEnv, timeoutMs = 90_000): Promise<RunningService> =>
  new Promise((resolve, reject) => {
    const started = performance.now()
    const child: ChildProcess = spawn("npm", ["start"], {
      cwd: REPO_ROOT,
      env: childEnv({ LOG_LEVEL: "info", ...env }),
      stdio: ["ignore", "pipe", "pipe"],
      detached: true // own process group, so kill() reaches node and PostgreSQL too
    })
    const npmPid = child.pid!
    let output = ""
    // npm's exit code; null when npm itself died of a signal
    const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)))
    const kill = () => {
      try {
        process.kill(-npmPid, "SIGKILL")
      } catch {
        // already gone
      }
    }
    const fail = (message: string) => {
      clearTimeout(timer)
      kill()
      reject(new Error(`${message}\n--- output of npm start ---\n${output}`))
    }
    const timer = setTimeout(() => fail(`npm start did not log "listening" within ${timeoutMs} ms`), timeoutMs)
    let announced = false
    const onData = (chunk: string) => {
      output += chunk
      const match = announced ? null : LISTENING.exec(output)
      if (match === null) return
      announced = true
      clearTimeout(timer)
      const startupMs = performance.now() - started
      const port = Number(match[1])
      // not the `sh -c "node dist/main.js"` between npm and node: its command line names the file too
      const servicePid = descendants(npmPid).find((pid) => /^\S*node (?:--\S+ )*dist\/main\.js$/.test(commandLine(pid) ?? ""))
      if (servicePid === undefined) return fail("found no `node dist/main.js` process under npm start")
      const ended = async (stopTimeoutMs: number, what: string) => {
        const code = await Promise.race([
          exited,
          new Promise<"timeout">((done) => setTimeout(() => done("timeout"), stopTimeoutMs))
        ])
        if (code === "timeout") {
          kill()
          throw new Error(`npm start did not exit within ${stopTimeoutMs} ms of ${what}\n${output}`)
        }
        await waitUntilAsync(() => commandLine(servicePid) === undefined, stopTimeoutMs, `pid ${servicePid} to exit`)
        return code
      }
      resolve({
        npmPid,
        servicePid,
        port,
        baseUrl: `https://127.0.0.1:${port}`,
        startupMs,
        output: () => output,
        stop: async (stopTimeoutMs = 30_000) => {
          try {
            process.kill(servicePid, "SIGTERM")
          } catch {
            // already gone
          }
          return ended(stopTimeoutMs, "SIGTERM")
        },
        exited: (stopTimeoutMs = 30_000) => ended(stopTimeoutMs, "its signal"),
        kill
      })
    }
    child.stdout!.setEncoding("utf8").on("data", onData)
    child.stderr!.setEncoding("utf8").on("data", onData)
    void exited.then((code) => {
      if (!announced) fail(`npm start exited with ${code} before listening`)
    })
    child.on("error", (error) => fail(String(error)))
  })
