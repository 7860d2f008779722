// What held the event loop in one piece: `node scripts/bench/longTasks.ts <file.cpuprofile> [--over MS]
// [--top N]` lists the stretches of a `--cpu-prof` profile (taken as in BENCHMARKS.md "How to run") in
// which the main thread never went idle for longer than --over ms (10 by default): a trigger due in
// one leaves after it, so these are the stalls of the lateness stage breakdown. For each: when, how
// long, the garbage collection in it, and the modules and functions that took most of it (the frame
// nearest the leaf that is ours or a package's; Node's own modules count for their caller). Run it
// against the dist/ that made the profile.
import { moduleOf } from "./bundleModules.ts"
import { numberOption, profileOfArgs } from "./cpuProfiles.ts"

const args = process.argv.slice(2)
const overUs = (numberOption(args, "over") ?? 10) * 1000
const top = numberOption(args, "top") ?? 15
const profile = profileOfArgs(args, "node scripts/bench/longTasks.ts <file.cpuprofile> [--over MS] [--top N]", { programIsIdle: true })
const { byId, parentOf } = profile

/** A frame of ours or a package's as "module function" (a package's module from its node_modules path on). */
const labelOf = (frame: { readonly url: string; readonly lineNumber: number; readonly functionName: string }): string => {
  const module = moduleOf(frame.url, frame.lineNumber)
  const short = module.includes("node_modules/") ? module.slice(module.lastIndexOf("node_modules/") + 13) : module
  return `${short} ${frame.functionName || "(anonymous)"}`
}

/** Ours or a package's: not Node's own, not native. */
const isCode = (frame: { readonly url: string }) => frame.url !== "" && !frame.url.startsWith("node:")

/** The frame nearest the leaf that is ours or a package's; garbage collection as itself. */
const spenderOf = (id: number): string => {
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    const frame = byId.get(at)!.callFrame
    if (frame.functionName === "(garbage collector)") return "(garbage collector)"
    if (isCode(frame)) return labelOf(frame)
  }
  return `(node) ${byId.get(id)!.callFrame.functionName}`
}

/** The outermost frame of ours or a package's: what the event loop called into. */
const entryOf = (id: number): string => {
  let entry = "(node)"
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    const frame = byId.get(at)!.callFrame
    if (isCode(frame)) entry = labelOf(frame)
  }
  return entry
}

interface Stretch {
  readonly startUs: number
  endUs: number
  readonly samples: Array<[number, number]>
}
const stretches: Array<Stretch> = []
let current: Stretch | undefined
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!
  if (profile.idle(id)) {
    if (current !== undefined && current.endUs - current.startUs >= overUs) stretches.push(current)
    current = undefined
    continue
  }
  const t = profile.times[i]!
  current ??= { startUs: t, endUs: t, samples: [] }
  current.endUs = t + profile.durationOf(i)
  current.samples.push([id, profile.durationOf(i)])
}

const busy = (stretch: Stretch) => stretch.endUs - stretch.startUs
process.stdout.write(`${stretches.length} stretches of ${overUs / 1000} ms or more without idling\n`)
for (const stretch of stretches.sort((a, b) => busy(b) - busy(a)).slice(0, top)) {
  const spenders = new Map<string, number>()
  const entries = new Map<string, number>()
  let gc = 0
  for (const [id, us] of stretch.samples) {
    const spender = spenderOf(id)
    if (spender === "(garbage collector)") gc += us
    spenders.set(spender, (spenders.get(spender) ?? 0) + us)
    const entry = entryOf(id)
    entries.set(entry, (entries.get(entry) ?? 0) + us)
  }
  const list = (m: Map<string, number>, n: number) =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, us]) => `${(us / 1000).toFixed(1)} ${name}`).join("; ")
  process.stdout.write(
    `\nat ${(stretch.startUs / 1e6).toFixed(3)} s: ${(busy(stretch) / 1000).toFixed(1)} ms, gc ${(gc / 1000).toFixed(1)} ms\n` +
      `  entered from: ${list(entries, 4)}\n  spent in: ${list(spenders, 8)}\n`
  )
}
