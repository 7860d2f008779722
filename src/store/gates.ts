// The cluster-wide state of the tag gates (migration 4): gate_slots holds one row per gated trigger
// and gated tag — waiting (the trigger is `queued`, claimed by no node) or running (admitted, being
// sent) — and gate_starts the start times the throughput windows count. An admission round of one
// gate is one transaction: it locks the gate (an advisory transaction lock per project and tag, so
// rounds of one gate never overlap, whichever node runs them), reads the oldest waiting triggers
// and the live state of every gate they carry, and starts what the gates admit.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { DeliveryRow, HeaderPairs } from "../domain/trigger.ts"
import { type DeliveryRecord, deliveryColumns, toDeliveryRow } from "./deliveryRows.ts"
import { EncryptionKeys } from "./sealedRequests.ts"

/**
 * Whether the trigger `t` has a gated tag — one whose policy limits concurrency or throughput — and
 * which (SQL over the alias `t`): no lookup at all for a trigger without tags (the common case), an
 * index probe otherwise.
 */
export const GATED_SQL = `(cardinality(t.tags) > 0 AND EXISTS (
    SELECT 1 FROM tag_policies tp WHERE tp.project_id = t.project_id AND tp.tag = ANY(t.tags)
      AND (tp.max_concurrent IS NOT NULL OR tp.throughput IS NOT NULL)))`
export const GATED_TAGS_SQL = `CASE WHEN cardinality(t.tags) = 0 THEN '{}'::text[] ELSE ARRAY(
    SELECT tp.tag FROM tag_policies tp WHERE tp.project_id = t.project_id AND tp.tag = ANY(t.tags)
      AND (tp.max_concurrent IS NOT NULL OR tp.throughput IS NOT NULL)) END`

/** First key of the gates' two-int advisory locks ("tg"); the second is hashtext(project/tag). */
const GATE_LOCK_NAMESPACE = 0x7467

const gateKey = (projectId: string, tag: string) => `${projectId}/${tag}`

/** Waits for the gate's lock (until the transaction ends). */
export const gateLock = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly tag: string }) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`SELECT pg_advisory_xact_lock(${GATE_LOCK_NAMESPACE}, hashtext(${gateKey(input.projectId, input.tag)}))`
})

/** Takes the gate's lock if it is free (until the transaction ends); whether it did. */
export const gateTryLock = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly tag: string }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ ok: boolean }>`
    SELECT pg_try_advisory_xact_lock(${GATE_LOCK_NAMESPACE}, hashtext(${gateKey(input.projectId, input.tag)})) AS ok`
  return rows[0]?.ok === true
})

export interface GateCandidate {
  readonly id: string
  readonly tags: ReadonlyArray<string>
  /** Still held back by a gate (queued, claimed by no node); otherwise its slot is stale. */
  readonly waiting: boolean
  /** Its due time: it is never started before. */
  readonly notBeforeMs: number
  /** Where it stands in the gate's order (keyset of the next page). */
  readonly after: string
}

/**
 * The oldest waiting triggers of a gate (scheduled time, then id), with every tag they carry; a
 * page at a time (`after`: the previous page's last `after`).
 */
export const gateCandidates = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly tag: string
  readonly limit: number
  readonly after: string | null
}) {
  const sql = yield* SqlClient.SqlClient
  const [afterAt, afterId] = input.after === null ? [null, null] : input.after.split(" ")
  const rows = yield* sql<{ id: string; tags: ReadonlyArray<string>; waiting: boolean; not_before_ms: string; after: string }>`
    SELECT s.trigger_id AS id, t.tags, (t.status = 'queued' AND t.claimed_by IS NULL) AS waiting,
      (extract(epoch FROM s.not_before) * 1000)::bigint::text AS not_before_ms,
      to_char(s.scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || ' ' || s.trigger_id AS after
    FROM gate_slots s JOIN triggers t ON t.id = s.trigger_id
    WHERE s.project_id = ${input.projectId} AND s.tag = ${input.tag} AND NOT s.running
      ${afterAt === null ? sql`` : sql`AND (s.scheduled_at, s.trigger_id) > (${afterAt}::timestamptz, ${afterId}::uuid)`}
    ORDER BY s.scheduled_at, s.trigger_id
    LIMIT ${input.limit}`
  return rows.map((row): GateCandidate => ({
    id: row.id, tags: row.tags, waiting: row.waiting, notBeforeMs: Number(row.not_before_ms), after: row.after
  }))
})

/** Forgets the gate rows of triggers no longer held back (cancelled while they waited). */
export const gateSlotsDrop = Effect.fnUntraced(function*(triggerIds: ReadonlyArray<string>) {
  if (triggerIds.length === 0) return
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM gate_slots WHERE trigger_id = ANY(${triggerIds}::uuid[])`
})

export interface GateLive {
  readonly inFlight: number
  /** Start times, ascending. */
  readonly recentStarts: ReadonlyArray<number>
}

/**
 * The live state of some gates of a project: how many of each tag's triggers are in flight, and
 * the newest `count` starts of the last `windowMs` for each tag whose throughput is limited.
 */
export const gateLiveState = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly nowMs: number
  readonly gates: ReadonlyArray<{ readonly tag: string; readonly lookback: { readonly windowMs: number; readonly count: number } | null }>
}) {
  const live = new Map<string, { inFlight: number; recentStarts: Array<number> }>()
  for (const gate of input.gates) live.set(gate.tag, { inFlight: 0, recentStarts: [] })
  if (input.gates.length === 0) return live as ReadonlyMap<string, GateLive>
  const sql = yield* SqlClient.SqlClient
  const tags = input.gates.map((gate) => gate.tag)
  const inFlight = yield* sql<{ tag: string; n: number }>`
    SELECT tag, count(*)::int AS n FROM gate_slots
    WHERE project_id = ${input.projectId} AND tag = ANY(${tags}::text[]) AND running
    GROUP BY tag`
  for (const row of inFlight) live.get(row.tag)!.inFlight = row.n
  const limited = input.gates.flatMap((gate) => (gate.lookback === null ? [] : [{ tag: gate.tag, ...gate.lookback }]))
  if (limited.length > 0) {
    const lookbacks = JSON.stringify(limited.map((gate) => ({
      tag: gate.tag, since: new Date(input.nowMs - gate.windowMs).toISOString(), count: gate.count
    })))
    const starts = yield* sql<{ tag: string; at_ms: string }>`
      SELECT l.tag, (extract(epoch FROM s.started_at) * 1000)::bigint::text AS at_ms
      FROM jsonb_to_recordset(${lookbacks}::jsonb) AS l(tag text, since timestamptz, count int)
      CROSS JOIN LATERAL (
        SELECT started_at FROM gate_starts
        WHERE project_id = ${input.projectId} AND tag = l.tag AND started_at > l.since
        ORDER BY started_at DESC LIMIT l.count
      ) s`
    for (const row of starts) live.get(row.tag)!.recentStarts.push(Number(row.at_ms))
    for (const state of live.values()) state.recentStarts.sort((a, b) => a - b)
  }
  return live as ReadonlyMap<string, GateLive>
})

interface StartedRecord extends DeliveryRecord {
  gate_tags: Array<string>
}

/**
 * Starts admitted triggers: running under this node (attempt counted), their gate rows running, a
 * start recorded for each of their throughput-limited tags. Returns what to send; a trigger that
 * stopped waiting meanwhile (cancelled) is left out.
 */
export const gateStart = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly ids: ReadonlyArray<string>
  /** The tags whose throughput counts these starts, with the time each records them at. */
  readonly counted: ReadonlyArray<{ readonly tag: string; readonly atMs: number }>
  readonly node: string
  readonly nowMs: number
}) {
  if (input.ids.length === 0) return [] as Array<DeliveryRow>
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  const counted = JSON.stringify(input.counted.map((c) => ({ tag: c.tag, at: new Date(c.atMs).toISOString() })))
  const rows = yield* sql<StartedRecord>`
    WITH started AS (
      UPDATE triggers t SET status = 'running', attempts = t.attempts + 1, claimed_by = ${input.node}, claimed_at = ${now}
      FROM projects p
      WHERE t.id = ANY(${input.ids}::uuid[]) AND t.status = 'queued' AND t.claimed_by IS NULL AND p.id = t.project_id
      RETURNING ${deliveryColumns(sql, now)}
    ), slots AS (
      UPDATE gate_slots s SET running = true FROM started WHERE s.trigger_id = started.id
      RETURNING s.trigger_id, s.tag
    ), counted AS (
      INSERT INTO gate_starts (project_id, tag, trigger_id, started_at)
      SELECT ${input.projectId}, c.tag, started.id, c.at FROM started, jsonb_to_recordset(${counted}::jsonb) AS c(tag text, at timestamptz)
      WHERE c.tag = ANY(started.tags)
    )
    SELECT started.*, coalesce((SELECT array_agg(slots.tag) FROM slots WHERE slots.trigger_id = started.id), '{}') AS gate_tags
    FROM started`
  const keys = yield* EncryptionKeys
  return rows.map((row): DeliveryRow => toDeliveryRow(row, keys, row.gate_tags))
})

/**
 * Moves the recorded starts of these triggers to when their requests actually left, where that is
 * later than their stamp (a busy node may send a while after admitting): the windows then count
 * what the target sees.
 */
export const gateStartsSent = Effect.fnUntraced(function*(sends: ReadonlyArray<{ readonly triggerId: string; readonly atMs: number }>) {
  if (sends.length === 0) return
  const sql = yield* SqlClient.SqlClient
  const json = JSON.stringify(sends.map((send) => ({ id: send.triggerId, at: new Date(send.atMs).toISOString() })))
  yield* sql`UPDATE gate_starts s SET started_at = v.at
    FROM jsonb_to_recordset(${json}::jsonb) AS v(id uuid, at timestamptz)
    WHERE s.trigger_id = v.id AND s.started_at < v.at`
})

/** Forgets start times no window of the tag can count any more. */
export const gateStartsPrune = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly tag: string
  readonly beforeMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM gate_starts
    WHERE project_id = ${input.projectId} AND tag = ${input.tag} AND started_at <= ${new Date(input.beforeMs)}`
})

/**
 * The gates that hold triggers back now, (project, tag) pairs, read by a loose index scan of the
 * waiting rows (one probe per distinct pair, however many triggers wait behind it).
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
