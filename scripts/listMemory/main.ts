// Memory of the service under large list reads and MCP initializes (RELIABILITY.md "List pages and
// memory"), measured on the service process (VmRSS from /proc, sampled every 50 ms):
// - lists: 500 registered triggers with 65,520-byte bodies of U+0001 (six bytes each once escaped)
//   and 500 executions whose responses are as large (a loopback target answers them), then 8 calls
//   each of GET /jobs?status=registered&limit=500 and GET /executions?limit=500, 4 at a time, and
//   GET /jobs/{id}/executions of a trigger with 100 such attempts;
// - mcp: 400 MCP `initialize` calls carrying 2 MB each, 8 at a time.
// Prints, per scenario, the RSS before (idle, after the setup settled), the highest during the calls,
// and 10 s and 60 s after, with the sizes of the answers. Loopback only, bounded (a few minutes).
//   DATABASE_URL=postgres://… npx node scripts/listMemory/main.ts [--only lists|mcp] [--root <checkout>]
// `--root` measures another checkout (e.g. an older commit extracted with `git archive`, with a
// node_modules link), to compare before and after a change.
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { request } from "undici"
import { runCalls, sleep } from "../bench/common.ts"
import { insecureAgent, rssKiB, startService, type StartedService } from "../fuzz/service.ts"

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : undefined
}
const root = arg("root")
const only = arg("only")
const CONTROL_BODY = Buffer.alloc(65_520, 0x01)
const TRIGGERS = 500
const ATTEMPTS = 100
const CALLS = 8
const CONCURRENCY = 4
const INITIALIZES = 400
const mib = (kib: number) => Math.round(kib / 1024)

/** A loopback target answering every request with 200 and CONTROL_BODY (retries hit it too). */
const startTarget = () =>
  new Promise<{ readonly url: string; readonly close: () => void }>((resolve) => {
    const server = http.createServer((req, res) => {
      req.resume()
      req.on("end", () => res.writeHead(req.url?.startsWith("/fail") ? 500 : 200, { "content-type": "text/plain" }).end(CONTROL_BODY))
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() }))
  })

/** RSS before, highest while `calls` run, and 10 s and 60 s after (MiB), with what `calls` returns. */
const measure = async <A>(service: StartedService, calls: () => Promise<A>) => {
  await sleep(3_000)
  const before = rssKiB(service.pid)
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, rssKiB(service.pid))), 50)
  const started = Date.now()
  const result = await calls()
  const seconds = +((Date.now() - started) / 1000).toFixed(1)
  clearInterval(sampler)
  await sleep(10_000)
  const after10s = rssKiB(service.pid)
  await sleep(50_000)
  const after60s = rssKiB(service.pid)
  return { rssMiB: { before: mib(before), peak: mib(peak), after10s: mib(after10s), after60s: mib(after60s) }, seconds, ...result }
}

const service = await startService(root === undefined ? { env: { LOG_LEVEL: "error" } } : { root, env: { LOG_LEVEL: "error" } })
const agent = insecureAgent(16)
const target = await startTarget()
const call = async (method: string, path: string, headers: Record<string, string>, body?: Buffer | string) => {
  const response = await request(`${service.origin}${path}`, { method, dispatcher: agent, headers: { "ttr-api-key": service.key, ...headers }, ...(body === undefined ? {} : { body }) })
  const text = await response.body.text()
  return { status: response.statusCode, text }
}
const schedule = async (url: string, at: string) => {
  const answer = await call("POST", "/schedule", { "ttr-url": url, "ttr-scheduled-at": at, "ttr-retry-strategy": "none", "content-type": "text/plain" }, CONTROL_BODY)
  if (answer.status !== 200) throw new Error(`/schedule: ${answer.status} ${answer.text}`)
  return JSON.parse(answer.text).triggerId as string
}

const results: Record<string, unknown> = { root: root ?? "this checkout" }
try {
  if (only === undefined || only === "lists") {
    await runCalls(TRIGGERS, 8, Date.now() + 600_000, async () => void (await schedule(`${target.url}/later`, "2099-01-01T00:00:00Z")))
    await runCalls(TRIGGERS, 8, Date.now() + 600_000, async () => void (await schedule(`${target.url}/now`, "now")))
    // one trigger with ATTEMPTS attempts: each fails (500, no retry) and it is replayed until it has them
    const retried = await schedule(`${target.url}/fail`, "now")
    for (let deadline = Date.now() + 300_000; Date.now() < deadline;) {
      const job = JSON.parse((await call("GET", `/jobs/${retried}`, {})).text)
      if (job.attempts >= ATTEMPTS) break
      if (job.status === "completed") await call("POST", `/jobs/${retried}/executions`, { "content-type": "application/json" }, "{\"triggeredBy\":\"retry\"}")
      else await sleep(20)
    }
    // until the 500 deliveries of the "now" triggers are recorded
    const delivered = async () => {
      let count = 0
      let cursor: string | null = null
      do {
        const page: { executions: Array<unknown>; nextCursor: string | null } =
          JSON.parse((await call("GET", `/executions?limit=500&httpStatus=200${cursor === null ? "" : `&cursor=${cursor}`}`, {})).text)
        count += page.executions.length
        cursor = page.nextCursor
      } while (cursor !== null)
      return count
    }
    for (let deadline = Date.now() + 120_000; Date.now() < deadline && (await delivered()) < TRIGGERS;) await sleep(500)
    const sizes = new Map<string, number>()
    const read = (path: string) => async () => {
      const answer = await call("GET", path, {})
      if (answer.status !== 200) throw new Error(`${path}: ${answer.status}`)
      sizes.set(path, Buffer.byteLength(answer.text))
    }
    results.lists = await measure(service, async () => {
      const jobs = await runCalls(CALLS, CONCURRENCY, Date.now() + 600_000, read("/jobs?status=registered&limit=500"))
      const executions = await runCalls(CALLS, CONCURRENCY, Date.now() + 600_000, read("/executions?limit=500"))
      const attempts = await runCalls(CALLS, CONCURRENCY, Date.now() + 600_000, read(`/jobs/${retried}/executions`))
      return { errors: jobs.errors + executions.errors + attempts.errors, firstError: jobs.firstError ?? executions.firstError ?? attempts.firstError, answerBytes: Object.fromEntries(sizes) }
    })
  }
  if (only === undefined || only === "mcp") {
    const big = "x".repeat(2 * 1024 * 1024)
    const initialize = (id: number) => JSON.stringify({
      jsonrpc: "2.0", id, method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: { experimental: { big: { value: big } } }, clientInfo: { name: "probe", version: "1" } }
    })
    const statuses = new Map<number, number>()
    let sessionIds = 0
    results.mcp = await measure(service, async () => {
      const batch = await runCalls(INITIALIZES, 8, Date.now() + 600_000, async (i) => {
        const response = await request(`${service.origin}/mcp`, {
          method: "POST", dispatcher: agent,
          headers: { "ttr-api-key": service.key, "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: initialize(i)
        })
        await response.body.dump()
        statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1)
        if (response.headers["mcp-session-id"] !== undefined) sessionIds++
      })
      return { errors: batch.errors, statuses: Object.fromEntries(statuses), answersWithSessionId: sessionIds }
    })
  }
  console.log(JSON.stringify(results, null, 2))
} finally {
  target.close()
  await agent.close()
  await service.stop()
}
