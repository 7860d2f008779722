// `node scripts/bench/declareRounds.ts [--rounds 3] [--items 10000]`: the batch workload's /declare
// measurements alone (timewheel.ts `declare`: the first call, the same call again, /declare and /bulk
// changing every item), `--rounds` times on one service and a fresh database, each round on new keys
// of the same tag (so a round's first call also cancels the previous round's items). Prints each
// round and the medians. DATABASE_URL names the server (else the embedded one).
import { freshDatabase, openDatabaseServer } from "./database.ts"
import type { JobSpec } from "./common.ts"
import type { DeclareFigures } from "./system.ts"
import { startTimewheel } from "./timewheel.ts"

const flag = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`)
  return at > 0 ? Number(process.argv[at + 1]) : fallback
}
const rounds = flag("rounds", 3)
const items = flag("items", 10_000)

const server = await openDatabaseServer()
const database = await freshDatabase(server, "declare_rounds")
const system = await startTimewheel(database.url)
const base = Date.now() + 3_600_000
const jobsFrom = (first: number): Array<JobSpec> =>
  Array.from({ length: items }, (_, i) => ({
    id: first + i,
    url: `http://127.0.0.1:9/declare/${first + i}`,
    runAtMs: base + first + i,
    body: JSON.stringify({ n: first + i })
  }))
const figures: Array<DeclareFigures> = []
try {
  for (let r = 0; r < rounds; r++) {
    const f = await system.declare!(jobsFrom(r * items), Date.now() + 120_000)
    figures.push(f)
    console.log(`round ${r + 1}: first ${f.firstMs.toFixed(0)} ms, again (unchanged) ${f.againMs.toFixed(0)} ms, ` +
      `declare changing all ${f.declareUpdateMs.toFixed(0)} ms, bulk changing all ${f.bulkUpdateMs.toFixed(0)} ms`)
  }
} finally {
  await system.stop()
  await database.drop()
  await server.stop()
}
const median = (key: keyof DeclareFigures) => {
  const values = figures.map((f) => f[key]).sort((a, b) => a - b)
  return values[Math.floor(values.length / 2)]!.toFixed(0)
}
console.log(`medians: again ${median("againMs")} ms, declare changing all ${median("declareUpdateMs")} ms, bulk changing all ${median("bulkUpdateMs")} ms`)
