// The scheduler's and delivery's statements on `triggers`: load a shard's due rows into the timer
// wheel, claim due triggers (compare-and-set registered/retrying → running, returning what to send),
// start replayed or recovered ones (queued → running), and recover triggers whose claimer died.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import { type ClaimedRow, CLAIMED_STATUSES, type DeliveryRow, DUE_STATUSES } from "../domain/trigger.ts"
import { DELIVERY_COLUMN_COUNT, deliveryColumns, deliveryRowOfValues } from "./deliveryRows.ts"
import { executionsInsert, interruptedExecution } from "./executions.ts"
import { EncryptionKeys } from "./sealedRequests.ts"
import { firedSql } from "./shardMarks.ts"
import { GATED_SQL, GATED_TAGS_SQL } from "./gates.ts"
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


/**
 * Claims due triggers in one statement: a compare-and-set on status that also re-checks the time
 * (so a stale wheel entry, moved or cancelled, never fires). An ungated trigger goes straight to
 * `running` under this node and is returned with what to send (and the project's default retry
 * policy); a trigger with gated tags is held back instead — `queued`, claimed by no node, one gate
 * row per gated tag — and returned with its `gateTags` for the gates to admit. `untilMs` is the
 * latest due time claimed (the scheduler claims slightly ahead of time).
 *
 * The claim commits synchronously (it waits for the WAL flush) because the send depends on it: a
 * claim lost with a crash of PostgreSQL itself would leave a trigger this node already sent pending
 * again, cancellable (`204` for a delivered trigger) or editable in place. The claim lead covers the
 * flush (claimLeadMs in config.ts).
 */
export const triggersClaim = Effect.fnUntraced(function*(input: {
  readonly ids: ReadonlyArray<string>
  readonly untilMs: number
  readonly node: string
  readonly nowMs: number
}) {
  if (input.ids.length === 0) return [] as Array<ClaimedRow>
  const sql = yield* SqlClient.SqlClient
  const gated = sql.unsafe(GATED_SQL)
  const rows = yield* sql`
    WITH claimed AS (
      UPDATE triggers t SET
        status = CASE WHEN ${gated} THEN 'queued' ELSE 'running' END,
        attempts = CASE WHEN ${gated} THEN t.attempts ELSE t.attempts + 1 END,
        claimed_by = CASE WHEN ${gated} THEN NULL ELSE ${input.node} END,
        claimed_at = ${new Date(input.nowMs)}
      FROM projects p
      WHERE t.id = ANY(${input.ids}::uuid[]) AND t.status IN ${statusList(sql, DUE_STATUSES)}
        AND t.due_at <= ${new Date(input.untilMs)} AND p.id = t.project_id
      RETURNING ${deliveryColumns(sql, new Date(input.nowMs))}, ${sql.unsafe(GATED_TAGS_SQL)} AS gate_tags,
        (extract(epoch FROM t.due_at) * 1000)::bigint::text AS due_ms, t.scheduled_at, t.due_at
    ), held AS (
      INSERT INTO gate_slots (trigger_id, tag, project_id, scheduled_at, not_before)
      SELECT c.id, g.tag, c.project_id, coalesce(c.scheduled_at, c.due_at), c.due_at
      FROM claimed c CROSS JOIN unnest(c.gate_tags) AS g(tag) WHERE cardinality(c.gate_tags) > 0
      ON CONFLICT (trigger_id, tag) DO UPDATE SET running = false, not_before = excluded.not_before
    )
    SELECT claimed.* FROM claimed`.values
  const keys = yield* EncryptionKeys
  // after deliveryColumns: gate_tags, due_ms
  return rows.map((v): ClaimedRow =>
    deliveryRowOfValues(v, keys, true, v[DELIVERY_COLUMN_COUNT] as Array<string>, null, Number(v[DELIVERY_COLUMN_COUNT + 1] as string))
  )
})

/** Moves queued triggers (replayed or recovered) to running and returns what to send. */
export const triggersStartDelivery = Effect.fnUntraced(function*(input: {
  readonly ids: ReadonlyArray<string>
  readonly node: string
  readonly nowMs: number
}) {
  if (input.ids.length === 0) return [] as Array<DeliveryRow>
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`
    UPDATE triggers t SET status = 'running', attempts = t.attempts + 1, claimed_by = ${input.node},
      claimed_at = ${new Date(input.nowMs)}
    FROM projects p
    WHERE t.id = ANY(${input.ids}::uuid[]) AND t.status = 'queued' AND p.id = t.project_id
    RETURNING ${deliveryColumns(sql, new Date(input.nowMs))}`.values
  const keys = yield* EncryptionKeys
  return rows.map((v) => deliveryRowOfValues(v, keys, true, [], null, undefined))
})


/**
 * Triggers of a shard left queued or running by a node that is gone (killed, or cut off): at least
 * once, they are sent again. Never this node's own (it is alive and still delivering them:
 * `triggersRecoverUnheld` is how it sends again those of its claims it no longer holds); never
 * unclaimed ones (queued with no node: held back by a gate).
 */
export const triggersRecover = (input: {
  readonly shard: number
  readonly node: string
  readonly liveNodes: ReadonlyArray<string>
  readonly nowMs: number
}) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    requeueClaimed(sql, {
      where: sql`t.shard = ${input.shard} AND t.status IN ${statusList(sql, CLAIMED_STATUSES)}
        AND t.claimed_by <> ${input.node} AND NOT (t.claimed_by = ANY(${input.liveNodes}::text[]))`,
      node: input.node,
      nowMs: input.nowMs
    }))

/**
 * This node's claims that nothing in its memory sends or records (scheduler/unheldClaims.ts): a
 * trigger running under it, or queued under it to be started and not waiting at its gates (those
 * taken from a gate's backlog wait in the gates' memory, with their gate rows).
 */
export const triggersClaimedBy = Effect.fnUntraced(function*(node: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string }>`
    SELECT t.id FROM triggers t
    WHERE t.status IN ${statusList(sql, CLAIMED_STATUSES)} AND t.claimed_by = ${node}
      AND (t.status = 'running' OR NOT EXISTS (SELECT FROM gate_slots s WHERE s.trigger_id = t.id))`
  return rows.map((row) => row.id)
})

/** Of `ids`, those still claimed by this node are sent again, as `triggersRecover` does for a gone node's. */
export const triggersRecoverUnheld = (input: {
  readonly ids: ReadonlyArray<string>
  readonly node: string
  readonly nowMs: number
}) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    requeueClaimed(sql, {
      where: sql`t.id = ANY(${input.ids}::uuid[]) AND t.status IN ${statusList(sql, CLAIMED_STATUSES)}
        AND t.claimed_by = ${input.node}`,
      node: input.node,
      nowMs: input.nowMs
    }))

/**
 * Requeues the claimed triggers `where` selects (over the alias `t`), for this node to send again.
 * An attempt that had started (running) gets its execution now — failed, outcome unknown, from its
 * start to now — so a trigger's attempts stay numbered without gaps and the log tells what happened.
 * An ungated one is queued under this node and returned in `ids` for delivery; a gated one (a tag of
 * it has a policy now) goes back to wait at its gates in PostgreSQL — a gate row per gated tag, made
 * when it had none (a fired trigger waits at its gates in its node's memory without one) — and is
 * returned in `gated` for them to be looked at.
 */
const requeueClaimed = (sql: SqlClient.SqlClient, input: {
  readonly where: Fragment
  readonly node: string
  readonly nowMs: number
}) =>
  sql.withTransaction(Effect.gen(function*() {
    const now = new Date(input.nowMs)
    const rows = yield* sql<{
      id: string; project_id: string; attempts: number; url: string; triggered_by: string | null; was: string; started_at: Date
      gate_tags: Array<string>; scheduled_at: Date | null
    }>`
      WITH gone AS (
        SELECT t.id, t.status AS was, LEAST(${now}::timestamptz, GREATEST(t.claimed_at, t.due_at, t.updated_at)) AS started_at,
          ${sql.unsafe(GATED_TAGS_SQL)} AS gate_tags
        FROM triggers t
        WHERE ${input.where}
        FOR UPDATE OF t
      ), requeued AS (
        UPDATE triggers t SET status = 'queued', claimed_at = ${now},
          claimed_by = CASE WHEN cardinality(g.gate_tags) = 0 THEN ${input.node} END
        FROM gone g WHERE t.id = g.id
        RETURNING t.id, t.project_id, t.attempts, t.url, t.triggered_by, t.scheduled_at, t.due_at, g.was, g.started_at, g.gate_tags
      ), waiting AS (
        -- a gated trigger waits at its gates in PostgreSQL: a fired one a node held in memory had no
        -- gate row yet (it was admitted there), so one is made; one that had rows waits again on them
        INSERT INTO gate_slots (trigger_id, tag, project_id, scheduled_at, not_before)
        SELECT r.id, g.tag, r.project_id, coalesce(r.scheduled_at, r.due_at), ${now}
        FROM requeued r CROSS JOIN unnest(r.gate_tags) AS g(tag)
        ON CONFLICT (trigger_id, tag) DO UPDATE SET running = false
      )
      SELECT * FROM requeued`
    yield* executionsInsert(rows.filter((row) => row.was === "running").map((row) => interruptedExecution({
      triggerId: row.id, projectId: row.project_id, attempt: row.attempts, startedAtMs: row.started_at.getTime(),
      triggeredBy: row.triggered_by, url: row.url, scheduledAtMs: row.scheduled_at?.getTime() ?? null,
      gated: row.gate_tags.length > 0
    }, input.nowMs)))
    return {
      ids: rows.filter((row) => row.gate_tags.length === 0).map((row) => row.id),
      gated: rows.filter((row) => row.gate_tags.length > 0).map((row) => ({ projectId: row.project_id, gateTags: row.gate_tags }))
    }
  }))

/**
 * Gives back triggers this node took but will not send after all (it is stopping), for the shards'
 * new owners: a claimed one pending again with its attempt count restored, unclaimed (a replay stays
 * queued under this node, which crash recovery sends once the node is gone); a fired one left
 * pending. Either is due again just after its shard's mark (or at its own time if later), so it is
 * not fired by that mark: the shard's next owner fires it. Returns them for wake-ups of those owners.
 */
export const triggersRelease = Effect.fnUntraced(function*(input: {
  readonly ids: ReadonlyArray<string>
  readonly node: string
  readonly nowMs: number
}) {
  if (input.ids.length === 0) return [] as Array<{ id: string; shard: number; dueAtMs: number | null }>
  const sql = yield* SqlClient.SqlClient
  const afterMark = sql`GREATEST(coalesce(t.due_at, ${new Date(input.nowMs)}),
    (SELECT m.fired_at FROM shard_marks m WHERE m.shard = t.shard) + interval '1 microsecond')`
  const rows = yield* sql<{ id: string; shard: number; due_ms: string | null }>`
    WITH released AS (
      UPDATE triggers t SET
        status = CASE WHEN t.triggered_by IS NOT NULL THEN 'queued'
          WHEN t.attempts > 1 OR t.generator_id IS NOT NULL THEN 'retrying' ELSE 'registered' END,
        due_at = CASE WHEN t.triggered_by IS NOT NULL THEN t.due_at ELSE ${afterMark} END,
        claimed_by = CASE WHEN t.triggered_by IS NOT NULL THEN t.claimed_by END,
        attempts = t.attempts - 1, claimed_at = NULL
      WHERE t.id = ANY(${input.ids}::uuid[]) AND t.status = 'running' AND t.claimed_by = ${input.node}
      RETURNING t.id, t.shard, CASE WHEN t.status = 'queued' THEN NULL
        ELSE (extract(epoch FROM t.due_at) * 1000)::bigint::text END AS due_ms
    ), ungated AS (
      -- its gates admit it again when it comes due again
      DELETE FROM gate_slots s USING released r WHERE s.trigger_id = r.id
    ), unfired AS (
      UPDATE triggers t SET due_at = ${afterMark}
      WHERE t.id = ANY(${input.ids}::uuid[]) AND ${sql.unsafe(firedSql("t"))}
      RETURNING t.id, t.shard, (extract(epoch FROM t.due_at) * 1000)::bigint::text AS due_ms
    )
    SELECT * FROM released UNION ALL SELECT * FROM unfired`
  return rows.map((row) => ({ id: row.id, shard: row.shard, dueAtMs: row.due_ms === null ? null : Number(row.due_ms) }))
})
