// Tag policies: one row per (project, tag). Every change is announced (notification payload: the
// project id) in its own statement's transaction, so every node's policy cache forgets the
// project's policies at once. The live state of the policy view comes from the gate rows (gate_slots:
// triggers waiting in PostgreSQL), the nodes' leases (in flight) and the tag's hold.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { StoredTagPolicy, TagPolicyFields } from "../domain/tagPolicy.ts"
import { WAITING_SQL } from "./gates.ts"
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
  /** Triggers with the tag admitted by a gate and being sent now (as the nodes' leases last said). */
  readonly inFlight: number
  /** The end of the tag's hold after a refusal of its target; null when not held. */
  readonly heldUntil: Date | null
}

/** The counts of a tag nothing is known of. */
export const NO_GATE_COUNTS: GateCounts = { queued: 0, inFlight: 0, heldUntil: null }

/**
 * Live state per tag in one statement: the triggers waiting in PostgreSQL from the gate rows (the
 * partial index gate_slots_waiting, this project's tags only; a trigger cancelled while it waited,
 * whose row is dropped later, is not counted: one triggers lookup per waiting row), those in flight
 * as the live leases last reported them (store/gateLeases.ts: renewed a few times a second), and
 * the hold.
 */
export const tagPoliciesLiveCounts = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly tags: ReadonlyArray<string>
}) {
  const counts = new Map<string, GateCounts>()
  if (input.tags.length === 0) return counts
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ tag: string; queued: number; in_flight: number; held_until: Date | null }>`
    SELECT g.tag,
      (SELECT count(*) FROM gate_slots s WHERE s.project_id = ${input.projectId} AND s.tag = g.tag AND NOT s.running
        AND EXISTS (SELECT FROM triggers t WHERE t.id = s.trigger_id AND ${sql.unsafe(WAITING_SQL)}))::int AS queued,
      (SELECT coalesce(sum(l.in_flight), 0) FROM gate_leases l
        WHERE l.project_id = ${input.projectId} AND l.tag = g.tag AND l.gone_at IS NULL)::int AS in_flight,
      (SELECT h.held_until FROM gate_holds h WHERE h.project_id = ${input.projectId} AND h.tag = g.tag AND h.held_until > now()) AS held_until
    FROM unnest(${input.tags}::text[]) AS g(tag)`
  for (const row of rows) counts.set(row.tag, { queued: row.queued, inFlight: row.in_flight, heldUntil: row.held_until })
  return counts
})
