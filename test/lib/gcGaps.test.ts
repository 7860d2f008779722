// Young-generation collections in gaps (lib/gcGaps.ts): in a process with `--expose-gc` (as
// `npm start` runs it) a mostly full young generation is collected when asked, a mostly empty one
// is left alone, and it is looked at no more than once per 10 ms; without the flag nothing happens.
import { execFileSync } from "node:child_process"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { collectInGap, gcInGaps } from "../../src/lib/gcGaps.ts"

const MODULE = path.resolve(import.meta.dirname, "../../src/lib/gcGaps.ts")

const script = `
import * as v8 from "node:v8"
import { collectInGap, gcInGaps } from ${JSON.stringify(MODULE)}
const used = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_used_size
const fill = () => { const s = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space"); return s.space_used_size / (s.space_used_size + s.space_available_size) }
globalThis.gc({ type: "minor", execution: "sync" })
const empty = collectInGap(1_000)
// fill the young generation to about 80 % with short-lived garbage
let keep = []
while (fill() < 0.8) { keep.push({ a: [1, 2, 3], b: "x" + keep.length }); if (keep.length > 1000) keep = [] }
const tooSoon = collectInGap(1_005)
const before = used()
const collected = collectInGap(1_020)
console.log(JSON.stringify({ gcInGaps, empty, tooSoon, collected, shrank: used() < before / 2 }))
`

describe("collecting the young generation in gaps", () => {
  it("with --expose-gc: a mostly full young generation is collected, an empty one left alone, at most once per 10 ms", () => {
    const out = execFileSync(process.execPath, ["--expose-gc", "--max-semi-space-size=8", "--input-type=module", "-e", script], { encoding: "utf8" })
    expect(JSON.parse(out)).toEqual({ gcInGaps: true, empty: false, tooSoon: false, collected: true, shrank: true })
  })

  it("without it (this process): nothing", () => {
    expect(gcInGaps).toBe(false)
    expect(collectInGap(1_000_000)).toBe(false)
  })
})
