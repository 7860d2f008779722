// A /bulk call that only adds, written without the general plan (src/commands/bulkInserts.ts): for the
// same items and ids it must answer the exact text JSON.stringify gives for planBulk's
// `{summary, operations}` (keys with quotes, backslashes, control characters and non-ASCII text; past
// absolute one-shots skipped, now-based ones registered, generators), fill the insert's columns with
// what the general path's rows hold, wake exactly the one-shots due before the horizon, and count the
// triggers it created by kind as the entries do.
import { describe, expect, it } from "vitest"
import { insertsAnswer, planInserts } from "../../src/commands/bulkInserts.ts"
import { rowOf } from "../../src/commands/itemWrites.ts"
import { decodeBulkBody, planBulk, validateBulkBody } from "../../src/domain/bulk.ts"
import type { PlannedTrigger } from "../../src/domain/itemMatch.ts"
import { TriggerColumns } from "../../src/store/itemWrites.ts"

const NOW = Date.parse("2025-06-01T12:00:00.000Z")
const HORIZON = NOW + 60_000
const SHARDS = 7
const URL = "https://example.com/hook"

const upserts = [
  { url: URL, scheduledAt: "2030-01-01T00:00:00.000Z", customKey: "plain", body: { n: 1 }, headers: { "Content-Type": "application/json" } },
  { url: URL, scheduledAt: "2030-01-01T00:00:00.000Z" },
  { url: URL, scheduledAt: "2020-01-01T00:00:00.000Z", customKey: "past \"quoted\" \\ back" },
  { url: URL, scheduledAt: "now", customKey: "now\nline\ttab\u0001ctl" },
  { url: URL, scheduledAt: "now | add 30s", customKey: "é ü 日本 🙂" },
  { url: URL, scheduledAt: "cron(0 9 * * *)", customKey: "daily", tags: ["a", "b"], title: "t" },
  { url: URL, scheduledAt: "2025-06-01T12:00:30.000Z", method: "post", retry: { maxAttempts: 3 } },
  { url: URL, scheduledAt: "2025-06-01T12:05:00.000Z", customKey: "" }
]

const items = () => {
  const decoded = decodeBulkBody({ upserts })
  if (decoded._tag !== "Ok") throw new Error(decoded.reason)
  const valid = validateBulkBody(decoded.value, NOW)
  if (valid._tag !== "Ok") throw new Error(valid.message)
  return valid.upserts
}

/** The same ids in the same order on both paths. */
const ids = () => {
  let n = 0
  return () => `01890a5d-ac96-774b-bcce-${(0xb30209000000 + ++n).toString(16)}`
}

describe("planInserts: what the general plan gives for a call that only adds", () => {
  const general = planBulk({ upserts: items(), cancels: [], nowMs: NOW, triggers: [], newId: ids() })
  const inserts = planInserts({ items: items(), shards: SHARDS, nowMs: NOW, wakeHorizonMs: HORIZON, newId: ids() }, new TriggerColumns(null, upserts.length))

  it("the answer's text, written from the columns, is JSON.stringify of the plan's summary and operations", () => {
    expect(general.summary.skipped).toBe(1)
    expect(insertsAnswer(inserts)).toBe(JSON.stringify({ summary: general.summary, operations: general.operations }))
  })

  it("the columns hold what the plan's rows hold, in order", () => {
    const rows = new TriggerColumns(null, general.itemWrites.length)
    for (const write of general.itemWrites) {
      expect(write._tag).toBe("Insert")
      const row = rowOf((write as { readonly trigger: PlannedTrigger }).trigger, SHARDS)
      rows.push(row.id, row.shard, row.kind, row.status, row.scheduledAtMs, row.cron, row.definition)
    }
    const values = (columns: TriggerColumns) => columns.parameters().map((parameter) => parameter.value)
    expect(values(inserts.columns)).toEqual(values(rows))
  })

  it("wakes the registered one-shots due before the horizon, and counts what it created by kind", () => {
    const entries = general.operations
    const due = entries.filter((entry, i) => entry.kind === "job" && entry.operation === "added" && [3, 4, 6].includes(i))
    expect(inserts.wake.map((w) => w.id)).toEqual(due.map((entry) => entry.id))
    expect(inserts.wake.map((w) => w.dueAtMs)).toEqual([NOW, NOW + 30_000, NOW + 30_000])
    expect(inserts.wake.every((w) => w.shard >= 0 && w.shard < SHARDS)).toBe(true)
    expect(inserts.jobs).toBe(entries.filter((entry) => entry.kind === "job").length)
    expect(inserts.generators).toBe(1)
  })
})
