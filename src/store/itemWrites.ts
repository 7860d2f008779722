// Writes of /declare and /bulk, each a single statement over many rows (one JSON or array
// parameter), so a batch of a thousand items is a handful of statements: insert new triggers,
// update triggers in place, cancel triggers. Updates and cancels are compare-and-sets on the status
// the planner read (itemReads.ts) and return the rows they changed: a row that moved meanwhile (a
// claim by the scheduler, fired by its shard's mark, another request) is left alone and missing
// from the result.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import { HELD_BACK_STATUSES } from "../domain/itemMatch.ts"
import type { Keyring } from "../domain/sealing.ts"
import type { TraceContext } from "../domain/traceContext.ts"
import type { TriggerDefinition, TriggerKind, TriggerStatus } from "../domain/trigger.ts"
import { EncryptionKeys, sealRequest } from "./sealedRequests.ts"
import { unfiredCompareAndSet, unfiredUnder } from "./shardMarks.ts"
import { statusList } from "./sqlLists.ts"

/** A trigger as /declare or /bulk writes it: a one-shot (registered or skipped) or a generator (active). */
export interface ItemTriggerRow {
  readonly id: string
  readonly shard: number
  readonly kind: TriggerKind
  readonly status: "registered" | "skipped" | "active"
  /** One-shots: the resolved time (due then when registered); generators: null. */
  readonly scheduledAtMs: number | null
  /** Generators only. */
  readonly cron: { readonly cronExpr: string; readonly cronTz: string } | null
  readonly definition: TriggerDefinition
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/**
 * A row as a JSON record (headers and body sealed when ENCRYPTION_KEYS is set, with the call's trace
 * context); null fields are left out (jsonb_to_recordset reads a missing field as NULL).
 */
const recordOf = (row: ItemTriggerRow, keyring: Keyring | null, trace: TraceContext | null) => {
  const d = row.definition
  const request = sealRequest(d.headers, d.body, keyring)
  const record: Record<string, unknown> = {
    id: row.id, shard: row.shard, kind: row.kind, status: row.status, url: d.url, method: d.method, headers: request.headers, tags: d.tags
  }
  if (row.scheduledAtMs !== null) record.scheduled_at = iso(row.scheduledAtMs)
  const body = request.body
  if (body !== null) record.body = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("base64")
  if (request.sealedWith !== null) record.sealed_with = request.sealedWith
  if (trace !== null) {
    record.traceparent = trace.traceparent
    if (trace.tracestate !== null) record.tracestate = trace.tracestate
  }
  if (d.contentType !== null) record.content_type = d.contentType
  if (d.title !== null) record.title = d.title
  if (d.customKey !== null) record.custom_key = d.customKey
  if (d.retry !== null) record.retry = d.retry
  if (row.cron !== null) {
    record.cron_expr = row.cron.cronExpr
    record.cron_tz = row.cron.cronTz
  }
  return record
}

const RECORD_TYPE = `x(id uuid, shard int, kind text, status text, scheduled_at timestamptz, url text, method text,
  headers jsonb, body text, sealed_with text, content_type text, title text, tags jsonb, custom_key text, retry jsonb,
  cron_expr text, cron_tz text, traceparent text, tracestate text, expected text)`

/**
 * Inserts new triggers of a project. `keyScope`: the tag of the /declare call creating them (it
 * scopes their custom keys, docs/internals.md "/declare and /bulk"), null for /bulk.
 */
export const itemTriggersInsert = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly keyScope: string | null
  readonly rows: ReadonlyArray<ItemTriggerRow>
  readonly nowMs: number
  /** The trace context of the call (tracing on). */
  readonly trace?: TraceContext | null
}) {
  if (input.rows.length === 0) return
  const sql = yield* SqlClient.SqlClient
  const keyring = yield* EncryptionKeys
  const now = new Date(input.nowMs)
  const records = input.rows.map((row) => recordOf(row, keyring, input.trace ?? null))
  yield* sql`INSERT INTO triggers (id, project_id, kind, shard, status, scheduled_at, due_at, url, method, headers, body,
      sealed_with, content_type, title, tags, custom_key, retry, cron_expr, cron_tz, key_scope, traceparent, tracestate,
      created_at, updated_at)
    SELECT x.id, ${input.projectId}, x.kind, x.shard, x.status, x.scheduled_at,
      CASE WHEN x.status = 'registered' THEN x.scheduled_at END, x.url, x.method, x.headers, decode(x.body, 'base64'),
      x.sealed_with, x.content_type, x.title, ARRAY(SELECT jsonb_array_elements_text(x.tags)), x.custom_key, x.retry,
      x.cron_expr, x.cron_tz, ${input.keyScope}, x.traceparent, x.tracestate, ${now}, ${now}
    FROM jsonb_to_recordset(${JSON.stringify(records)}::jsonb) AS ${sql.unsafe(RECORD_TYPE)}`
})

/**
 * Replaces the definition, time or cron, and status of triggers in place (same id, key scope kept),
 * each only while it still has its `expectedStatus` and kind. Returns the rows updated.
 */
export const itemTriggersUpdate = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly rows: ReadonlyArray<ItemTriggerRow & { readonly expectedStatus: TriggerStatus }>
  readonly nowMs: number
  readonly trace?: TraceContext | null
}) {
  if (input.rows.length === 0) return [] as Array<{ id: string; shard: number }>
  const sql = yield* SqlClient.SqlClient
  const keyring = yield* EncryptionKeys
  const json = JSON.stringify(input.rows.map((row) => ({ ...recordOf(row, keyring, input.trace ?? null), expected: row.expectedStatus })))
  return yield* unfiredCompareAndSet(input.rows.map((row) => row.id), (locked) => sql<{ id: string; shard: number }>`UPDATE triggers t SET status = x.status,
      scheduled_at = x.scheduled_at, due_at = CASE WHEN x.status = 'registered' THEN x.scheduled_at END,
      attempts = CASE WHEN t.kind = 'job' THEN 0 ELSE t.attempts END, triggered_by = NULL,
      url = x.url, method = x.method, headers = x.headers, body = decode(x.body, 'base64'), sealed_with = x.sealed_with,
      content_type = x.content_type, title = x.title, tags = ARRAY(SELECT jsonb_array_elements_text(x.tags)),
      custom_key = x.custom_key, retry = x.retry, cron_expr = x.cron_expr, cron_tz = x.cron_tz,
      traceparent = x.traceparent, tracestate = x.tracestate, updated_at = ${new Date(input.nowMs)}
    FROM jsonb_to_recordset(${json}::jsonb) AS ${sql.unsafe(RECORD_TYPE)}
    WHERE t.id = x.id AND t.project_id = ${input.projectId} AND t.status = x.expected AND t.kind = x.kind
      AND ${unfiredUnder(sql, "t", locked)}
    RETURNING t.id, t.shard`)
})

/**
 * Cancels triggers, each only while it still has its `expectedStatus` (a queued one only while no
 * node has claimed it). Returns the rows cancelled.
 */
export const itemTriggersCancel = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly rows: ReadonlyArray<{ readonly id: string; readonly expectedStatus: TriggerStatus }>
  readonly nowMs: number
}) {
  if (input.rows.length === 0) return [] as Array<{ id: string; shard: number; kind: TriggerKind }>
  const sql = yield* SqlClient.SqlClient
  const ids = input.rows.map((row) => row.id)
  const statuses = input.rows.map((row) => row.expectedStatus)
  return yield* unfiredCompareAndSet(ids, (locked) => sql<{ id: string; shard: number; kind: TriggerKind }>`
    UPDATE triggers t SET status = 'cancelled', due_at = NULL, updated_at = ${new Date(input.nowMs)}
    FROM unnest(${ids}::uuid[], ${statuses}::text[]) AS x(id, expected)
    WHERE t.id = x.id AND t.project_id = ${input.projectId} AND t.status = x.expected
      AND (t.status NOT IN ${statusList(sql, HELD_BACK_STATUSES)} OR t.claimed_by IS NULL)
      AND ${unfiredUnder(sql, "t", locked)}
    RETURNING t.id, t.shard, t.kind`)
})
