// The scheduler's and delivery's statements on `triggers`: load a shard's due rows into the timer
// wheel, claim due triggers (compare-and-set registered/retrying → running, returning what to send),
// start replayed or recovered ones (queued → running), and recover triggers whose claimer died.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import { type ClaimedRow, CLAIMED_STATUSES, type DeliveryRow, DUE_STATUSES, type HeaderPairs } from "../domain/trigger.ts"
import { statusList } from "./sqlLists.ts"

export interface DueRow {
  readonly id: string
  readonly dueAtMs: number
}

/** An instant before any storable trigger time (year ~1200 BC; PostgreSQL goes back to 4713 BC). */
export const BEGINNING_MS = -1e14

/**
 * Pending triggers of a shard due at or after `fromMs` (inclusive, or after `afterId` within that
 * millisecond) and before `untilMs`, in time
 * order. Uses the partial index triggers_due (shard, due_at).
 */
export const triggersLoadDue = Effect.fnUntraced(function*(input: {
  readonly shard: number
  readonly fromMs: number
  /** Keyset continuation: rows due exactly at `fromMs` with an id at or below this were loaded. */
  readonly afterId: string | null
  readonly untilMs: number
  readonly limit: number
}) {
  const sql = yield* SqlClient.SqlClient
  const from = new Date(input.fromMs)
  const rows = yield* sql<{ id: string; due_ms: string }>`
    SELECT id, (extract(epoch FROM due_at) * 1000)::bigint::text AS due_ms FROM triggers
    WHERE shard = ${input.shard} AND status IN ${statusList(sql, DUE_STATUSES)} AND due_at < ${new Date(input.untilMs)}
      AND ${input.afterId === null ? sql`due_at >= ${from}` : sql`(due_at > ${from} OR (due_at = ${from} AND id > ${input.afterId}))`}
    ORDER BY due_at, id LIMIT ${input.limit}`
  return rows.map((row): DueRow => ({ id: row.id, dueAtMs: Number(row.due_ms) }))
})

interface DeliveryRecord {
  id: string; shard: number; generator_id: string | null; project_id: string; url: string; method: string
  headers: HeaderPairs; body: Uint8Array | null; content_type: string | null; tags: Array<string>; attempts: number
  retry: unknown; retry_policy: unknown; triggered_by: string | null
}

const toDeliveryRow = (row: DeliveryRecord): DeliveryRow => ({
  id: row.id, shard: row.shard, generatorId: row.generator_id, projectId: row.project_id, url: row.url, method: row.method,
  headers: row.headers, body: row.body, contentType: row.content_type, tags: row.tags, attempt: row.attempts,
  retry: row.retry, projectRetry: row.retry_policy, triggeredBy: row.triggered_by
})

/**
 * Claims due triggers and starts their delivery in one statement: a compare-and-set on status that
 * also re-checks the time (so a stale wheel entry, moved or cancelled, never fires), moving them
 * straight to `running` and returning what to send with the project's default retry policy.
 * `untilMs` is the latest due time claimed (the scheduler claims slightly ahead of time).
 */
export const triggersClaim = Effect.fnUntraced(function*(input: {
  readonly ids: ReadonlyArray<string>
  readonly untilMs: number
  readonly node: string
}) {
  if (input.ids.length === 0) return [] as Array<ClaimedRow>
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<DeliveryRecord & { due_ms: string }>`
    UPDATE triggers t SET status = 'running', attempts = t.attempts + 1, claimed_by = ${input.node}
    FROM projects p
    WHERE t.id = ANY(${input.ids}::uuid[]) AND t.status IN ${statusList(sql, DUE_STATUSES)}
      AND t.due_at <= ${new Date(input.untilMs)} AND p.id = t.project_id
    RETURNING t.id, t.shard, t.generator_id, t.project_id, t.url, t.method, t.headers, t.body, t.content_type, t.tags,
      t.attempts, t.retry, p.retry_policy, t.triggered_by, (extract(epoch FROM t.due_at) * 1000)::bigint::text AS due_ms`
  return rows.map((row): ClaimedRow => ({ ...toDeliveryRow(row), dueAtMs: Number(row.due_ms) }))
})

/** Moves queued triggers (replayed or recovered) to running and returns what to send. */
export const triggersStartDelivery = Effect.fnUntraced(function*(input: {
  readonly ids: ReadonlyArray<string>
  readonly node: string
}) {
  if (input.ids.length === 0) return [] as Array<DeliveryRow>
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<DeliveryRecord>`
    UPDATE triggers t SET status = 'running', attempts = t.attempts + 1, claimed_by = ${input.node}
    FROM projects p
    WHERE t.id = ANY(${input.ids}::uuid[]) AND t.status = 'queued' AND p.id = t.project_id
    RETURNING t.id, t.shard, t.generator_id, t.project_id, t.url, t.method, t.headers, t.body, t.content_type, t.tags,
      t.attempts, t.retry, p.retry_policy, t.triggered_by`
  return rows.map(toDeliveryRow)
})

/**
 * Triggers of a shard left queued or running by a node that is no longer connected (killed): put
 * back to queued under this node and returned for delivery (at least once).
 */
export const triggersRecover = Effect.fnUntraced(function*(input: {
  readonly shard: number
  readonly node: string
  readonly liveNodes: ReadonlyArray<string>
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string }>`
    UPDATE triggers SET status = 'queued', claimed_by = ${input.node}
    WHERE shard = ${input.shard} AND status IN ${statusList(sql, CLAIMED_STATUSES)}
      AND (claimed_by IS NULL OR NOT (claimed_by = ANY(${input.liveNodes}::text[])))
    RETURNING id`
  return rows.map((row) => row.id)
})
