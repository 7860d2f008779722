// What a delivery's CPU goes to, by component, from a `--cpu-prof` profile of the service taken
// during `npm run bench -- --only delivery --systems timewheel` (BENCH_SERVICE_NODE_ARGS, BENCHMARKS.md
// "How to run"): `node scripts/bench/profileBreakdown.ts <file.cpuprofile> [--deliveries 20000]
// [--from S --to S]`. The window is the last stretch of half-second steps in which the main thread
// was busy more than half the time (the delivery burst, after the loading), unless --from/--to give
// it in seconds from the profile's start. Each sample counts once, for the component of the frame
// nearest the leaf that belongs to one (Node's own modules count for their caller: the socket write
// of a request is undici's, the HMAC called by prepareRequest is the HMAC's, the outcome handled in
// undici's callback is the dispatcher's). dist/main.js is
// one bundle: a frame's module is the `// path` comment esbuild writes before each module, so run
// this against the dist/ that made the profile (before a test or `npm start` rebuilds it).
import { busyWindow, type Category, categoryOf, numberOption, profileOfArgs } from "./cpuProfiles.ts"

/** Components by the module of a frame; GC is its own frame. Node's own modules belong to their caller. */
const COMPONENTS: ReadonlyArray<Category> = [
  ["garbage collection", (_, name) => name === "(garbage collector)"],
  ["the recording statement's JSON (executions, outcomes, rollup)", (o) => o === "dist/store/executions.js"],
  ["`webhook-signature` (one HMAC-SHA256)", (o) => o === "dist/domain/signing.js"],
  ["`prepareRequest` besides the HMAC (URL, header checks)", (o) => o === "dist/delivery/request.js" || o === "dist/delivery/targets.js"],
  ["HTTP exchange: undici (dispatch, request, parser), socket writes and reads", (o) => o === "undici" || o === "wasm"],
  ["PostgreSQL driver: statements out, rows and answers in", (o) => o === "@effect/sql-pg"],
  ["metrics (prom-client and ours)", (o) => o === "prom-client" || o === "dist/metrics/metrics.js"],
  ["delivery bookkeeping: dispatcher, senders, executor, outcome and retry decision", (o) =>
    o.startsWith("dist/delivery/") || o === "dist/domain/retry.js" || o === "dist/domain/ids.js"],
  ["scheduler: marks, fetch, timer wheel, rows decoded", (o) =>
    o.startsWith("dist/scheduler/") || o.startsWith("dist/store/") || o.startsWith("dist/gates/") || o.startsWith("dist/lib/") ||
    o.startsWith("dist/domain/")],
  ["Effect runtime (fibers, queues)", (o) => o === "effect"]
]
const OTHER = "event loop, microtasks, timers, other"

const args = process.argv.slice(2)
const profile = profileOfArgs(args, "node scripts/bench/profileBreakdown.ts <file.cpuprofile> [--deliveries N] [--from S --to S]")
const deliveries = numberOption(args, "deliveries") ?? 20_000
const { fromUs, toUs } = busyWindow(profile, numberOption(args, "from"), numberOption(args, "to"))
const componentOf = categoryOf(profile, COMPONENTS, OTHER)

const spent = new Map<string, number>()
let busyUs = 0
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!
  if (profile.times[i]! < fromUs || profile.times[i]! >= toUs || profile.idle(id)) continue
  const us = profile.durationOf(i)
  const name = componentOf(id)
  spent.set(name, (spent.get(name) ?? 0) + us)
  busyUs += us
}

process.stdout.write(
  `window ${(fromUs / 1e6).toFixed(1)}–${(toUs / 1e6).toFixed(1)} s: main thread busy ${(busyUs / 1e3).toFixed(0)} ms, ` +
    `${(busyUs / deliveries).toFixed(0)} µs per delivery over ${deliveries}\n\n| component | share | µs per delivery |\n|---|---:|---:|\n`
)
for (const [name, us] of [...spent].sort((a, b) => b[1] - a[1])) {
  process.stdout.write(`| ${name} | ${((100 * us) / busyUs).toFixed(1)} % | ${(us / deliveries).toFixed(0)} |\n`)
}
