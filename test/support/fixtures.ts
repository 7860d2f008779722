// Test fixtures written straight into the database: projects, triggers (one-shots, generators,
// instances, in any shard) and executions in any state, so reads and the scheduler can be tested
// without going through /schedule or delivery; and the reads of trigger rows the tests assert on.
// Ids are UUIDv7 minted from a strictly increasing fake clock, so insertion order is id order.
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { hashApiKey } from "../../src/domain/auth/apiKey.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { executionsInsert } from "../../src/store/executions.ts"
import { effectiveStatusSql } from "../../src/store/shardMarks.ts"
import { NodeIdentity } from "../../src/cluster/node.ts"
import { apiKeysFindProject } from "../../src/store/apiKeys.ts"

/**
 * 2020-01-01T00:00:00.000Z; each minted id is one millisecond later than the previous one. Before
 * the ids the service mints while a test runs: a trigger's executions are read from the day its id
 * was made on (store/executionFloor.ts), so a fixture trigger must not be younger than its attempts.
 */
const BASE_MS = Date.UTC(2020, 0, 1)
let clockMs = BASE_MS

/** A new UUIDv7, later than every id minted before it in this process. */
export const nextId = (): string => uuidv7(++clockMs)

/** The project of an API key (for fixtures that need its id). */
export const projectIdOfKey = (key: string) =>
  Effect.map(apiKeysFindProject(hashApiKey(key)), (projectId) => {
    if (projectId === undefined) throw new Error("unknown key")
    return projectId
  })

/** Default target of fixtures: the loopback discard port, where a delivery is refused at once. */
export const DEFAULT_URL = "http://127.0.0.1:9/hook"

export interface TriggerFixture {
  readonly projectId: string
  readonly id?: string
  readonly kind?: "job" | "generator"
  readonly generatorId?: string | null
  readonly shard?: number
  readonly status?: string
  readonly scheduledAt?: Date | null
  readonly dueAt?: Date | null
  readonly url?: string
  readonly method?: string
  readonly headers?: ReadonlyArray<readonly [string, string]>
  readonly body?: Uint8Array | null
  readonly contentType?: string | null
  readonly title?: string | null
  readonly tags?: ReadonlyArray<string>
  readonly customKey?: string | null
  readonly retry?: Record<string, unknown> | null
  readonly cronExpr?: string | null
  readonly cronTz?: string | null
  readonly attempts?: number
  readonly claimedBy?: string | null
  readonly triggeredBy?: string | null
  readonly createdAt?: Date
  readonly updatedAt?: Date
}

/** The row of a fixture (defaults: a registered one-shot `POST DEFAULT_URL` in shard 0, or an active generator). */
const triggerRecord = (fixture: TriggerFixture) => {
  const kind = fixture.kind ?? "job"
  const created = fixture.createdAt ?? new Date(Date.UTC(2030, 0, 1, 12))
  return {
    id: fixture.id ?? nextId(),
    project_id: fixture.projectId,
    kind,
    generator_id: fixture.generatorId ?? null,
    shard: fixture.shard ?? 0,
    status: fixture.status ?? (kind === "generator" ? "active" : "registered"),
    scheduled_at: fixture.scheduledAt === undefined ? (kind === "generator" ? null : new Date(Date.UTC(2030, 5, 1))) : fixture.scheduledAt,
    due_at: fixture.dueAt ?? null,
    url: fixture.url ?? DEFAULT_URL,
    method: fixture.method ?? "POST",
    headers: fixture.headers ?? [],
    // bytea's text form, read by the column's input function
    body: fixture.body == null ? null : `\\x${Buffer.from(fixture.body).toString("hex")}`,
    content_type: fixture.contentType ?? null,
    title: fixture.title ?? null,
    tags: [...(fixture.tags ?? [])],
    custom_key: fixture.customKey ?? null,
    retry: fixture.retry ?? null,
    cron_expr: fixture.cronExpr ?? null,
    cron_tz: fixture.cronTz ?? null,
    attempts: fixture.attempts ?? 0,
    claimed_by: fixture.claimedBy ?? null,
    triggered_by: fixture.triggeredBy ?? null,
    created_at: created,
    updated_at: fixture.updatedAt ?? created
  }
}

/** Inserts trigger rows in one statement (fast even for thousands); their ids, in order. */
export const insertTriggers = (fixtures: ReadonlyArray<TriggerFixture>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const records = fixtures.map(triggerRecord)
    if (records.length === 0) return []
    const columns = sql.unsafe(Object.keys(records[0]!).join(", "))
    yield* sql`INSERT INTO triggers (${columns})
      SELECT ${columns} FROM jsonb_populate_recordset(NULL::triggers, ${JSON.stringify(records)}::jsonb)`
    return records.map((record) => record.id)
  })

/** Inserts a trigger row (defaults: a registered one-shot `POST DEFAULT_URL`); its id. */
export const insertTrigger = (fixture: TriggerFixture) =>
  Effect.map(insertTriggers([fixture]), ([id]) => id!)

/** A project with this id (created once; its name is derived from the id). */
export const ensureProject = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO projects (id, name, monthly_quota, retry_policy, created_at, updated_at)
      VALUES (${id}, ${`project-${id}`}, 10, '{}'::jsonb, now(), now()) ON CONFLICT DO NOTHING`
  })

export interface ExecutionFixture {
  readonly projectId: string
  readonly triggerId: string
  readonly id?: string
  readonly attempt?: number
  readonly status?: "succeeded" | "failed"
  readonly startedAt?: Date
  readonly durationMs?: number
  readonly httpStatus?: number | null
  readonly responseHeaders?: Record<string, string> | null
  readonly responseBody?: string | null
  readonly errorKind?: string | null
  readonly errorCode?: string | null
  readonly errorMessage?: string | null
  readonly isDeadLetter?: boolean
  readonly connectTimeoutSeconds?: number
  readonly timeoutSeconds?: number
  readonly triggeredBy?: string | null
  readonly url?: string
}

/**
 * Records an execution as delivery does (store/executions.ts: the row and its share of the
 * overview's rollup; defaults: attempt 1 that got a 200 in 120 ms); its id.
 */
export const insertExecution = (fixture: ExecutionFixture) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const id = fixture.id ?? nextId()
    const started = fixture.startedAt ?? new Date(Date.UTC(2030, 5, 1))
    const durationMs = fixture.durationMs ?? 120
    const httpStatus = fixture.httpStatus === undefined ? 200 : fixture.httpStatus
    // as delivery knows them: the trigger's scheduled time, and whether a tag gate admitted it (a tag of
    // it has a policy limiting concurrency or throughput)
    const scheduled = yield* sql<{ ms: string | null; gated: boolean }>`
      SELECT (extract(epoch FROM t.scheduled_at) * 1000)::bigint::text AS ms, EXISTS (SELECT FROM tag_policies p
          WHERE p.project_id = t.project_id AND p.tag = ANY (t.tags) AND (p.max_concurrent IS NOT NULL OR p.throughput IS NOT NULL)) AS gated
      FROM triggers t WHERE t.id = ${fixture.triggerId}`
    const status = fixture.status ?? "succeeded"
    yield* executionsInsert([{
      id, triggerId: fixture.triggerId, projectId: fixture.projectId, attempt: fixture.attempt ?? 1,
      succeeded: status === "succeeded", startedAtMs: started.getTime(), finishedAtMs: started.getTime() + durationMs, durationMs,
      httpStatus,
      responseHeaders: fixture.responseHeaders === undefined ? { "content-type": "text/plain" } : fixture.responseHeaders,
      responseBody: fixture.responseBody === undefined ? "ok" : fixture.responseBody, errorKind: fixture.errorKind ?? null,
      errorCode: fixture.errorCode ?? null, errorMessage: fixture.errorMessage ?? null, isDeadLetter: fixture.isDeadLetter ?? false,
      connectTimeoutSeconds: fixture.connectTimeoutSeconds ?? 10, timeoutSeconds: fixture.timeoutSeconds ?? 300,
      triggeredBy: fixture.triggeredBy ?? null, url: fixture.url ?? DEFAULT_URL,
      scheduledAtMs: scheduled[0]?.ms == null ? null : Number(scheduled[0].ms), gated: scheduled[0]?.gated === true
    }])
    return id
  })

/**
 * Dead letters: completed triggers (attempt 1 made) whose one execution failed with a 500 and was a
 * dead letter, inserted in two statements (fast for thousands); their ids, in order.
 */
export const insertDeadLetters = (fixtures: ReadonlyArray<TriggerFixture>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* insertTriggers(fixtures.map((fixture) => ({ status: "completed", attempts: 1, ...fixture })))
    if (ids.length === 0) return ids
    const started = new Date(Date.UTC(2030, 5, 1))
    yield* sql`INSERT INTO executions (id, trigger_id, project_id, attempt, status, started_at, finished_at, duration_ms,
        http_status, is_dead_letter, connect_timeout_seconds, timeout_seconds, url)
      SELECT (lpad(to_hex(${Date.UTC(2030, 5, 1)}::bigint), 12, '0') || '7' || substr(md5(t.id::text), 1, 3) || '8'
          || substr(md5(t.id::text), 4, 15))::uuid, t.id, t.project_id, 1, 'failed', ${started}, ${started}, 5, 500, true, 10, 300, t.url
      FROM triggers t WHERE t.id = ANY(${ids}::uuid[])`
    return ids
  })

/**
 * Moves a trigger to `status` as if this node had claimed it (so crash recovery leaves it alone);
 * a retrying one is due far in the future so it never fires during the test.
 */
export const setStatus = (id: string, status: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const node = (yield* NodeIdentity).id
    const due = status === "retrying" ? new Date(Date.UTC(2099, 0, 1)) : null
    const claimedBy = status === "queued" || status === "running" ? node : null
    yield* sql`UPDATE triggers SET status = ${status}, due_at = ${due}, claimed_by = ${claimedBy} WHERE id = ${id}`
  }).pipe(Effect.orDie)

// --- reading triggers back ------------------------------------------------------------------------

export interface TriggerRow {
  readonly id: string
  readonly kind: string
  readonly generator_id: string | null
  readonly shard: number
  readonly status: string
  readonly method: string
  readonly headers: Array<[string, string]>
  readonly body: Uint8Array | null
  readonly content_type: string | null
  readonly title: string | null
  readonly tags: ReadonlyArray<string>
  readonly custom_key: string | null
  readonly retry: unknown
  readonly scheduled_at: Date | null
  readonly due_at: Date | null
  readonly url: string
  readonly cron_expr: string | null
  readonly cron_tz: string | null
  readonly attempts: number
  readonly claimed_by: string | null
}

const TRIGGER_COLUMNS = "id, kind, generator_id, shard, status, method, headers, body, content_type, title, tags, custom_key, retry, scheduled_at, due_at, url, cron_expr, cron_tz, attempts, claimed_by"

/** The trigger's row (fails the test when there is none). */
export const triggerRow = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<TriggerRow>`SELECT ${sql.unsafe(TRIGGER_COLUMNS)} FROM triggers WHERE id = ${id}`
    assert.strictEqual(rows.length, 1, `trigger ${id} exists`)
    return rows[0]!
  }).pipe(Effect.orDie)

/**
 * The trigger's status as a reader sees it (`running` while its shard's mark has fired it:
 * store/shardMarks.ts); undefined when there is no such trigger. `triggerRow` has the stored one.
 */
export const statusOf = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return (yield* sql<{ status: string }>`SELECT ${sql.unsafe(effectiveStatusSql("t"))} AS status FROM triggers t WHERE t.id = ${id}`)[0]
      ?.status
  }).pipe(Effect.orDie)

/** Every instance of a generator, in time order (then id order). */
export const instancesOf = (generatorId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<TriggerRow>`SELECT ${sql.unsafe(TRIGGER_COLUMNS)} FROM triggers
      WHERE generator_id = ${generatorId} ORDER BY scheduled_at, id`
  }).pipe(Effect.orDie)

/** Units of monthly quota the key's project has used (every month together). */
export const quotaUsed = (key: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const projectId = yield* projectIdOfKey(key)
    const rows = yield* sql<{ used: string }>`SELECT coalesce(sum(used), 0)::text AS used FROM quota_usage WHERE project_id = ${projectId}`
    return Number(rows[0]!.used)
  }).pipe(Effect.orDie)
