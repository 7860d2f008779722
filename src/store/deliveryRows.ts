// The rows of the statements that hand triggers to delivery (claims, fetches of fired triggers,
// starts of replayed or recovered ones, gate admissions): the columns each returns and the
// DeliveryRow made of them (one builder, reading the row by position), in one place.
import { SqlClient } from "effect/sql"
import type { ClaimedRow, DeliveryRow, HeaderPairs } from "../domain/trigger.ts"
import type { Keyring } from "../domain/sealing.ts"
import { openStoredRequest } from "./sealedRequests.ts"
import { signingSecretsOf } from "./signingSecrets.ts"

/** What `deliveryColumns` returns per trigger, by name (the statements read them by position: `deliveryRowOfValues`). */
export interface DeliveryRecord {
  id: string; shard: number; generator_id: string | null; project_id: string; url: string; method: string
  headers: HeaderPairs; body: Uint8Array | null; content_type: string | null; tags: Array<string>; attempts: number
  retry: unknown; retry_policy: string; triggered_by: string | null; signing_secrets: Array<string>; scheduled_ms: string | null
  sealed_with: string | null; traceparent: string | null; tracestate: string | null
}

/** The columns of `DeliveryRecord`, in its order, over the aliases `t` (triggers) and `p` (its project), at `now`. */
export const deliveryColumns = (sql: SqlClient.SqlClient, now: Date) =>
  sql`t.id, t.shard, t.generator_id, t.project_id, t.url, t.method, t.headers, t.body, t.content_type, t.tags,
    t.attempts, t.retry, p.retry_policy::text AS retry_policy, t.triggered_by, ${signingSecretsOf(sql, now)} AS signing_secrets,
    (extract(epoch FROM t.scheduled_at) * 1000)::bigint::text AS scheduled_ms, t.sealed_with, t.traceparent, t.tracestate`

/** How many columns `deliveryColumns` lists: a statement's own columns come after them. */
export const DELIVERY_COLUMN_COUNT = 19

/**
 * A trigger to send, from one row read as values (the statement's `.values`: one array per row,
 * `deliveryColumns` first and in their order; no object per row built by the driver), its stored
 * request opened with the encryption keys (store/sealedRequests.ts). `counted`: the statement
 * counted the attempt (a claim or a start), so it is the stored one; otherwise (fired, or taken
 * from a gate's backlog) it is counted when it starts or its outcome is recorded: the next one.
 * `dueAtMs`: when it comes due (a ClaimedRow); undefined for a row sent as soon as it is handed over.
 */
export const deliveryRowOfValues = <Due extends number | undefined>(
  v: ReadonlyArray<unknown>,
  keys: Keyring | null,
  counted: boolean,
  gateTags: ReadonlyArray<string>,
  fired: DeliveryRow["fired"],
  dueAtMs: Due
): Due extends number ? ClaimedRow : DeliveryRow => {
  const sealedWith = v[16] as string | null
  let headers = v[6] as HeaderPairs
  let body = v[7] as Uint8Array | null
  if (sealedWith !== null) {
    const opened = openStoredRequest({ headers, body, sealed_with: sealedWith }, keys)
    headers = opened.headers
    body = opened.body
  }
  const scheduledMs = v[15] as string | null
  const attempts = v[10] as number
  // one shape for every row (dueAtMs always present, undefined when not due yet)
  return {
    id: v[0] as string, shard: v[1] as number, generatorId: v[2] as string | null, projectId: v[3] as string,
    url: v[4] as string, method: v[5] as string, headers, body, contentType: v[8] as string | null,
    tags: v[9] as ReadonlyArray<string>, attempt: counted ? attempts : attempts + 1, retry: v[11], projectRetry: v[12],
    triggeredBy: v[13] as string | null, signingSecrets: v[14] as ReadonlyArray<string>, gateTags,
    scheduledAtMs: scheduledMs === null ? null : Number(scheduledMs), fired,
    traceparent: v[17] as string | null, tracestate: v[18] as string | null, dueAtMs
  } as DeliveryRow as Due extends number ? ClaimedRow : DeliveryRow
}
