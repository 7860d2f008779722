// Shared pieces of the benchmark: job specs, percentiles, peak RSS from /proc, free loopback ports,
// and a registry of child processes that are always killed when the benchmark ends, however it ends.
import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

export const REPO_ROOT = path.resolve(import.meta.dirname, "../..")

/** One scheduled request: POST `body` to `url` at `runAtMs` (wall-clock ms). */
export interface JobSpec {
  readonly id: number
  readonly url: string
  readonly runAtMs: number
  readonly body: string
  /** timewheel's tags (`ttr-tags`), in the gated workload; the peers ignore them. */
  readonly tags?: ReadonlyArray<string>
}

/** What a system reports after a batch of library/API calls. */
export interface CallBatch {
  /** Per-call latency in ms, in completion order; only successful calls. */
  readonly latenciesMs: ReadonlyArray<number>
  readonly elapsedMs: number
  readonly errors: number
  readonly firstError: string | undefined
  /** True when the time bound stopped the batch before every call was made. */
  readonly timedOut: boolean
}

export const nowMs = (): number => performance.timeOrigin + performance.now()

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Nearest-rank percentile of a sorted array (p in 0..100); NaN when empty. */
export const percentile = (sorted: ArrayLike<number>, p: number): number => {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!
}

export const sortedCopy = (values: Iterable<number>): Float64Array => Float64Array.from(values).sort()

/** Peak resident set size (VmHWM) of a live process in KiB; NaN if it cannot be read. */
export const peakRssKiB = (pid: number | "self"): number => {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
    const match = /^VmHWM:\s+(\d+)\s+kB/m.exec(status)
    return match ? Number(match[1]) : Number.NaN
  } catch {
    return Number.NaN
  }
}

export const freeLoopbackPort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

/**
 * Runs `call(i)` for i in 0..count-1 with `concurrency` callers, timing each call; stops issuing new
 * calls after `deadlineMs` (wall clock) or after `maxErrors` failures.
 */
export const runCalls = async (
  count: number,
  concurrency: number,
  deadlineMs: number,
  call: (i: number) => Promise<void>,
  maxErrors = 50
): Promise<CallBatch> => {
  const latenciesMs: Array<number> = []
  let next = 0
  let errors = 0
  let firstError: string | undefined
  let timedOut = false
  const start = performance.now()
  const caller = async () => {
    while (next < count && errors < maxErrors) {
      if (nowMs() > deadlineMs) {
        timedOut = true
        return
      }
      const i = next++
      const t0 = performance.now()
      try {
        await call(i)
        latenciesMs.push(performance.now() - t0)
      } catch (error) {
        errors++
        firstError ??= error instanceof Error ? error.message : String(error)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(1, count)) }, caller))
  return { latenciesMs, elapsedMs: performance.now() - start, errors, firstError, timedOut }
}

// ---------------------------------------------------------------------------------------------------------
// Children: every process the benchmark starts is registered here and killed on the way out.

const children = new Set<ChildProcess>()

export const trackChild = (child: ChildProcess): ChildProcess => {
  children.add(child)
  child.once("exit", () => children.delete(child))
  return child
}

export const killAllChildren = (signal: NodeJS.Signals = "SIGKILL") => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
  }
  children.clear()
}

/** Waits for the child to exit; sends SIGKILL after `graceMs`. */
export const waitForExit = (child: ChildProcess, graceMs: number): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
  })

const tempDirs = new Set<string>()

/** A temporary directory removed when the benchmark exits, if nobody removed it before. */
export const makeTempDir = (label: string): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `timewheel-bench-${label}-`))
  tempDirs.add(dir)
  return dir
}

export const removeTempDir = (dir: string) => {
  fs.rmSync(dir, { recursive: true, force: true })
  tempDirs.delete(dir)
}

let exitHandlersInstalled = false
/**
 * Kills every tracked child when this process exits; on SIGINT/SIGTERM/SIGHUP first runs `onSignal`
 * (at most 15 s, e.g. to stop the embedded server and remove its directory), then exits with 130.
 */
export const installExitHandlers = (onSignal: () => Promise<void>) => {
  if (exitHandlersInstalled) return
  exitHandlersInstalled = true
  process.once("exit", () => {
    killAllChildren()
    for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true })
  })
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping\n`)
      killAllChildren()
      const bound = new Promise<void>((resolve) => setTimeout(resolve, 15_000).unref())
      Promise.race([onSignal().catch(() => {}), bound]).finally(() => process.exit(130))
    })
  }
}

/** Keeps the last `max` lines written to a stream, for error messages. */
export const tailOf = (stream: NodeJS.ReadableStream | null, max = 40) => {
  const lines: Array<string> = []
  stream?.setEncoding("utf8")
  stream?.on("data", (chunk: string) => {
    for (const line of chunk.split("\n")) if (line.trim() !== "") lines.push(line)
    if (lines.length > max) lines.splice(0, lines.length - max)
  })
  return lines
}
