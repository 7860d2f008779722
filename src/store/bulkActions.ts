// The bulk actions' rows (migration 8 in store/migrations): the dry run's count, starting an action (its row and
// the fixed set of triggers it acts on, in one transaction: the set is what the filter matched then),
// the reads of GET /actions, and the steps of one chunk (commands/bulkActionChunk.ts) in the chunk's
// transaction: lock the next running action (SKIP LOCKED: one node at a time per action), take its
// next items, mark them done, add to its counters.
// The start reads triggers without locking any: a set is one INSERT … SELECT (0.4 s for 20,000 on
// the busy 2-core machine) and no claim waits behind it.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { BulkActionKind, BulkActionRow } from "../domain/bulkAction.ts"
import type { ReplayOverride } from "../domain/replayOverride.ts"
import type { TriggerFilter } from "../domain/triggerFilter.ts"
import { EncryptionKeys } from "./sealedRequests.ts"
import { openStoredReplay, storedReplay } from "./sealedReplays.ts"
import { triggerFilterClauses } from "./triggerFilter.ts"
import { effectiveStatusSql } from "./shardMarks.ts"

const COLUMNS = "id, action, filter, status, matched, processed, acted, untouched, created_at, finished_at"

/** An action with what a chunk needs besides its view. */
export interface RunningActionRow extends BulkActionRow {
  readonly project_id: string
  readonly replay: ReplayOverride | null
}

/** How many of the project's triggers match (a dry run). */
export const bulkActionsCount = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly filter: TriggerFilter }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM triggers t
    WHERE ${sql.and(triggerFilterClauses(sql, input.projectId, input.filter))}`
  return Number(rows[0]!.n)
})

/**
 * Starts an action: its row, then one item per matching trigger, then the count (an action matching
 * nothing is completed at once). When the same action on the same filter is already running for the
 * project (bulk_actions_same_running), nothing is created and that one is returned.
 */
export const bulkActionsStart = Effect.fnUntraced(function*(input: {
  readonly id: string
  readonly projectId: string
  readonly action: BulkActionKind
  readonly filter: TriggerFilter
  /** The filter as shown (domain/triggerFilter.ts filterJson). */
  readonly filterJson: Record<string, unknown>
  readonly replay: ReplayOverride | null
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  const filterText = JSON.stringify(input.filterJson)
  // its headers sealed when ENCRYPTION_KEYS is set (store/sealedReplays.ts)
  const replay = storedReplay(input.replay, yield* EncryptionKeys)
  const replayKey = sql`coalesce(${replay.key}, (${replay.json}::jsonb)::text)`
  return yield* sql.withTransaction(Effect.gen(function*() {
    const inserted = yield* sql<{ id: string }>`INSERT INTO bulk_actions (id, project_id, action, filter, replay, sealed_with, replay_key,
        status, matched, created_at)
      VALUES (${input.id}, ${input.projectId}, ${input.action}, ${filterText}::jsonb, ${replay.json}::jsonb, ${replay.sealedWith},
        ${replayKey}, 'running', 0, ${now})
      ON CONFLICT DO NOTHING RETURNING id`
    if (inserted.length === 0) {
      const running = yield* sql<BulkActionRow>`SELECT ${sql.unsafe(COLUMNS)} FROM bulk_actions
        WHERE project_id = ${input.projectId} AND action = ${input.action} AND status = 'running'
          AND filter = ${filterText}::jsonb AND replay_key IS NOT DISTINCT FROM ${replayKey}`
      // undefined: the running one finished between the two statements (the caller starts again)
      return { row: running[0], created: false }
    }
    const started = yield* sql<BulkActionRow>`WITH items AS (
        INSERT INTO bulk_action_items (action_id, trigger_id)
        SELECT ${input.id}, t.id FROM triggers t WHERE ${sql.and(triggerFilterClauses(sql, input.projectId, input.filter))}
        RETURNING 1
      ), matched AS (SELECT count(*)::int AS n FROM items)
      UPDATE bulk_actions a SET matched = m.n,
        status = CASE WHEN m.n = 0 THEN 'completed' ELSE 'running' END,
        finished_at = CASE WHEN m.n = 0 THEN ${now}::timestamptz END
      FROM matched m WHERE a.id = ${input.id}
      RETURNING ${sql.unsafe(COLUMNS.split(", ").map((column) => `a.${column}`).join(", "))}`
    return { row: started[0]!, created: true }
  }))
})

/** One action of the project, or undefined. */
export const bulkActionsGet = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly id: string }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<BulkActionRow>`SELECT ${sql.unsafe(COLUMNS)} FROM bulk_actions
    WHERE id = ${input.id} AND project_id = ${input.projectId}`
  return rows[0]
})

/** A page of the project's actions, newest first (bulk_actions_project); `more` when another follows. */
export const bulkActionsList = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly limit: number
  readonly olderThanId?: string | undefined
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<BulkActionRow>`SELECT ${sql.unsafe(COLUMNS)} FROM bulk_actions
    WHERE project_id = ${input.projectId} ${input.olderThanId === undefined ? sql.unsafe("") : sql`AND id < ${input.olderThanId}`}
    ORDER BY id DESC LIMIT ${input.limit + 1}`
  return { rows: rows.slice(0, input.limit), more: rows.length > input.limit }
})

/**
 * In a transaction: the oldest running action no other node is working on, locked until the
 * transaction ends (bulk_actions_running), those in `last` (failing ones) only when no other is free;
 * undefined when there is none.
 */
export const bulkActionsLockNext = Effect.fnUntraced(function*(input: { readonly last: ReadonlyArray<string> }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<Omit<RunningActionRow, "replay"> & {
    replay: { url: string | null; headers: unknown } | null
    sealed_with: string | null
  }>`SELECT ${sql.unsafe(COLUMNS)}, project_id, replay, sealed_with FROM bulk_actions
    WHERE status = 'running' ORDER BY id = ANY(${input.last}::uuid[]), id LIMIT 1 FOR UPDATE SKIP LOCKED`
  const row = rows[0]
  if (row === undefined) return undefined
  const { sealed_with, ...action } = row
  return { ...action, replay: openStoredReplay(row.replay, sealed_with, yield* EncryptionKeys) } satisfies RunningActionRow
})

/** The next `limit` triggers the action has still to act on, in id order. */
export const bulkActionItemsNext = Effect.fnUntraced(function*(input: { readonly actionId: string; readonly limit: number }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ trigger_id: string }>`SELECT trigger_id FROM bulk_action_items
    WHERE action_id = ${input.actionId} ORDER BY trigger_id LIMIT ${input.limit}`
  return rows.map((row) => row.trigger_id)
})

/**
 * Marks the items done (deletes them) and returns each trigger's status now (undefined: deleted). The
 * ids are cast once (store/triggerReplay.ts says why).
 */
export const bulkActionItemsDone = Effect.fnUntraced(function*(input: { readonly actionId: string; readonly ids: ReadonlyArray<string> }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ trigger_id: string; status: string | null }>`DELETE FROM bulk_action_items i
    WHERE i.action_id = ${input.actionId} AND i.trigger_id = ANY((SELECT ${input.ids}::uuid[])::uuid[])
    RETURNING i.trigger_id, (SELECT ${sql.unsafe(effectiveStatusSql("t"))} FROM triggers t WHERE t.id = i.trigger_id) AS status`
  return new Map(rows.map((row) => [row.trigger_id, row.status ?? undefined]))
})

/** Adds a chunk to the counters (`untouched`: the new totals); completed when every item is processed. */
export const bulkActionsAdvance = Effect.fnUntraced(function*(input: {
  readonly id: string
  readonly processed: number
  readonly acted: number
  readonly untouched: Record<string, number>
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<BulkActionRow>`UPDATE bulk_actions SET processed = processed + ${input.processed},
      acted = acted + ${input.acted}, untouched = ${JSON.stringify(input.untouched)}::jsonb,
      status = CASE WHEN processed + ${input.processed} >= matched THEN 'completed' ELSE status END,
      finished_at = CASE WHEN processed + ${input.processed} >= matched THEN ${new Date(input.nowMs)}::timestamptz END
    WHERE id = ${input.id} RETURNING ${sql.unsafe(COLUMNS)}`
  return rows[0]!
})

/** Gives up on an action that keeps failing (the runner's decision); the error is kept. */
export const bulkActionsFail = Effect.fnUntraced(function*(input: { readonly id: string; readonly error: string; readonly nowMs: number }) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`WITH failed AS (
      UPDATE bulk_actions SET status = 'failed', error = ${input.error}, finished_at = ${new Date(input.nowMs)}
      WHERE id = ${input.id} AND status = 'running' RETURNING id
    )
    DELETE FROM bulk_action_items WHERE action_id IN (SELECT id FROM failed)`
})
