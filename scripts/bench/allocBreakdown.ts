// What the service allocated, by module, from the slices scripts/bench/allocSampler.mjs wrote:
// `node scripts/bench/allocBreakdown.ts <dir> [--from MS --to MS] [--top N]` (wall-clock ms; the
// slices that end within the window; without it every slice). Prints each slice's total, then the
// window's bytes per second by the allocating frame's owner (a package, a module of dist/, Node's
// own), by the nearest frame of our own code (dist/…) above it, and the top allocating functions.
// dist/main.js is one bundle: a frame's module is found by bundleModules.ts, so run this
// against the dist/ that made the slices.
import * as fs from "node:fs"
import { type CallFrame, moduleOf } from "./bundleModules.ts"
import * as path from "node:path"

interface HeapNode {
  readonly callFrame: CallFrame
  readonly selfSize: number
  readonly children: ReadonlyArray<HeapNode>
}

const args = process.argv.slice(2)
const dir = args[0]!
const numberArg = (name: string, fallback: number) => {
  const at = args.indexOf(name)
  return at === -1 ? fallback : Number(args[at + 1])
}
const fromMs = numberArg("--from", -Infinity)
const toMs = numberArg("--to", Infinity)
const top = numberArg("--top", 25)

const moduleOfFrame = (frame: CallFrame): string => {
  if (frame.url.startsWith("node:")) return frame.url
  if (frame.url === "") return `native ${frame.functionName || "(root)"}`
  return moduleOf(frame.url, frame.lineNumber)
}
const ownerOf = (module: string): string => {
  const parts = module.split("/")
  if (parts[0] !== "node_modules") return module
  return parts[1]!.startsWith("@") ? `${parts[1]}/${parts[2]}` : parts[1]!
}

const slices = fs.readdirSync(dir).filter((f) => /^alloc-\d+\.heapprofile$/.test(f))
  .map((f) => ({ file: path.join(dir, f), endMs: Number(/\d+/.exec(f)![0]) }))
  .sort((a, b) => a.endMs - b.endMs)

const byOwner = new Map<string, number>()
const byOurs = new Map<string, number>()
const byFunction = new Map<string, number>()
const byChain = new Map<string, number>()
const byEntry = new Map<string, number>()
const add = (map: Map<string, number>, key: string, bytes: number) => map.set(key, (map.get(key) ?? 0) + bytes)
let windowBytes = 0
let windowStart = Infinity
let windowEnd = -Infinity
let previousEnd: number | undefined
for (const slice of slices) {
  const profile = JSON.parse(fs.readFileSync(slice.file, "utf8")) as { head: HeapNode }
  let total = 0
  const inWindow = slice.endMs >= fromMs && slice.endMs <= toMs && previousEnd !== undefined
  const walk = (node: HeapNode, ours: string, chain: ReadonlyArray<string>, entry: string) => {
    const module = moduleOfFrame(node.callFrame)
    const nextEntry = entry !== "" || module.startsWith("native") ? entry : `${node.callFrame.functionName || "anon"} ${ownerOf(module)}`
    const nextOurs = module.startsWith("dist/") ? module : ours
    const nextChain = module.startsWith("dist/")
      ? [...chain, `${module.slice(5).replace(/\.js$/, "")}:${node.callFrame.functionName || "anon"}:${node.callFrame.lineNumber + 1}`]
      : chain
    if (node.selfSize > 0) {
      total += node.selfSize
      if (inWindow) {
        add(byOwner, ownerOf(module), node.selfSize)
        add(byOurs, nextOurs, node.selfSize)
        add(byEntry, nextChain.length > 0 ? nextChain[0]!.replace(/:\d+$/, "") : `(none) ${nextEntry}`, node.selfSize)
        add(byChain, nextChain.slice(-3).join(" > ") || `(none: entered at ${nextEntry}, allocated in ${ownerOf(module)})`, node.selfSize)
        add(byFunction, `${node.callFrame.functionName || "(anonymous)"} ${module}:${node.callFrame.lineNumber + 1}`, node.selfSize)
      }
    }
    for (const child of node.children) walk(child, nextOurs, nextChain, nextEntry)
  }
  walk(profile.head, "(no frame of ours)", [], "")
  const seconds = previousEnd === undefined ? NaN : (slice.endMs - previousEnd) / 1000
  console.log(`${new Date(slice.endMs).toISOString()} ${slice.endMs} ${(total / 1e6).toFixed(2)} MB ${(total / 1e6 / seconds).toFixed(2)} MB/s${inWindow ? " *" : ""}`)
  if (inWindow) {
    windowBytes += total
    windowStart = Math.min(windowStart, previousEnd!)
    windowEnd = slice.endMs
  }
  previousEnd = slice.endMs
}
const seconds = (windowEnd - windowStart) / 1000
console.log(`\nwindow ${seconds.toFixed(1)} s: ${(windowBytes / 1e6 / seconds).toFixed(2)} MB/s`)
const print = (title: string, map: Map<string, number>) => {
  console.log(`\n| ${title} | KB/s | share |\n|---|---:|---:|`)
  for (const [key, bytes] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`| ${key} | ${(bytes / 1e3 / seconds).toFixed(0)} | ${(100 * bytes / windowBytes).toFixed(1)} % |`)
  }
}
print("allocating frame's owner", byOwner)
print("nearest frame of our code", byOurs)
print("function", byFunction)
print("the outermost frame of our code on the stack (what woke the work), else the event that entered", byEntry)
print("the last three frames of our code on the stack (outer > inner)", byChain)
