// Trigger reads of the log endpoints (GET /jobs, GET /jobs/{id}). Every query is scoped by
// project_id. Listing is newest first with keyset pagination on the UUIDv7 id, so a page is an
// index range scan of triggers_project (project_id, id DESC); the filter is store/triggerFilter.ts.
// Cron expression and time zone are never selected (SPEC: they cannot be read back). A trigger its
// shard's mark has fired reads as `running` (shardMarks.ts).
// The outcome of a completed trigger comes from its latest execution (executionReads.ts), read apart so
// that a pending trigger reads without the executions table.
// A list never reads a large body (DECISIONS: over 64 KiB it is listed without its value): only its
// size (octet_length reads the stored length, not the value) and a short prefix to tell its encoding.
// Sealed headers and bodies (ENCRYPTION_KEYS) are opened by openStoredRequest; a sealed body's plain
// size is its stored size less the seal's overhead, and its prefix opens to the plain prefix.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import type { TriggerFilter } from "../domain/triggerFilter.ts"
import { ENCODING_PROBE_BYTES, LIST_BODY_MAX_BYTES, type TriggerRow } from "../domain/views.ts"
import { bodyPrefixSql, EncryptionKeys, openStoredRequest, plainBodySizeSql } from "./sealedRequests.ts"
import { effectiveStatusSql } from "./shardMarks.ts"
import { triggerFilterClauses, UPCOMING_AT_SQL } from "./triggerFilter.ts"

/** The whole body, its size, not truncated. */
const wholeBody = (sql: SqlClient.SqlClient) => sql`t.body, ${plainBodySizeSql(sql)} AS body_size, false AS body_truncated`

/** A body up to LIST_BODY_MAX_BYTES whole; a larger one as its first ENCODING_PROBE_BYTES, marked truncated. */
const listedBody = (sql: SqlClient.SqlClient) => sql`
    CASE WHEN ${plainBodySizeSql(sql)} > ${LIST_BODY_MAX_BYTES} THEN ${bodyPrefixSql(sql, ENCODING_PROBE_BYTES)}
      ELSE t.body END AS body,
    ${plainBodySizeSql(sql)} AS body_size,
    coalesce(${plainBodySizeSql(sql)} > ${LIST_BODY_MAX_BYTES}, false) AS body_truncated`

type StoredTriggerRow = TriggerRow & { readonly sealed_with: string | null }

/** The upcoming instance is found through the unique partial index triggers_generator_upcoming. */
const selectTrigger = (sql: SqlClient.SqlClient, body: Fragment) => sql`
  SELECT t.id, t.kind, t.generator_id, ${sql.unsafe(effectiveStatusSql("t"))} AS status, t.scheduled_at,
    CASE WHEN t.kind = 'generator' THEN ${sql.unsafe(UPCOMING_AT_SQL)} END AS upcoming_at,
    t.url, t.method, t.headers, ${body}, t.sealed_with, t.content_type, t.title, t.tags, t.custom_key, t.retry,
    t.attempts, t.created_at, t.updated_at
  FROM triggers t`

/** One trigger of the project, or undefined (unknown id or another project's). */
export const triggersGet = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly id: string
}) {
  const sql = yield* SqlClient.SqlClient
  const keyring = yield* EncryptionKeys
  const rows = yield* sql<StoredTriggerRow>`${selectTrigger(sql, wholeBody(sql))}
    WHERE t.id = ${input.id} AND t.project_id = ${input.projectId}`
  return rows[0] === undefined ? undefined : openStoredRequest(rows[0], keyring) as TriggerRow
})

export interface TriggersListInput {
  readonly projectId: string
  /** Which triggers (store/triggerFilter.ts, the clause of the bulk actions too). */
  readonly filter: TriggerFilter
  /** Page size; one more row is read to learn whether another page follows. */
  readonly limit: number
  /** The last id of the previous page: only older triggers are returned. */
  readonly olderThanId?: string | undefined
}

/** A page of the project's triggers, newest first; `more` when another page follows. */
export const triggersList = Effect.fnUntraced(function*(input: TriggersListInput) {
  const sql = yield* SqlClient.SqlClient
  const clauses = triggerFilterClauses(sql, input.projectId, input.filter)
  if (input.olderThanId !== undefined) clauses.push(sql`t.id < ${input.olderThanId}`)
  const keyring = yield* EncryptionKeys
  const rows = yield* sql<StoredTriggerRow>`${selectTrigger(sql, listedBody(sql))}
    WHERE ${sql.and(clauses)}
    ORDER BY t.id DESC
    LIMIT ${input.limit + 1}`
  return {
    rows: rows.slice(0, input.limit).map((row): TriggerRow => openStoredRequest(row, keyring)),
    more: rows.length > input.limit
  }
})
