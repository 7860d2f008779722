// Micro-benchmark: nextFireAfter calls per second for several kinds of cron values.
// Run: npx node scripts/bench/cronNext.ts   (each row chains calls: the next call starts at the
// previous result, so every call does real work; zone caches are warmed up before timing).

import { nextFireAfter, parseCronValue } from "../../src/domain/cron/index.ts"

const CASES: ReadonlyArray<string> = [
  "cron(* * * * * *)",
  "cron(*/5 * * * *)",
  "cron(0 0 29 2 *)",
  "cron(0 9 * * MON-FRI, America/New_York)",
  "cron(0 0 L * *)",
  "cron(0 0 * * 5L)",
  "cron(0 0 * * 1#2)",
  "cron(0 30 2 * * *, Europe/Paris)",
  "cron(*/10 * * * * *, Australia/Sydney)"
]

const START = Date.UTC(2025, 0, 1)
const WARMUP_MS = 200
const MEASURE_MS = 1000

const measure = (value: string): { readonly perSecond: number; readonly lastFire: string } => {
  const parsed = parseCronValue(value)
  if (parsed._tag === "Err") throw new Error(parsed.message)
  const schedule = parsed.schedule
  // Restart from START every 1000 calls so rare schedules stay inside the search bound.
  const run = (budgetMs: number) => {
    let calls = 0
    let after = START
    let last = START
    const end = performance.now() + budgetMs
    while (performance.now() < end) {
      for (let i = 0; i < 1000; i++) {
        const next = nextFireAfter(schedule, after)
        if (next === null) throw new Error(`no next fire for ${value}`)
        last = next
        after = calls % 1000 === 999 ? START : next
        calls++
      }
    }
    return { calls, last }
  }
  run(WARMUP_MS)
  const started = performance.now()
  const { calls, last } = run(MEASURE_MS)
  const elapsed = (performance.now() - started) / 1000
  return { perSecond: calls / elapsed, lastFire: new Date(last).toISOString() }
}

const rows = CASES.map((value) => ({ value, ...measure(value) }))
const width = Math.max(...rows.map((row) => row.value.length))
console.log(`${"value".padEnd(width)}  ${"calls/s".padStart(12)}  ${"µs/call".padStart(8)}`)
for (const row of rows) {
  const perSecond = Math.round(row.perSecond).toLocaleString("en-US")
  const micros = (1e6 / row.perSecond).toFixed(2)
  console.log(`${row.value.padEnd(width)}  ${perSecond.padStart(12)}  ${micros.padStart(8)}`)
}

// Cold cost: the first call in a (zone, year) not seen yet samples that year's offsets through Intl.
const cold = (zone: string): number => {
  const parsed = parseCronValue(`cron(0 9 * * *, ${zone})`)
  if (parsed._tag === "Err") throw new Error(parsed.message)
  const years = 200
  const started = performance.now()
  for (let year = 2200; year < 2200 + years; year++) nextFireAfter(parsed.schedule, Date.UTC(year, 5, 1))
  return ((performance.now() - started) * 1000) / years
}
for (const zone of ["America/New_York", "Australia/Sydney"]) {
  console.log(`first call in an unseen year, ${zone}: ${cold(zone).toFixed(0)} µs`)
}
