// The rows of the statements that hand triggers to delivery (claims, fetches of fired triggers,
// starts of replayed or recovered ones, gate admissions): the columns each returns and the
// DeliveryRow made of them, in one place.
import { SqlClient } from "effect/sql"
import type { ClaimedRow, DeliveryRow, HeaderPairs } from "../domain/trigger.ts"
import type { Keyring } from "../domain/sealing.ts"
import { openStoredRequest } from "./sealedRequests.ts"
import { signingSecretsOf } from "./signingSecrets.ts"

/** What a statement handing triggers to delivery returns per trigger (see `deliveryColumns`). */
export interface DeliveryRecord {
  id: string; shard: number; generator_id: string | null; project_id: string; url: string; method: string
  headers: HeaderPairs; body: Uint8Array | null; content_type: string | null; tags: Array<string>; attempts: number
  retry: unknown; retry_policy: string; triggered_by: string | null; signing_secrets: Array<string>; scheduled_ms: string | null
  sealed_with: string | null; traceparent: string | null; tracestate: string | null
}

/** The columns of `DeliveryRecord`, over the aliases `t` (triggers) and `p` (its project), at `now`. */
export const deliveryColumns = (sql: SqlClient.SqlClient, now: Date) =>
  sql`t.id, t.shard, t.generator_id, t.project_id, t.url, t.method, t.headers, t.body, t.content_type, t.tags,
    t.attempts, t.retry, p.retry_policy::text AS retry_policy, t.triggered_by, ${signingSecretsOf(sql, now)} AS signing_secrets,
    (extract(epoch FROM t.scheduled_at) * 1000)::bigint::text AS scheduled_ms, t.sealed_with, t.traceparent, t.tracestate`

/** How many columns `deliveryColumns` lists: a values row (`deliveryRowOfValues`) has its own after them. */
export const DELIVERY_COLUMN_COUNT = 19

/**
 * `toDeliveryRow` of a row read as values (the statement's `.values`: one array per row, in the
 * order of `deliveryColumns`, no object per row built by the driver), for a trigger fired by its
 * shard's mark: its attempt is the next one, and it comes due at `dueAtMs`.
 */
export const firedRowOfValues = (
  v: ReadonlyArray<unknown>,
  keys: Keyring | null,
  gateTags: ReadonlyArray<string>,
  seenUs: string,
  dueAtMs: number
): ClaimedRow => {
  const sealedWith = v[16] as string | null
  let headers = v[6] as HeaderPairs
  let body = v[7] as Uint8Array | null
  if (sealedWith !== null) {
    const opened = openStoredRequest({ headers, body, sealed_with: sealedWith }, keys)
    headers = opened.headers
    body = opened.body
  }
  const scheduledMs = v[15] as string | null
  return {
    id: v[0] as string, shard: v[1] as number, generatorId: v[2] as string | null, projectId: v[3] as string,
    url: v[4] as string, method: v[5] as string, headers, body, contentType: v[8] as string | null,
    tags: v[9] as ReadonlyArray<string>, attempt: (v[10] as number) + 1, retry: v[11], projectRetry: v[12],
    triggeredBy: v[13] as string | null, signingSecrets: v[14] as ReadonlyArray<string>, gateTags,
    scheduledAtMs: scheduledMs === null ? null : Number(scheduledMs), fired: { seenUs },
    traceparent: v[17] as string | null, tracestate: v[18] as string | null, dueAtMs
  }
}

/**
 * A trigger to send, its stored request opened with the encryption keys (store/sealedRequests.ts).
 * `attempt`: a claimed trigger's attempt was counted when it was claimed; a fired one's (`fired`
 * set) is counted when its outcome is recorded, so it is the next one.
 */
export function toDeliveryRow(sealed: DeliveryRecord, keys: Keyring | null, gateTags?: ReadonlyArray<string>): DeliveryRow
/** With its due time: a row handed over when it comes due (ClaimedRow). */
export function toDeliveryRow(
  sealed: DeliveryRecord,
  keys: Keyring | null,
  gateTags: ReadonlyArray<string>,
  fired: DeliveryRow["fired"],
  dueAtMs: number
): ClaimedRow
export function toDeliveryRow(
  sealed: DeliveryRecord,
  keys: Keyring | null,
  gateTags: ReadonlyArray<string> = [],
  fired: DeliveryRow["fired"] = null,
  dueAtMs?: number
): DeliveryRow | ClaimedRow {
  const row = openStoredRequest(sealed, keys)
  const delivery: DeliveryRow = {
    id: row.id, shard: row.shard, generatorId: row.generator_id, projectId: row.project_id, url: row.url, method: row.method,
    headers: row.headers, body: row.body, contentType: row.content_type, tags: row.tags,
    attempt: fired === null ? row.attempts : row.attempts + 1,
    retry: row.retry, projectRetry: row.retry_policy, triggeredBy: row.triggered_by, signingSecrets: row.signing_secrets, gateTags,
    scheduledAtMs: row.scheduled_ms === null ? null : Number(row.scheduled_ms), fired,
    traceparent: row.traceparent, tracestate: row.tracestate
  }
  if (dueAtMs === undefined) return delivery
  // one more field on the row, not a spread of a temporary object into it
  ;(delivery as { dueAtMs?: number }).dueAtMs = dueAtMs
  return delivery as ClaimedRow
}
