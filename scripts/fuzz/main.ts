// The long fuzz run (issue 10, "Proof"): 100,000 arbitrary requests (test/support/fuzzInputs.ts:
// /schedule and /cancel headers, the JSON endpoints' bodies, the log endpoints' query parameters and
// ids) against a started service on loopback, then /health. Prints the statuses seen per endpoint,
// every 5xx (the first 20 in full), and whether the service still answers; exits 1 on any 5xx, a
// failed call or a service that stopped answering. Bounded: stops issuing after 30 minutes.
//   npm run fuzz [-- --count N] [--concurrency C] [--seed S] [--root <checkout>]
// DATABASE_URL: a fresh database on that server (else an embedded server in a temporary directory).
import fc from "fast-check"
import { request } from "undici"
import { anyRequest, type FuzzRequest } from "../../test/support/fuzzInputs.ts"
import { runCalls } from "../bench/common.ts"
import { insecureAgent, rssKiB, startService } from "./service.ts"

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

const endpointOf = (req: FuzzRequest): string => {
  const path = req.path.split("?", 1)[0]!
  if (path === "/schedule") return `${req.method} /schedule`
  if (path === "/cancel" || path === "/project/retry-policy") return `${req.method} ${path}`
  if (/^\/jobs\/[^/]*\/executions$/.test(path)) return `${req.method} /jobs/{id}/executions`
  if (path.startsWith("/jobs/")) return "GET /jobs/{id}"
  if (path.startsWith("/executions/")) return "GET /executions/{id}"
  return `${req.method} ${path}`
}

const printable = (req: FuzzRequest) => ({
  ...req,
  ...(req.body instanceof Uint8Array ? { body: `base64:${Buffer.from(req.body).toString("base64")}` } : {})
})

const service = await startService({ ...(ROOT === undefined ? {} : { root: ROOT }), env: { LOG_LEVEL: "error" } })
const agent = insecureAgent(CONCURRENCY)
const started = Date.now()
let exitCode = 0
try {
  const send = async (req: FuzzRequest) => {
    const response = await request(service.origin + req.path, {
      method: req.method,
      dispatcher: agent,
      headers: req.headers.flat(),
      ...(req.body === undefined ? {} : { body: req.body })
    })
    return { status: response.statusCode, text: await response.body.text() }
  }

  const jobIds: Array<string> = []
  for (let i = 0; i < 3; i++) {
    const created = await send({
      method: "POST", path: "/schedule",
      headers: [["ttr-api-key", service.key], ["ttr-url", "http://127.0.0.1:9/hook"], ["ttr-scheduled-at", "2099-01-01T00:00:00Z"]]
    })
    jobIds.push(JSON.parse(created.text).triggerId)
  }

  const statuses = new Map<string, Map<number, number>>()
  const messages = new Map<string, number>()
  const serverErrors: Array<{ readonly request: unknown; readonly status: number; readonly body: string }> = []
  let serverErrorCount = 0
  let sent = 0
  let failedCalls = 0
  let firstFailure: string | undefined
  for (let chunk = 0; chunk * CHUNK < COUNT && Date.now() < DEADLINE_MS; chunk++) {
    const inputs = fc.sample(anyRequest(service.key, jobIds), { numRuns: Math.min(CHUNK, COUNT - chunk * CHUNK), seed: SEED + chunk })
    const batch = await runCalls(inputs.length, CONCURRENCY, DEADLINE_MS, async (i) => {
      const req = inputs[i]!
      const { status, text } = await send(req)
      sent++
      const endpoint = endpointOf(req)
      const byStatus = statuses.get(endpoint) ?? new Map<number, number>()
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1)
      statuses.set(endpoint, byStatus)
      if (status >= 400 && status < 500) {
        const message = text.startsWith("{") ? String(JSON.parse(text).message).replace(/: .*/s, ": …") : `(${status} ${text === "" ? "empty" : "text"})`
        messages.set(`${endpoint.replace(/^\S+ \/schedule/, "/schedule")} ${status} ${message}`, (messages.get(`${endpoint.replace(/^\S+ \/schedule/, "/schedule")} ${status} ${message}`) ?? 0) + 1)
      }
      if (status >= 500) {
        serverErrorCount++
        if (serverErrors.length < 20) serverErrors.push({ request: printable(req), status, body: text.slice(0, 500) })
      }
    }, Number.POSITIVE_INFINITY)
    failedCalls += batch.errors
    firstFailure ??= batch.firstError
    if ((chunk + 1) % 10 === 0) process.stderr.write(`fuzz: ${sent} sent, ${serverErrorCount} 5xx, ${failedCalls} failed calls\n`)
  }

  const health = await send({ method: "GET", path: "/health", headers: [["ttr-api-key", service.key]] }).catch((e: Error) => ({ status: 0, text: e.message }))
  const openapi = await send({ method: "GET", path: "/openapi/json", headers: [] }).catch((e: Error) => ({ status: 0, text: e.message }))
  const totals = new Map<number, number>()
  for (const byStatus of statuses.values()) for (const [status, n] of byStatus) totals.set(status, (totals.get(status) ?? 0) + n)
  const summary = {
    seed: SEED,
    requested: COUNT,
    sent,
    seconds: Math.round((Date.now() - started) / 1000),
    concurrency: CONCURRENCY,
    statuses: Object.fromEntries([...totals].sort(([a], [b]) => a - b)),
    byEndpoint: Object.fromEntries([...statuses].sort(([a], [b]) => a.localeCompare(b)).map(([endpoint, byStatus]) =>
      [endpoint, Object.fromEntries([...byStatus].sort(([a], [b]) => a - b))])),
    commonRefusals: Object.fromEntries([...messages].sort(([, a], [, b]) => b - a).slice(0, 25)),
    serverErrors: serverErrorCount,
    failedCalls,
    ...(firstFailure === undefined ? {} : { firstFailure }),
    afterwards: { health: health.status, healthBody: health.text.slice(0, 200), openapi: openapi.status, alive: service.alive() },
    serviceRssMiB: Math.round(rssKiB(service.pid) / 1024)
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
