// Triggers waiting for a tag gate in PostgreSQL (docs/tag-policies.md "How the limits hold across
// nodes"). A gated trigger normally waits in the memory of the node that fired it and is admitted there
// (gates/gatekeeper.ts); one that waits longer, or whose tag is paused or held, is released here:
// `queued`, claimed by no node, with one gate_slots row per gated tag in the gate's order (scheduled
// time, then id). Any node with budget takes the oldest into its memory (claimed by it, still
// `queued`), and marks those it starts `running` (their slots running) until the outcome is recorded,
// which deletes the slots. Keyed triggers and generator instances with a gated tag, and replays, come
// here straight from their claim. A tag is gated when it has a policy (docs/tag-policies.md
// "Backpressure from the target": any policy holds its tag after a refusal; only maxConcurrent and
// throughput limit starts).
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { DeliveryRow } from "../domain/trigger.ts"
import { DELIVERY_COLUMN_COUNT, deliveryColumns, deliveryRowOfValues } from "./deliveryRows.ts"
import { EncryptionKeys } from "./sealedRequests.ts"

/**
 * Whether the trigger `t` has a gated tag (SQL over the alias `t`): no lookup at all for a trigger
 * without tags (the common case), an index probe otherwise.
 */
export const GATED_SQL = `(cardinality(t.tags) > 0 AND EXISTS (
    SELECT 1 FROM tag_policies tp WHERE tp.project_id = t.project_id AND tp.tag = ANY(t.tags)))`
/**
 * Whether the trigger `t`, found by the id of a gate row, waits in PostgreSQL (`queued`), written so
 * that PostgreSQL cannot answer it from the partial index `triggers_inflight`: with statistics taken
 * before a burst, the planner took that index for a row or two and scanned all of it once per gate
 * row, 4–6 s a statement with 7,000 triggers waiting (measured in the gated bench), and the gates
 * starved until autovacuum analyzed the table again, up to a minute later. Written this way, each
 * trigger is looked up by its primary key (or, for a small table, read in one scan).
 */
export const WAITING_SQL = `(t.status || '') = 'queued'`
/** Its gated tags (SQL over the alias `t`). */
export const GATED_TAGS_SQL = `CASE WHEN cardinality(t.tags) = 0 THEN '{}'::text[] ELSE ARRAY(
    SELECT tp.tag FROM tag_policies tp WHERE tp.project_id = t.project_id AND tp.tag = ANY(t.tags) ORDER BY tp.tag) END`

/**
 * Takes the oldest triggers waiting for the gate of (project, tag) into this node's memory (at most
 * `limit`; rows another node is taking are skipped): claimed by it, still `queued`, returned with
 * what to send and their gated tags. Their attempt is the next one (counted when they start).
 */
export const gateBacklogTake = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly tag: string
  readonly limit: number
  readonly node: string
  readonly nowMs: number
}) {
  if (input.limit <= 0) return [] as Array<DeliveryRow>
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  const rows = yield* sql`
    WITH picked AS (
      SELECT t.id, s.scheduled_at FROM gate_slots s JOIN triggers t ON t.id = s.trigger_id
      WHERE s.project_id = ${input.projectId} AND s.tag = ${input.tag} AND NOT s.running
        AND ${sql.unsafe(WAITING_SQL)} AND t.claimed_by IS NULL AND s.not_before <= now()
      ORDER BY s.scheduled_at, s.trigger_id LIMIT ${input.limit}
      FOR UPDATE OF t SKIP LOCKED
    ), taken AS (
      UPDATE triggers t SET claimed_by = ${input.node}, claimed_at = ${now}
      FROM picked, projects p WHERE t.id = picked.id AND p.id = t.project_id
      RETURNING ${deliveryColumns(sql, now)}, ${sql.unsafe(GATED_TAGS_SQL)} AS gate_tags, picked.scheduled_at
    )
    SELECT * FROM taken ORDER BY scheduled_at, id`.values
  const keys = yield* EncryptionKeys
  // the attempt about to be made is the next one, as for a fired trigger (counted when it starts);
  // gate_tags follows deliveryColumns
  return rows.map((v) => deliveryRowOfValues(v, keys, false, v[DELIVERY_COLUMN_COUNT] as Array<string>, null, undefined))
})

/** Forgets (up to 1,000) gate rows of a gate whose triggers no longer wait (cancelled while they waited). */
export const gateSlotsPrune = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly tag: string }) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM gate_slots WHERE ctid IN (
    SELECT s.ctid FROM gate_slots s WHERE s.project_id = ${input.projectId} AND s.tag = ${input.tag} AND NOT s.running
      AND NOT EXISTS (SELECT FROM triggers t WHERE t.id = s.trigger_id AND ${sql.unsafe(WAITING_SQL)})
    LIMIT 1000)`
})

/** A trigger in a node's memory going back to wait in PostgreSQL. */
export interface ReleasedTrigger {
  readonly id: string
  /** The attempt it was to make. */
  readonly attempt: number
  /** Fired by its shard's mark (store/shardMarks.ts): its updated_at (µs) when fetched; null when taken from here. */
  readonly firedSeenUs: string | null
  /** The gated tags it waits for. */
  readonly gateTags: ReadonlyArray<string>
}

/**
 * Releases triggers from this node's memory to wait in PostgreSQL: a fired one (still as fetched)
 * or one this node took (queued, or made its claim by a takeover of its shard) becomes `queued`,
 * claimed by no node, its attempt not counted, with a gate row per gated tag. Returns the ids
 * released (committed asynchronously, like a claim: a crash of PostgreSQL itself only leaves them
 * fired or claimed as before).
 */
export const gateBacklogRelease = Effect.fnUntraced(function*(input: {
  readonly triggers: ReadonlyArray<ReleasedTrigger>
  readonly node: string
  readonly nowMs: number
}) {
  if (input.triggers.length === 0) return [] as Array<string>
  const sql = yield* SqlClient.SqlClient
  const json = JSON.stringify(input.triggers.map((t) => ({ id: t.id, attempt: t.attempt, seen_us: t.firedSeenUs, tags: t.gateTags })))
  const rows = yield* sql<{ id: string }>`
    WITH async_commit AS (SELECT set_config('synchronous_commit', 'off', true)), released AS (
      UPDATE triggers t SET status = 'queued', claimed_by = NULL, claimed_at = ${new Date(input.nowMs)}, attempts = v.attempt - 1
      FROM async_commit, jsonb_to_recordset(${json}::jsonb) AS v(id uuid, attempt int, seen_us bigint, tags text[])
      WHERE t.id = v.id AND (
        (v.seen_us IS NOT NULL AND t.status IN ('registered', 'retrying') AND t.attempts = v.attempt - 1
          AND (extract(epoch FROM t.updated_at) * 1000000)::bigint = v.seen_us)
        OR (t.status = 'queued' AND t.claimed_by = ${input.node})
        OR (t.status = 'running' AND t.claimed_by = ${input.node} AND t.attempts = v.attempt))
      RETURNING t.id, t.project_id, coalesce(t.scheduled_at, t.due_at) AS scheduled_at, v.tags
    ), slots AS (
      INSERT INTO gate_slots (trigger_id, tag, project_id, scheduled_at, not_before)
      SELECT r.id, g.tag, r.project_id, r.scheduled_at, ${new Date(input.nowMs)}
      FROM released r CROSS JOIN unnest(r.tags) AS g(tag)
      ON CONFLICT (trigger_id, tag) DO UPDATE SET running = false
    )
    SELECT id FROM released`
  return rows.map((row) => row.id)
})

/**
 * Triggers this node took from PostgreSQL and admitted: `running` under it, attempt counted, their
 * gate rows running (so crash recovery sends them back to wait if this node dies). Committed
 * asynchronously; the outcome's record also accepts a trigger still queued under this node.
 */
export const gateBacklogStart = Effect.fnUntraced(function*(input: { readonly ids: ReadonlyArray<string>; readonly node: string; readonly nowMs: number }) {
  if (input.ids.length === 0) return
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    WITH async_commit AS (SELECT set_config('synchronous_commit', 'off', true)), started AS (
      UPDATE triggers t SET status = 'running', attempts = t.attempts + 1, claimed_at = ${new Date(input.nowMs)}
      FROM async_commit
      WHERE t.id = ANY(${input.ids}::uuid[]) AND t.status = 'queued' AND t.claimed_by = ${input.node}
      RETURNING t.id
    )
    UPDATE gate_slots s SET running = true FROM started WHERE s.trigger_id = started.id`
})

/**
 * The gates that hold triggers back in PostgreSQL now, (project, tag) pairs, read by a loose index
 * scan of the waiting rows (one probe per distinct pair, however many triggers wait behind it).
 */
export const gatesWaiting = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ project_id: string; tag: string }>`
    WITH RECURSIVE gates AS (
      (SELECT project_id, tag FROM gate_slots WHERE NOT running ORDER BY project_id, tag LIMIT 1)
      UNION ALL
      SELECT next.project_id, next.tag FROM gates g CROSS JOIN LATERAL (
        SELECT project_id, tag FROM gate_slots
        WHERE NOT running AND (project_id, tag) > (g.project_id, g.tag)
        ORDER BY project_id, tag LIMIT 1
      ) next
    )
    SELECT project_id, tag FROM gates`
  return rows.map((row) => ({ projectId: row.project_id, tag: row.tag }))
})
