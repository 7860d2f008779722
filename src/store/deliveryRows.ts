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
  retry: unknown; retry_policy: unknown; triggered_by: string | null; signing_secrets: Array<string>; scheduled_ms: string | null
  sealed_with: string | null; traceparent: string | null; tracestate: string | null
}

/** The columns of `DeliveryRecord`, over the aliases `t` (triggers) and `p` (its project), at `now`. */
export const deliveryColumns = (sql: SqlClient.SqlClient, now: Date) =>
  sql`t.id, t.shard, t.generator_id, t.project_id, t.url, t.method, t.headers, t.body, t.content_type, t.tags,
    t.attempts, t.retry, p.retry_policy, t.triggered_by, ${signingSecretsOf(sql, now)} AS signing_secrets,
    (extract(epoch FROM t.scheduled_at) * 1000)::bigint::text AS scheduled_ms, t.sealed_with, t.traceparent, t.tracestate`

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
