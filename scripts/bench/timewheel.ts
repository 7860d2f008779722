// timewheel as a contender: the service (`node dist/main.js`, as `npm start` runs it) in a child process on a fresh database
// (or several, a cluster on that database: the gated workload's three-node runs),
// a project and key made with the CLI, and requests scheduled over HTTPS `/schedule` (or, in the batch
// workload, `/bulk` and `/declare` with keyed items) by keep-alive undici clients (self-signed
// certificate accepted); in the gated workload, tag policies created with `POST /tag-policies` and
// requests carrying their tag (`ttr-tags`). Its peak RSS is the service process's VmHWM.
import { execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { promisify } from "node:util"
import { Agent, request } from "undici"
import { freeLoopbackPort, makeTempDir, peakRssKiB, removeTempDir, REPO_ROOT, runCalls, sleep, tailOf, trackChild, waitForExit } from "./common.ts"
import type { JobSpec } from "./common.ts"
import { serviceLaunch } from "../serviceLaunch.ts"
import { withLockProbe } from "./lockProbe.ts"
import { chunks, keyOf } from "./peers.ts"
import type { StartedSystem } from "./system.ts"

const PREFIX = "ttr"
export const CLIENT_CONNECTIONS = 32

export const SETTINGS = {
  service: { LOG_LEVEL: "warn", MAX_IN_FLIGHT: "default (256)", SHARDS: "default (64)", database: "maxConnections 20 (built in)" },
  client: { connections: CLIENT_CONNECTIONS, keepAlive: true, tls: "self-signed, not verified" }
} as const

const execFileAsync = promisify(execFile)

/** Runs the operator CLI against the service's database; returns its trimmed stdout. */
export const cli = async (env: NodeJS.ProcessEnv, args: ReadonlyArray<string>): Promise<string> => {
  const { stdout } = await execFileAsync(process.execPath, [path.join(REPO_ROOT, "dist/cli/main.js"), ...args], {
    cwd: REPO_ROOT,
    env,
    timeout: 60_000
  })
  return stdout.trim()
}

/** Ready when the HTTPS port answers anything (the `listening` log line is info-level, hidden at warn). */
const waitReady = async (origin: string, agent: Agent, exited: () => string | undefined, deadlineMs: number) => {
  for (;;) {
    const exit = exited()
    if (exit !== undefined) throw new Error(exit)
    try {
      const response = await request(`${origin}/health`, { dispatcher: agent, headersTimeout: 2_000, bodyTimeout: 2_000 })
      await response.body.dump()
      return
    } catch {
      if (Date.now() > deadlineMs) throw new Error("timewheel did not answer on its port within 90 s")
      await sleep(100)
    }
  }
}

export const scheduleCall = (origin: string, agent: Agent, key: string) => async (job: JobSpec) => {
  const response = await request(`${origin}/schedule`, {
    method: "POST",
    dispatcher: agent,
    headers: {
      [`${PREFIX}-api-key`]: key,
      [`${PREFIX}-url`]: job.url,
      [`${PREFIX}-scheduled-at`]: new Date(job.runAtMs).toISOString(),
      ...(job.tags === undefined ? {} : { [`${PREFIX}-tags`]: job.tags.join(",") }),
      "content-type": "application/json"
    },
    body: job.body
  })
  const text = await response.body.text()
  if (response.statusCode !== 200) throw new Error(`/schedule answered ${response.statusCode}: ${text.slice(0, 200)}`)
  const result = JSON.parse(text) as { triggerId?: unknown; kind?: unknown }
  if (typeof result.triggerId !== "string" || result.kind !== "job") throw new Error(`unexpected /schedule answer: ${text.slice(0, 200)}`)
}

/**
 * A job as an item of /declare and /bulk (docs/declare-and-bulk.md "Items"), its JSON body sent as
 * compact JSON; keyed (custom key `keyOf(job)`) unless `keyed` is false; `change` sets a title,
 * changing the item.
 */
const itemOf = (job: JobSpec, options: { readonly change?: string; readonly keyed?: boolean } = {}) => ({
  url: job.url,
  scheduledAt: new Date(job.runAtMs).toISOString(),
  ...(options.keyed === false ? {} : { customKey: keyOf(job) }),
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.parse(job.body) as unknown,
  ...(options.change === undefined ? {} : { title: options.change })
})

interface ItemsAnswer {
  readonly summary: Record<"added" | "updated" | "unchanged" | "skipped" | "cancelled", number>
  readonly operations: ReadonlyArray<{ readonly id: string }>
}

/** POST `path` with a JSON body (a value, or its JSON text); the answer, or an error naming the status. */
const postJson = (origin: string, agent: Agent, key: string) => async (path: string, body: unknown): Promise<ItemsAnswer> => {
  const response = await request(`${origin}${path}`, {
    method: "POST",
    dispatcher: agent,
    headers: { [`${PREFIX}-api-key`]: key, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    headersTimeout: 120_000,
    bodyTimeout: 120_000
  })
  const text = await response.body.text()
  if (response.statusCode !== 200) throw new Error(`${path} answered ${response.statusCode}: ${text.slice(0, 200)}`)
  return JSON.parse(text) as ItemsAnswer
}

const expectSummary = (what: string, answer: ItemsAnswer, field: keyof ItemsAnswer["summary"], count: number) => {
  if (answer.summary[field] !== count) throw new Error(`${what}: expected ${count} ${field}, got ${JSON.stringify(answer.summary)}`)
}

/** A service process (`node <flags> dist/main.js`, as `npm start` runs it): its output's last lines, and why it exited if it did. */
export interface SpawnedService {
  readonly child: ReturnType<typeof spawn>
  readonly errors: ReadonlyArray<string>
  readonly exited: () => string | undefined
}

/** Spawns the service with `env` (npm start's settings added) and the node flags given. */
export const spawnService = (env: NodeJS.ProcessEnv, nodeFlags: ReadonlyArray<string>): SpawnedService => {
  const child = trackChild(spawn(process.execPath, [...nodeFlags, path.join(REPO_ROOT, "dist/main.js")], {
    cwd: REPO_ROOT,
    env: { ...env, ...serviceLaunch(REPO_ROOT).env },
    stdio: ["ignore", "pipe", "pipe"]
  }))
  const output = tailOf(child.stdout)
  // BENCH_SERVICE_STDOUT=<file>: the service's stdout appended there too (e.g. with `--trace-gc` in BENCH_SERVICE_NODE_ARGS)
  if (process.env.BENCH_SERVICE_STDOUT) child.stdout?.pipe(fs.createWriteStream(process.env.BENCH_SERVICE_STDOUT, { flags: "a" }))
  const errors = tailOf(child.stderr)
  const exited = () =>
    child.exitCode !== null || child.signalCode !== null
      ? `timewheel exited (${child.exitCode ?? child.signalCode}):\n${[...output, ...errors].join("\n")}`
      : undefined
  return { child, errors, exited }
}

/** One service process of a started system. */
interface ServiceProcess extends SpawnedService {
  readonly origin: string
  readonly dataDir: string
}

/**
 * Starts the service on `databaseUrl` — `nodes` processes sharing it, a cluster (default one) — and
 * creates the project and key; `worker` is implied. `serviceEnv`: more settings for the service
 * alone (ENCRYPTION_KEYS, OTEL_…: contenders.ts). Calls are spread over the nodes in turn.
 */
export const startTimewheel = async (
  databaseUrl: string,
  serviceEnv: Readonly<Record<string, string>> = {},
  nodes = 1
): Promise<StartedSystem> => {
  // what `npm start` runs: the JavaScript compiled into dist/ (built here when missing or stale)
  await execFileAsync(process.execPath, [path.join(REPO_ROOT, "scripts/build.ts")], { cwd: REPO_ROOT })
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    PREFIX,
    ...serviceEnv
  }
  // BENCH_SERVICE_NODE_ARGS passes flags to the service's node, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
  // after the flags `npm start` gives it (package.json "start")
  const nodeArgs = [...serviceLaunch(REPO_ROOT).nodeFlags, ...(process.env.BENCH_SERVICE_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "")]
  const spawnNode = async (): Promise<ServiceProcess> => {
    const dataDir = makeTempDir("service")
    const port = await freeLoopbackPort()
    return { ...spawnService({ ...env, PORT: String(port), DATA_DIR: dataDir }, nodeArgs), origin: `https://127.0.0.1:${port}`, dataDir }
  }
  const processes: Array<ServiceProcess> = []
  const agent = new Agent({
    connections: CLIENT_CONNECTIONS,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    connect: { rejectUnauthorized: false }
  })
  const cleanup = async () => {
    for (const { child } of processes) if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
    for (const { child } of processes) await waitForExit(child, 15_000)
    await agent.close().catch(() => {})
    for (const { dataDir } of processes) removeTempDir(dataDir)
  }
  let key: string
  try {
    for (let i = 0; i < nodes; i++) processes.push(await spawnNode())
    for (const node of processes) await waitReady(node.origin, agent, node.exited, Date.now() + 90_000)
    await cli(env, ["project", "create", "bench", "--monthly-quota", "100000000"])
    key = (await cli(env, ["key", "create", "bench"])).split("\n").pop()!.trim()
    if (!key.startsWith(`${PREFIX}_`)) throw new Error(`unexpected key from the CLI: ${key}`)
  } catch (error) {
    await cleanup()
    throw error
  }
  const origin = processes[0]!.origin
  const schedules = processes.map((node) => scheduleCall(node.origin, agent, key))
  /** The i-th call's node: the nodes in turn. */
  const scheduleOf = (i: number) => schedules[i % schedules.length]!
  const post = postJson(origin, agent, key)
  let calls = 0
  /** A call of the policy endpoints; its body, or a rejection unless it answered `status`. */
  const policyCall = async (method: string, path: string, body: unknown, status: number) => {
    const response = await request(`${origin}${path}`, {
      method,
      dispatcher: agent,
      headers: { [`${PREFIX}-api-key`]: key, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.body.text()
    if (response.statusCode !== status) throw new Error(`${method} ${path} answered ${response.statusCode}: ${text.slice(0, 200)}`)
    return text
  }
  return {
    ingest: (jobs, concurrency, deadlineMs) => runCalls(jobs.length, concurrency, deadlineMs, (i) => scheduleOf(i)(jobs[i]!)),
    load: async (jobs, deadlineMs) => {
      const batch = await runCalls(jobs.length, CLIENT_CONNECTIONS, deadlineMs, (i) => scheduleOf(i)(jobs[i]!), 1)
      if (batch.errors > 0) throw new Error(`loading timewheel failed: ${batch.firstError}`)
      if (batch.timedOut) throw new Error("loading timewheel timed out")
    },
    batch: async (jobs, batchSize, concurrency, deadlineMs, keyed) => {
      const batches = chunks(jobs, batchSize)
      return runCalls(batches.length, concurrency, deadlineMs, async (i) => {
        const batch = batches[i]!
        expectSummary("/bulk", await post("/bulk", { upserts: batch.map((job) => itemOf(job, { keyed })) }), "added", batch.length)
      })
    },
    declare: async (jobs) => {
      const items = jobs.map((job) => itemOf(job))
      // the call as the client sees it, from a request body already serialised
      const timed = async (path: string, body: unknown) => {
        const text = JSON.stringify(body)
        const start = performance.now()
        const answer = await post(path, text)
        return { answer, ms: performance.now() - start }
      }
      const first = await timed("/declare", { tag: "bench", items })
      expectSummary("first /declare", first.answer, "added", jobs.length)
      const again = await timed("/declare", { tag: "bench", items })
      expectSummary("the same /declare again", again.answer, "unchanged", jobs.length)
      const ids = first.answer.operations.map((entry) => entry.id)
      // every row changed: how long does a claim of one of them wait behind the call's transactions?
      const declareUpdate = await withLockProbe(databaseUrl, ids, () =>
        timed("/declare", { tag: "bench", items: jobs.map((job) => itemOf(job, { change: "changed" })) }))
      expectSummary("/declare changing every item", declareUpdate.result.answer, "updated", jobs.length)
      const bulkUpdate = await withLockProbe(databaseUrl, ids, () =>
        timed("/bulk", { upserts: jobs.map((job) => ({ ...itemOf(job, { change: "changed again" }), tags: ["bench"] })) }))
      expectSummary("/bulk changing every item", bulkUpdate.result.answer, "updated", jobs.length)
      return {
        items: jobs.length,
        firstMs: first.ms,
        againMs: again.ms,
        declareUpdateMs: declareUpdate.result.ms,
        declareLockWaitMs: declareUpdate.maxWaitMs,
        bulkUpdateMs: bulkUpdate.result.ms,
        bulkLockWaitMs: bulkUpdate.maxWaitMs
      }
    },
    tagPolicy: async (policy) => {
      await policyCall("POST", "/tag-policies", policy, 201)
    },
    targetPolicy: async (policy) => (JSON.parse(await policyCall("POST", "/target-policies", policy, 201)) as { id: string }).id,
    deleteTargetPolicy: async (id) => {
      await policyCall("DELETE", `/target-policies/${id}`, undefined, 204)
    },
    scheduleOne: (job) => scheduleOf(calls++)(job),
    endpoint: { origin, apiKey: key, headerPrefix: PREFIX },
    pid: processes[0]!.child.pid!,
    stop: async () => {
      // the peak RSS of the largest node
      const rss = Math.max(...processes.map(({ child }) => peakRssKiB(child.pid!)))
      for (const { exited, errors } of processes) {
        const exit = exited()
        if (exit !== undefined) process.stderr.write(`bench: ${exit}\n`)
        else if (errors.length > 0) process.stderr.write(`bench: timewheel stderr (last lines):\n${errors.join("\n")}\n`)
      }
      await cleanup()
      return rss
    }
  }
}
