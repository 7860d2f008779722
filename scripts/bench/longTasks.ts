// What held the event loop in one piece: `node scripts/bench/longTasks.ts <file.cpuprofile> [--over MS]
// [--top N]` lists the stretches of a `--cpu-prof` profile (taken as in BENCHMARKS.md "How to run") in
// which the main thread never went idle for longer than --over ms (10 by default): a trigger due in
// one leaves after it, so these are the stalls of the lateness stage breakdown. For each: when, how
// long, the garbage collection in it, and the modules and functions that took most of it (the frame
// nearest the leaf that is ours or a package's; Node's own modules count for their caller). Run it
// against the dist/ that made the profile.
import * as fs from "node:fs"
import { type CallFrame, moduleOf } from "./bundleModules.ts"

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const args = process.argv.slice(2)
const option = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? fallback : Number(args[i + 1])
}
const file = args.find((arg) => arg.endsWith(".cpuprofile"))
if (file === undefined) {
  process.stderr.write("usage: node scripts/bench/longTasks.ts <file.cpuprofile> [--over MS] [--top N]\n")
  process.exit(2)
}
const overUs = option("over", 10) * 1000
const top = option("top", 15)
const profile = JSON.parse(fs.readFileSync(file, "utf8")) as Profile
const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const parentOf = new Map<number, number>()
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id)
const nameOf = (id: number) => byId.get(id)!.callFrame.functionName

/** The nearest frame to the leaf that is not Node's own nor native: "module function". */
const ownerOf = (id: number): string => {
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    const frame = byId.get(at)!.callFrame
    if (frame.functionName === "(garbage collector)") return "(garbage collector)"
    if (frame.url === "" || frame.url.startsWith("node:")) continue
    const module = moduleOf(frame.url, frame.lineNumber)
    const short = module.includes("node_modules/") ? module.slice(module.lastIndexOf("node_modules/") + 13) : module
    return `${short} ${frame.functionName || "(anonymous)"}`
  }
  return `(node) ${nameOf(id)}`
}

/** The outermost frame of ours or a package's: what the event loop called into. */
const entryOf = (id: number): string => {
  let entry = "(node)"
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    const frame = byId.get(at)!.callFrame
    if (frame.url !== "" && !frame.url.startsWith("node:")) {
      const module = moduleOf(frame.url, frame.lineNumber)
      entry = `${module.includes("node_modules/") ? module.slice(module.lastIndexOf("node_modules/") + 13) : module} ${frame.functionName || "(anonymous)"}`
    }
  }
  return entry
}

interface Stretch {
  readonly startUs: number
  endUs: number
  readonly samples: Array<[number, number]>
}
const stretches: Array<Stretch> = []
let t = 0
let current: Stretch | undefined
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i]!
  const id = profile.samples[i]!
  const us = profile.timeDeltas[i + 1] ?? 0
  const idle = nameOf(id) === "(idle)" || nameOf(id) === "(program)"
  if (idle) {
    if (current !== undefined && current.endUs - current.startUs >= overUs) stretches.push(current)
    current = undefined
    continue
  }
  current ??= { startUs: t, endUs: t, samples: [] }
  current.endUs = t + us
  current.samples.push([id, us])
}

const busy = (stretch: Stretch) => stretch.endUs - stretch.startUs
process.stdout.write(`${stretches.length} stretches of ${overUs / 1000} ms or more without idling\n`)
for (const stretch of stretches.sort((a, b) => busy(b) - busy(a)).slice(0, top)) {
  const owners = new Map<string, number>()
  const entries = new Map<string, number>()
  let gc = 0
  for (const [id, us] of stretch.samples) {
    const owner = ownerOf(id)
    if (owner === "(garbage collector)") gc += us
    owners.set(owner, (owners.get(owner) ?? 0) + us)
    const entry = entryOf(id)
    entries.set(entry, (entries.get(entry) ?? 0) + us)
  }
  const list = (m: Map<string, number>, n: number) =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, us]) => `${(us / 1000).toFixed(1)} ${name}`).join("; ")
  process.stdout.write(
    `\nat ${(stretch.startUs / 1e6).toFixed(3)} s: ${(busy(stretch) / 1000).toFixed(1)} ms, gc ${(gc / 1000).toFixed(1)} ms\n` +
      `  entered from: ${list(entries, 4)}\n  spent in: ${list(owners, 8)}\n`
  )
}
