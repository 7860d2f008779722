// The long fuzz run (RELIABILITY.md "Fuzzing"): arbitrary requests to every endpoint family
// against a started service on loopback — /schedule and /cancel headers, the JSON endpoints' bodies,
// the log endpoints' query parameters and ids, /actions (test/support/fuzzInputs.ts), and /declare, /bulk,
// /tag-policies, /target-policies, /targets, replay, /mcp, the dashboard's endpoints with a signed-in session, the ops port and
// the documents, with deep, wide, huge and broken inputs and many headers
// (test/support/fuzzFamilies.ts) — then /health. Prints the statuses seen per endpoint, every 5xx (the
// first 20 in full), whether the service still answers, and its memory: VmRSS (with the V8 heap and
// external memory its /metrics reports, and where /proc/PID/smaps puts it) when idle after a warm-up of 1,000 requests of the same kinds
// (so that what loads once — the MCP server, the dashboard's files, compiled code — is in the
// baseline), the highest RSS sampled every 100 ms during the run, and 10 s and 60 s after it. Exits 1
// on any 5xx, a failed call or a service that stopped answering. Bounded: stops issuing after 30
// minutes.
//   npm run fuzz [-- --count N] [--concurrency C] [--seed S] [--warmup W] [--root <checkout>] [--env NAME=value …]
// DATABASE_URL: a fresh database on that server (else an embedded server in a temporary directory).
import fc from "fast-check"
import { request } from "undici"
import { everyRequest, type FuzzContext } from "../../test/support/fuzzFamilies.ts"
import type { FuzzRequest } from "../../test/support/fuzzInputs.ts"
import { runCalls, sleep } from "../bench/common.ts"
import { insecureAgent, rssBreakdownKiB, rssKiB, startService } from "./service.ts"

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback
}
const COUNT = Number(arg("count", "100000"))
const CONCURRENCY = Number(arg("concurrency", "8"))
const SEED = Number(arg("seed", String(Date.now() % 2 ** 31)))
const ROOT = process.argv.includes("--root") ? arg("root", "") : undefined
const DEADLINE_MS = Date.now() + 30 * 60_000
const CHUNK = 1_000
const WARMUP = Number(arg("warmup", "1000"))
const ADMIN = { email: "fuzz@example.com", password: "fuzz fuzz fuzz fuzz" }

/** The endpoint a request names, its ids and query left out. */
const endpointOf = (req: FuzzRequest): string => {
  const path = req.path.split("?", 1)[0]!
  const shape = path
    .replace(/^\/jobs\/[^/]*\/executions$/, "/jobs/{id}/executions")
    .replace(/^\/jobs\/[^/]*\/cancel$/, "/jobs/{id}/cancel")
    .replace(/^\/(jobs|executions|tag-policies|target-policies|actions|keys)\/[^/]+$/, "/$1/{id}")
    .replace(/^\/dashboard\/.*$/, "/dashboard/…")
  return `${req.port === "ops" ? "ops " : ""}${req.method} ${shape}`
}

/** A request with this many headers may be refused with 431 (the limit is in bytes, 16 KiB). */
const MANY_HEADERS = 100

/** The request as it can be printed (a binary body as base64, a long one cut). */
const printable = (req: FuzzRequest) => ({
  ...req,
  ...(req.body instanceof Uint8Array ? { body: `base64:${Buffer.from(req.body).toString("base64").slice(0, 2_000)}` } : {}),
  ...(typeof req.body === "string" && req.body.length > 2_000 ? { body: `${req.body.slice(0, 2_000)}… (${req.body.length} characters)` } : {}),
  ...(req.headers.length > 40 ? { headers: [...req.headers.slice(0, 40), [`… ${req.headers.length} headers`, ""]] } : {})
})

/** `--env NAME=value` (repeatable): more environment for the service (e.g. glibc's MALLOC_ tunables). */
const extraEnv = Object.fromEntries(process.argv.flatMap((word, i) =>
  process.argv[i - 1] === "--env" && word.includes("=") ? [[word.slice(0, word.indexOf("=")), word.slice(word.indexOf("=") + 1)]] : []))
const service = await startService({ ...(ROOT === undefined ? {} : { root: ROOT }), env: { LOG_LEVEL: "error", ...extraEnv } })
const agent = insecureAgent(CONCURRENCY)
const started = Date.now()
const mib = (kib: number) => Math.round(kib / 1024)
let exitCode = 0
try {
  const send = async (req: FuzzRequest) => {
    const response = await request((req.port === "ops" ? service.opsOrigin : service.origin) + req.path, {
      method: req.method,
      dispatcher: agent,
      headers: req.headers.flat(),
      ...(req.body === undefined ? {} : { body: req.body })
    })
    return { status: response.statusCode, headers: response.headers, text: await response.body.text() }
  }

  /** What the service's /metrics says of its memory, in MiB. */
  const memory = async () => {
    const scrape = (await send({ method: "GET", path: "/metrics", headers: [], port: "ops" })).text
    const value = (name: string) => Math.round(Number(/^(\S+) (\S+)$/m.exec(scrape.split("\n").filter((line) => line.startsWith(`${name} `)).join("\n"))?.[2]) / 2 ** 20)
    const where = rssBreakdownKiB(service.pid)
    return {
      rss: value("process_resident_memory_bytes"), heapTotal: value("nodejs_heap_size_total_bytes"),
      heapUsed: value("nodejs_heap_size_used_bytes"), external: value("nodejs_external_memory_bytes"),
      brkHeap: mib(where.brkHeap), anonymous: mib(where.anonymous), files: mib(where.files)
    }
  }

  // what the requests use: triggers and a tag policy of the project, a signed-in dashboard session
  const jobIds: Array<string> = []
  for (let i = 0; i < 3; i++) {
    const created = await send({
      method: "POST", path: "/schedule",
      headers: [["ttr-api-key", service.key], ["ttr-url", "http://127.0.0.1:9/hook"], ["ttr-scheduled-at", "2099-01-01T00:00:00Z"]]
    })
    jobIds.push(JSON.parse(created.text).triggerId)
  }
  const policy = await send({
    method: "POST", path: "/tag-policies", headers: [["ttr-api-key", service.key], ["content-type", "application/json"]],
    body: JSON.stringify({ tag: "billing", maxConcurrent: 2 })
  })
  const targetPolicy = await send({
    method: "POST", path: "/target-policies", headers: [["ttr-api-key", service.key], ["content-type", "application/json"]],
    body: JSON.stringify({ origin: "https://api.example.com", maxConcurrent: 2 })
  })
  await service.cli("admin", "create", ADMIN.email, "--password", ADMIN.password)
  const signIn = await send({
    method: "POST", path: "/session", headers: [["content-type", "application/json"], ["origin", service.origin]], body: JSON.stringify(ADMIN)
  })
  const setCookie = [signIn.headers["set-cookie"] ?? []].flat()[0]
  if (signIn.status !== 200 || setCookie === undefined) throw new Error(`sign-in: ${signIn.status} ${signIn.text}`)
  const cookie = setCookie.split(";", 1)[0]!
  const { projects }: { projects: Array<{ id: string; name: string }> } =
    JSON.parse((await send({ method: "GET", path: "/projects", headers: [["cookie", cookie]] })).text)
  const ctx: FuzzContext = {
    key: service.key,
    jobIds,
    policyIds: [JSON.parse(policy.text).id],
    targetPolicyIds: [JSON.parse(targetPolicy.text).id],
    session: { cookie, projectId: projects.find((project) => project.name === "probe")!.id, origin: service.origin }
  }

  // the warm-up: not counted, not measured
  const warmup = fc.sample(everyRequest(ctx), { numRuns: WARMUP, seed: SEED - 1 })
  await runCalls(warmup.length, CONCURRENCY, DEADLINE_MS, async (i) => void (await send(warmup[i]!)), Number.POSITIVE_INFINITY)
  await sleep(10_000)
  const memoryBefore = await memory()
  const rssBefore = rssKiB(service.pid)
  let rssPeak = rssBefore
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssKiB(service.pid) || 0)), 100)

  const statuses = new Map<string, Map<number, number>>()
  const messages = new Map<string, number>()
  const serverErrors: Array<{ readonly request: unknown; readonly status: number; readonly body: string }> = []
  let serverErrorCount = 0
  let sent = 0
  let failedCalls = 0
  let refusedHeaders = 0
  let firstFailure: string | undefined
  const failures: Array<{ readonly request: string; readonly error: string }> = []
  for (let chunk = 0; chunk * CHUNK < COUNT && Date.now() < DEADLINE_MS; chunk++) {
    const inputs = fc.sample(everyRequest(ctx), { numRuns: Math.min(CHUNK, COUNT - chunk * CHUNK), seed: SEED + chunk })
    const batch = await runCalls(inputs.length, CONCURRENCY, DEADLINE_MS, async (i) => {
      const req = inputs[i]!
      const { status, text } = await send(req).catch(async (error: Error) => {
        // a head over the server's limit is answered 431 and the connection closed without reading the
        // rest, so the client may see the connection close instead of the answer: its head sent again
        // alone gets the 431 — a refusal, not a failure
        if (req.headers.length >= MANY_HEADERS) {
          const { body: _, ...head } = req
          const again = await send(head).catch(() => undefined)
          if (again?.status === 431) {
            refusedHeaders++
            return again
          }
        }
        if (failures.length < 20) {
          const bodyBytes = req.body === undefined ? 0 : typeof req.body === "string" ? Buffer.byteLength(req.body) : req.body.byteLength
          failures.push({ request: `${endpointOf(req)}, ${req.headers.length} headers, ${bodyBytes} body bytes`, error: error.message })
        }
        throw error
      })
      sent++
      const endpoint = endpointOf(req)
      const byStatus = statuses.get(endpoint) ?? new Map<number, number>()
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1)
      statuses.set(endpoint, byStatus)
      if (status >= 400 && status < 500) {
        let message = `(${status} ${text === "" ? "empty" : "text"})`
        try {
          if (text.startsWith("{")) message = String(JSON.parse(text).message).replace(/: .*/s, ": …")
        } catch {
          // not JSON after all: the status alone
        }
        const key = `${endpoint.replace(/^\S+ \/schedule/, "/schedule")} ${status} ${message}`
        messages.set(key, (messages.get(key) ?? 0) + 1)
      }
      if (status >= 500) {
        serverErrorCount++
        if (serverErrors.length < 20) serverErrors.push({ request: printable(req), status, body: text.slice(0, 500) })
      }
    }, Number.POSITIVE_INFINITY)
    failedCalls += batch.errors
    firstFailure ??= batch.firstError
    if ((chunk + 1) % 5 === 0) {
      process.stderr.write(`fuzz: ${sent} sent, ${serverErrorCount} 5xx, ${failedCalls} failed calls, RSS ${mib(rssKiB(service.pid))} MiB (peak ${mib(rssPeak)})\n`)
    }
  }
  const seconds = Math.round((Date.now() - started) / 1000)
  clearInterval(sampler)
  await sleep(10_000)
  const rssAfter10s = rssKiB(service.pid)
  await sleep(50_000)
  const rssAfter60s = rssKiB(service.pid)
  const memoryAfter = await memory()

  const health = await send({ method: "GET", path: "/health", headers: [["ttr-api-key", service.key]] }).catch((e: Error) => ({ status: 0, text: e.message }))
  const openapi = await send({ method: "GET", path: "/openapi/json", headers: [] }).catch((e: Error) => ({ status: 0, text: e.message }))
  const session = await send({ method: "GET", path: "/session", headers: [["cookie", cookie]] }).catch((e: Error) => ({ status: 0, text: e.message }))
  const totals = new Map<number, number>()
  for (const byStatus of statuses.values()) for (const [status, n] of byStatus) totals.set(status, (totals.get(status) ?? 0) + n)
  const summary = {
    seed: SEED,
    requested: COUNT,
    sent,
    seconds,
    concurrency: CONCURRENCY,
    statuses: Object.fromEntries([...totals].sort(([a], [b]) => a - b)),
    byEndpoint: Object.fromEntries([...statuses].sort(([a], [b]) => a.localeCompare(b)).map(([endpoint, byStatus]) =>
      [endpoint, Object.fromEntries([...byStatus].sort(([a], [b]) => a - b))])),
    commonRefusals: Object.fromEntries([...messages].sort(([, a], [, b]) => b - a).slice(0, 30)),
    serverErrors: serverErrorCount,
    failedCalls,
    resetAfter431: refusedHeaders,
    ...(firstFailure === undefined ? {} : { firstFailure, failures }),
    afterwards: { health: health.status, healthBody: health.text.slice(0, 200), openapi: openapi.status, session: session.status, alive: service.alive() },
    serviceRssMiB: { before: mib(rssBefore), peak: mib(rssPeak), after10s: mib(rssAfter10s), after60s: mib(rssAfter60s) },
    serviceMemoryMiB: { before: memoryBefore, after60s: memoryAfter }
  }
  console.log(JSON.stringify(summary, null, 2))
  if (serverErrors.length > 0) {
    console.log("first server errors:")
    for (const error of serverErrors) console.log(JSON.stringify(error))
    console.log("service log (tail):")
    for (const line of service.recentLogs().slice(-40)) console.log(line)
  }
  const healthy = service.alive() && openapi.status === 200 && (health.status === 200 || health.status === 503) && health.text.startsWith("{")
  if (serverErrorCount > 0 || failedCalls > 0 || sent < Math.min(COUNT, 1) || !healthy) exitCode = 1
} finally {
  await agent.close()
  await service.stop()
}
process.exit(exitCode)
