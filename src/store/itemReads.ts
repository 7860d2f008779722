// Reads of /declare and /bulk: the triggers their planners diff the items against (domain/declare.ts,
// domain/bulk.ts), as StoredTrigger, oldest first. Taken without locks: the writes (itemWrites.ts)
// are compare-and-sets on the status read here, so a change in between is seen, never overwritten.
// A queued trigger is read only while held back by a tag gate (claimed by no node). A fired
// trigger (shardMarks.ts) is read as `running`, so the planners leave it alone. /declare may read
// them first without the compared fields, with the digest it stored (migration 20), and in full only
// those whose digest is not their item's (commands/declare.ts).
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import { HELD_BACK_STATUSES, type StoredTrigger } from "../domain/itemMatch.ts"
import type { RetryPolicy } from "../domain/retry.ts"
import { DUE_STATUSES, type HeaderPairs, KEY_OWNER_STATUSES, type TriggerKind, type TriggerStatus } from "../domain/trigger.ts"
import { EncryptionKeys, type Opened, openStoredRequest } from "./sealedRequests.ts"
import { effectiveStatusSql } from "./shardMarks.ts"
import { textArray, uuidArray } from "./columnArrays.ts"
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

/** The project's triggers carrying `tag` (the read uses the tags' index). */
const taggedBy = (sql: SqlClient.SqlClient, input: { readonly projectId: string; readonly tag: string }) =>
  sql`t.project_id = ${input.projectId} AND cardinality(t.tags) > 0 AND t.tags @> ARRAY[${input.tag}]::text[]`

/**
 * `columns` of the project's triggers carrying `tag` that own their key or are held back, and of the
 * live instances of its active generators carrying `tag`, by id.
 */
const taggedWithInstances = <Row extends object>(
  sql: SqlClient.SqlClient,
  input: { readonly projectId: string; readonly tag: string },
  columns: string
) => {
  const tagged = taggedBy(sql, input)
  return sql<Row>`
    SELECT ${sql.unsafe(columns)} FROM triggers t WHERE ${tagged} AND ${liveOr(sql, KEY_OWNER_STATUSES)}
    UNION ALL
    SELECT ${sql.unsafe(columns)} FROM triggers t
    WHERE t.generator_id IN (
        SELECT t.id FROM triggers t WHERE ${tagged} AND t.kind = 'generator' AND t.status = 'active')
      AND ${liveOr(sql, DUE_STATUSES)}
    ORDER BY id`
}

/**
 * For /declare: the project's triggers carrying `tag` that are pending (registered, skipped,
 * retrying, active) or held back, and the live instances (registered, retrying, held back) of its
 * active generators carrying `tag`. An instance carrying the tag may be listed twice. `ids`: only
 * those of the triggers carrying the tag (no instance of theirs) with these ids.
 */
export const itemsReadForDeclare = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly tag: string
  readonly ids?: ReadonlyArray<string>
}) {
  const sql = yield* SqlClient.SqlClient
  const tagged = taggedBy(sql, input)
  const rows = input.ids === undefined
    ? yield* taggedWithInstances<ItemRow>(sql, input, COLUMNS)
    : yield* sql<ItemRow>`
    SELECT ${sql.unsafe(COLUMNS)} FROM triggers t
    WHERE t.id = ANY(${uuidArray(input.ids)}::uuid[]) AND ${tagged} AND ${liveOr(sql, KEY_OWNER_STATUSES)}
    ORDER BY id`
  const keyring = yield* EncryptionKeys
  return rows.map((row) => toStored(openStoredRequest(row, keyring)))
})

/**
 * For /declare: the digest stored with each trigger carrying `tag` whose key is among `keys`
 * (pending or held back, as itemsReadForDeclare; instances have no key); null: none stored.
 */
export const itemDigestsOfKeys = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly tag: string
  readonly keys: ReadonlyArray<string>
}) {
  if (input.keys.length === 0) return [] as Array<{ readonly custom_key: string; readonly item_digest: string | null }>
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ readonly custom_key: string; readonly item_digest: string | null }>`
    SELECT t.custom_key, t.item_digest FROM triggers t
    WHERE ${taggedBy(sql, input)} AND t.custom_key = ANY(${textArray(input.keys)}::text[]) AND ${liveOr(sql, KEY_OWNER_STATUSES)}`
})

interface DigestRow {
  readonly id: string
  readonly kind: TriggerKind
  readonly status: TriggerStatus
  readonly generator_id: string | null
  readonly tags: ReadonlyArray<string>
  readonly custom_key: string | null
  readonly scheduled_ms: string | null
  readonly key_scope: string | null
  readonly item_digest: string | null
}

const DIGEST_COLUMNS = `t.id, t.kind, ${effectiveStatusSql("t")} AS status, t.generator_id, t.tags, t.custom_key,
  (extract(epoch FROM t.scheduled_at) * 1000)::bigint::text AS scheduled_ms, t.key_scope, t.item_digest`

/**
 * The triggers of itemsReadForDeclare without their compared fields (StoredTrigger `comparedFields`
 * false: url, method, headers, body, title, retry empty, cron null), each `sameAsItem` when the digest
 * /declare stored with it (domain/itemDigest.ts) is its key's item's: what /declare needs of the triggers no item
 * compares with, and of those whose digest shows them the same as their item (`sameAsItem`).
 */
export const itemDigestsReadForDeclare = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly tag: string
  /** The digest of the item with this key, if any: a trigger (not an instance) stored with it is `sameAsItem`. */
  readonly itemDigestOf: (customKey: string) => string | undefined
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* taggedWithInstances<DigestRow>(sql, input, DIGEST_COLUMNS)
  return rows.map((row): StoredTrigger => ({
    id: row.id,
    kind: row.kind,
    status: row.status,
    generatorId: row.generator_id,
    definition: {
      url: "",
      method: "",
      headers: [],
      body: null,
      contentType: null,
      title: null,
      tags: row.tags,
      customKey: row.custom_key,
      retry: null
    },
    scheduledAtMs: row.scheduled_ms === null ? null : Number(row.scheduled_ms),
    cron: null,
    keyScope: row.key_scope,
    comparedFields: false,
    sameAsItem: row.item_digest !== null && row.generator_id === null && row.custom_key !== null &&
      row.item_digest === input.itemDigestOf(row.custom_key)
  }))
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
