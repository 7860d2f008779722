// Delivery results in one transaction per batch: the executions (one multi-row INSERT), the
// trigger status changes (one UPDATE … FROM VALUES): completed, or retrying at a time, and the
// places gated triggers held in their tag gates. Idempotent: a batch is retried until the database
// takes it, and a commit whose answer was lost (the server stopping right after it) is retried too,
// so an execution already recorded is skipped (its id is made once per attempt) and a trigger no
// longer running is left alone.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

export interface ExecutionRecord {
  readonly id: string
  readonly triggerId: string
  readonly projectId: string
  readonly attempt: number
  readonly succeeded: boolean
  readonly startedAtMs: number
  readonly finishedAtMs: number
  readonly durationMs: number
  readonly httpStatus: number | null
  readonly responseHeaders: Record<string, string> | null
  readonly responseBody: string | null
  readonly errorKind: string | null
  readonly errorCode: string | null
  readonly errorMessage: string | null
  readonly isDeadLetter: boolean
  readonly connectTimeoutSeconds: number
  readonly timeoutSeconds: number
  readonly triggeredBy: string | null
  readonly url: string
}

export interface TriggerOutcome {
  readonly id: string
  /** `null`: completed (delivered, or dead letter); a time: retrying then. */
  readonly retryAtMs: number | null
}

/** Postgres text columns cannot hold NUL characters. */
const text = (value: string | null) => (value === null ? null : value.replace(/\u0000/g, "\uFFFD"))

export const executionsRecord = Effect.fnUntraced(function*(input: {
  readonly executions: ReadonlyArray<ExecutionRecord>
  readonly outcomes: ReadonlyArray<TriggerOutcome>
  /** Triggers admitted by tag gates: their places in the gates are given up with the outcome. */
  readonly gated: ReadonlyArray<string>
  readonly nowMs: number
}) {
  if (input.executions.length === 0) return
  const sql = yield* SqlClient.SqlClient
  // one JSON parameter per statement: arrays of only NULLs cannot be typed by the driver
  const executions = JSON.stringify(input.executions.map((x) => ({
    id: x.id, trigger_id: x.triggerId, project_id: x.projectId, attempt: x.attempt,
    status: x.succeeded ? "succeeded" : "failed",
    started_at: new Date(x.startedAtMs).toISOString(), finished_at: new Date(x.finishedAtMs).toISOString(),
    duration_ms: Math.round(x.durationMs), http_status: x.httpStatus,
    response_headers: x.responseHeaders, response_body: text(x.responseBody), error_kind: x.errorKind,
    error_code: text(x.errorCode), error_message: text(x.errorMessage), is_dead_letter: x.isDeadLetter,
    connect_timeout_seconds: Math.round(x.connectTimeoutSeconds), timeout_seconds: Math.ceil(x.timeoutSeconds),
    triggered_by: x.triggeredBy, url: x.url
  }))).replace(/\\u0000/g, "\\uFFFD")
  const outcomes = JSON.stringify(input.outcomes.map((x) => ({
    id: x.id, retry_at: x.retryAtMs === null ? null : new Date(x.retryAtMs).toISOString()
  })))
  yield* sql.withTransaction(Effect.gen(function*() {
    yield* sql`INSERT INTO executions (id, trigger_id, project_id, attempt, status, started_at, finished_at,
        duration_ms, http_status, response_headers, response_body, error_kind, error_code, error_message,
        is_dead_letter, connect_timeout_seconds, timeout_seconds, triggered_by, url)
      SELECT * FROM jsonb_to_recordset(${executions}::jsonb) AS x(id uuid, trigger_id uuid, project_id uuid,
        attempt int, status text, started_at timestamptz, finished_at timestamptz, duration_ms int, http_status int,
        response_headers jsonb, response_body text, error_kind text, error_code text, error_message text,
        is_dead_letter bool, connect_timeout_seconds int, timeout_seconds int, triggered_by text, url text)
      ON CONFLICT (id) DO NOTHING`
    yield* sql`UPDATE triggers t SET
        status = CASE WHEN v.retry_at IS NULL THEN 'completed' ELSE 'retrying' END,
        due_at = v.retry_at, triggered_by = NULL, claimed_by = NULL, claimed_at = NULL, updated_at = ${new Date(input.nowMs)}
      FROM jsonb_to_recordset(${outcomes}::jsonb) AS v(id uuid, retry_at timestamptz)
      WHERE t.id = v.id AND t.status = 'running'`
    if (input.gated.length > 0) yield* sql`DELETE FROM gate_slots WHERE trigger_id = ANY(${input.gated}::uuid[])`
  }))
})
