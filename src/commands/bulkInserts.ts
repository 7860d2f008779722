// A /bulk call that only adds (docs/declare-and-bulk.md "POST /bulk"): no cancels, and no upsert's
// key names a pending trigger, so every upsert is a new trigger, `added` (or `skipped`, a past
// absolute one-shot). The items go straight into the insert's arrays of columns and the answer is
// written as JSON text while they do: no planned trigger, write, row or answer entry object per item.
// That keeps a call's live data small while its statement runs (what the garbage collector copies
// and promotes when four calls of 1,000 overlap: BENCHMARKS.md "Ingest and batch"). The answer is
// the text JSON.stringify gives for the general plan's `{summary, operations}` (commands/bulk.ts).
import * as Effect from "effect/Effect"
import type { WakeItem } from "../cluster/wakeups.ts"
import { type Item, itemKind } from "../domain/item.ts"
import { type MatchContext, statusOf } from "../domain/itemMatch.ts"
import { shardOf } from "../domain/trigger.ts"
import type { MetricsShape } from "../metrics/metrics.ts"
import { itemColumnsInsert, TriggerColumns } from "../store/itemWrites.ts"
import { EncryptionKeys } from "../store/sealedRequests.ts"
import { callTraceContext } from "./callTrace.ts"

export interface InsertsInput {
  readonly projectId: string
  readonly items: ReadonlyArray<Item>
  readonly shards: number
  readonly nowMs: number
  /** Triggers due before this instant may sit in a shard actor's timer wheel: a new one wakes it. */
  readonly wakeHorizonMs: number
  readonly newId: () => string
}

export interface InsertsPlan {
  readonly columns: TriggerColumns
  /** The answer's JSON text. */
  readonly answer: string
  readonly wake: ReadonlyArray<WakeItem>
  /** Triggers created, by kind (for the metrics). */
  readonly jobs: number
  readonly generators: number
}

/** An entry's text: what JSON.stringify writes for `{operation, customKey, kind, id}`. */
const entryText = (operation: string, customKey: string | null, kind: string, id: string): string =>
  `{"operation":"${operation}","customKey":${customKey === null ? "null" : JSON.stringify(customKey)},"kind":"${kind}","id":"${id}"}`

/** The columns, the answer and the wake-ups of adding every item (pure but for `newId`). */
export const planInserts = (input: InsertsInput, columns: TriggerColumns): InsertsPlan => {
  const context: MatchContext = { nowMs: input.nowMs, runMissed: false, newId: input.newId }
  const wake: Array<WakeItem> = []
  let entries = ""
  let added = 0
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
    else added++
    if (kind === "job") {
      jobs++
      if (status === "registered" && onceAtMs! < input.wakeHorizonMs) wake.push({ shard, id, dueAtMs: onceAtMs })
    }
    entries += (i === 0 ? "" : ",") + entryText(status === "skipped" ? "skipped" : "added", item.definition.customKey, kind, id)
  }
  const summary = `{"unchanged":0,"added":${added},"skipped":${skipped},"updated":0,"cancelled":0}`
  return { columns, answer: `{"summary":${summary},"operations":[${entries}]}`, wake, jobs, generators: input.items.length - jobs }
}

/** Inserts every item as a new trigger in one statement; the plan (answer, wake-ups, counts) once written. */
export const applyInserts = (input: InsertsInput) =>
  Effect.gen(function*() {
    const plan = planInserts(input, new TriggerColumns(yield* EncryptionKeys, input.items.length))
    const trace = yield* callTraceContext
    yield* itemColumnsInsert({ projectId: input.projectId, keyScope: null, columns: plan.columns, nowMs: input.nowMs, trace })
    return plan
  })

/** Counts what applyInserts created (as countCreated does from entries). */
export const countInserted = (metrics: MetricsShape, plan: InsertsPlan) => {
  metrics.triggersCreated("bulk", "job", plan.jobs)
  metrics.triggersCreated("bulk", "generator", plan.generators)
}
