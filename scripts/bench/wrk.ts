// The cheap HTTP load generator of the ingest workload and its ceilings: `wrk` (a C client, one
// thread, WRK_CONNECTIONS keep-alive connections, a fixed duration after a warm-up run), driven by a
// Lua script whose `done()` prints the figures as one JSON line. A target is either a fixed request
// (`GET /health`, the bare server) or timewheel's `POST /schedule`, where every request is a distinct
// one-shot job (a counter in the target URL and the body). wrk is installed with apt-get when missing
// and this process is root; otherwise the workload fails saying how to install it.
import { execFile, execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { promisify } from "node:util"
import { makeTempDir, removeTempDir } from "./common.ts"

export const WRK_THREADS = 1
export const WRK_CONNECTIONS = 32
export const WRK_DURATION_S = 8
export const WRK_WARM_UP_S = 2
/** A call slower than this counts as a wrk timeout error, not a latency. */
export const WRK_TIMEOUT_S = 10

export const WRK_SETTINGS = {
  client: "wrk",
  threads: WRK_THREADS,
  connections: WRK_CONNECTIONS,
  durationS: WRK_DURATION_S,
  warmUpS: WRK_WARM_UP_S,
  timeoutS: WRK_TIMEOUT_S,
  tls: "not verified"
} as const

/** What one measured wrk run reports (the warm-up run's figures are dropped). */
export interface WrkFigures {
  /** Responses read (any status). */
  readonly requests: number
  /** Responses with a status of 400 or more (wrk's `errors.status`); nothing answers 1xx/3xx here. */
  readonly non2xx: number
  /** Socket errors: connect, read, write, timeout. */
  readonly socketErrors: number
  /** Requests written by the Lua `request()` (dynamic scripts only): written minus read were in flight when wrk stopped. */
  readonly sent: number | null
  readonly durationS: number
  /** 2xx answers per second over the run. */
  readonly ratePerS: number
  readonly latencyP50Ms: number
  readonly latencyP99Ms: number
  readonly latencyMaxMs: number
}

/** A fixed request, the same each time. */
export interface StaticTarget {
  readonly kind: "static"
  readonly url: string
  readonly method?: "GET" | "POST"
  readonly headers?: Readonly<Record<string, string>>
}

/** timewheel's `/schedule`: one distinct one-shot job per request, due `aheadMs` after the run starts. */
export interface ScheduleTarget {
  readonly kind: "schedule"
  /** The service's origin, e.g. https://127.0.0.1:1234. */
  readonly origin: string
  readonly headerPrefix: string
  readonly apiKey: string
  /** Each job's target URL is this followed by its counter (e.g. the sink's `…/hit?run=r&id=`). */
  readonly targetUrlPrefix: string
  /** Wall-clock ms of the first job's due instant; job i is due i ms later. */
  readonly firstDueMs: number
}

export type WrkTarget = StaticTarget | ScheduleTarget

const MARKER = "WRK_JSON "

/** A Lua string literal of ASCII text (there, JSON's escapes are also Lua's). */
const lua = (text: string) => JSON.stringify(text)

/** The part every script shares: remembers the threads, prints the figures as JSON in done(). */
const DONE = `
local threads = {}
function setup(thread) table.insert(threads, thread) end
function done(summary, latency, requests)
  local sent = -1
  for _, t in ipairs(threads) do
    local s = t:get("sent")
    if s ~= nil then sent = math.max(sent, 0) + s end
  end
  local e = summary.errors
  io.write(string.format(
    '${MARKER}{"requests":%d,"durationUs":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,' ..
    '"p50Us":%.0f,"p99Us":%.0f,"maxUs":%.0f,"sent":%d}\\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max, sent))
end
`

const scriptOf = (target: WrkTarget): string => {
  if (target.kind === "static") {
    const headers = Object.entries(target.headers ?? {}).map(([name, value]) => `wrk.headers[${lua(name)}] = ${lua(value)}\n`).join("")
    return `wrk.method = ${lua(target.method ?? "GET")}\n${headers}${DONE}`
  }
  // wrk calls request() for every request it writes: a counter makes each one a distinct job
  return `
local counter = 0
sent = 0
local headers = {
  [${lua(`${target.headerPrefix}-api-key`)}] = ${lua(target.apiKey)},
  ["content-type"] = "application/json"
}
local urlHeader = ${lua(`${target.headerPrefix}-url`)}
local atHeader = ${lua(`${target.headerPrefix}-scheduled-at`)}
local urlPrefix = ${lua(target.targetUrlPrefix)}
local firstDueMs = ${Math.round(target.firstDueMs)}
function request()
  local i = counter
  counter = counter + 1
  sent = counter
  local ms = firstDueMs + i
  headers[urlHeader] = urlPrefix .. i
  headers[atHeader] = os.date("!%Y-%m-%dT%H:%M:%S", math.floor(ms / 1000)) .. string.format(".%03dZ", ms % 1000)
  return wrk.format("POST", "/schedule", headers, '{"n":' .. i .. '}')
end
${DONE}`
}

const urlOf = (target: WrkTarget) => (target.kind === "static" ? target.url : `${target.origin}/schedule`)

const onPath = (): boolean => {
  try {
    execFileSync("wrk", ["--version"], { stdio: "ignore" })
    return true
  } catch (error) {
    // `wrk --version` prints its usage and exits 1: present all the same
    return (error as { code?: string }).code !== "ENOENT"
  }
}

/** Makes sure `wrk` is on PATH: installs the Debian package when root, else throws saying how. */
export const ensureWrk = (): void => {
  if (onPath()) return
  const how = "install it (Debian/Ubuntu: `apt-get install -y wrk`; macOS: `brew install wrk`) and run again"
  if (process.getuid?.() !== 0 || !fs.existsSync("/usr/bin/apt-get")) {
    throw new Error(`wrk (the ingest workload's HTTP client) is not on PATH: ${how}`)
  }
  process.stderr.write("installing wrk (apt-get install -y wrk)…\n")
  const aptGet = (args: ReadonlyArray<string>) =>
    execFileSync("apt-get", args, { stdio: ["ignore", 2, 2], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } })
  try {
    aptGet(["install", "-y", "-q", "wrk"])
  } catch {
    try {
      aptGet(["update", "-q"]) // a fresh image may have no package lists yet
      aptGet(["install", "-y", "-q", "wrk"])
    } catch {
      throw new Error(`installing wrk with apt-get failed (it printed why): ${how}`)
    }
  }
  if (!onPath()) throw new Error(`wrk is still not on PATH after apt-get: ${how}`)
}

const execFileAsync = promisify(execFile)

/** One wrk run of `seconds` against the target; its figures, parsed from the Lua done() line. */
const runOnce = async (target: WrkTarget, seconds: number): Promise<WrkFigures> => {
  const dir = makeTempDir("wrk")
  try {
    const script = path.join(dir, "script.lua")
    fs.writeFileSync(script, scriptOf(target))
    const args = [`-t${WRK_THREADS}`, `-c${WRK_CONNECTIONS}`, `-d${seconds}s`, `--timeout`, `${WRK_TIMEOUT_S}s`, "-s", script, urlOf(target)]
    const { stdout } = await execFileAsync("wrk", args, { timeout: (seconds + 60) * 1000, maxBuffer: 1 << 20 })
    const line = stdout.split("\n").find((l) => l.startsWith(MARKER))
    if (line === undefined) throw new Error(`wrk printed no figures:\n${stdout.slice(-2000)}`)
    const raw = JSON.parse(line.slice(MARKER.length)) as Record<string, number>
    const durationS = raw.durationUs! / 1e6
    const ms = (us: number) => Math.round(us / 10) / 100
    return {
      requests: raw.requests!,
      non2xx: raw.status!,
      socketErrors: raw.connect! + raw.read! + raw.write! + raw.timeout!,
      sent: raw.sent! < 0 ? null : raw.sent!,
      durationS: Math.round(durationS * 1000) / 1000,
      ratePerS: Math.round((raw.requests! - raw.status!) / durationS),
      latencyP50Ms: ms(raw.p50Us!),
      latencyP99Ms: ms(raw.p99Us!),
      latencyMaxMs: ms(raw.maxUs!)
    }
  } finally {
    removeTempDir(dir)
  }
}

/**
 * A warm-up run of WRK_WARM_UP_S (figures dropped), then the measured run of WRK_DURATION_S.
 * `warmUp` is the target of the warm-up (a schedule target with another URL prefix, so the two
 * runs' jobs can be told apart), by default the same.
 */
export const runWrk = async (target: WrkTarget, warmUp: WrkTarget = target): Promise<{ warmUp: WrkFigures; measured: WrkFigures }> => {
  const first = await runOnce(warmUp, WRK_WARM_UP_S)
  return { warmUp: first, measured: await runOnce(target, WRK_DURATION_S) }
}
