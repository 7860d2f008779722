// The statements on triggers a shard's mark (shardMarks.ts) covers: fetching what an advance fired
// (no write: the mark is the claim), finding fired triggers nobody holds in memory (a sweep), taking
// over the fired triggers of a shard's previous owner, and giving back fired triggers a stopping
// node will not send.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { Keyring } from "../domain/sealing.ts"
import { type ClaimedRow, DUE_STATUSES } from "../domain/trigger.ts"
import { DELIVERY_COLUMN_COUNT, deliveryColumns, deliveryRowOfValues } from "./deliveryRows.ts"
import { executionsInsert, interruptedExecution } from "./executions.ts"
import { GATED_TAGS_SQL } from "./gates.ts"
import { EncryptionKeys } from "./sealedRequests.ts"
import { firedSql } from "./shardMarks.ts"
import { statusList } from "./sqlLists.ts"

/** A pending trigger an advance of its shard's mark reached. */
export interface FiredRow {
  /**
   * Keyed or a generator's instance: the mark does not cover it; it is to be claimed
   * (schedulerQueries.ts triggersClaim), which makes a gated one wait in PostgreSQL (store/gates.ts).
   */
  readonly claimNeeded: boolean
  /** What to send (for a trigger the mark covers: with its gated tags, which admit it in memory), and when. */
  readonly row: ClaimedRow
  /** Keyset position of the row in its shard's (due_at, id) order, for the next page. */
  readonly cursor: FetchCursor
}

/** A position in a shard's (due_at, id) order: the due time as PostgreSQL prints it (exact to the µs). */
export interface FetchCursor {
  readonly dueAt: string
  readonly id: string
}

/**
 * The columns a fetch reads after `deliveryColumns` (`firedColumns`), by position: the rows are read
 * as values, one array each (no object per row built by the driver, then copied into the row).
 */
const DUE_MS = DELIVERY_COLUMN_COUNT
const DUE_TEXT = DELIVERY_COLUMN_COUNT + 1
const UPDATED_US = DELIVERY_COLUMN_COUNT + 2
const CLAIM_NEEDED = DELIVERY_COLUMN_COUNT + 3
const GATE_TAGS = DELIVERY_COLUMN_COUNT + 4

/** `deliveryColumns` and the fetch's own, in the positions above. */
const firedColumns = (sql: SqlClient.SqlClient, now: Date) =>
  sql`${deliveryColumns(sql, now)},
    (extract(epoch FROM t.due_at) * 1000)::bigint::text AS due_ms, t.due_at::text AS due_text,
    (extract(epoch FROM t.updated_at) * 1000000)::bigint::text AS updated_us,
    (t.custom_key IS NOT NULL OR t.generator_id IS NOT NULL) AS claim_needed, ${sql.unsafe(GATED_TAGS_SQL)} AS gate_tags`

/** A fetched row (values in `firedColumns` order) as what to send. */
const firedRowOf = (v: ReadonlyArray<unknown>, keys: Keyring | null): FiredRow => {
  const id = v[0] as string
  return {
    claimNeeded: v[CLAIM_NEEDED] as boolean,
    row: deliveryRowOfValues(v, keys, false, v[GATE_TAGS] as Array<string>, { seenUs: v[UPDATED_US] as string }, Number(v[DUE_MS] as string)),
    cursor: { dueAt: v[DUE_TEXT] as string, id }
  }
}

/** `'-infinity'` for a mark that never moved, else the instant. */
const instant = (ms: number) => (ms === -Infinity ? "-infinity" : new Date(ms).toISOString())

/**
 * After the shard's mark moved from `afterMs` to `untilMs`: the pending triggers due in
 * (afterMs, untilMs] (a page of at most `limit` in (due_at, id) order from `cursor`), and, on the
 * first page, those of `lateIds` due at or before `afterMs` (wake-ups of triggers that landed under
 * the mark). No lock and no write: the mark already holds them for this node (shardMarks.ts).
 */
export const triggersFetchFired = Effect.fnUntraced(function*(input: {
  readonly shard: number
  readonly afterMs: number
  readonly untilMs: number
  readonly lateIds: ReadonlyArray<string>
  readonly cursor: FetchCursor | null
  readonly limit: number
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const columns = firedColumns(sql, new Date(input.nowMs))
  const pending = sql`t.shard = ${input.shard} AND t.status IN ${statusList(sql, DUE_STATUSES)}`
  const after = instant(input.afterMs)
  const late = input.cursor === null && input.lateIds.length > 0
    ? sql`(SELECT ${columns} FROM triggers t JOIN projects p ON p.id = t.project_id
        WHERE t.id = ANY(${input.lateIds}::uuid[]) AND ${pending} AND t.due_at <= ${after}::timestamptz) UNION ALL`
    : sql``
  const from = input.cursor === null
    ? sql`t.due_at > ${after}::timestamptz`
    : sql`(t.due_at, t.id) > (${input.cursor.dueAt}::timestamptz, ${input.cursor.id}::uuid)`
  const rows = yield* sql`${late}
    (SELECT ${columns} FROM triggers t JOIN projects p ON p.id = t.project_id
      WHERE ${pending} AND ${from} AND t.due_at <= ${new Date(input.untilMs)}
      ORDER BY t.due_at, t.id LIMIT ${input.limit})`.values
  const keys = yield* EncryptionKeys
  const page: Array<FiredRow> = new Array(rows.length)
  for (let i = 0; i < rows.length; i++) page[i] = firedRowOf(rows[i]!, keys)
  return page
})

/**
 * The first page of several shards' fetches at once (the node's shards firing at the same grid
 * instant, scheduler/markBatcher.ts): for each, as `triggersFetchFired` without `lateIds` or a
 * cursor. Returns each shard's page, by shard.
 */
export const triggersFetchFiredMany = Effect.fnUntraced(function*(input: {
  readonly fetches: ReadonlyArray<{ readonly shard: number; readonly afterMs: number; readonly untilMs: number; readonly limit: number }>
  readonly nowMs: number
}) {
  const pages = new Map<number, Array<FiredRow>>(input.fetches.map((fetch) => [fetch.shard, []]))
  if (input.fetches.length === 0) return pages
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`SELECT f.* FROM unnest(
      ${input.fetches.map((f) => f.shard)}::int[], ${input.fetches.map((f) => instant(f.afterMs))}::timestamptz[],
      ${input.fetches.map((f) => new Date(f.untilMs).toISOString())}::timestamptz[], ${input.fetches.map((f) => f.limit)}::int[]
    ) AS v(shard, after, until, lim)
    CROSS JOIN LATERAL (SELECT ${firedColumns(sql, new Date(input.nowMs))}, t.due_at AS due_order
      FROM triggers t JOIN projects p ON p.id = t.project_id
      WHERE t.shard = v.shard AND t.status IN ${statusList(sql, DUE_STATUSES)} AND t.due_at > v.after AND t.due_at <= v.until
      ORDER BY t.due_at, t.id LIMIT v.lim) f
    ORDER BY f.shard, f.due_order, f.id`.values
  const keys = yield* EncryptionKeys
  for (const row of rows) pages.get(row[1] as number)?.push(firedRowOf(row, keys))
  return pages
})

/**
 * The fired triggers of the shard, and those under its mark the mark does not cover (to be claimed),
 * by id: after a takeover or a restart of the shard's actor, and now and then, the owner sends those
 * it does not hold in memory (a wake-up lost, a fetch that failed after its advance).
 */
export const triggersUnderMark = Effect.fnUntraced(function*(shard: number) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string }>`
    SELECT t.id FROM triggers t
    WHERE t.shard = ${shard} AND t.status IN ${statusList(sql, DUE_STATUSES)}
      AND t.due_at <= (SELECT m.fired_at FROM shard_marks m WHERE m.shard = ${shard})`
  return rows.map((row) => row.id)
})

/**
 * A new owner's share of what the shard's previous owner fired and did not record, within the
 * takeover's transaction (the mark row locked). Left by a node that is gone: each such attempt may
 * have reached its target, so it is recorded as interrupted (its attempt counted) and the trigger
 * stays fired, for the new owner to send again. Left by a node still alive (its lock session was
 * lost, it is still sending them): they become that node's claims (running, claimed by it), which
 * it records as usual, and which crash recovery finds if it dies. Returns how many.
 */
export const triggersTakeOverFired = Effect.fnUntraced(function*(input: {
  readonly shard: number
  readonly previousNode: string
  readonly previousAlive: boolean
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  const fired = sql.unsafe(firedSql("t"))
  if (input.previousAlive) {
    const rows = yield* sql`UPDATE triggers t SET status = 'running', attempts = t.attempts + 1,
        claimed_by = ${input.previousNode}, claimed_at = LEAST(t.due_at, ${now})
      WHERE t.shard = ${input.shard} AND ${fired} RETURNING t.id`
    return rows.length
  }
  const rows = yield* sql<{
    id: string; project_id: string; attempts: number; url: string; started_at: Date; scheduled_at: Date | null
  }>`UPDATE triggers t SET attempts = t.attempts + 1, updated_at = ${now}
    WHERE t.shard = ${input.shard} AND ${fired}
    RETURNING t.id, t.project_id, t.attempts, t.url, LEAST(t.due_at, ${now}) AS started_at, t.scheduled_at`
  yield* executionsInsert(rows.map((row) => interruptedExecution({
    triggerId: row.id, projectId: row.project_id, attempt: row.attempts, startedAtMs: row.started_at.getTime(),
    triggeredBy: null, url: row.url, scheduledAtMs: row.scheduled_at?.getTime() ?? null, gated: false
  }, input.nowMs)))
  return rows.length
})

/**
 * A stopping node's fired triggers of `shards` that it does not hold (`holding`: those it still
 * sends and records) are made due just after their shard's mark: no longer fired, they are the
 * next owner's to fire. Returns them for wake-ups of those owners.
 */
export const triggersGiveBackFired = Effect.fnUntraced(function*(input: {
  readonly shards: ReadonlyArray<number>
  readonly holding: ReadonlyArray<string>
}) {
  if (input.shards.length === 0) return [] as Array<{ id: string; shard: number; dueAtMs: number }>
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string; shard: number; due_ms: string }>`
    UPDATE triggers t SET due_at = m.fired_at + interval '1 microsecond'
    FROM shard_marks m
    WHERE m.shard = t.shard AND t.shard = ANY(${input.shards}::int[]) AND ${sql.unsafe(firedSql("t"))}
      AND NOT (t.id = ANY(${input.holding}::uuid[]))
    RETURNING t.id, t.shard, (extract(epoch FROM t.due_at) * 1000)::bigint::text AS due_ms`
  return rows.map((row) => ({ id: row.id, shard: row.shard, dueAtMs: Number(row.due_ms) }))
})
