// A `--cpu-prof` profile as the bench's readers use it (profileBreakdown.ts, bulkBreakdown.ts,
// declareProfileBreakdown.ts, longTasks.ts): its nodes by id, each node's parent, each sample's time
// from the start, which samples are idle, a frame's package or module (bundleModules.ts), and the
// busy window a reader sums over unless told one.
import * as fs from "node:fs"
import { type CallFrame, moduleOf } from "./bundleModules.ts"

export interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}

export interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
  readonly byId: ReadonlyMap<number, ProfileNode>
  readonly parentOf: ReadonlyMap<number, number>
  /** Each sample's time, µs from the profile's start. */
  readonly times: ReadonlyArray<number>
  /** How long sample i stood for (µs). */
  readonly durationOf: (i: number) => number
  /** The node is the idle thread (`(idle)`, or `(program)` when `program` is idle too). */
  readonly idle: (id: number) => boolean
  /** The owner (`ownerOf`) of the node's frame, worked out once per node. */
  readonly ownerAt: (id: number) => string
}

const readCpuProfile = (file: string, options: { readonly programIsIdle?: boolean } = {}): CpuProfile => {
  const raw = JSON.parse(fs.readFileSync(file, "utf8")) as Pick<CpuProfile, "nodes" | "samples" | "timeDeltas">
  const byId = new Map(raw.nodes.map((node) => [node.id, node]))
  const parentOf = new Map<number, number>()
  for (const node of raw.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id)
  const times: Array<number> = []
  let t = 0
  for (let i = 0; i < raw.samples.length; i++) {
    t += raw.timeDeltas[i]!
    times.push(t)
  }
  const owners = new Map<number, string>()
  return {
    ...raw,
    byId,
    parentOf,
    times,
    ownerAt: (id) => {
      let owner = owners.get(id)
      if (owner === undefined) owners.set(id, owner = ownerOf(byId.get(id)!.callFrame))
      return owner
    },
    durationOf: (i) => raw.timeDeltas[i + 1] ?? 0,
    idle: (id) => {
      const name = byId.get(id)!.callFrame.functionName
      return name === "(idle)" || (options.programIsIdle === true && name === "(program)")
    }
  }
}

/** A frame's package (node_modules), module (dist/…), Node's own module, `native …` or `wasm`. */
const ownerOf = (frame: CallFrame): string => {
  if (frame.url.startsWith("node:")) return frame.url
  if (frame.url === "") return `native ${frame.functionName}`
  if (frame.url.startsWith("wasm")) return "wasm"
  const module = moduleOf(frame.url, frame.lineNumber)
  const parts = module.split("/")
  if (parts[0] !== "node_modules") return module
  return parts[1]!.startsWith("@") ? `${parts[1]}/${parts[2]}` : parts[1]!
}

const STEP_US = 500_000

/**
 * The window to sum over, µs from the start: `fromS`–`toS` when both are given, else the last stretch
 * of half-second steps in which the main thread was busy more than half the time (the measured burst
 * or calls, after the loading).
 */
export const busyWindow = (profile: CpuProfile, fromS?: number, toS?: number): { readonly fromUs: number; readonly toUs: number } => {
  if (fromS !== undefined && toS !== undefined && !Number.isNaN(fromS) && !Number.isNaN(toS)) {
    return { fromUs: fromS * 1e6, toUs: toS * 1e6 }
  }
  const busy = new Map<number, number>()
  for (let i = 0; i < profile.samples.length; i++) {
    const step = Math.floor(profile.times[i]! / STEP_US)
    if (!profile.idle(profile.samples[i]!)) busy.set(step, (busy.get(step) ?? 0) + profile.durationOf(i))
  }
  const steps = [...busy].filter(([, us]) => us > STEP_US / 2).map(([step]) => step).sort((a, b) => a - b)
  let first = steps.length - 1
  while (first > 0 && steps[first - 1] === steps[first]! - 1) first--
  return { fromUs: steps[first]! * STEP_US, toUs: (steps[steps.length - 1]! + 1) * STEP_US }
}

/** The profile the command's arguments name (a `.cpuprofile` file), read; without one, `usage` and exit code 2. */
export const profileOfArgs = (
  args: ReadonlyArray<string>,
  usage: string,
  options: { readonly programIsIdle?: boolean } = {}
): CpuProfile => {
  const file = args.find((arg) => arg.endsWith(".cpuprofile"))
  if (file === undefined) {
    process.stderr.write(`usage: ${usage}\n`)
    process.exit(2)
  }
  return readCpuProfile(file, options)
}

/** A category: its name, and whether a frame (its owner and function name) belongs to it. */
export type Category = readonly [string, (owner: string, functionName: string) => boolean]

/**
 * The category of a sample: that of the frame nearest its leaf that belongs to one (Node's own
 * modules then count for their caller), else `other`.
 */
export const categoryOf = (profile: CpuProfile, categories: ReadonlyArray<Category>, other: string) => (id: number): string => {
  for (let at: number | undefined = id; at !== undefined; at = profile.parentOf.get(at)) {
    const owner = profile.ownerAt(at)
    const name = profile.byId.get(at)!.callFrame.functionName
    const found = categories.find(([, test]) => test(owner, name))
    if (found !== undefined) return found[0]
  }
  return other
}

/** The value of `--name N` among the arguments, if given. */
export const numberOption = (args: ReadonlyArray<string>, name: string): number | undefined => {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? undefined : Number(args[i + 1])
}
