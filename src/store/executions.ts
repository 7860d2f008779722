// Delivery results, one statement per batch (one round trip, committed synchronously): the
// executions (one multi-row INSERT), the triggers' next states (one UPDATE … FROM a JSON record
// set): completed, or retrying at a time; the places gated triggers held in their tag gates; and the
// overview's per-minute rollup of the batch (domain/deliveryRollup.ts). Each state change is a
// compare-and-set on the state the attempt was made from: a claimed trigger still running under
// this node with that attempt counted (or still queued under it, taken from a gate's backlog and
// not yet marked running: store/gates.ts), or a fired one (store/shardMarks.ts) still pending as it
// was fetched. Idempotent: a batch is retried until the database takes it, and a commit whose answer was
// lost is retried too, so an execution already recorded is skipped (its id is made once per
// attempt) and a trigger no longer in that state is left alone.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import { type MinuteRollup, rollupOf } from "../domain/deliveryRollup.ts"
import { uuidv7 } from "../domain/ids.ts"

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
  /** The trigger's scheduled time, for the rollup's lateness of first attempts; null when none. */
  readonly scheduledAtMs: number | null
  /** Admitted by a tag gate (its lateness is counted apart in the rollup). */
  readonly gated: boolean
}

export interface TriggerOutcome {
  readonly id: string
  /** The attempt whose outcome this is (1-based). */
  readonly attempt: number
  /** Fired by its shard's mark: its updated_at (µs) when fetched; null for a claimed trigger. */
  readonly firedSeenUs: string | null
  /** `null`: completed (delivered, or dead letter); a time: retrying then. */
  readonly retryAtMs: number | null
}

/** What an interrupted attempt is recorded with (SPEC "Execution": no response, outcome unknown). */
export const INTERRUPTED_ATTEMPT = {
  errorKind: "unknown",
  errorCode: "INTERRUPTED",
  errorMessage: "Attempt interrupted: the node sending it stopped before recording its outcome (the request may have reached the target)",
  connectTimeoutSeconds: 10,
  timeoutSeconds: 300
} as const

/** The record of an attempt its node began and could not finish: failed, from its start to `nowMs`. */
export const interruptedExecution = (attempt: {
  readonly triggerId: string
  readonly projectId: string
  readonly attempt: number
  readonly startedAtMs: number
  readonly triggeredBy: string | null
  readonly url: string
  readonly scheduledAtMs: number | null
  readonly gated: boolean
}, nowMs: number): ExecutionRecord => ({
  ...attempt,
  id: uuidv7(nowMs),
  succeeded: false,
  finishedAtMs: nowMs,
  durationMs: Math.max(0, nowMs - attempt.startedAtMs),
  httpStatus: null,
  responseHeaders: null,
  responseBody: null,
  errorKind: INTERRUPTED_ATTEMPT.errorKind,
  errorCode: INTERRUPTED_ATTEMPT.errorCode,
  errorMessage: INTERRUPTED_ATTEMPT.errorMessage,
  isDeadLetter: false,
  connectTimeoutSeconds: INTERRUPTED_ATTEMPT.connectTimeoutSeconds,
  timeoutSeconds: INTERRUPTED_ATTEMPT.timeoutSeconds
})

/** Postgres text columns cannot hold NUL characters. */
const text = (value: string | null) => (value === null ? null : value.replace(/\u0000/g, "\uFFFD"))

/** The executions as one JSON parameter (arrays of only NULLs cannot be typed by the driver). */
const executionsJson = (executions: ReadonlyArray<ExecutionRecord>) =>
  JSON.stringify(executions.map((x) => ({
    id: x.id, trigger_id: x.triggerId, project_id: x.projectId, attempt: x.attempt,
    status: x.succeeded ? "succeeded" : "failed",
    started_at: new Date(x.startedAtMs).toISOString(), finished_at: new Date(x.finishedAtMs).toISOString(),
    duration_ms: Math.round(x.durationMs), http_status: x.httpStatus,
    response_headers: x.responseHeaders, response_body: text(x.responseBody), error_kind: x.errorKind,
    error_code: text(x.errorCode), error_message: text(x.errorMessage), is_dead_letter: x.isDeadLetter,
    connect_timeout_seconds: Math.round(x.connectTimeoutSeconds), timeout_seconds: Math.ceil(x.timeoutSeconds),
    triggered_by: x.triggeredBy, url: x.url
  }))).replace(/\\u0000/g, "\\uFFFD")

/** INSERT of the executions (already recorded ones skipped), as a statement or a CTE body. */
const insertExecutions = (sql: SqlClient.SqlClient, executions: ReadonlyArray<ExecutionRecord>): Fragment =>
  sql`INSERT INTO executions (id, trigger_id, project_id, attempt, status, started_at, finished_at,
      duration_ms, http_status, response_headers, response_body, error_kind, error_code, error_message,
      is_dead_letter, connect_timeout_seconds, timeout_seconds, triggered_by, url)
    SELECT * FROM jsonb_to_recordset(${executionsJson(executions)}::jsonb) AS x(id uuid, trigger_id uuid, project_id uuid,
      attempt int, status text, started_at timestamptz, finished_at timestamptz, duration_ms int, http_status int,
      response_headers jsonb, response_body text, error_kind text, error_code text, error_message text,
      is_dead_letter bool, connect_timeout_seconds int, timeout_seconds int, triggered_by text, url text)
    ON CONFLICT (id) DO NOTHING`

/** INSERT of the rollup of these executions into delivery_minutes_pending, as a statement or a CTE body. */
const insertRollup = (sql: SqlClient.SqlClient, executions: ReadonlyArray<ExecutionRecord>): Fragment => {
  const json = JSON.stringify(rollupOf(executions).map((r: MinuteRollup) => ({
    project_id: r.projectId, minute: new Date(r.minuteMs).toISOString(), succeeded: r.succeeded, failed: r.failed,
    dead_letters: r.deadLetters, lateness: r.lateness, gated_lateness: r.gatedLateness
  })))
  return sql`INSERT INTO delivery_minutes_pending (project_id, minute, succeeded, failed, dead_letters, lateness, gated_lateness)
    SELECT r.project_id, r.minute, r.succeeded, r.failed, r.dead_letters,
      ARRAY(SELECT jsonb_array_elements_text(r.lateness)::bigint), ARRAY(SELECT jsonb_array_elements_text(r.gated_lateness)::bigint)
    FROM jsonb_to_recordset(${json}::jsonb) AS r(project_id uuid, minute timestamptz, succeeded bigint, failed bigint,
      dead_letters bigint, lateness jsonb, gated_lateness jsonb)`
}

/**
 * Executions recorded outside delivery's batches (interrupted attempts found by recovery), with
 * their share of the rollup: two statements, for the caller's transaction.
 */
export const executionsInsert = Effect.fnUntraced(function*(executions: ReadonlyArray<ExecutionRecord>) {
  if (executions.length === 0) return
  const sql = yield* SqlClient.SqlClient
  yield* sql`${insertExecutions(sql, executions)}`
  yield* sql`${insertRollup(sql, executions)}`
})

export const executionsRecord = Effect.fnUntraced(function*(input: {
  readonly executions: ReadonlyArray<ExecutionRecord>
  readonly outcomes: ReadonlyArray<TriggerOutcome>
  /** Triggers admitted by tag gates: their places in the gates are given up with the outcome. */
  readonly gated: ReadonlyArray<string>
  /** The node that made the attempts: a claimed trigger is recorded only while it still holds it. */
  readonly node: string
  readonly nowMs: number
}) {
  if (input.executions.length === 0) return
  const sql = yield* SqlClient.SqlClient
  const outcomes = JSON.stringify(input.outcomes.map((x) => ({
    id: x.id, attempt: x.attempt, seen_us: x.firedSeenUs, retry_at: x.retryAtMs === null ? null : new Date(x.retryAtMs).toISOString()
  })))
  yield* sql`
    WITH outcome AS (
      UPDATE triggers t SET
        status = CASE WHEN v.retry_at IS NULL THEN 'completed' ELSE 'retrying' END, due_at = v.retry_at,
        attempts = v.attempt, triggered_by = NULL, claimed_by = NULL, claimed_at = NULL, updated_at = ${new Date(input.nowMs)}
      FROM jsonb_to_recordset(${outcomes}::jsonb) AS v(id uuid, attempt int, seen_us bigint, retry_at timestamptz)
      WHERE t.id = v.id AND (
        (t.status = 'running' AND t.attempts = v.attempt AND t.claimed_by = ${input.node})
        -- taken from a gate's backlog and sent before its start (gates.ts gateBacklogStart) committed
        OR (t.status = 'queued' AND t.attempts = v.attempt - 1 AND t.claimed_by = ${input.node})
        OR (v.seen_us IS NOT NULL AND t.status IN ('registered', 'retrying') AND t.attempts = v.attempt - 1
          AND (extract(epoch FROM t.updated_at) * 1000000)::bigint = v.seen_us))
      RETURNING t.id
    ), recorded AS (${insertExecutions(sql, input.executions)}
    ), minutes AS (${insertRollup(sql, input.executions)}
    ), gates AS (
      DELETE FROM gate_slots WHERE trigger_id = ANY(${input.gated}::uuid[])
    )
    SELECT count(*)::int AS changed FROM outcome`
})
