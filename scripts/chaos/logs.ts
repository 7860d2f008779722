// What a node said: every line of its stdout and stderr goes to a file (bench-results/chaos-<time>/)
// with the harness's receive time, and is summarised as counts per message shape (numbers and ids
// replaced, e.g. `shard N: recovered N triggers left by a stopped node`) by level, plus the totals the
// harness reads directly: triggers recovered, execution records dropped.
import * as fs from "node:fs"

export interface LogSummary {
  readonly lines: number
  /** "LEVEL message shape" → count, most frequent first (at most 40). */
  readonly shapes: Readonly<Record<string, number>>
  /** Sum of N in "recovered N triggers". */
  readonly recoveredTriggers: number
  /** Sum of N in "dropped N execution records". */
  readonly droppedExecutionRecords: number
}

export interface LogCapture {
  readonly summary: () => LogSummary
  /** Resolves with the first line matching `pattern`, rejects at `deadlineMs` (wall clock) or on `failed()`. */
  readonly waitFor: (pattern: RegExp, deadlineMs: number, failed: () => string | undefined) => Promise<RegExpExecArray>
  /** The last lines, for error messages. */
  readonly tail: () => ReadonlyArray<string>
  readonly close: () => void
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi

/** `LEVEL shape` of a logfmt line (Effect's consoleLogFmt), or of a plain line. */
const shapeOf = (line: string): string => {
  const pretty = /^\[[\d:.]+\] (\w+) \(#\d+\): (.*)$/.exec(line) // Effect's pretty logger (used before the service's logger is set up)
  const level = pretty?.[1] ?? /\blevel=(\w+)/.exec(line)?.[1] ?? "-"
  const quoted = /\bmessage="((?:[^"\\]|\\.)*)"/.exec(line)?.[1]
  const message = pretty?.[2] ?? quoted ?? /\bmessage=(\S+)/.exec(line)?.[1] ?? line
  const shape = message.replace(UUID, "<id>").replace(/\d+(\.\d+)?/g, "N").slice(0, 120)
  return `${level} ${shape}`
}

export const captureLog = (streams: ReadonlyArray<NodeJS.ReadableStream | null>, file: string, origin: number): LogCapture => {
  const out = fs.createWriteStream(file, { flags: "a" })
  const shapes = new Map<string, number>()
  const recent: Array<string> = []
  const waiters = new Set<{ pattern: RegExp; resolve: (match: RegExpExecArray) => void }>()
  let lines = 0
  let recoveredTriggers = 0
  let droppedExecutionRecords = 0
  let closed = false

  const onLine = (line: string) => {
    lines++
    if (!closed) out.write(`+${((Date.now() - origin) / 1000).toFixed(3)}s ${line}\n`)
    recent.push(line)
    if (recent.length > 40) recent.shift()
    const shape = shapeOf(line)
    shapes.set(shape, (shapes.get(shape) ?? 0) + 1)
    const recovered = /recovered (\d+) triggers/.exec(line)
    if (recovered) recoveredTriggers += Number(recovered[1])
    const dropped = /dropped (\d+) execution records/.exec(line)
    if (dropped) droppedExecutionRecords += Number(dropped[1])
    for (const waiter of waiters) {
      const match = waiter.pattern.exec(line)
      if (match) {
        waiters.delete(waiter)
        waiter.resolve(match)
      }
    }
  }
  for (const stream of streams) {
    if (stream === null) continue
    let rest = ""
    stream.setEncoding("utf8")
    stream.on("data", (chunk: string) => {
      const parts = (rest + chunk).split("\n")
      rest = parts.pop() ?? ""
      for (const part of parts) if (part.trim() !== "") onLine(part)
    })
    stream.on("end", () => {
      if (rest.trim() !== "") onLine(rest)
      rest = ""
    })
  }

  return {
    summary: () => ({
      lines,
      shapes: Object.fromEntries([...shapes].sort((a, b) => b[1] - a[1]).slice(0, 40)),
      recoveredTriggers,
      droppedExecutionRecords
    }),
    waitFor: (pattern, deadlineMs, failed) =>
      new Promise((resolve, reject) => {
        const waiter = { pattern, resolve: (match: RegExpExecArray) => {
          clearInterval(timer)
          resolve(match)
        } }
        const timer = setInterval(() => {
          const failure = failed()
          if (failure === undefined && Date.now() < deadlineMs) return
          clearInterval(timer)
          waiters.delete(waiter)
          reject(new Error(failure ?? `no line matching ${pattern} before the deadline`))
        }, 50)
        waiters.add(waiter)
      }),
    tail: () => [...recent],
    close: () => {
      closed = true
      out.end()
    }
  }
}
