// Test fixtures written straight into the database: triggers (one-shots, generators, instances) and
// executions in any state, so read endpoints can be tested without going through delivery. Ids are
// UUIDv7 minted from a strictly increasing fake clock, so insertion order is id order.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { hashApiKey } from "../../src/domain/apiKey.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { NodeIdentity } from "../../src/cluster/node.ts"
import { apiKeysFindProject } from "../../src/store/apiKeys.ts"

/** 2030-01-01T00:00:00.000Z; each minted id is one millisecond later than the previous one. */
const BASE_MS = Date.UTC(2030, 0, 1)
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
  readonly triggeredBy?: string | null
  readonly createdAt?: Date
  readonly updatedAt?: Date
}

/** Inserts a trigger row (defaults: a registered one-shot `POST DEFAULT_URL`); its id. */
export const insertTrigger = (fixture: TriggerFixture) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const id = fixture.id ?? nextId()
    const kind = fixture.kind ?? "job"
    const created = fixture.createdAt ?? new Date(Date.UTC(2030, 0, 1, 12))
    yield* sql`INSERT INTO triggers (id, project_id, kind, generator_id, shard, status, scheduled_at, due_at,
        url, method, headers, body, content_type, title, tags, custom_key, retry, cron_expr, cron_tz,
        attempts, triggered_by, created_at, updated_at)
      VALUES (${id}, ${fixture.projectId}, ${kind}, ${fixture.generatorId ?? null}, 0,
        ${fixture.status ?? (kind === "generator" ? "active" : "registered")},
        ${fixture.scheduledAt === undefined ? (kind === "generator" ? null : new Date(Date.UTC(2030, 5, 1))) : fixture.scheduledAt},
        ${fixture.dueAt ?? null}, ${fixture.url ?? DEFAULT_URL}, ${fixture.method ?? "POST"},
        ${JSON.stringify(fixture.headers ?? [])}::jsonb, ${fixture.body ?? null}, ${fixture.contentType ?? null},
        ${fixture.title ?? null}, ${[...(fixture.tags ?? [])]}::text[], ${fixture.customKey ?? null},
        ${fixture.retry == null ? null : JSON.stringify(fixture.retry)}::jsonb,
        ${fixture.cronExpr ?? null}, ${fixture.cronTz ?? null}, ${fixture.attempts ?? 0}, ${fixture.triggeredBy ?? null},
        ${created}, ${fixture.updatedAt ?? created})`
    return id
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

/** Inserts an execution row (defaults: attempt 1 that got a 200 in 120 ms); its id. */
export const insertExecution = (fixture: ExecutionFixture) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const id = fixture.id ?? nextId()
    const started = fixture.startedAt ?? new Date(Date.UTC(2030, 5, 1))
    const durationMs = fixture.durationMs ?? 120
    const httpStatus = fixture.httpStatus === undefined ? 200 : fixture.httpStatus
    yield* sql`INSERT INTO executions (id, trigger_id, project_id, attempt, status, started_at, finished_at,
        duration_ms, http_status, response_headers, response_body, error_kind, error_code, error_message,
        is_dead_letter, connect_timeout_seconds, timeout_seconds, triggered_by, url)
      VALUES (${id}, ${fixture.triggerId}, ${fixture.projectId}, ${fixture.attempt ?? 1},
        ${fixture.status ?? "succeeded"}, ${started}, ${new Date(started.getTime() + durationMs)}, ${durationMs},
        ${httpStatus},
        ${fixture.responseHeaders === undefined ? JSON.stringify({ "content-type": "text/plain" }) : fixture.responseHeaders === null ? null : JSON.stringify(fixture.responseHeaders)}::jsonb,
        ${fixture.responseBody === undefined ? "ok" : fixture.responseBody}, ${fixture.errorKind ?? null},
        ${fixture.errorCode ?? null}, ${fixture.errorMessage ?? null}, ${fixture.isDeadLetter ?? false},
        ${fixture.connectTimeoutSeconds ?? 10}, ${fixture.timeoutSeconds ?? 300}, ${fixture.triggeredBy ?? null},
        ${fixture.url ?? DEFAULT_URL})`
    return id
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
