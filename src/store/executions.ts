// Delivery results, one statement per batch (one round trip, committed synchronously): the
// triggers' next states (one UPDATE … FROM a JSON record set): completed, or retrying at a time;
// the executions (one multi-row INSERT); the places gated triggers held in their tag gates; and the
// overview's per-minute rollup of the batch (domain/deliveryRollup.ts).
//
// Each state change is a compare-and-set on the state the attempt was made from: a claimed trigger
// still running under this node with that attempt counted (or still queued under it, taken from a
// gate's backlog and not yet marked running: store/gates.ts), or a fired one (store/shardMarks.ts)
// still pending as it was fetched. The execution, the rollup and the gate places go with the state
// change: an outcome whose compare-and-set fails records nothing. That loses no attempt, because
// the set fails only when someone else already accounted for it (docs/internals.md, "The delivery
// engine", recording an outcome):
// - the same batch was recorded before (a commit whose answer was lost, retried): its executions
//   are there;
// - a node that took the trigger's shard over, or crash recovery, found this node gone: it logged
//   the attempt as interrupted, counted it, and sends the trigger again (this node, alive after all,
//   is late: its result is dropped, the interrupted record stands for the attempt);
// - a takeover that found this node alive made the fired trigger its claim: the set matches that
//   claim (running, claimed by this node, the attempt counted), so it succeeds;
// - a cancel, an edit or a release: none of them can act on a fired or claimed trigger (the mark
//   and the claims commit durably before any send), so no attempt was made from that state.
// Idempotent: a batch is retried until the database takes it, and a retry after a lost answer
// finds every state already changed, so it writes nothing.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import { attemptRollup } from "../domain/deliveryRollup.ts"
import { uuidv7 } from "../domain/ids.ts"
import { jsonField } from "./jsonRecords.ts"

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

/** An interrupted attempt's record (docs/retries.md "Error kinds": no response, outcome unknown). */
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

/**
 * The executions as one JSON parameter (arrays of only NULLs cannot be typed by the driver), each
 * with what it adds to the rollup (`r_…`). Written out as text (store/jsonRecords.ts), instants as
 * epoch milliseconds (turned into timestamps by `executionRows`), a null field left out.
 */
export const executionsJson = (executions: ReadonlyArray<ExecutionRecord>): string => {
  let out = "["
  for (let i = 0; i < executions.length; i++) {
    const x = executions[i]!
    const rollup = attemptRollup(x)
    out += `${i === 0 ? "" : ","}{"id":"${x.id}","trigger_id":"${x.triggerId}","project_id":"${x.projectId}",` +
      `"attempt":${x.attempt},"status":"${x.succeeded ? "succeeded" : "failed"}",` +
      `"started_ms":${Math.trunc(x.startedAtMs)},"finished_ms":${Math.trunc(x.finishedAtMs)},` +
      `"duration_ms":${Math.round(x.durationMs)}${jsonField("http_status", x.httpStatus)}` +
      `${jsonField("response_headers", x.responseHeaders)}${jsonField("response_body", text(x.responseBody))}` +
      `${jsonField("error_kind", x.errorKind)}${jsonField("error_code", text(x.errorCode))}` +
      `${jsonField("error_message", text(x.errorMessage))},"is_dead_letter":${x.isDeadLetter},` +
      `"connect_timeout_seconds":${Math.round(x.connectTimeoutSeconds)},"timeout_seconds":${Math.ceil(x.timeoutSeconds)}` +
      `${jsonField("triggered_by", x.triggeredBy)},"url":${JSON.stringify(x.url)},"r_minute_ms":${rollup.minuteMs},` +
      `"r_succeeded":${rollup.succeeded},"r_failed":${rollup.failed},"r_dead_letter":${rollup.deadLetter}` +
      `${jsonField("r_bucket", rollup.latenessBucket)},"r_gated":${rollup.gated}}`
  }
  // a NUL escaped inside a header value (the text columns were cleaned above)
  return `${out}]`.replace(/\\u0000/g, "\\uFFFD")
}

/** A timestamp from epoch milliseconds, exactly (no floating point). */
const fromMs = (column: string) => `timestamptz 'epoch' + r.${column} * interval '1 millisecond'`

const EXECUTION_COLUMNS = `id, trigger_id, project_id, attempt, status, started_at, finished_at, duration_ms, http_status,
  response_headers, response_body, error_kind, error_code, error_message, is_dead_letter, connect_timeout_seconds,
  timeout_seconds, triggered_by, url`

/** The executions as rows (a FROM item named `x`). */
const executionRows = (sql: SqlClient.SqlClient, executions: ReadonlyArray<ExecutionRecord>): Fragment =>
  sql`(SELECT r.id, r.trigger_id, r.project_id, r.attempt, r.status, ${sql.unsafe(fromMs("started_ms"))} AS started_at,
      ${sql.unsafe(fromMs("finished_ms"))} AS finished_at, r.duration_ms, r.http_status, r.response_headers,
      r.response_body, r.error_kind, r.error_code, r.error_message, r.is_dead_letter, r.connect_timeout_seconds,
      r.timeout_seconds, r.triggered_by, r.url, ${sql.unsafe(fromMs("r_minute_ms"))} AS r_minute, r.r_succeeded,
      r.r_failed, r.r_dead_letter, r.r_bucket, r.r_gated
    FROM jsonb_to_recordset(${executionsJson(executions)}::jsonb) AS r(id uuid, trigger_id uuid, project_id uuid,
      attempt int, status text, started_ms bigint, finished_ms bigint, duration_ms int, http_status int,
      response_headers jsonb, response_body text, error_kind text, error_code text, error_message text,
      is_dead_letter bool, connect_timeout_seconds int, timeout_seconds int, triggered_by text, url text,
      r_minute_ms bigint, r_succeeded bool, r_failed bool, r_dead_letter bool, r_bucket int, r_gated bool)) AS x`

/** INSERT of the executions of the CTE `x` (already recorded ones skipped), as a CTE body. */
const insertExecutions = (sql: SqlClient.SqlClient): Fragment =>
  sql`INSERT INTO executions (${sql.unsafe(EXECUTION_COLUMNS)}) SELECT ${sql.unsafe(EXECUTION_COLUMNS)} FROM x
    ON CONFLICT (id) DO NOTHING`

/** One lateness histogram of the group `g` of the CTE `x` (counts per bucket from 0 to its highest). */
const histogramOf = (gated: boolean) => `ARRAY(
    SELECT count(b.r_bucket) FROM generate_series(0, (SELECT max(r_bucket) FROM x
        WHERE x.project_id = g.project_id AND x.r_minute = g.r_minute AND x.r_gated = ${gated})) AS i
      LEFT JOIN x b ON b.project_id = g.project_id AND b.r_minute = g.r_minute AND b.r_gated = ${gated} AND b.r_bucket = i
    GROUP BY i ORDER BY i)`

/** INSERT of the rollup of the executions of the CTE `x` into delivery_minutes_pending, as a CTE body. */
const insertRollup = (sql: SqlClient.SqlClient): Fragment =>
  sql`INSERT INTO delivery_minutes_pending (project_id, minute, succeeded, failed, dead_letters, lateness, gated_lateness)
    SELECT g.project_id, g.r_minute, g.succeeded, g.failed, g.dead_letters,
      ${sql.unsafe(histogramOf(false))}, ${sql.unsafe(histogramOf(true))}
    FROM (SELECT project_id, r_minute, count(*) FILTER (WHERE r_succeeded) AS succeeded,
        count(*) FILTER (WHERE r_failed) AS failed, count(*) FILTER (WHERE r_dead_letter) AS dead_letters
      FROM x GROUP BY project_id, r_minute) g`

/**
 * Executions recorded outside delivery's batches (interrupted attempts found by recovery or a
 * takeover), with their share of the rollup: one statement, for the caller's transaction.
 */
export const executionsInsert = Effect.fnUntraced(function*(executions: ReadonlyArray<ExecutionRecord>) {
  if (executions.length === 0) return
  const sql = yield* SqlClient.SqlClient
  yield* sql`WITH x AS (SELECT * FROM ${executionRows(sql, executions)}),
    recorded AS (${insertExecutions(sql)}),
    minutes AS (${insertRollup(sql)})
    SELECT 1`
})

/** Records a batch of outcomes (see above); how many of them changed their trigger's state (and were recorded). */
export const executionsRecord = Effect.fnUntraced(function*(input: {
  readonly executions: ReadonlyArray<ExecutionRecord>
  readonly outcomes: ReadonlyArray<TriggerOutcome>
  /** Triggers admitted by tag gates: their places in the gates are given up with the outcome. */
  readonly gated: ReadonlyArray<string>
  /** The node that made the attempts: a claimed trigger is recorded only while it still holds it. */
  readonly node: string
  readonly nowMs: number
}) {
  if (input.executions.length === 0) return 0
  const sql = yield* SqlClient.SqlClient
  const outcomes = JSON.stringify(input.outcomes.map((x) => ({
    id: x.id, attempt: x.attempt, seen_us: x.firedSeenUs, retry_at: x.retryAtMs === null ? null : new Date(x.retryAtMs).toISOString()
  })))
  const rows = yield* sql<{ changed: number }>`
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
      RETURNING t.id, t.attempts
    ), x AS (
      -- the attempts whose trigger changed state: only these are recorded (see above)
      SELECT x.* FROM ${executionRows(sql, input.executions)} JOIN outcome o ON o.id = x.trigger_id AND o.attempts = x.attempt
    ), recorded AS (${insertExecutions(sql)}
    ), minutes AS (${insertRollup(sql)}
    ), gates AS (
      DELETE FROM gate_slots WHERE trigger_id = ANY(${input.gated}::uuid[]) AND trigger_id IN (SELECT id FROM outcome)
    )
    SELECT count(*)::int AS changed FROM outcome`
  return rows[0]?.changed ?? 0
})
