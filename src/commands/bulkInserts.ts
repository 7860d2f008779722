// A /bulk call that only adds (docs/declare-and-bulk.md "POST /bulk"): no cancels, and no upsert's
// key names a pending trigger, so every upsert is a new trigger, `added` (or `skipped`, a past
// absolute one-shot). The items go straight into the insert's columns, and the answer is written as
// JSON text from the columns once the insert has run: no planned trigger, write, row or answer entry
// object per item. While the statement runs the call holds only its columns (the caller lets go of
// the items, commands/bulk.ts): that live data is what the garbage collector copies and promotes when
// four calls of 1,000 overlap (BENCHMARKS.md "Ingest and batch"). The answer is the text
// JSON.stringify gives for the general plan's `{summary, operations}` (commands/bulk.ts).
import * as Effect from "effect/Effect"
import type { WakeItem } from "../cluster/wakeups.ts"
import { type Item, itemKind } from "../domain/item.ts"
import { type MatchContext, statusOf } from "../domain/itemMatch.ts"
import { shardOf } from "../domain/trigger.ts"
import type { MetricsShape } from "../metrics/metrics.ts"
import { itemColumnsInsert, type TriggerColumns } from "../store/itemWrites.ts"
import { callTraceContext } from "./callTrace.ts"

export interface InsertsInput {
  readonly items: ReadonlyArray<Item>
  readonly shards: number
  readonly nowMs: number
  /** Triggers due before this instant may sit in a shard actor's timer wheel: a new one wakes it. */
  readonly wakeHorizonMs: number
  readonly newId: () => string
}

export interface InsertsPlan {
  /** Every row to insert; its ids, kinds, statuses and keys also make the answer (`insertsAnswer`). */
  readonly columns: TriggerColumns
  readonly wake: ReadonlyArray<WakeItem>
  readonly added: number
  readonly skipped: number
  /** Triggers created, by kind (for the metrics). */
  readonly jobs: number
  readonly generators: number
}

/** An entry's text: what JSON.stringify writes for `{operation, customKey, kind, id}`. */
const entryText = (operation: string, customKey: string | null, kind: string, id: string): string =>
  `{"operation":"${operation}","customKey":${customKey === null ? "null" : JSON.stringify(customKey)},"kind":"${kind}","id":"${id}"}`

/** The columns and the wake-ups of adding every item (pure but for `newId`); nothing in it refers to the items. */
export const planInserts = (input: InsertsInput, columns: TriggerColumns): InsertsPlan => {
  const context: MatchContext = { nowMs: input.nowMs, runMissed: false, newId: input.newId }
  const wake: Array<WakeItem> = []
  let skipped = 0
  let jobs = 0
  for (let i = 0; i < input.items.length; i++) {
    const item = input.items[i]!
    const id = input.newId()
    const kind = itemKind(item)
    const schedule = item.schedule
    const status = statusOf(schedule, context)
    const shard = shardOf(id, input.shards)
    const onceAtMs = schedule._tag === "Once" ? schedule.fireAtMs : null
    columns.push(id, shard, kind, status, onceAtMs, schedule._tag === "Cron" ? schedule : null, item.definition)
    if (status === "skipped") skipped++
    if (kind === "job") {
      jobs++
      if (status === "registered" && onceAtMs! < input.wakeHorizonMs) wake.push({ shard, id, dueAtMs: onceAtMs })
    }
  }
  const rows = input.items.length
  return { columns, wake, added: rows - skipped, skipped, jobs, generators: rows - jobs }
}

/** The answer's JSON text, from the plan's columns. */
export const insertsAnswer = (plan: InsertsPlan): string => {
  const columns = plan.columns
  let entries = ""
  for (let i = 0; i < columns.length; i++) {
    const operation = columns.statusAt(i) === "skipped" ? "skipped" : "added"
    entries += (i === 0 ? "" : ",") + entryText(operation, columns.customKeyAt(i), columns.kindAt(i), columns.idAt(i))
  }
  const summary = `{"unchanged":0,"added":${plan.added},"skipped":${plan.skipped},"updated":0,"cancelled":0}`
  return `{"summary":${summary},"operations":[${entries}]}`
}

/** Inserts every row of the plan as a new trigger in one statement; the plan once written. */
export const applyInserts = (projectId: string, nowMs: number, plan: InsertsPlan) =>
  Effect.gen(function*() {
    const trace = yield* callTraceContext
    yield* itemColumnsInsert({ projectId, keyScope: null, columns: plan.columns, nowMs, trace })
    return plan
  })

/** Counts what applyInserts created (as countCreated does from entries). */
export const countInserted = (metrics: MetricsShape, plan: InsertsPlan) => {
  metrics.triggersCreated("bulk", "job", plan.jobs)
  metrics.triggersCreated("bulk", "generator", plan.generators)
}
