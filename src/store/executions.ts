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
 * The attempts as one JSON parameter (arrays of only NULLs cannot be typed by the driver), one
 * record per attempt: its execution and, when recorded by delivery, its trigger's next state
 * (`outcomes`, in the same order). Written out as text (store/jsonRecords.ts) under short keys (the
 * statement names the columns: `RECORD_COLUMNS`), instants as epoch milliseconds, a null or false
 * field left out; what the rollup needs besides (its minute, the outcome's counts) is derived in SQL,
 * only the lateness bucket travels. A batch of a thousand is most of what a delivery sends to
 * PostgreSQL, so every byte of a record is paid for per attempt, by both processes.
 */
export const executionsJson = (executions: ReadonlyArray<ExecutionRecord>, outcomes?: ReadonlyArray<TriggerOutcome>): string => {
  let out = "["
  for (let i = 0; i < executions.length; i++) {
    const x = executions[i]!
    const rollup = attemptRollup(x)
    const o = outcomes?.[i]
    out += `${i === 0 ? "" : ","}{"i":"${x.id}","t":"${x.triggerId}","p":"${x.projectId}","a":${x.attempt}` +
      `${x.succeeded ? `,"ok":true` : ""},"b":${Math.trunc(x.startedAtMs)},"f":${Math.trunc(x.finishedAtMs)},` +
      `"d":${Math.round(x.durationMs)}${jsonField("hs", x.httpStatus)}` +
      `${jsonField("rh", x.responseHeaders)}${jsonField("rb", text(x.responseBody))}` +
      `${jsonField("ek", x.errorKind)}${jsonField("ec", text(x.errorCode))}` +
      `${jsonField("em", text(x.errorMessage))}${x.isDeadLetter ? `,"dl":true` : ""}` +
      `,"ct":${Math.round(x.connectTimeoutSeconds)},"to":${Math.ceil(x.timeoutSeconds)}` +
      `${jsonField("tb", x.triggeredBy)},"u":${JSON.stringify(x.url)}` +
      `${jsonField("lb", rollup.latenessBucket)}${rollup.gated ? `,"g":true` : ""}` +
      // the trigger's next state: the fetched row's updated_at (digits, µs) and the retry's time
      `${o === undefined || o.firedSeenUs === null ? "" : `,"su":${o.firedSeenUs}`}` +
      `${o === undefined || o.retryAtMs === null ? "" : `,"rt":${Math.trunc(o.retryAtMs)}`}}`
  }
  out += "]"
  // a NUL escaped inside a header value (the text columns were cleaned above)
  return out.includes("\\u0000") ? out.replace(/\\u0000/g, "\\uFFFD") : out
}

/** The columns of `executionsJson`'s records (the record set is aliased `r`). */
const RECORD_COLUMNS = `r(i uuid, t uuid, p uuid, a int, ok bool, b bigint, f bigint, d int, hs int, rh jsonb, rb text,
  ek text, ec text, em text, dl bool, ct int, "to" int, tb text, u text, lb int, g bool, su bigint, rt bigint)`

/** A timestamp from epoch milliseconds, exactly (no floating point). */
const fromMs = (column: string) => `timestamptz 'epoch' + r.${column} * interval '1 millisecond'`

const EXECUTION_COLUMNS = `id, trigger_id, project_id, attempt, status, started_at, finished_at, duration_ms, http_status,
  response_headers, response_body, error_kind, error_code, error_message, is_dead_letter, connect_timeout_seconds,
  timeout_seconds, triggered_by, url`

/**
 * The executions of the records of the FROM item `from` (aliased `r`), as rows with the columns of
 * `executions` and the rollup's (`r_…`), named `x`. The rollup's minute is the start's (floored:
 * instants are after 1970), its counts the outcome's (domain/deliveryRollup.ts).
 */
const EXECUTION_ROW_COLUMNS = `r.i AS id, r.t AS trigger_id, r.p AS project_id, r.a AS attempt,
      CASE WHEN r.ok IS TRUE THEN 'succeeded' ELSE 'failed' END AS status, ${fromMs("b")} AS started_at,
      ${fromMs("f")} AS finished_at, r.d AS duration_ms, r.hs AS http_status, r.rh AS response_headers,
      r.rb AS response_body, r.ek AS error_kind, r.ec AS error_code, r.em AS error_message, r.dl IS TRUE AS is_dead_letter,
      r.ct AS connect_timeout_seconds, r."to" AS timeout_seconds, r.tb AS triggered_by, r.u AS url,
      timestamptz 'epoch' + (r.b / 60000) * interval '1 minute' AS r_minute, r.ok IS TRUE AS r_succeeded,
      r.ok IS NOT TRUE AND r.dl IS NOT TRUE AS r_failed, r.dl IS TRUE AS r_dead_letter, r.lb AS r_bucket,
      r.g IS TRUE AS r_gated`

const executionRows = (sql: SqlClient.SqlClient, from: Fragment): Fragment =>
  sql`(SELECT ${sql.unsafe(EXECUTION_ROW_COLUMNS)} FROM ${from}) AS x`

/** The record set of `executionsJson`'s text, aliased `r`. */
const recordSet = (sql: SqlClient.SqlClient, json: string): Fragment =>
  sql`jsonb_to_recordset(${json}::jsonb) AS ${sql.unsafe(RECORD_COLUMNS)}`

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
  yield* sql`WITH x AS (SELECT * FROM ${executionRows(sql, recordSet(sql, executionsJson(executions)))}),
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
  const { executions, outcomes } = input
  if (outcomes.length !== executions.length || outcomes.some((o, i) => o.id !== executions[i]!.triggerId || o.attempt !== executions[i]!.attempt)) {
    return yield* Effect.die(new Error("executionsRecord: each outcome must be its execution's, in the same order"))
  }
  const rows = yield* sql<{ changed: number }>`
    WITH r AS MATERIALIZED (SELECT * FROM ${recordSet(sql, executionsJson(executions, outcomes))}
    ), outcome AS (
      UPDATE triggers t SET
        status = CASE WHEN r.rt IS NULL THEN 'completed' ELSE 'retrying' END, due_at = ${sql.unsafe(fromMs("rt"))},
        attempts = r.a, triggered_by = NULL, claimed_by = NULL, claimed_at = NULL, updated_at = ${new Date(input.nowMs)}
      FROM r
      WHERE t.id = r.t AND (
        (t.status = 'running' AND t.attempts = r.a AND t.claimed_by = ${input.node})
        -- taken from a gate's backlog and sent before its start (gates.ts gateBacklogStart) committed
        OR (t.status = 'queued' AND t.attempts = r.a - 1 AND t.claimed_by = ${input.node})
        OR (r.su IS NOT NULL AND t.status IN ('registered', 'retrying') AND t.attempts = r.a - 1
          AND (extract(epoch FROM t.updated_at) * 1000000)::bigint = r.su))
      RETURNING t.id, t.attempts
    ), x AS (
      -- the attempts whose trigger changed state: only these are recorded (see above)
      SELECT x.* FROM ${executionRows(sql, sql`r`)} JOIN outcome o ON o.id = x.trigger_id AND o.attempts = x.attempt
    ), recorded AS (${insertExecutions(sql)}
    ), minutes AS (${insertRollup(sql)}
    ), gates AS (
      DELETE FROM gate_slots WHERE trigger_id = ANY(${input.gated}::uuid[]) AND trigger_id IN (SELECT id FROM outcome)
    )
    SELECT count(*)::int AS changed FROM outcome`
  return rows[0]?.changed ?? 0
})
