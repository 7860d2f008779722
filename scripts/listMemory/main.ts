// Memory of the service under repeated large list reads (issue 10, item 5): eight triggers with 5 MB
// bodies, then 300 `GET /jobs` at 16 concurrent; prints the page size, the service's RSS before the
// reads, the highest RSS sampled every 50 ms during them, and its RSS 5 s after. Loopback only,
// bounded (a few minutes at most).
//   DATABASE_URL=postgres://… npx node scripts/listMemory/main.ts [--root <checkout>]
// `--root` measures another checkout (e.g. an older commit extracted with `git archive`, with a
// node_modules link), to compare before and after a change.
import { request } from "undici"
import { runCalls, sleep } from "../bench/common.ts"
import { insecureAgent, rssKiB, startService } from "../fuzz/service.ts"

const BODIES = 8
const BODY_BYTES = 5 * 1024 * 1024
const READS = 300
const CONCURRENCY = 16

const rootArg = process.argv.indexOf("--root")
const root = rootArg > 0 ? process.argv[rootArg + 1] : undefined
const service = await startService(root === undefined ? {} : { root })
const agent = insecureAgent(CONCURRENCY)
const mib = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`
try {
  for (let i = 0; i < BODIES; i++) {
    const response = await request(`${service.origin}/schedule`, {
      method: "POST",
      dispatcher: agent,
      headers: { "ttr-api-key": service.key, "ttr-url": "http://127.0.0.1:9/hook", "ttr-scheduled-at": "2099-01-01T00:00:00Z" },
      body: Buffer.alloc(BODY_BYTES, 0x61 + i)
    })
    if (response.statusCode !== 200) throw new Error(`/schedule: ${response.statusCode} ${await response.body.text()}`)
    await response.body.dump()
  }
  await sleep(2_000)
  const before = rssKiB(service.pid)
  let pageBytes = 0
  const statuses = new Map<number, number>()
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, rssKiB(service.pid))), 50)
  const reads = await runCalls(READS, CONCURRENCY, Date.now() + 600_000, async () => {
    const response = await request(`${service.origin}/jobs`, { dispatcher: agent, headers: { "ttr-api-key": service.key } })
    const text = await response.body.text()
    pageBytes = text.length
    statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1)
  })
  clearInterval(sampler)
  await sleep(5_000)
  const after = rssKiB(service.pid)
  console.log(JSON.stringify({
    root: root ?? "this checkout",
    triggers: BODIES, bodyBytes: BODY_BYTES, reads: READS, concurrency: CONCURRENCY,
    statuses: Object.fromEntries(statuses), errors: reads.errors, pageBytes, seconds: +(reads.elapsedMs / 1000).toFixed(1),
    rssBefore: mib(before), rssPeakDuringReads: mib(peak), rssAfter5s: mib(after)
  }))
} finally {
  await agent.close()
  await service.stop()
}
