// One chunk of a bulk action (docs/bulk-actions.md "Large sets, crashes and calling again"), on
// whichever node runs it: in one short transaction, the oldest running action no other node holds is
// locked, its next CHUNK_SIZE triggers are acted on under the single-trigger rules — a cancel is DELETE
// /cancel's compare-and-set (store/triggers.ts triggersCancel), a replay is POST /jobs/{id}/executions'
// (store/triggerReplay.ts, dead letters only, with the action's URL and headers for that attempt) —
// their items are deleted and the counters advanced. Acting and marking done commit together, so a
// trigger is acted on at most once per action whatever node dies when; a chunk cut short rolls back
// whole and is done again. After the commit, as the single-trigger commands do: cancelled triggers'
// shards are woken, replays handed to delivery on this node (which claimed them) or their gates kicked.
// Neither uses quota.
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { NodeIdentity } from "../cluster/node.ts"
import { Wakeups } from "../cluster/wakeups.ts"
import { type BulkActionRow, untouchedReason } from "../domain/bulkAction.ts"
import { bulkActionItemsDone, bulkActionItemsNext, bulkActionsAdvance, bulkActionsLockNext, type RunningActionRow } from "../store/bulkActions.ts"
import { withTransaction } from "../store/transaction.ts"
import { triggersQueueReplay, type QueuedReplay } from "../store/triggerReplay.ts"
import { triggersCancel, type TriggerRef } from "../store/triggers.ts"
import { handOverReplays } from "./replay.ts"

/**
 * Triggers per chunk: each chunk holds its triggers' rows for one short transaction (its replay
 * statement takes about 15 ms for 500 on a quiet machine), well under what a /bulk of 10,000 holds
 * (BENCHMARKS.md "The redrive workload"); a Reference so tests can make chunks small.
 */
export const BulkChunkSize = Context.Reference<number>("timewheel/BulkChunkSize", { defaultValue: () => 500 })

/** A chunk of this action failed (rolled back); the runner counts these per action. */
export class ChunkFailed extends Data.TaggedError("ChunkFailed")<{ readonly actionId: string; readonly cause: unknown }> {}

/** What the chunk did: the action after it, and what to do once it committed. */
interface ChunkDone {
  readonly action: BulkActionRow
  readonly cancelled: ReadonlyArray<TriggerRef>
  readonly replayed: ReadonlyArray<QueuedReplay>
  readonly projectId: string
}

const addCounts = (totals: Record<string, number>, reasons: ReadonlyArray<string>): Record<string, number> => {
  const next = { ...totals }
  for (const reason of reasons) next[reason] = (next[reason] ?? 0) + 1
  return next
}

const actOn = (action: RunningActionRow, ids: ReadonlyArray<string>, nowMs: number) =>
  Effect.gen(function*() {
    if (action.action === "cancel") {
      const cancelled = yield* triggersCancel({ ids, nowMs })
      return { cancelled, replayed: [] as ReadonlyArray<QueuedReplay>, acted: new Set(cancelled.map((row) => row.id)) }
    }
    const node = (yield* NodeIdentity).id
    const replayed = yield* triggersQueueReplay({
      projectId: action.project_id, ids, node, nowMs, deadLettersOnly: true, override: action.replay
    })
    return { cancelled: [] as ReadonlyArray<TriggerRef>, replayed, acted: new Set(replayed.map((row) => row.id)) }
  })

/** The chunk's transaction; undefined when no running action is free. */
const chunkTransaction = (nowMs: number, last: ReadonlyArray<string>) =>
  withTransaction(Effect.gen(function*() {
    const action = yield* bulkActionsLockNext({ last })
    if (action === undefined) return undefined
    const work = Effect.gen(function*() {
      const ids = yield* bulkActionItemsNext({ actionId: action.id, limit: yield* BulkChunkSize })
      const { cancelled, replayed, acted } = yield* actOn(action, ids, nowMs)
      const statuses = yield* bulkActionItemsDone({ actionId: action.id, ids })
      const reasons = ids.filter((id) => !acted.has(id)).map((id) => untouchedReason(action.action, statuses.get(id)))
      const advanced = yield* bulkActionsAdvance({
        id: action.id, processed: ids.length, acted: ids.filter((id) => acted.has(id)).length,
        untouched: addCounts(action.untouched, reasons), nowMs
      })
      return { action: advanced, cancelled, replayed, projectId: action.project_id } satisfies ChunkDone
    })
    return yield* Effect.mapError(work, (cause) => new ChunkFailed({ actionId: action.id, cause }))
  }))

/**
 * Runs one chunk and its after-commit work; the action it advanced, or undefined when there was none.
 * Actions in `last` (whose chunks failed on this node) are taken only when no other is free.
 */
export const runBulkActionChunk = (last: ReadonlyArray<string> = []) => Effect.gen(function*() {
  const done = yield* chunkTransaction(yield* Clock.currentTimeMillis, last)
  if (done === undefined) return undefined
  if (done.cancelled.length > 0) yield* (yield* Wakeups).wake(done.cancelled.map((row) => ({ shard: row.shard, id: row.id, dueAtMs: null })))
  yield* handOverReplays(done.projectId, done.replayed)
  return done.action
})
