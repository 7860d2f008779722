// Trigger writes of /schedule and /cancel. Every state change is a compare-and-set on `status` in
// SQL, so a concurrent scheduler claim or a second request can never act on a stale state.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import { KEY_OWNER_STATUSES, PENDING_STATUSES, type TriggerDefinition } from "../domain/trigger.ts"
import { base64Field, jsonField, makeIsoOf } from "./jsonRecords.ts"
import { grantFromUsageRow, type GrantRow } from "./quota.ts"
import { statusList } from "./sqlLists.ts"

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
 * The pending one-shot trigger or active generator that owns a custom key, locked for update. A key
 * can have several owners (SPEC "/declare" rule 9: one created by /schedule or /bulk, and one per
 * tag that /declare created it in; schema.ts migration 3): the unscoped one is preferred, then the
 * oldest.
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

/** A trigger of the project by id, locked for update. */
export const triggersFindById = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly id: string
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<RefRow>`SELECT ${sql.unsafe(refColumns)} FROM triggers
    WHERE id = ${input.id} AND project_id = ${input.projectId} FOR UPDATE`
  return rows[0] === undefined ? undefined : toRef(rows[0])
})

/** A trigger definition as column values (headers and retry as JSON text for `::jsonb`). */
export const definitionColumns = (definition: TriggerDefinition) => ({
  url: definition.url,
  method: definition.method,
  headers: JSON.stringify(definition.headers),
  body: definition.body,
  content_type: definition.contentType,
  title: definition.title,
  tags: definition.tags,
  custom_key: definition.customKey,
  retry: definition.retry === null ? null : JSON.stringify(definition.retry)
})

export interface NewOneShot {
  readonly id: string
  readonly projectId: string
  readonly shard: number
  readonly status: "registered" | "skipped"
  readonly scheduledAtMs: number
  readonly definition: TriggerDefinition
  readonly generatorId?: string
  readonly nowMs: number
}

export const triggersInsertOneShot = Effect.fnUntraced(function*(input: NewOneShot) {
  const sql = yield* SqlClient.SqlClient
  const d = definitionColumns(input.definition)
  const scheduledAt = new Date(input.scheduledAtMs)
  const now = new Date(input.nowMs)
  yield* sql`INSERT INTO triggers (id, project_id, kind, generator_id, shard, status, scheduled_at, due_at,
      url, method, headers, body, content_type, title, tags, custom_key, retry, created_at, updated_at)
    VALUES (${input.id}, ${input.projectId}, 'job', ${input.generatorId ?? null}, ${input.shard}, ${input.status},
      ${scheduledAt}, ${input.status === "registered" ? scheduledAt : null},
      ${d.url}, ${d.method}, ${d.headers}::jsonb, ${d.body}, ${d.content_type}, ${d.title}, ${d.tags}::text[],
      ${d.custom_key}, ${d.retry}::jsonb, ${now}, ${now})`
})

/**
 * The rows as the JSON array `triggersCreateWithinQuota` reads (`n` numbers them from 1), written
 * out directly (jsonRecords.ts).
 */
const nowIsoOf = makeIsoOf()

export const newOneShotsJson = (rows: ReadonlyArray<NewOneShot>): string => {
  let json = "["
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!
    const d = row.definition
    const scheduledAt = new Date(row.scheduledAtMs).toISOString()
    json += `${i === 0 ? "" : ","}{"n":${i + 1},"id":"${row.id}","shard":${row.shard},"status":"${row.status}",` +
      `"scheduled_at":"${scheduledAt}"${row.status === "registered" ? `,"due_at":"${scheduledAt}"` : ""},"now":"${nowIsoOf(row.nowMs)}",` +
      `"url":${JSON.stringify(d.url)},"method":${JSON.stringify(d.method)},"headers":${JSON.stringify(d.headers)},` +
      `"tags":${JSON.stringify(d.tags)}${jsonField("generator_id", row.generatorId ?? null)}${base64Field("body", d.body)}` +
      `${jsonField("content_type", d.contentType)}${jsonField("title", d.title)}${jsonField("custom_key", d.customKey)}` +
      `${jsonField("retry", d.retry)}}`
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
  const json = newOneShotsJson(input.rows)
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
        url, method, headers, body, content_type, title, tags, custom_key, retry, created_at, updated_at)
      SELECT x.id, ${input.projectId}, 'job', x.generator_id, x.shard, x.status, x.scheduled_at, x.due_at, x.url,
        x.method, x.headers, decode(x.body, 'base64'), x.content_type, x.title,
        ARRAY(SELECT jsonb_array_elements_text(x.tags)), x.custom_key, x.retry, x.now, x.now
      FROM granted, jsonb_to_recordset(${json}::jsonb) AS x(n int, id uuid, generator_id uuid, shard int, status text,
        scheduled_at timestamptz, due_at timestamptz, url text, method text, headers jsonb, body text, content_type text,
        title text, tags jsonb, custom_key text, retry jsonb, now timestamptz)
      WHERE x.n <= granted.after - granted.before
    )
    SELECT before::text, after::text, quota::text FROM granted`)
})

/** Replaces the definition and time of a pending one-shot trigger in place (same id). */
export const triggersReplaceOneShot = Effect.fnUntraced(function*(input: {
  readonly id: string
  readonly status: "registered" | "skipped"
  readonly scheduledAtMs: number
  readonly definition: TriggerDefinition
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const d = definitionColumns(input.definition)
  const scheduledAt = new Date(input.scheduledAtMs)
  yield* sql`UPDATE triggers SET status = ${input.status}, scheduled_at = ${scheduledAt},
      due_at = ${input.status === "registered" ? scheduledAt : null}, attempts = 0, triggered_by = NULL,
      url = ${d.url}, method = ${d.method}, headers = ${d.headers}::jsonb, body = ${d.body},
      content_type = ${d.content_type}, title = ${d.title}, tags = ${d.tags}::text[], custom_key = ${d.custom_key},
      retry = ${d.retry}::jsonb, updated_at = ${new Date(input.nowMs)}
    WHERE id = ${input.id} AND status IN ${statusList(sql, PENDING_STATUSES)}`
})

/**
 * Cancels a pending one-shot trigger, or an active generator together with its upcoming instance.
 * Returns the cancelled rows (for wake-ups); empty when the state changed underneath.
 */
export const triggersCancel = Effect.fnUntraced(function*(input: { readonly id: string; readonly nowMs: number }) {
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  const rows = yield* sql<RefRow>`UPDATE triggers SET status = 'cancelled', due_at = NULL, updated_at = ${now}
    WHERE (id = ${input.id} AND status IN ${statusList(sql, KEY_OWNER_STATUSES)})
       OR (generator_id = ${input.id} AND status = 'registered'
           AND EXISTS (SELECT 1 FROM triggers g WHERE g.id = ${input.id} AND g.status = 'active'))
    RETURNING ${sql.unsafe(refColumns)}`
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
