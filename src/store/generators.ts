// Generators (recurring triggers) and their instances. A generator row keeps the cron expression
// and zone (never returned by the API); an instance is an ordinary one-shot row with generator_id,
// copying the generator's url, method, headers, body, tags, title and retry policy when created (a
// sealed definition is copied sealed, with its key id, and so is the generator's trace context).
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { TraceContext } from "../domain/traceContext.ts"
import type { TriggerDefinition } from "../domain/trigger.ts"
import { EncryptionKeys } from "./sealedRequests.ts"
import { definitionColumns } from "./triggers.ts"

export const generatorsInsert = Effect.fnUntraced(function*(input: {
  readonly id: string
  readonly projectId: string
  readonly shard: number
  readonly cronExpr: string
  readonly cronTz: string
  readonly definition: TriggerDefinition
  readonly nowMs: number
  readonly trace?: TraceContext | null
}) {
  const sql = yield* SqlClient.SqlClient
  const d = definitionColumns(input.definition, yield* EncryptionKeys, input.trace)
  const now = new Date(input.nowMs)
  yield* sql`INSERT INTO triggers (id, project_id, kind, shard, status, url, method, headers, body, sealed_with, content_type,
      title, tags, custom_key, retry, cron_expr, cron_tz, traceparent, tracestate, created_at, updated_at)
    VALUES (${input.id}, ${input.projectId}, 'generator', ${input.shard}, 'active', ${d.url}, ${d.method},
      ${d.headers}::jsonb, ${d.body}, ${d.sealed_with}, ${d.content_type}, ${d.title}, ${d.tags}::text[], ${d.custom_key},
      ${d.retry}::jsonb, ${input.cronExpr}, ${input.cronTz}, ${d.traceparent}, ${d.tracestate}, ${now}, ${now})`
})

/** Replaces an active generator's definition in place (same id). */
export const generatorsReplace = Effect.fnUntraced(function*(input: {
  readonly id: string
  readonly cronExpr: string
  readonly cronTz: string
  readonly definition: TriggerDefinition
  readonly nowMs: number
  readonly trace?: TraceContext | null
}) {
  const sql = yield* SqlClient.SqlClient
  const d = definitionColumns(input.definition, yield* EncryptionKeys, input.trace)
  yield* sql`UPDATE triggers SET url = ${d.url}, method = ${d.method}, headers = ${d.headers}::jsonb, body = ${d.body},
      sealed_with = ${d.sealed_with}, content_type = ${d.content_type}, title = ${d.title}, tags = ${d.tags}::text[],
      custom_key = ${d.custom_key}, retry = ${d.retry}::jsonb, cron_expr = ${input.cronExpr}, cron_tz = ${input.cronTz},
      traceparent = ${d.traceparent}, tracestate = ${d.tracestate}, updated_at = ${new Date(input.nowMs)}, item_digest = NULL
    WHERE id = ${input.id} AND kind = 'generator' AND status = 'active'`
})

/** Cancels a generator's upcoming instance; returns it (id, shard) when there was one. */
export const instancesCancelUpcoming = Effect.fnUntraced(function*(input: {
  readonly generatorId: string
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ id: string; shard: number }>`UPDATE triggers SET status = 'cancelled', due_at = NULL,
      updated_at = ${new Date(input.nowMs)}
    WHERE generator_id = ${input.generatorId} AND status = 'registered' RETURNING id, shard`
})

export interface NewInstance {
  readonly generatorId: string
  readonly instanceId: string
  readonly scheduledAtMs: number
}

/**
 * Creates instances copying their generators (which must still be active). The unique indexes on
 * (generator, upcoming) and (generator, time) make this idempotent across processes: a conflicting
 * row is skipped. Returns the created instances.
 * The generator rows are share-locked, so a concurrent /schedule edit or /cancel (which lock the
 * generator for update first) either waits for this insert and then sees the new instance (and
 * cancels it), or runs first and this insert copies the committed definition (or finds the
 * generator cancelled, or conflicts with the edit's instance and is skipped). Without the lock an
 * edit could miss an instance being inserted and then lose its own to the conflict.
 */
export const instancesInsert = Effect.fnUntraced(function*(input: {
  readonly instances: ReadonlyArray<NewInstance>
  readonly nowMs: number
}) {
  if (input.instances.length === 0) return []
  const sql = yield* SqlClient.SqlClient
  const rows = JSON.stringify(input.instances.map((i) => ({
    generator_id: i.generatorId, id: i.instanceId, scheduled_at: new Date(i.scheduledAtMs).toISOString()
  })))
  const now = new Date(input.nowMs)
  return yield* sql<{ id: string; shard: number; generator_id: string }>`
    INSERT INTO triggers (id, project_id, kind, generator_id, shard, status, scheduled_at, due_at, url, method,
      headers, body, sealed_with, content_type, title, tags, retry, traceparent, tracestate, created_at, updated_at)
    SELECT v.id, g.project_id, 'job', g.id, g.shard, 'registered', v.scheduled_at, v.scheduled_at, g.url, g.method,
      g.headers, g.body, g.sealed_with, g.content_type, g.title, g.tags, g.retry, g.traceparent, g.tracestate, ${now}, ${now}
    FROM jsonb_to_recordset(${rows}::jsonb) AS v(generator_id uuid, id uuid, scheduled_at timestamptz)
    JOIN triggers g ON g.id = v.generator_id AND g.kind = 'generator' AND g.status = 'active'
    FOR SHARE OF g
    ON CONFLICT DO NOTHING
    RETURNING id, shard, generator_id`
})

export interface GeneratorSchedule {
  readonly id: string
  readonly cronExpr: string
  readonly cronTz: string
}

/** Active generators of a shard that have no upcoming instance (the materializer's work list). */
export const generatorsWithoutUpcoming = Effect.fnUntraced(function*(input: {
  readonly shard: number
  readonly limit: number
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string; cron_expr: string; cron_tz: string }>`
    SELECT g.id, g.cron_expr, g.cron_tz FROM triggers g
    WHERE g.shard = ${input.shard} AND g.kind = 'generator' AND g.status = 'active'
      AND NOT EXISTS (SELECT 1 FROM triggers i WHERE i.generator_id = g.id AND i.status = 'registered')
    LIMIT ${input.limit}`
  return rows.map((row): GeneratorSchedule => ({ id: row.id, cronExpr: row.cron_expr, cronTz: row.cron_tz }))
})
