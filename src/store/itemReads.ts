// Reads of /declare and /bulk: the triggers their planners diff the items against (domain/declare.ts,
// domain/bulk.ts), as StoredTrigger, oldest first. Taken without locks: the writes (itemWrites.ts)
// are compare-and-sets on the status read here, so a change in between is seen, never overwritten.
// A queued trigger is read only while held back by a tag gate (claimed by no node). A fired
// trigger (shardMarks.ts) is read as `running`, so the planners leave it alone.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import { type Item, itemKind } from "../domain/item.ts"
import { HELD_BACK_STATUSES, type StoredTrigger } from "../domain/itemMatch.ts"
import type { RetryPolicy } from "../domain/retry.ts"
import { DUE_STATUSES, type HeaderPairs, KEY_OWNER_STATUSES, type TriggerKind, type TriggerStatus } from "../domain/trigger.ts"
import { arrayLiteral, textArrayLiteral } from "./columnArrays.ts"
import { EncryptionKeys, type Opened, openStoredRequest } from "./sealedRequests.ts"
import { effectiveStatusSql } from "./shardMarks.ts"
import { statusList } from "./sqlLists.ts"

interface ItemRow {
  readonly id: string
  readonly kind: TriggerKind
  readonly status: TriggerStatus
  readonly generator_id: string | null
  readonly url: string
  readonly method: string
  readonly headers: HeaderPairs
  readonly body: Uint8Array | null
  readonly sealed_with: string | null
  readonly content_type: string | null
  readonly title: string | null
  readonly tags: ReadonlyArray<string>
  readonly custom_key: string | null
  readonly retry: RetryPolicy | null
  readonly scheduled_ms: string | null
  readonly cron_expr: string | null
  readonly cron_tz: string | null
  readonly key_scope: string | null
}

const COLUMNS = `t.id, t.kind, ${effectiveStatusSql("t")} AS status, t.generator_id, t.url, t.method, t.headers, t.body, t.sealed_with, t.content_type, t.title,
  t.tags, t.custom_key, t.retry, (extract(epoch FROM t.scheduled_at) * 1000)::bigint::text AS scheduled_ms,
  t.cron_expr, t.cron_tz, t.key_scope`

const toStored = (row: Opened<ItemRow>): StoredTrigger => ({
  id: row.id,
  kind: row.kind,
  status: row.status,
  generatorId: row.generator_id,
  definition: {
    url: row.url,
    method: row.method,
    headers: row.headers,
    body: row.body,
    contentType: row.content_type,
    title: row.title,
    tags: row.tags,
    customKey: row.custom_key,
    retry: row.retry
  },
  scheduledAtMs: row.scheduled_ms === null ? null : Number(row.scheduled_ms),
  cron: row.cron_expr === null || row.cron_tz === null ? null : { cronExpr: row.cron_expr, cronTz: row.cron_tz },
  keyScope: row.key_scope
})

/** `status IN (<statuses>) OR status queued and held back` for the row alias `t`. */
const liveOr = (sql: SqlClient.SqlClient, statuses: ReadonlyArray<string>): Fragment =>
  sql`(t.status IN ${statusList(sql, statuses)} OR (t.status IN ${statusList(sql, HELD_BACK_STATUSES)} AND t.claimed_by IS NULL))`

/**
 * Header pairs as PostgreSQL writes a jsonb value as text (`[["a", "b"], ["c", "d"]]`), so that the
 * statement compares them with the stored column's text instead of parsing ten thousand jsonb values.
 * Strings are escaped as JSON.stringify does (the same escapes as PostgreSQL's for the text an item
 * may hold); a rendering that did not match would only make a row read whole.
 */
const jsonbText = (pairs: HeaderPairs): string => {
  let text = "["
  for (let i = 0; i < pairs.length; i++) {
    text += `${i === 0 ? "" : ", "}[${JSON.stringify(pairs[i]![0])}, ${JSON.stringify(pairs[i]![1])}]`
  }
  return text + "]"
}

/**
 * The keyed items of a /declare call as arrays of columns, each one array literal (columnArrays.ts
 * `arrayLiteral`), as a write would store them plain: their index in `items`, key, kind, time
 * (one-shots, epoch ms), cron, and definition.
 */
const declaredColumns = (items: ReadonlyArray<Item>) => {
  const columns = Array.from({ length: 14 }, () => [] as Array<string | null>)
  const [indexes, keys, kinds, scheduledMs, cronExprs, cronTzs, urls, methods, headers, bodies, contentTypes, titles, tags, retries] =
    columns
  for (let i = 0; i < items.length; i++) {
    const { schedule, definition: d } = items[i]!
    if (d.customKey === null || d.customKey === "") continue
    indexes!.push(String(i))
    keys!.push(d.customKey)
    kinds!.push(itemKind(items[i]!))
    scheduledMs!.push(schedule._tag === "Once" ? String(schedule.fireAtMs) : null)
    cronExprs!.push(schedule._tag === "Cron" ? schedule.cronExpr : null)
    cronTzs!.push(schedule._tag === "Cron" ? schedule.cronTz : null)
    urls!.push(d.url)
    methods!.push(d.method)
    headers!.push(jsonbText(d.headers))
    bodies!.push(d.body === null ? null : `\\x${Buffer.from(d.body.buffer, d.body.byteOffset, d.body.byteLength).toString("hex")}`)
    contentTypes!.push(d.contentType)
    titles!.push(d.title)
    tags!.push(textArrayLiteral(d.tags))
    retries!.push(d.retry === null ? null : JSON.stringify(d.retry))
  }
  return columns.map(arrayLiteral)
}

/** A row the statement found stored exactly as `item` would be written: its definition is the item's. */
const sameAsItem = (row: ItemRow, item: Item): StoredTrigger => ({
  id: row.id,
  kind: row.kind,
  status: row.status,
  generatorId: row.generator_id,
  definition: item.definition,
  scheduledAtMs: row.scheduled_ms === null ? null : Number(row.scheduled_ms),
  cron: item.schedule._tag === "Cron" ? { cronExpr: item.schedule.cronExpr, cronTz: item.schedule.cronTz } : null,
  keyScope: row.key_scope
})

/**
 * COLUMNS for a tagged trigger, then `same_item`: the index of the item it is stored exactly as (`x.n`),
 * its request and definition columns left out (NULL) when so.
 */
const COMPARED_COLUMNS = `t.id, t.kind, ${effectiveStatusSql("t")} AS status, t.generator_id,
  CASE WHEN x.n IS NULL THEN t.url END AS url, CASE WHEN x.n IS NULL THEN t.method END AS method,
  CASE WHEN x.n IS NULL THEN t.headers END AS headers, CASE WHEN x.n IS NULL THEN t.body END AS body,
  CASE WHEN x.n IS NULL THEN t.sealed_with END AS sealed_with, CASE WHEN x.n IS NULL THEN t.content_type END AS content_type,
  CASE WHEN x.n IS NULL THEN t.title END AS title, CASE WHEN x.n IS NULL THEN t.tags END AS tags,
  CASE WHEN x.n IS NULL THEN t.custom_key END AS custom_key, CASE WHEN x.n IS NULL THEN t.retry END AS retry,
  (extract(epoch FROM t.scheduled_at) * 1000)::bigint::text AS scheduled_ms,
  CASE WHEN x.n IS NULL THEN t.cron_expr END AS cron_expr, CASE WHEN x.n IS NULL THEN t.cron_tz END AS cron_tz,
  t.key_scope, x.n AS same_item`

/**
 * For /declare: the project's triggers carrying `tag` that are pending (registered, skipped,
 * retrying, active) or held back, and the live instances (registered, retrying, held back) of its
 * active generators carrying `tag`. An instance carrying the tag may be listed twice.
 *
 * `items` (the call's, validated) are sent along as arrays of columns, and a tagged trigger stored
 * plain exactly as its keyed item would be written now (same key, kind, time or cron, url, method,
 * headers, body, content type, title, tags in order, retry) comes back without its request: its
 * definition is the item's, so an unchanged call moves and decodes no stored request. Anything
 * short of exact equality (a sealed row among them: ENCRYPTION_KEYS) is read whole, for the
 * planner to compare.
 */
export const itemsReadForDeclare = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly tag: string
  readonly items?: ReadonlyArray<Item>
}) {
  const sql = yield* SqlClient.SqlClient
  // sealed writes (ENCRYPTION_KEYS) never compare equal here: nothing to send
  const keyring = yield* EncryptionKeys
  const items = keyring === null ? input.items ?? [] : []
  const c = declaredColumns(items)
  const tagged = sql`t.project_id = ${input.projectId} AND cardinality(t.tags) > 0 AND t.tags @> ARRAY[${input.tag}]::text[]`
  const rows = yield* sql<ItemRow & { readonly same_item: number | null }>`
    WITH x AS (
      SELECT * FROM unnest(${c[0]}::int4[], ${c[1]}::text[], ${c[2]}::text[], ${c[3]}::int8[], ${c[4]}::text[], ${c[5]}::text[],
        ${c[6]}::text[], ${c[7]}::text[], ${c[8]}::text[], ${c[9]}::bytea[], ${c[10]}::text[], ${c[11]}::text[], ${c[12]}::text[],
        ${c[13]}::jsonb[]) AS x(n, key, kind, scheduled_ms, cron_expr, cron_tz, url, method, headers, body, content_type, title,
        tags, retry))
    SELECT ${sql.unsafe(COMPARED_COLUMNS)} FROM triggers t
    LEFT JOIN x ON x.key = t.custom_key AND x.kind = t.kind AND t.sealed_with IS NULL
      AND (x.kind = 'generator' OR t.scheduled_at = 'epoch'::timestamptz + x.scheduled_ms * interval '1 millisecond')
      AND t.cron_expr IS NOT DISTINCT FROM x.cron_expr AND t.cron_tz IS NOT DISTINCT FROM x.cron_tz
      AND t.url = x.url AND t.method = x.method AND t.headers::text = x.headers AND t.body IS NOT DISTINCT FROM x.body
      AND t.content_type IS NOT DISTINCT FROM x.content_type AND t.title IS NOT DISTINCT FROM x.title
      AND t.tags = x.tags::text[] AND t.retry IS NOT DISTINCT FROM x.retry
    WHERE ${tagged} AND ${liveOr(sql, KEY_OWNER_STATUSES)}
    UNION ALL
    SELECT ${sql.unsafe(COLUMNS)}, NULL FROM triggers t
    WHERE t.generator_id IN (
        SELECT t.id FROM triggers t WHERE ${tagged} AND t.kind = 'generator' AND t.status = 'active')
      AND ${liveOr(sql, DUE_STATUSES)}
    ORDER BY id`.unprepared
  return rows.map((row) =>
    row.same_item === null ? toStored(openStoredRequest(row, keyring)) : sameAsItem(row, items[row.same_item]!)
  )
})

/**
 * For /bulk (domain/bulk.ts bulkLookups): triggers whose id is in `ids` (any status); pending
 * one-shots and active generators whose key is in `customKeys`; triggers carrying one of `tags`
 * that are pending or held back; and the upcoming (registered) instance of every active generator
 * among those. Nothing to look up reads nothing.
 */
export const itemsReadForBulk = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly ids: ReadonlyArray<string>
  readonly customKeys: ReadonlyArray<string>
  readonly tags: ReadonlyArray<string>
}) {
  const sql = yield* SqlClient.SqlClient
  const project = sql`t.project_id = ${input.projectId}`
  const parts: Array<Fragment> = []
  if (input.ids.length > 0) {
    parts.push(sql`SELECT ${sql.unsafe(COLUMNS)} FROM triggers t WHERE ${project} AND t.id = ANY(${input.ids}::uuid[])`)
  }
  if (input.customKeys.length > 0) {
    parts.push(sql`SELECT ${sql.unsafe(COLUMNS)} FROM triggers t
      WHERE ${project} AND t.custom_key = ANY(${input.customKeys}::text[]) AND t.custom_key IS NOT NULL
        AND t.status IN ${statusList(sql, KEY_OWNER_STATUSES)}`)
  }
  if (input.tags.length > 0) {
    parts.push(sql`SELECT ${sql.unsafe(COLUMNS)} FROM triggers t
      WHERE ${project} AND cardinality(t.tags) > 0 AND t.tags && ${input.tags}::text[] AND ${liveOr(sql, KEY_OWNER_STATUSES)}`)
  }
  if (parts.length === 0) return [] as Array<StoredTrigger>
  const rows = yield* sql<ItemRow>`
    WITH found AS (${sql.join(" UNION ALL ", false)(parts)})
    SELECT * FROM found
    UNION ALL
    SELECT ${sql.unsafe(COLUMNS)} FROM triggers t
    WHERE t.generator_id IN (SELECT id FROM found WHERE kind = 'generator' AND status = 'active')
      AND t.generator_id IS NOT NULL AND t.status = 'registered'
    ORDER BY id`
  const keyring = yield* EncryptionKeys
  return rows.map((row) => toStored(openStoredRequest(row, keyring)))
})
