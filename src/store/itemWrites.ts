// Writes of /declare and /bulk, each a single statement over many rows (arrays of columns,
// columnArrays.ts), so a batch of a thousand items is a handful of statements: insert new triggers,
// update triggers in place, cancel triggers. Updates and cancels are compare-and-sets on the status
// the planner read (itemReads.ts) and return the rows they changed: a row that moved meanwhile (a
// claim by the scheduler, fired by its shard's mark, another request) is left alone and missing
// from the result.
import type * as PgTypes from "@effect/sql-pg/PgTypes"
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import { HELD_BACK_STATUSES } from "../domain/itemMatch.ts"
import type { Keyring } from "../domain/sealing.ts"
import type { TraceContext } from "../domain/traceContext.ts"
import type { TriggerDefinition, TriggerKind, TriggerStatus } from "../domain/trigger.ts"
import { byteaArray, int4Array, jsonbArray, textArray, textArrayLiteral, timestamptzArray, uuidArray } from "./columnArrays.ts"
import { EncryptionKeys, sealRequest } from "./sealedRequests.ts"
import { unfiredCompareAndSet, unfiredUnder } from "./shardMarks.ts"
import { statusList } from "./sqlLists.ts"

/** A trigger as /declare or /bulk writes it: a one-shot (registered or skipped) or a generator (active). */
export interface ItemTriggerRow {
  readonly id: string
  readonly shard: number
  readonly kind: TriggerKind
  readonly status: "registered" | "skipped" | "active"
  /** One-shots: the resolved time (due then when registered); generators: null. */
  readonly scheduledAtMs: number | null
  /** Generators only. */
  readonly cron: { readonly cronExpr: string; readonly cronTz: string } | null
  readonly definition: TriggerDefinition
}

/**
 * Trigger rows gathered as arrays of columns (columnArrays.ts), headers and body sealed when
 * ENCRYPTION_KEYS is set; the call's trace context is the same for every row and goes as one value.
 * Filled row by row, from rows (`columnsOfRows`) or straight from a plan's items (commands/bulkInserts.ts),
 * which then makes no object per row.
 */
export class TriggerColumns {
  readonly ids: Array<string>
  private readonly shards: Array<number>
  private readonly kinds: Array<string>
  private readonly statuses: Array<string>
  private readonly scheduledAts: Array<number | null>
  private readonly urls: Array<string>
  private readonly methods: Array<string>
  private readonly headers: Array<unknown>
  private readonly bodies: Array<Uint8Array | null>
  private readonly sealedWith: Array<string | null>
  private readonly contentTypes: Array<string | null>
  private readonly titles: Array<string | null>
  private readonly tags: Array<string>
  private readonly customKeys: Array<string | null>
  private readonly retries: Array<unknown>
  private readonly cronExprs: Array<string | null>
  private readonly cronTzs: Array<string | null>
  private readonly keyring: Keyring | null
  private filled = 0

  /** Room for exactly `rows` rows (the arrays are made at their size: no copies as they grow). */
  constructor(keyring: Keyring | null, rows: number) {
    this.keyring = keyring
    this.ids = new Array(rows)
    this.shards = new Array(rows)
    this.kinds = new Array(rows)
    this.statuses = new Array(rows)
    this.scheduledAts = new Array(rows)
    this.urls = new Array(rows)
    this.methods = new Array(rows)
    this.headers = new Array(rows)
    this.bodies = new Array(rows)
    this.sealedWith = new Array(rows)
    this.contentTypes = new Array(rows)
    this.titles = new Array(rows)
    this.tags = new Array(rows)
    this.customKeys = new Array(rows)
    this.retries = new Array(rows)
    this.cronExprs = new Array(rows)
    this.cronTzs = new Array(rows)
  }

  get length(): number {
    return this.ids.length
  }

  /** The next row; `scheduledAtMs` for one-shots, `cron` for generators (else null). */
  push(
    id: string,
    shard: number,
    kind: TriggerKind,
    status: ItemTriggerRow["status"],
    scheduledAtMs: number | null,
    cron: ItemTriggerRow["cron"],
    d: TriggerDefinition
  ): void {
    const i = this.filled++
    if (i >= this.ids.length) throw new RangeError(`TriggerColumns: more than ${this.ids.length} rows`)
    // plain (no keys): the definition's own headers and body, no object per row
    const request = this.keyring === null ? null : sealRequest(d.headers, d.body, this.keyring)
    this.ids[i] = id
    this.shards[i] = shard
    this.kinds[i] = kind
    this.statuses[i] = status
    this.scheduledAts[i] = scheduledAtMs
    this.urls[i] = d.url
    this.methods[i] = d.method
    this.headers[i] = request === null ? d.headers : request.headers
    this.bodies[i] = request === null ? d.body : request.body
    this.sealedWith[i] = request === null ? null : request.sealedWith
    this.contentTypes[i] = d.contentType
    this.titles[i] = d.title
    this.tags[i] = textArrayLiteral(d.tags)
    this.customKeys[i] = d.customKey
    this.retries[i] = d.retry
    this.cronExprs[i] = cron === null ? null : cron.cronExpr
    this.cronTzs[i] = cron === null ? null : cron.cronTz
  }

  /** The typed array parameters, in `unnestRows`' column order; every row must have been pushed. */
  parameters() {
    if (this.filled !== this.ids.length) throw new RangeError(`TriggerColumns: ${this.filled} of ${this.ids.length} rows`)
    return [
      uuidArray(this.ids), int4Array(this.shards), textArray(this.kinds), textArray(this.statuses),
      timestamptzArray(this.scheduledAts), textArray(this.urls), textArray(this.methods), jsonbArray(this.headers),
      byteaArray(this.bodies), textArray(this.sealedWith), textArray(this.contentTypes), textArray(this.titles),
      textArray(this.tags), textArray(this.customKeys), jsonbArray(this.retries), textArray(this.cronExprs),
      textArray(this.cronTzs)
    ] as const
  }
}

/** The rows as arrays of columns. */
const columnsOfRows = (rows: ReadonlyArray<ItemTriggerRow>, keyring: Keyring | null): TriggerColumns => {
  const columns = new TriggerColumns(keyring, rows.length)
  for (const row of rows) columns.push(row.id, row.shard, row.kind, row.status, row.scheduledAtMs, row.cron, row.definition)
  return columns
}

/** The rows of `TriggerColumns.parameters` read back (tags arrive as array literals), with the expected statuses of an update. */
const unnestRows = (sql: SqlClient.SqlClient, c: ReturnType<TriggerColumns["parameters"]>, expected?: PgTypes.Parameter) =>
  expected === undefined
    ? sql`unnest(${c[0]}, ${c[1]}, ${c[2]}, ${c[3]}, ${c[4]}, ${c[5]}, ${c[6]}, ${c[7]}, ${c[8]}, ${c[9]}, ${c[10]}, ${c[11]},
        ${c[12]}, ${c[13]}, ${c[14]}, ${c[15]}, ${c[16]}) AS x(id, shard, kind, status, scheduled_at, url, method, headers, body,
        sealed_with, content_type, title, tags, custom_key, retry, cron_expr, cron_tz)`
    : sql`unnest(${c[0]}, ${c[1]}, ${c[2]}, ${c[3]}, ${c[4]}, ${c[5]}, ${c[6]}, ${c[7]}, ${c[8]}, ${c[9]}, ${c[10]}, ${c[11]},
        ${c[12]}, ${c[13]}, ${c[14]}, ${c[15]}, ${c[16]}, ${expected}) AS x(id, shard, kind, status, scheduled_at, url, method,
        headers, body, sealed_with, content_type, title, tags, custom_key, retry, cron_expr, cron_tz, expected)`

/**
 * Inserts new triggers of a project. `keyScope`: the tag of the /declare call creating them (it
 * scopes their custom keys, docs/internals.md "/declare and /bulk"), null for /bulk.
 */
export const itemTriggersInsert = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly keyScope: string | null
  readonly rows: ReadonlyArray<ItemTriggerRow>
  readonly nowMs: number
  /** The trace context of the call (tracing on). */
  readonly trace?: TraceContext | null
}) {
  if (input.rows.length === 0) return
  yield* itemColumnsInsert({ ...input, columns: columnsOfRows(input.rows, yield* EncryptionKeys) })
})

/** Inserts the rows gathered in `columns` (sealed with the keyring they were made with), as itemTriggersInsert. */
export const itemColumnsInsert = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly keyScope: string | null
  readonly columns: TriggerColumns
  readonly nowMs: number
  readonly trace?: TraceContext | null
}) {
  if (input.columns.length === 0) return
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  yield* sql`INSERT INTO triggers (id, project_id, kind, shard, status, scheduled_at, due_at, url, method, headers, body,
      sealed_with, content_type, title, tags, custom_key, retry, cron_expr, cron_tz, key_scope, traceparent, tracestate,
      created_at, updated_at)
    SELECT x.id, ${input.projectId}, x.kind, x.shard, x.status, x.scheduled_at,
      CASE WHEN x.status = 'registered' THEN x.scheduled_at END, x.url, x.method, x.headers, x.body,
      x.sealed_with, x.content_type, x.title, x.tags::text[], x.custom_key, x.retry,
      x.cron_expr, x.cron_tz, ${input.keyScope}::text, ${input.trace?.traceparent ?? null}::text,
      ${input.trace?.tracestate ?? null}::text, ${now}, ${now}
    FROM ${unnestRows(sql, input.columns.parameters())}`
})

// The update and the cancel find their rows by the primary key, one lookup per array element, and
// run unprepared: planned with the arrays at hand every time. A prepared statement's generic plan,
// which PostgreSQL switches to after a few runs, knows neither their length nor their values and was
// measured at 0.8 s for 1,000 rows of a table of 200,000 (a custom plan: 50 ms). The project is
// checked with IS NOT DISTINCT FROM (the same test on a NOT NULL column), which no index serves: with
// `=`, statistics that have not yet seen a project's new triggers (right after a large batch) made
// the planner scan the whole project's index for every statement (BENCHMARKS.md "Ingest and batch").

/**
 * Replaces the definition, time or cron, and status of triggers in place (same id, key scope kept),
 * each only while it still has its `expectedStatus` and kind. Returns the rows updated.
 */
export const itemTriggersUpdate = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly rows: ReadonlyArray<ItemTriggerRow & { readonly expectedStatus: TriggerStatus }>
  readonly nowMs: number
  readonly trace?: TraceContext | null
}) {
  if (input.rows.length === 0) return [] as Array<{ id: string; shard: number }>
  const sql = yield* SqlClient.SqlClient
  const columns = columnsOfRows(input.rows, yield* EncryptionKeys).parameters()
  const expected = textArray(input.rows.map((row) => row.expectedStatus))
  const ids = input.rows.map((row) => row.id)
  return yield* unfiredCompareAndSet(ids, (locked) => sql<{ id: string; shard: number }>`UPDATE triggers t SET status = x.status,
      scheduled_at = x.scheduled_at, due_at = CASE WHEN x.status = 'registered' THEN x.scheduled_at END,
      attempts = CASE WHEN t.kind = 'job' THEN 0 ELSE t.attempts END, triggered_by = NULL,
      url = x.url, method = x.method, headers = x.headers, body = x.body, sealed_with = x.sealed_with,
      content_type = x.content_type, title = x.title, tags = x.tags::text[],
      custom_key = x.custom_key, retry = x.retry, cron_expr = x.cron_expr, cron_tz = x.cron_tz,
      traceparent = ${input.trace?.traceparent ?? null}::text, tracestate = ${input.trace?.tracestate ?? null}::text,
      updated_at = ${new Date(input.nowMs)}
    FROM ${unnestRows(sql, columns, expected)}
    WHERE t.id = x.id AND t.project_id IS NOT DISTINCT FROM ${input.projectId}::uuid AND t.status = x.expected
      AND t.kind = x.kind AND ${unfiredUnder(sql, "t", locked)}
    RETURNING t.id, t.shard`.unprepared)
})

/**
 * Cancels triggers, each only while it still has its `expectedStatus` (a queued one only while no
 * node has claimed it). Returns the rows cancelled.
 */
export const itemTriggersCancel = Effect.fnUntraced(function*(input: {
  readonly projectId: string
  readonly rows: ReadonlyArray<{ readonly id: string; readonly expectedStatus: TriggerStatus }>
  readonly nowMs: number
}) {
  if (input.rows.length === 0) return [] as Array<{ id: string; shard: number; kind: TriggerKind }>
  const sql = yield* SqlClient.SqlClient
  const ids = input.rows.map((row) => row.id)
  const statuses = input.rows.map((row) => row.expectedStatus)
  return yield* unfiredCompareAndSet(ids, (locked) => sql<{ id: string; shard: number; kind: TriggerKind }>`
    UPDATE triggers t SET status = 'cancelled', due_at = NULL, updated_at = ${new Date(input.nowMs)}
    FROM unnest(${ids}::uuid[], ${statuses}::text[]) AS x(id, expected)
    WHERE t.id = x.id AND t.project_id IS NOT DISTINCT FROM ${input.projectId}::uuid AND t.status = x.expected
      AND (t.status NOT IN ${statusList(sql, HELD_BACK_STATUSES)} OR t.claimed_by IS NULL)
      AND ${unfiredUnder(sql, "t", locked)}
    RETURNING t.id, t.shard, t.kind`.unprepared)
})
