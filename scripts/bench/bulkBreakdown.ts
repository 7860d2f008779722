// What a /bulk call's service CPU goes to, by stage, from a `--cpu-prof` profile of the service taken
// during bulkProfile.ts (BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=…"):
// `node scripts/bench/bulkBreakdown.ts <file.cpuprofile> [--calls 200] [--from S --to S] [--top 25]`.
// The window is found as profileBreakdown.ts finds it (the last busy stretch: the timed calls). Each
// sample counts once, for the stage of the frame nearest the leaf that belongs to one: reading and
// parsing the body, decoding it, validating the items, planning and encoding the rows into the
// insert's columns, the statements (driver and store), the answer, the HTTP server, the Effect
// runtime, garbage collection. `--top` also lists the functions with the most self time. Run it
// against the dist/ that made the profile.
import { busyWindow, type Category, categoryOf, numberOption, profileOfArgs } from "./cpuProfiles.ts"

const named = (...names: ReadonlyArray<string>) => (_: string, name: string) => names.includes(name)
const STAGES: ReadonlyArray<Category> = [
  ["garbage collection", (_, name) => name === "(garbage collector)"],
  ["answer (JSON text, response)", (o, name) =>
    ["insertsAnswer", "entryText", "jsonTextResponse"].includes(name) || (o === "dist/commands/bulk.js" && name === "stringify")],
  ["plan and encode into columns (ids, shards, rows)", (o, name) =>
    o === "dist/commands/bulkInserts.js" || o === "dist/store/columnArrays.js" || o === "dist/domain/ids.js" ||
    o === "dist/domain/bulk.js" && ["planBulk", "bulkLookups"].includes(name) || o === "dist/domain/itemMatch.js" ||
    o === "dist/commands/itemWrites.js" || ["push", "set"].includes(name) && o === "dist/store/itemWrites.js" ||
    o === "dist/domain/sealing.js" || o === "dist/store/sealedRequests.js"],
  ["statements (store, PostgreSQL driver, its socket writes)", (o) => o.startsWith("dist/store/") || o === "@effect/sql-pg" || o === "@effect/sql"],
  ["validate items", (o, name) =>
    named("validateBulkBody", "validateItems", "validateItem", "firstUnstorableField", "resolveRetry", "firstRepeatedKey")(o, name) ||
    o === "dist/domain/schedule.js" || o.startsWith("dist/domain/dates") || o === "dist/domain/scheduledAt.js" ||
    o === "dist/domain/storableText.js" || o.startsWith("dist/domain/cron")],
  ["decode body (shape, items)", (o, name) =>
    named("decodeBulkBody", "decodeItem", "decodeList", "decodeWith", "decodeObject", "decodedAgain")(o, name) ||
    o === "dist/domain/itemBody.js" || (o === "dist/domain/item.js")],
  ["read and parse the body (bytes, text, JSON.parse)", (o, name) =>
    o === "dist/api/bodyText.js" || o === "dist/api/requestParts.js" || o === "native parse"],
  ["auth, route, call trace", (o) => o === "dist/api/auth.js" || o === "dist/commands/apiKeyCache.js" || o.startsWith("dist/api/")
    || o === "dist/commands/callTrace.js"],
  // a socket's frames (node:net, streams) count for whoever writes or reads: the driver or the HTTP server
  ["HTTP server (node:http, platform-node)", (o) => o.startsWith("node:http") || o.startsWith("node:_http") || o === "@effect/platform-node"],
  ["Effect runtime (fibers)", (o) => o === "effect"]
]
const OTHER = "event loop, microtasks, other"

const args = process.argv.slice(2)
const profile = profileOfArgs(args, "node scripts/bench/bulkBreakdown.ts <file.cpuprofile> [--calls 200] [--from S --to S] [--top N]")
const calls = numberOption(args, "calls") ?? 200
const top = numberOption(args, "top") ?? 0
const { fromUs, toUs } = busyWindow(profile, numberOption(args, "from"), numberOption(args, "to"))
const stageOf = categoryOf(profile, STAGES, OTHER)

const spent = new Map<string, number>()
const self = new Map<string, number>()
let busyUs = 0
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!
  if (profile.times[i]! < fromUs || profile.times[i]! >= toUs || profile.idle(id)) continue
  const us = profile.durationOf(i)
  const name = stageOf(id)
  spent.set(name, (spent.get(name) ?? 0) + us)
  const leafName = `${profile.byId.get(id)!.callFrame.functionName || "(anonymous)"} ${profile.ownerAt(id)}`
  self.set(leafName, (self.get(leafName) ?? 0) + us)
  busyUs += us
}

process.stdout.write(
  `window ${(fromUs / 1e6).toFixed(1)}–${(toUs / 1e6).toFixed(1)} s: main thread busy ${(busyUs / 1e3).toFixed(0)} ms, ` +
    `${(busyUs / calls / 1e3).toFixed(2)} ms per call over ${calls}\n\n| stage | share | ms per call |\n|---|---:|---:|\n`
)
for (const [name, us] of [...spent].sort((a, b) => b[1] - a[1])) {
  process.stdout.write(`| ${name} | ${((100 * us) / busyUs).toFixed(1)} % | ${(us / calls / 1e3).toFixed(2)} |\n`)
}
if (top > 0) {
  process.stdout.write(`\n| function (self) | share | ms per call |\n|---|---:|---:|\n`)
  for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`| ${name} | ${((100 * us) / busyUs).toFixed(1)} % | ${(us / calls / 1e3).toFixed(2)} |\n`)
  }
}
