// `node scripts/bench/stageBreakdown.ts <stage trace> <arrivals>`: where late triggers spent their
// lateness. The stage trace is the service's (STAGE_TRACE_FILE, src/lib/stageTrace.ts), the arrivals
// the precision workload's (BENCH_ARRIVALS_FILE); joined on the sink URL's id. For the triggers at or
// above a percentile of lateness (p99 by default, --p N), the time after the due instant spent in each
// stage: the fetch (not yet in memory at its due time), waiting in the early-release queue after its
// time, preparing, waiting for a sender, and from the send call to the sink's arrival; and how much of
// it the event loop spent stalled or collecting garbage.
import * as fs from "node:fs"

const [traceFile, arrivalsFile] = process.argv.slice(2).filter((a) => !a.startsWith("--"))
const pArg = process.argv.indexOf("--p")
const p = pArg > 0 ? Number(process.argv[pArg + 1]) : 99
if (traceFile === undefined || arrivalsFile === undefined) {
  process.stderr.write("usage: node scripts/bench/stageBreakdown.ts <stage trace> <arrivals> [--p 99]\n")
  process.exit(1)
}

const lines = fs.readFileSync(traceFile, "utf8").trim().split("\n")
const head = JSON.parse(lines[0]!) as { stages: Array<string>; gcs: Array<[number, number, number]>; stalls: Array<[number, number]> }
const { instants, arrivals } = JSON.parse(fs.readFileSync(arrivalsFile, "utf8")) as { instants: Array<number>; arrivals: Array<number | null> }
const S = Object.fromEntries(head.stages.map((s, i) => [s, i]))

interface Joined {
  readonly due: number
  readonly arrival: number
  readonly at: Array<number | undefined>
}
const joined: Array<Joined> = []
for (const line of lines.slice(1)) {
  const r = JSON.parse(line) as { url?: string; at: Array<number | null> }
  const id = r.url === undefined ? undefined : /[?&]id=(\d+)/.exec(r.url)?.[1]
  if (id === undefined) continue
  const arrival = arrivals[Number(id)]
  if (arrival === null || arrival === undefined) continue
  joined.push({ due: instants[Number(id)]!, arrival, at: r.at.map((x) => x ?? undefined) })
}
joined.sort((a, b) => (a.arrival - a.due) - (b.arrival - b.due))
const cut = joined[Math.min(joined.length - 1, Math.ceil((p / 100) * joined.length) - 1)]!
const late = joined.filter((j) => j.arrival - j.due >= cut.arrival - cut.due)

/** Time in [from, to] after `due`. */
const after = (due: number, from: number | undefined, to: number | undefined) =>
  from === undefined || to === undefined ? 0 : Math.max(0, to - Math.max(from, due))
/** Time of [from, to] covered by the intervals (start, length). */
const covered = (intervals: ReadonlyArray<readonly [number, number]>, from: number, to: number) => {
  let total = 0
  for (const [start, length] of intervals) total += Math.max(0, Math.min(to, start + length) - Math.max(from, start))
  return total
}
const gcs = head.gcs.map(([start, length]) => [start, length] as const)
const segments: Array<[string, (j: Joined) => number]> = [
  ["fetch: not in memory at its time (shard woke → mark → fetch)", (j) => after(j.due, -Infinity, j.at[S.fetched!])],
  ["early-release queue after its time", (j) => after(j.due, j.at[S.fetched!], j.at[S.released!])],
  ["prepare (policies) → senders", (j) => after(j.due, j.at[S.released!], j.at[S.pushed!])],
  ["waiting for a sender", (j) => after(j.due, j.at[S.pushed!], j.at[S.sent!])],
  ["send call → sink arrival (request, connection, sink)", (j) => after(j.due, j.at[S.sent!], j.arrival)]
]
const total = late.reduce((sum, j) => sum + (j.arrival - j.due), 0)
const mean = (f: (j: Joined) => number) => late.reduce((sum, j) => sum + f(j), 0) / late.length
const fmt = (x: number) => x.toFixed(1)
const out: Array<string> = []
out.push(`${joined.length} joined; p${p} lateness ${fmt(cut.arrival - cut.due)} ms; ${late.length} triggers at or above it, mean lateness ${fmt(total / late.length)} ms`)
out.push("| stage | mean ms of the lateness | share |")
out.push("| --- | ---: | ---: |")
for (const [label, f] of segments) out.push(`| ${label} | ${fmt(mean(f))} | ${Math.round((100 * mean(f) * late.length) / total)} % |`)
const gcIn = mean((j) => covered(gcs, j.due, j.arrival))
const stallIn = mean((j) => covered(head.stalls, j.due, j.arrival))
out.push(`of which the event loop was stalled (a 1 ms timer ≥ 3 ms late) ${fmt(stallIn)} ms, collecting garbage ${fmt(gcIn)} ms`)
const ahead = mean((j) => (j.at[S.fetched!] ?? j.due) - j.due)
out.push(`fetched relative to due (mean, negative = ahead): ${fmt(ahead)} ms; woke→marked ${fmt(mean((j) => (j.at[S.marked!] ?? 0) - (j.at[S.woke!] ?? 0)))} ms, marked→fetched ${fmt(mean((j) => (j.at[S.fetched!] ?? 0) - (j.at[S.marked!] ?? 0)))} ms`)
const all = (f: (j: Joined) => number) => joined.reduce((sum, j) => sum + f(j), 0) / joined.length
out.push(`all triggers: woke→marked ${fmt(all((j) => (j.at[S.marked!] ?? 0) - (j.at[S.woke!] ?? 0)))} ms, marked→fetched ${fmt(all((j) => (j.at[S.fetched!] ?? 0) - (j.at[S.marked!] ?? 0)))} ms, fetched ahead of due ${fmt(all((j) => j.due - (j.at[S.fetched!] ?? j.due)))} ms`)
const stallTotal = head.stalls.reduce((s, [, l]) => s + l, 0)
const gcTotal = head.gcs.reduce((s, [, l]) => s + l, 0)
const bigStalls = [...head.stalls].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([, l]) => fmt(l))
out.push(`whole run: ${head.stalls.length} stalls (${fmt(stallTotal)} ms; largest ${bigStalls.join(", ")}), ${head.gcs.length} collections (${fmt(gcTotal)} ms; largest ${fmt(Math.max(0, ...head.gcs.map(([, l]) => l)))})`)
process.stdout.write(out.join("\n") + "\n")
