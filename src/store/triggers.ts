// Trigger writes of /schedule and /cancel. Every state change is a compare-and-set on `status` in
// SQL, so a concurrent scheduler claim or a second request can never act on a stale state.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { Keyring } from "../domain/sealing.ts"
import type { TraceContext } from "../domain/traceContext.ts"
import { KEY_OWNER_STATUSES, PENDING_STATUSES, type TriggerDefinition } from "../domain/trigger.ts"
import { base64Field, jsonField, makeIsoOf } from "./jsonRecords.ts"
import { grantFromUsageRow, type GrantRow } from "./quota.ts"
import { EncryptionKeys, sealRequest } from "./sealedRequests.ts"
import { firedSql, markable, NEAR_DUE_SQL, shardMarksLockNear, unfiredCompareAndSet, unfiredUnder } from "./shardMarks.ts"
import { statusList } from "./sqlLists.ts"
import { TransactionRestart } from "./transaction.ts"

export interface TriggerRef {
  readonly id: string
  readonly kind: "job" | "generator"
  readonly generatorId: string | null
  readonly status: string
  readonly shard: number
}

const refColumns = "id, kind, generator_id, status, shard"

interface RefRow {
  readonly id: string
  readonly kind: "job" | "generator"
  readonly generator_id: string | null
  readonly status: string
  readonly shard: number
}

const toRef = (row: RefRow): TriggerRef => ({
  id: row.id, kind: row.kind, generatorId: row.generator_id, status: row.status, shard: row.shard
})

/**
 * The pending one-shot trigger or active generator that owns a custom key, locked for update. A key can
 * have several owners (docs/internals.md "/declare and /bulk": one created by /schedule or /bulk, and
 * one per tag that /declare created it in; migration 3 in store/migrations): the unscoped one is preferred, then
 * the oldest.
 */
export const triggersFindKeyOwner = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly customKey: string
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<RefRow>`SELECT ${sql.unsafe(refColumns)} FROM triggers
    WHERE project_id = ${input.projectId} AND custom_key = ${input.customKey}
      AND status IN ${statusList(sql, KEY_OWNER_STATUSES)}
    ORDER BY key_scope IS NULL DESC, id
    LIMIT 1 FOR UPDATE`
  return rows[0] === undefined ? undefined : toRef(rows[0])
})

/**
 * A trigger of the project by id, locked for update, with the status a reader sees: `running` when
 * its shard's mark fired it (shardMarks.ts). Near its time the mark is locked first (FOR SHARE, so
 * the answer holds until the caller's transaction ends), then the trigger: the order of every
 * transaction that locks both (a takeover locks the mark, then the fired triggers); the other order
 * deadlocked with takeovers. A trigger that became near its time between the two reads (another
 * transaction moved it meanwhile) restarts the caller's transaction (transaction.ts).
 */
export const triggersFindById = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly id: string
}) {
  const sql = yield* SqlClient.SqlClient
  const locked = yield* shardMarksLockNear([input.id])
  const rows = yield* sql<RefRow & { near: boolean; fired: boolean }>`SELECT ${sql.unsafe(refColumns)},
      (${sql.unsafe(markable("t"))} AND t.due_at <= ${sql.unsafe(NEAR_DUE_SQL)}
        AND EXISTS (SELECT FROM shard_marks m WHERE m.shard = t.shard)) AS near, ${sql.unsafe(firedSql("t"))} AS fired
    FROM triggers t WHERE t.id = ${input.id} AND t.project_id = ${input.projectId} FOR UPDATE`
  const row = rows[0]
  if (row === undefined) return undefined
  if (row.near && !locked.includes(row.shard)) {
    return yield* Effect.fail(new TransactionRestart({ reason: `trigger ${row.id} came near its time while it was read` }))
  }
  return toRef(row.fired ? { ...row, status: "running" } : row)
})

/**
 * A trigger definition as column values (headers and retry as JSON text for `::jsonb`), its headers
 * and body sealed when ENCRYPTION_KEYS is set, and the trace context of the call writing it.
 */
export const definitionColumns = (definition: TriggerDefinition, keyring: Keyring | null, trace: TraceContext | null = null) => {
  const request = sealRequest(definition.headers, definition.body, keyring)
  return {
    url: definition.url,
    method: definition.method,
    headers: JSON.stringify(request.headers),
    body: request.body,
    sealed_with: request.sealedWith,
    content_type: definition.contentType,
    title: definition.title,
    tags: definition.tags,
    custom_key: definition.customKey,
    retry: definition.retry === null ? null : JSON.stringify(definition.retry),
    traceparent: trace?.traceparent ?? null,
    tracestate: trace?.tracestate ?? null
  }
}

export interface NewOneShot {
  readonly id: string
  readonly projectId: string
  readonly shard: number
  readonly status: "registered" | "skipped"
  readonly scheduledAtMs: number
  readonly definition: TriggerDefinition
  readonly generatorId?: string
  readonly nowMs: number
  /** The trace context of the call creating it (tracing on). */
  readonly trace?: TraceContext | null
}

export const triggersInsertOneShot = Effect.fnUntraced(function*(input: NewOneShot) {
  const sql = yield* SqlClient.SqlClient
  const d = definitionColumns(input.definition, yield* EncryptionKeys, input.trace)
  const scheduledAt = new Date(input.scheduledAtMs)
  const now = new Date(input.nowMs)
  yield* sql`INSERT INTO triggers (id, project_id, kind, generator_id, shard, status, scheduled_at, due_at,
      url, method, headers, body, sealed_with, content_type, title, tags, custom_key, retry, traceparent, tracestate,
      created_at, updated_at)
    VALUES (${input.id}, ${input.projectId}, 'job', ${input.generatorId ?? null}, ${input.shard}, ${input.status},
      ${scheduledAt}, ${input.status === "registered" ? scheduledAt : null},
      ${d.url}, ${d.method}, ${d.headers}::jsonb, ${d.body}, ${d.sealed_with}, ${d.content_type}, ${d.title}, ${d.tags}::text[],
      ${d.custom_key}, ${d.retry}::jsonb, ${d.traceparent}, ${d.tracestate}, ${now}, ${now})`
})

/**
 * The rows as the JSON array `triggersCreateWithinQuota` reads (`n` numbers them from 1), written
 * out directly (jsonRecords.ts).
 */
const nowIsoOf = makeIsoOf()

export const newOneShotsJson = (rows: ReadonlyArray<NewOneShot>, keyring: Keyring | null): string => {
  let json = "["
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!
    const d = row.definition
    const request = sealRequest(d.headers, d.body, keyring)
    const scheduledAt = new Date(row.scheduledAtMs).toISOString()
    json += `${i === 0 ? "" : ","}{"n":${i + 1},"id":"${row.id}","shard":${row.shard},"status":"${row.status}",` +
      `"scheduled_at":"${scheduledAt}"${row.status === "registered" ? `,"due_at":"${scheduledAt}"` : ""},"now":"${nowIsoOf(row.nowMs)}",` +
      `"url":${JSON.stringify(d.url)},"method":${JSON.stringify(d.method)},"headers":${JSON.stringify(request.headers)},` +
      `"tags":${JSON.stringify(d.tags)}${jsonField("generator_id", row.generatorId ?? null)}${base64Field("body", request.body)}` +
      `${jsonField("sealed_with", request.sealedWith)}${jsonField("content_type", d.contentType)}${jsonField("title", d.title)}` +
      `${jsonField("custom_key", d.customKey)}${jsonField("retry", d.retry)}` +
      `${jsonField("traceparent", row.trace?.traceparent ?? null)}${jsonField("tracestate", row.trace?.tracestate ?? null)}}`
  }
  return json + "]"
}

/**
 * Creates a batch of new one-shot triggers of one project within its monthly quota, in one statement
 * (for the group commit of /schedule calls without a custom key or id): it locks the month's usage
 * row, grants as many units as the quota still allows, inserts the first `granted` rows (one JSON
 * parameter) and returns the usage before and after with the quota, like `quotaTake`. The usage row
 * is created on first use.
 */
export const triggersCreateWithinQuota = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly month: string
  readonly rows: ReadonlyArray<NewOneShot>
}) {
  const sql = yield* SqlClient.SqlClient
  const json = newOneShotsJson(input.rows, yield* EncryptionKeys)
  return yield* grantFromUsageRow(input, sql<GrantRow>`
    WITH old AS (
      SELECT used FROM quota_usage WHERE project_id = ${input.projectId} AND month = ${input.month}::date FOR UPDATE
    ), granted AS (
      UPDATE quota_usage q SET used = LEAST(q.used + ${input.rows.length}, GREATEST(q.used, p.monthly_quota))
      FROM projects p, old
      WHERE q.project_id = ${input.projectId} AND q.month = ${input.month}::date AND p.id = q.project_id
      RETURNING old.used AS before, q.used AS after, p.monthly_quota AS quota
    ), created AS (
      INSERT INTO triggers (id, project_id, kind, generator_id, shard, status, scheduled_at, due_at,
        url, method, headers, body, sealed_with, content_type, title, tags, custom_key, retry, traceparent, tracestate,
        created_at, updated_at)
      SELECT x.id, ${input.projectId}, 'job', x.generator_id, x.shard, x.status, x.scheduled_at, x.due_at, x.url,
        x.method, x.headers, decode(x.body, 'base64'), x.sealed_with, x.content_type, x.title,
        ARRAY(SELECT jsonb_array_elements_text(x.tags)), x.custom_key, x.retry, x.traceparent, x.tracestate, x.now, x.now
      FROM granted, jsonb_to_recordset(${json}::jsonb) AS x(n int, id uuid, generator_id uuid, shard int, status text,
        scheduled_at timestamptz, due_at timestamptz, url text, method text, headers jsonb, body text, sealed_with text,
        content_type text, title text, tags jsonb, custom_key text, retry jsonb, traceparent text, tracestate text,
        now timestamptz)
      WHERE x.n <= granted.after - granted.before
    )
    SELECT before::text, after::text, quota::text FROM granted`)
})

/** Replaces the definition and time of a pending one-shot trigger in place (same id); a digest /declare stored is cleared (migration 20). */
export const triggersReplaceOneShot = Effect.fnUntraced(function*(input: {
  readonly id: string
  readonly status: "registered" | "skipped"
  readonly scheduledAtMs: number
  readonly definition: TriggerDefinition
  readonly nowMs: number
  readonly trace?: TraceContext | null
}) {
  const sql = yield* SqlClient.SqlClient
  const d = definitionColumns(input.definition, yield* EncryptionKeys, input.trace)
  const scheduledAt = new Date(input.scheduledAtMs)
  yield* sql`UPDATE triggers SET status = ${input.status}, scheduled_at = ${scheduledAt},
      due_at = ${input.status === "registered" ? scheduledAt : null}, attempts = 0, triggered_by = NULL,
      url = ${d.url}, method = ${d.method}, headers = ${d.headers}::jsonb, body = ${d.body}, sealed_with = ${d.sealed_with},
      content_type = ${d.content_type}, title = ${d.title}, tags = ${d.tags}::text[], custom_key = ${d.custom_key},
      retry = ${d.retry}::jsonb, traceparent = ${d.traceparent}, tracestate = ${d.tracestate}, updated_at = ${new Date(input.nowMs)},
      item_digest = NULL
    WHERE id = ${input.id} AND status IN ${statusList(sql, PENDING_STATUSES)}`
})

/**
 * Cancels pending one-shot triggers, and active generators together with their upcoming instance
 * (DELETE /cancel's rule, for one trigger or for a chunk of a bulk action). Returns the cancelled rows
 * (for wake-ups; a generator's instance among them); a trigger whose state changed underneath, or that
 * was never cancellable, is left alone and missing from the result.
 */
export const triggersCancel = Effect.fnUntraced(function*(input: { readonly ids: ReadonlyArray<string>; readonly nowMs: number }) {
  if (input.ids.length === 0) return [] as Array<TriggerRef>
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  // the ids cast once, in a subquery (store/triggerReplay.ts says why)
  // a trigger its shard's mark fired is running: left alone (shardMarks.ts)
  const rows = yield* unfiredCompareAndSet(input.ids, (locked) => sql<RefRow>`WITH x AS (SELECT ${input.ids}::uuid[] AS ids)
    UPDATE triggers t SET status = 'cancelled', due_at = NULL, updated_at = ${now}
    WHERE (t.id = ANY((SELECT ids FROM x)::uuid[]) AND t.status IN ${statusList(sql, KEY_OWNER_STATUSES)}
        AND ${unfiredUnder(sql, "t", locked)})
       OR (t.generator_id = ANY((SELECT ids FROM x)::uuid[]) AND t.status = 'registered'
           AND EXISTS (SELECT 1 FROM triggers g WHERE g.id = t.generator_id AND g.status = 'active'))
    RETURNING ${sql.unsafe(refColumns.split(", ").map((column) => `t.${column}`).join(", "))}`)
  return rows.map(toRef)
})

/**
 * The trigger `/cancel` by custom key acts on: an active generator first, then a pending one-shot,
 * then the newest other uncancelled one-shot (which answers 410); locked for update.
 */
export const triggersFindForCancelByKey = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly customKey: string
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<RefRow>`SELECT ${sql.unsafe(refColumns)} FROM triggers
    WHERE project_id = ${input.projectId} AND custom_key = ${input.customKey} AND status <> 'cancelled'
    ORDER BY (status = 'active') DESC, (status IN ${statusList(sql, PENDING_STATUSES)}) DESC, id DESC
    LIMIT 1 FOR UPDATE`
  return rows[0] === undefined ? undefined : toRef(rows[0])
})
