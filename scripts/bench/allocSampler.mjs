// Allocation sampling of the service, in time slices: loaded with `--import` through
// BENCH_SERVICE_NODE_ARGS (BENCHMARKS.md "How to run"), with ALLOC_SAMPLE_DIR naming a directory. V8's
// sampling heap profiler keeps the samples of collected objects too (so a slice is what was allocated
// in it, not what stayed alive), and every ALLOC_SLICE_MS (default 2,000) the slice is written as
// `alloc-<wall ms at its end>.heapprofile` and a new one starts. `node scripts/bench/allocBreakdown.ts
// <dir> [--from MS --to MS]` sums the slices of a window by module and function. ALLOC_SURVIVORS=1 drops
// the samples of what a scavenge collected: what is left was promoted to the old generation (whose
// collections make the longer pauses), by where it was allocated.
import * as fs from "node:fs"
import { Session } from "node:inspector"
import * as path from "node:path"

const dir = process.env.ALLOC_SAMPLE_DIR
if (dir !== undefined && dir !== "") {
  const sliceMs = Number(process.env.ALLOC_SLICE_MS ?? 2000)
  const session = new Session()
  session.connect()
  const start = () =>
    session.post("HeapProfiler.startSampling", {
      samplingInterval: 8192,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: process.env.ALLOC_SURVIVORS !== "1"
    })
  const cut = () =>
    session.post("HeapProfiler.stopSampling", (error, result) => {
      if (error === null) {
        fs.writeFileSync(path.join(dir, `alloc-${Date.now()}.heapprofile`), JSON.stringify(result.profile))
      }
      start()
    })
  start()
  setInterval(cut, sliceMs).unref()
  process.once("exit", () => session.post("HeapProfiler.stopSampling", (error, result) => {
    if (error === null) fs.writeFileSync(path.join(dir, `alloc-${Date.now()}.heapprofile`), JSON.stringify(result.profile))
  }))
}
