// `node scripts/bench/declareProfileBreakdown.ts <file.cpuprofile> [--calls N] [--from S]`: where the
// service's CPU went in a profile taken during declareProfile.ts — self time and inclusive time by
// function (module:name), in ms per call, over the samples from `--from` to `--to` seconds into the
// profile; by default over the busiest stretch between idle gaps of a second or more (declareProfile.ts
// pauses two seconds between the first call and the unchanged ones, and before stopping).
// Only samples of work count (not idle, not `(program)`).
import { type CallFrame, moduleOf } from "./bundleModules.ts"
import { numberOption, profileOfArgs } from "./cpuProfiles.ts"

const args = process.argv.slice(2)
const option = (name: string) => numberOption(args, name)
const calls = option("calls") ?? 20
const profile = profileOfArgs(
  args,
  "node scripts/bench/declareProfileBreakdown.ts <file.cpuprofile> [--calls N] [--from S --to S]",
  { programIsIdle: true }
)
const { byId, parentOf } = profile
const isIdle = profile.idle
// stretches of work: runs of quarter seconds busy more than a tenth of the time, apart by a second or more
const STEP_S = 0.25
const busyBySteps: Array<number> = []
{
  let at = 0
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i]! / 1e6
    if (isIdle(profile.samples[i]!)) continue
    const step = Math.floor(at / STEP_S)
    busyBySteps[step] = (busyBySteps[step] ?? 0) + (profile.timeDeltas[i + 1] ?? 0) / 1e6
  }
}
const stretches: Array<[number, number, number]> = [] // [from, to, busy] in seconds
let lastBusyStep = -Infinity
for (let step = 0; step < busyBySteps.length; step++) {
  const busy = busyBySteps[step] ?? 0
  if (busy <= STEP_S / 10) continue
  if ((step - lastBusyStep) * STEP_S > 1) stretches.push([step * STEP_S, step * STEP_S, 0])
  const current = stretches[stretches.length - 1]!
  current[1] = (step + 1) * STEP_S
  current[2] += busy
  lastBusyStep = step
}
console.log(`stretches (s from the start: from–to, busy): ${stretches.map(([a, b, c]) => `${a.toFixed(2)}–${b.toFixed(2)} (${c.toFixed(2)})`).join(", ")}`)
const busiest = stretches.reduce((best, s) => (s[2] > best[2] ? s : best))
const fromS = option("from") ?? busiest[0]
const toS = option("to") ?? busiest[1]
const label = (frame: CallFrame) => {
  const module = frame.url.startsWith("file://") ? moduleOf(frame.url, frame.lineNumber) : frame.url
  return `${module}:${frame.functionName || "(anonymous)"}`
}
/** Stages of a call by the module of a frame; a sample counts for the stage of the frame nearest its leaf that has one. */
const STAGES: ReadonlyArray<readonly [string, (module: string) => boolean]> = [
  ["body bytes to text (bodyText.js)", (m) => m === "dist/api/bodyText.js"],
  ["body depth check (jsonDepth.js)", (m) => m === "dist/domain/jsonDepth.js"],
  ["JSON.parse of the body, content type (requestParts.js)", (m) => m === "dist/api/requestParts.js"],
  ["decode and validate (item.js, itemBody.js, scheduledAt.js, cron)", (m) =>
    m === "dist/domain/item.js" || m === "dist/domain/itemBody.js" || m === "dist/domain/scheduledAt.js" || m.startsWith("dist/domain/cron")],
  ["stored rows: driver (protocol, row decoding)", (m) => m === "node_modules/@effect/sql-pg"],
  ["stored rows: to StoredTrigger, opened (itemReads.js, sealedRequests.js)", (m) =>
    m === "dist/store/itemReads.js" || m === "dist/store/sealedRequests.js"],
  ["comparison and plan (declare.js, itemMatch.js)", (m) => m === "dist/domain/declare.js" || m === "dist/domain/itemMatch.js"],
  ["the answer JSON (errors.js)", (m) => m === "dist/api/errors.js"],
  ["the command (commands/declare.js)", (m) => m === "dist/commands/declare.js"],
  ["Effect runtime", (m) => m === "node_modules/effect"],
  ["sockets (node:net, streams)", (m) => m === "node:net" || m.startsWith("node:internal/stream")]
]
const moduleKey = (frame: CallFrame) => {
  if (!frame.url.startsWith("file://")) return frame.url
  const module = moduleOf(frame.url, frame.lineNumber)
  const parts = module.split("/")
  return parts[0] === "node_modules" ? `node_modules/${parts[1]!.startsWith("@") ? `${parts[1]}/${parts[2]}` : parts[1]}` : module
}
const stages = new Map<string, number>()
const self = new Map<string, number>()
const inclusive = new Map<string, number>()
let t = 0
let total = 0
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i]!
  if (t / 1e6 < fromS || t / 1e6 > toS) continue
  const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000
  const leaf = byId.get(profile.samples[i]!)!
  if (isIdle(leaf.id)) continue
  total += dt
  const l = label(leaf.callFrame)
  self.set(l, (self.get(l) ?? 0) + dt)
  let stage = leaf.callFrame.functionName === "(garbage collector)" ? "garbage collection" : undefined
  for (let id: number | undefined = leaf.id; id !== undefined && stage === undefined; id = parentOf.get(id)) {
    const module = moduleKey(byId.get(id)!.callFrame)
    stage = STAGES.find(([, test]) => test(module))?.[0]
  }
  stage ??= "other"
  stages.set(stage, (stages.get(stage) ?? 0) + dt)
  const seen = new Set<string>()
  for (let id: number | undefined = leaf.id; id !== undefined; id = parentOf.get(id)) {
    const name = label(byId.get(id)!.callFrame)
    if (seen.has(name)) continue
    seen.add(name)
    inclusive.set(name, (inclusive.get(name) ?? 0) + dt)
  }
}
const top = (map: Map<string, number>, n: number) =>
  [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, ms]) => `${(ms / calls).toFixed(1).padStart(7)} ms/call  ${name}`).join("\n")
console.log(`busy (not idle, not program): ${(total / calls).toFixed(1)} ms/call over ${calls} calls`)
console.log(`\nby stage:\n${top(stages, 20)}`)
console.log(`\nself time:\n${top(self, 45)}`)
console.log(`\ninclusive time:\n${top(inclusive, 70)}`)
