// How a chaos run ends, however it ends: one temporary root directory for everything it creates,
// cleanups that run synchronously on process exit (child processes killed, the private PostgreSQL
// told to quit, the temporary root removed), a bounded asynchronous stop on SIGINT/SIGTERM/SIGHUP,
// and a watchdog that ends the whole run when its time bound is reached.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { killAllChildren } from "../bench/common.ts"

export const say = (line: string) => process.stderr.write(`${line}\n`)

const exitCleanups: Array<() => void> = []

/** Runs `cleanup` when the process exits (synchronously: no awaiting there), last registered first. */
export const onExit = (cleanup: () => void) => {
  exitCleanups.push(cleanup)
}

let tempRoot: string | undefined

/** The run's temporary directory (created on first use, removed on exit). Traversable by every user. */
export const runTempRoot = (): string => {
  if (tempRoot === undefined) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "timewheel-chaos-"))
    fs.chmodSync(dir, 0o755) // the private PostgreSQL runs as the postgres user and must reach its data dir
    tempRoot = dir
    onExit(() => fs.rmSync(dir, { recursive: true, force: true }))
  }
  return tempRoot
}

/** A fresh directory under the run's temporary root. */
export const tempDir = (label: string): string => fs.mkdtempSync(path.join(runTempRoot(), `${label}-`))

let installed = false

/**
 * On exit: every tracked child (nodes, target, CLI) is killed, then the registered cleanups run.
 * On SIGINT/SIGTERM/SIGHUP: `onSignal` gets at most 10 s (e.g. to stop PostgreSQL with pg_ctl), then exit 130.
 */
export const installExitHandlers = (onSignal: () => Promise<void>) => {
  if (installed) return
  installed = true
  process.once("exit", () => {
    killAllChildren()
    for (const cleanup of exitCleanups.reverse()) {
      try {
        cleanup()
      } catch { /* best effort */ }
    }
  })
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      say(`\nchaos: ${signal}, stopping`)
      killAllChildren()
      const bound = new Promise<void>((resolve) => setTimeout(resolve, 10_000).unref())
      Promise.race([onSignal().catch(() => {}), bound]).finally(() => process.exit(130))
    })
  }
}

/**
 * Ends the run after `ms` whatever it is doing: `onTimeout` (bounded to 10 s, e.g. to write the
 * results gathered so far) and then exit code 2.
 */
export const startWatchdog = (ms: number, onTimeout: () => Promise<void>) => {
  const timer = setTimeout(() => {
    say(`chaos: the run's time bound (${Math.round(ms / 1000)} s) was reached; stopping`)
    killAllChildren()
    const bound = new Promise<void>((resolve) => setTimeout(resolve, 10_000).unref())
    Promise.race([onTimeout().catch(() => {}), bound]).finally(() => process.exit(2))
  }, ms)
  timer.unref()
  return () => clearTimeout(timer)
}
