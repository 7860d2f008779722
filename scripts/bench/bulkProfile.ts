// `node scripts/bench/bulkProfile.ts <database url> [--n 40000] [--keyed]`: the batch workload's
// `/bulk` alone on a fresh service (calls of 1,000, 4 callers, after a warm-up of 10,000), with the
// service's CPU, PostgreSQL's CPU and the WAL per job around the timed calls. With
// BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=…" the service writes a profile at its stop
// (bulkBreakdown.ts reads it by stage). The service runs on the database given, as it is: give an
// empty database of its own (it migrates it and creates the project `bench`, so a second run needs
// a new one), not a server's `postgres` database; run it with Node 24 (`node_modules/.bin/node`).
import { performance } from "node:perf_hooks"
import type { JobSpec } from "./common.ts"
import { costProbe } from "./costs.ts"
import { startTimewheel } from "./timewheel.ts"

const args = process.argv.slice(2)
const databaseUrl = args[0]!
const nAt = args.indexOf("--n")
const n = nAt === -1 ? 40_000 : Number(args[nAt + 1])
const keyed = args.includes("--keyed")
const base = Date.now() + 3_600_000
const jobsFrom = (first: number, count: number): Array<JobSpec> =>
  Array.from({ length: count }, (_, i) => ({
    id: first + i, url: `http://127.0.0.1:9/r/${first + i}`, runAtMs: base + i, body: JSON.stringify({ n: first + i })
  }))
const system = await startTimewheel(databaseUrl)
try {
  const deadlineMs = Date.now() + 600_000
  await system.batch(jobsFrom(10_000_000, 10_000), 1_000, 4, deadlineMs, keyed)
  const probe = await costProbe(databaseUrl, system.pid)
  const before = await probe.snapshot()
  const started = performance.now()
  const batch = await system.batch(jobsFrom(0, n), 1_000, 4, deadlineMs, keyed)
  const ms = performance.now() - started
  const costs = await probe.perOperation(before, await probe.snapshot(), n)
  process.stdout.write(`${JSON.stringify({ keyed, n, ms: Math.round(ms), perS: Math.round((n / ms) * 1000), errors: batch.errors, firstError: batch.firstError, costs })}\n`)
} finally {
  await system.stop()
}
