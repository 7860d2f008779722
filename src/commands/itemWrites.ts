// Applying the item writes of a /declare or /bulk plan (domain/itemMatch.ts ItemWrite) inside a
// transaction the caller opens: the triggers replaced (and, for /bulk, those its cancels name) are
// cancelled first, then the updates in place, then the inserts — three statements for any number of
// items. Updates and cancels are compare-and-sets on the status the plan was made from; what they
// missed (a claim or another request came first) is reported, and the caller decides: /bulk starts
// over, /declare carries on with the documented reading of the new state (a key whose trigger is no
// longer pending gets a new trigger: docs/declare-and-bulk.md "What the call does"). Also the wake-ups
// a commit owes the shard actors, and the count of the triggers a call created (metrics).
import * as Effect from "effect/Effect"
import type { WakeItem } from "../cluster/wakeups.ts"
import type { ItemWrite, OperationEntry, PlannedTrigger, StoredTrigger } from "../domain/itemMatch.ts"
import { shardOf } from "../domain/trigger.ts"
import type { MetricsShape } from "../metrics/metrics.ts"
import { type ItemTriggerRow, itemTriggersCancel, itemTriggersInsert, itemTriggersUpdate } from "../store/itemWrites.ts"
import { callTraceContext } from "./callTrace.ts"

/** Counts the triggers a call created (entries `added`, or `skipped` for a new one in the past). */
export const countCreated = (metrics: MetricsShape, source: "declare" | "bulk", operations: ReadonlyArray<OperationEntry>) => {
  for (const entry of operations) {
    if (entry.operation === "added" || entry.operation === "skipped") metrics.triggersCreated(source, entry.kind, 1)
  }
}

export const rowOf = (trigger: PlannedTrigger, shards: number): ItemTriggerRow => ({
  id: trigger.id,
  shard: shardOf(trigger.id, shards),
  kind: trigger.kind,
  status: trigger.status,
  scheduledAtMs: trigger.schedule._tag === "Once" ? trigger.schedule.fireAtMs : null,
  cron: trigger.schedule._tag === "Cron" ? { cronExpr: trigger.schedule.cronExpr, cronTz: trigger.schedule.cronTz } : null,
  definition: trigger.definition,
  digest: trigger.digest ?? null
})

/** The entry of a trigger created because the one its key matched was no longer pending (rule 8). */
export const addedEntry = (trigger: PlannedTrigger): OperationEntry => ({
  operation: trigger.status === "skipped" ? "skipped" : "added",
  customKey: trigger.definition.customKey,
  kind: trigger.kind,
  id: trigger.id
})

export interface AppliedWrites {
  /** Ids asked to be cancelled that were not (their status had changed). */
  readonly missedCancels: ReadonlySet<string>
  /** Updates in place whose trigger had left its status. */
  readonly missedUpdates: ReadonlyArray<PlannedTrigger>
  /** Entries to change, by the id the plan's entry carries: a replace whose old trigger was gone. */
  readonly changedEntries: ReadonlyMap<string, OperationEntry>
  readonly wake: ReadonlyArray<WakeItem>
}

export interface ApplyInput {
  readonly projectId: string
  /** /declare: its tag, scoping the keys of the triggers it creates; /bulk: null. */
  readonly keyScope: string | null
  readonly shards: number
  readonly nowMs: number
  /** Triggers due before this instant may sit in a shard actor's timer wheel: a change to them wakes it. */
  readonly wakeHorizonMs: number
  /** What the plan was made from, by id (the expected statuses). */
  readonly stored: ReadonlyMap<string, StoredTrigger>
  /** Cancelled before the writes' own cancels (/bulk's cancels). */
  readonly cancelIds: ReadonlyArray<string>
  readonly writes: ReadonlyArray<ItemWrite>
  /**
   * `strict` (/bulk): stop at the first statement that missed, before inserting anything.
   * Otherwise (/declare) an update that missed inserts a new trigger with a new id instead, and a
   * replace whose old trigger was no longer pending still inserts its new one (entry `added`).
   */
  readonly strict: boolean
  readonly newId: () => string
}

/** True when the trigger may be in a timer wheel now: a due one-shot (or a held-back or retrying one). */
const mayBeInWheel = (trigger: StoredTrigger | undefined, horizonMs: number): boolean =>
  trigger !== undefined && trigger.kind === "job" &&
  (trigger.status !== "registered" ? trigger.status !== "skipped" : (trigger.scheduledAtMs ?? 0) < horizonMs)

const dueOf = (row: ItemTriggerRow): number | null => (row.status === "registered" ? row.scheduledAtMs : null)

/** Cancels of stored triggers with their expected statuses (unknown ids are skipped). */
export const cancelRows = (ids: ReadonlyArray<string>, stored: ReadonlyMap<string, StoredTrigger>) =>
  ids.flatMap((id) => {
    const trigger = stored.get(id)
    return trigger === undefined ? [] : [{ id, expectedStatus: trigger.status }]
  })

/** Wake-ups for rows cancelled: those that may be in a wheel. */
export const cancelWakeups = (
  rows: ReadonlyArray<{ readonly id: string; readonly shard: number }>,
  stored: ReadonlyMap<string, StoredTrigger>,
  horizonMs: number
): ReadonlyArray<WakeItem> =>
  rows.filter((row) => mayBeInWheel(stored.get(row.id), horizonMs)).map((row) => ({ shard: row.shard, id: row.id, dueAtMs: null }))

export const applyItemWrites = (input: ApplyInput) =>
  Effect.gen(function*() {
    const { projectId, nowMs, stored } = input
    const wake: Array<WakeItem> = []
    const changedEntries = new Map<string, OperationEntry>()

    // 1. cancels: the caller's, then every trigger a replace takes the place of (its key is freed)
    const replaceOld = input.writes.flatMap((w) => (w._tag === "Replace" ? w.cancelIds : []))
    const cancelIds = [...new Set([...input.cancelIds, ...replaceOld])]
    const cancelled = yield* itemTriggersCancel({ projectId, rows: cancelRows(cancelIds, stored), nowMs })
    const cancelledIds = new Set(cancelled.map((row) => row.id))
    const missedCancels = new Set(cancelIds.filter((id) => !cancelledIds.has(id)))
    wake.push(...cancelWakeups(cancelled, stored, input.wakeHorizonMs))
    if (input.strict && missedCancels.size > 0) return { missedCancels, missedUpdates: [], changedEntries, wake }

    // 2. updates in place
    const updates = input.writes.flatMap((w) => (w._tag === "Update" ? [w.trigger] : []))
    const updateRows = updates.map((trigger) => ({ ...rowOf(trigger, input.shards), expectedStatus: stored.get(trigger.id)!.status }))
    // the call's trace context goes with what it writes (tracing on)
    const trace = yield* callTraceContext
    const updated = yield* itemTriggersUpdate({ projectId, rows: updateRows, nowMs, trace })
    const updatedIds = new Set(updated.map((row) => row.id))
    const missedUpdates = updates.filter((trigger) => !updatedIds.has(trigger.id))
    for (const row of updateRows) {
      if (!updatedIds.has(row.id) || row.kind !== "job") continue
      const due = dueOf(row)
      const moved = due !== null && due < input.wakeHorizonMs
      if (moved || mayBeInWheel(stored.get(row.id), input.wakeHorizonMs)) wake.push({ shard: row.shard, id: row.id, dueAtMs: due })
    }
    if (input.strict && missedUpdates.length > 0) return { missedCancels, missedUpdates, changedEntries, wake }

    // 3. inserts: new triggers, the replacements, and (lenient) new triggers for the updates that missed
    const inserts: Array<PlannedTrigger> = []
    for (const write of input.writes) {
      if (write._tag === "Insert") inserts.push(write.trigger)
      if (write._tag !== "Replace") continue
      inserts.push(write.trigger)
      if (missedCancels.has(write.cancelIds[0]!)) changedEntries.set(write.trigger.id, addedEntry(write.trigger))
    }
    for (const missed of missedUpdates) {
      const fresh = { ...missed, id: input.newId() }
      inserts.push(fresh)
      changedEntries.set(missed.id, addedEntry(fresh))
    }
    const insertRows = inserts.map((trigger) => rowOf(trigger, input.shards))
    yield* itemTriggersInsert({ projectId, keyScope: input.keyScope, rows: insertRows, nowMs, trace })
    for (const row of insertRows) {
      const due = dueOf(row)
      if (row.kind === "job" && due !== null && due < input.wakeHorizonMs) wake.push({ shard: row.shard, id: row.id, dueAtMs: due })
    }
    return { missedCancels, missedUpdates, changedEntries, wake } satisfies AppliedWrites
  })
