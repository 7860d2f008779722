// `node scripts/bench/declareProfile.ts [--items 10000] [--calls 20] [--change] [--keep]`: one /declare of
// `--items` keyed items (the batch workload's items, timewheel.ts), then the same call `--calls` times
// unchanged (with --change: every item's title changed on each call), each timed as the client sees it (the body serialised beforehand), the median printed; pauses of 2 s
// around the unchanged calls set them apart in a profile (declareProfileBreakdown.ts).
// For a CPU profile of the service, give BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=<dir>";
// `--keep` leaves the database (its name printed) for EXPLAIN of the read. DATABASE_URL names the server.
import { Agent, request } from "undici"
import { sleep } from "./common.ts"
import { freshDatabase, openDatabaseServer } from "./database.ts"
import { startTimewheel } from "./timewheel.ts"

const flag = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`)
  return at > 0 ? Number(process.argv[at + 1]) : fallback
}
const items = flag("items", 10_000)
const calls = flag("calls", 20)
const keep = process.argv.includes("--keep")
const change = process.argv.includes("--change")

const server = await openDatabaseServer()
const database = await freshDatabase(server, "declare_profile")
const system = await startTimewheel(database.url)
const agent = new Agent({ connections: 1, keepAliveTimeout: 60_000, connect: { rejectUnauthorized: false } })
const { origin, apiKey, headerPrefix } = system.endpoint!
const base = Date.now() + 3_600_000
const bodyOf = (title?: string) => JSON.stringify({
  tag: "bench",
  items: Array.from({ length: items }, (_, i) => ({
    url: `http://127.0.0.1:9/declare/${i}`,
    scheduledAt: new Date(base + i).toISOString(),
    customKey: `job-${i}`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: { n: i },
    ...(title === undefined ? {} : { title })
  }))
})
const bodies = [bodyOf(), ...(change ? Array.from({ length: calls }, (_, i) => bodyOf(`v${i}`)) : [])]
const declare = async (body: string) => {
  const start = performance.now()
  const response = await request(`${origin}/declare`, {
    method: "POST",
    dispatcher: agent,
    headers: { [`${headerPrefix}-api-key`]: apiKey, "content-type": "application/json" },
    body,
    headersTimeout: 120_000,
    bodyTimeout: 120_000
  })
  const text = await response.body.text()
  const ms = performance.now() - start
  if (response.statusCode !== 200) throw new Error(`/declare answered ${response.statusCode}: ${text.slice(0, 200)}`)
  return { ms, summary: (JSON.parse(text) as { summary: unknown }).summary }
}
try {
  const first = await declare(bodies[0]!)
  console.log(`first ${first.ms.toFixed(0)} ms ${JSON.stringify(first.summary)}`)
  await sleep(2_000) // an idle gap in a profile: the unchanged calls apart (declareProfileBreakdown.ts)
  const times: Array<number> = []
  for (let i = 0; i < calls; i++) {
    const again = await declare(bodies[change ? i + 1 : 0]!)
    times.push(again.ms)
    if (i === 0) console.log(`again: ${JSON.stringify(again.summary)}`)
  }
  console.log(`${change ? "changing" : "unchanged"} calls (ms): ${times.map((ms) => ms.toFixed(0)).join(" ")}`)
  const sorted = [...times].sort((a, b) => a - b)
  console.log(`median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms, min ${sorted[0]!.toFixed(1)} ms`)
  await sleep(2_000)
} finally {
  await agent.close()
  await system.stop()
  if (keep) console.log(`database kept: ${database.url}`)
  else await database.drop()
  await server.stop()
}
