// Tag policies: one row per (project, tag). Every change is announced (notification payload: the
// project id) in its own statement's transaction, so every node's policy cache forgets the
// project's policies at once. The live counts of the policy view come from the gate rows
// (gate_slots), which only exist for triggers held back or in flight under a gated tag.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { StoredTagPolicy, TagPolicyFields } from "../domain/tagPolicy.ts"
import { TAG_POLICIES_CHANGED_CHANNEL } from "./notifications.ts"

interface PolicyRecord {
  readonly id: string
  readonly tag: string
  readonly max_concurrent: number | null
  readonly request_timeout_seconds: number | null
  readonly throughput: Record<string, number> | null
  readonly retry_strategy: StoredTagPolicy["retryStrategy"]
  readonly retry_max_attempts: number | null
  readonly retry_initial_delay_seconds: number | null
  readonly retry_max_delay_seconds: number | null
  readonly retry_on: StoredTagPolicy["retryOn"]
  readonly created_at: Date
  readonly updated_at: Date
}

const COLUMNS = `id, tag, max_concurrent, request_timeout_seconds, throughput, retry_strategy, retry_max_attempts,
  retry_initial_delay_seconds, retry_max_delay_seconds, retry_on, created_at, updated_at`

const toPolicy = (row: PolicyRecord): StoredTagPolicy => ({
  id: row.id,
  tag: row.tag,
  maxConcurrent: row.max_concurrent,
  requestTimeoutSeconds: row.request_timeout_seconds,
  throughput: row.throughput,
  retryStrategy: row.retry_strategy,
  retryMaxAttempts: row.retry_max_attempts,
  retryInitialDelaySeconds: row.retry_initial_delay_seconds,
  retryMaxDelaySeconds: row.retry_max_delay_seconds,
  retryOn: row.retry_on,
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

/** The fields as column values (throughput as JSON text for `::jsonb`). */
const columnsOf = (fields: TagPolicyFields) => ({
  tag: fields.tag,
  maxConcurrent: fields.maxConcurrent,
  requestTimeoutSeconds: fields.requestTimeoutSeconds,
  throughput: fields.throughput === null ? null : JSON.stringify(fields.throughput),
  retryStrategy: fields.retryStrategy,
  retryMaxAttempts: fields.retryMaxAttempts,
  retryInitialDelaySeconds: fields.retryInitialDelaySeconds,
  retryMaxDelaySeconds: fields.retryMaxDelaySeconds,
  retryOn: fields.retryOn
})

/** Every policy of the project, oldest first. */
export const tagPoliciesList = Effect.fnUntraced(function*(projectId: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<PolicyRecord>`SELECT ${sql.unsafe(COLUMNS)} FROM tag_policies
    WHERE project_id = ${projectId} ORDER BY created_at, id`
  return rows.map(toPolicy)
})

/** One policy of the project, or undefined (unknown id or another project's). */
export const tagPoliciesGet = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly id: string }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<PolicyRecord>`SELECT ${sql.unsafe(COLUMNS)} FROM tag_policies
    WHERE id = ${input.id} AND project_id = ${input.projectId}`
  return rows[0] === undefined ? undefined : toPolicy(rows[0])
})

/**
 * One policy of the project, locked until the transaction ends (FOR UPDATE), or undefined: a PUT
 * reads, merges and writes the whole row, so two concurrent PUTs of different fields must not
 * overwrite each other's.
 */
export const tagPoliciesGetForUpdate = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly id: string }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<PolicyRecord>`SELECT ${sql.unsafe(COLUMNS)} FROM tag_policies
    WHERE id = ${input.id} AND project_id = ${input.projectId} FOR UPDATE`
  return rows[0] === undefined ? undefined : toPolicy(rows[0])
})

/** The policies of some tags of a project. */
export const tagPoliciesOfTags = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly tags: ReadonlyArray<string> }) {
  if (input.tags.length === 0) return [] as Array<StoredTagPolicy>
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<PolicyRecord>`SELECT ${sql.unsafe(COLUMNS)} FROM tag_policies
    WHERE project_id = ${input.projectId} AND tag = ANY(${input.tags}::text[])`
  return rows.map(toPolicy)
})

/** The policy of a tag, or undefined. */
export const tagPoliciesFindByTag = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly tag: string }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<PolicyRecord>`SELECT ${sql.unsafe(COLUMNS)} FROM tag_policies
    WHERE project_id = ${input.projectId} AND tag = ${input.tag}`
  return rows[0] === undefined ? undefined : toPolicy(rows[0])
})

/** Creates a policy; undefined when the tag has one already. */
export const tagPoliciesCreate = Effect.fnUntraced(function*(input: {
  readonly id: string
  readonly projectId: string
  readonly fields: TagPolicyFields
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const c = columnsOf(input.fields)
  const now = new Date(input.nowMs)
  const rows = yield* sql<PolicyRecord>`
    WITH created AS (
      INSERT INTO tag_policies (id, project_id, tag, max_concurrent, request_timeout_seconds, throughput, retry_strategy,
        retry_max_attempts, retry_initial_delay_seconds, retry_max_delay_seconds, retry_on, created_at, updated_at)
      VALUES (${input.id}, ${input.projectId}, ${c.tag}, ${c.maxConcurrent}, ${c.requestTimeoutSeconds}, ${c.throughput}::jsonb,
        ${c.retryStrategy}, ${c.retryMaxAttempts}, ${c.retryInitialDelaySeconds}, ${c.retryMaxDelaySeconds}, ${c.retryOn},
        ${now}, ${now})
      ON CONFLICT (project_id, tag) DO NOTHING
      RETURNING ${sql.unsafe(COLUMNS)}
    ), announced AS (
      SELECT pg_notify(${TAG_POLICIES_CHANGED_CHANNEL}, ${input.projectId}) FROM created
    )
    SELECT created.* FROM created, announced`
  return rows[0] === undefined ? undefined : toPolicy(rows[0])
})

/**
 * Replaces a policy's fields; undefined when it does not exist. Fails with a unique violation when
 * the new tag has a policy of its own.
 */
export const tagPoliciesUpdate = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly id: string
  readonly fields: TagPolicyFields
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const c = columnsOf(input.fields)
  const rows = yield* sql<PolicyRecord>`
    WITH updated AS (
      UPDATE tag_policies SET tag = ${c.tag}, max_concurrent = ${c.maxConcurrent},
        request_timeout_seconds = ${c.requestTimeoutSeconds}, throughput = ${c.throughput}::jsonb,
        retry_strategy = ${c.retryStrategy}, retry_max_attempts = ${c.retryMaxAttempts},
        retry_initial_delay_seconds = ${c.retryInitialDelaySeconds}, retry_max_delay_seconds = ${c.retryMaxDelaySeconds},
        retry_on = ${c.retryOn}, updated_at = ${new Date(input.nowMs)}
      WHERE id = ${input.id} AND project_id = ${input.projectId}
      RETURNING ${sql.unsafe(COLUMNS)}
    ), announced AS (
      SELECT pg_notify(${TAG_POLICIES_CHANGED_CHANNEL}, ${input.projectId}) FROM updated
    )
    SELECT updated.* FROM updated, announced`
  return rows[0] === undefined ? undefined : toPolicy(rows[0])
})

/** Deletes a policy; the deleted one, or undefined when it did not exist. */
export const tagPoliciesDelete = Effect.fnUntraced(function*(input: { readonly projectId: string; readonly id: string }) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<PolicyRecord>`
    WITH deleted AS (
      DELETE FROM tag_policies WHERE id = ${input.id} AND project_id = ${input.projectId}
      RETURNING ${sql.unsafe(COLUMNS)}
    ), announced AS (
      SELECT pg_notify(${TAG_POLICIES_CHANGED_CHANNEL}, ${input.projectId}) FROM deleted
    )
    SELECT deleted.* FROM deleted, announced`
  return rows[0] === undefined ? undefined : toPolicy(rows[0])
})

export interface GateCounts {
  /** Triggers with the tag held back by a gate now. */
  readonly queued: number
  /** Triggers with the tag admitted by a gate and being sent now. */
  readonly inFlight: number
}

/**
 * Live counts per tag, from the gate rows, which only triggers held back or in flight under a gated
 * tag have. Each half states its `running` condition so that it reads its partial index
 * (gate_slots_waiting, gate_slots_running) for this project's tags only: a single query filtering
 * with `count(*) FILTER` matches neither index and scans every project's gate rows. A held-back
 * trigger cancelled meanwhile (its row is dropped on the gate's next look) is not counted, which
 * costs one triggers lookup per held-back row of these tags.
 */
export const tagPoliciesLiveCounts = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly tags: ReadonlyArray<string>
}) {
  const counts = new Map<string, GateCounts>()
  if (input.tags.length === 0) return counts
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ tag: string; queued: number; in_flight: number }>`
    SELECT tag, sum(queued)::int AS queued, sum(in_flight)::int AS in_flight FROM (
      SELECT s.tag, count(*) AS queued, 0 AS in_flight FROM gate_slots s
        WHERE s.project_id = ${input.projectId} AND s.tag = ANY(${input.tags}::text[]) AND NOT s.running
          AND EXISTS (SELECT FROM triggers t WHERE t.id = s.trigger_id AND t.status = 'queued')
        GROUP BY s.tag
      UNION ALL
      SELECT tag, 0, count(*) FROM gate_slots
        WHERE project_id = ${input.projectId} AND tag = ANY(${input.tags}::text[]) AND running
        GROUP BY tag
    ) counts
    GROUP BY tag`
  for (const row of rows) counts.set(row.tag, { queued: row.queued, inFlight: row.in_flight })
  return counts
})
