// Writes of /declare and /bulk, each a single statement over many rows (arrays of columns,
// columnArrays.ts), so a batch of a thousand items is a handful of statements: insert new triggers,
// update triggers in place, cancel triggers. Updates and cancels are compare-and-sets on the status
// the planner read (itemReads.ts) and return the rows they changed: a row that moved meanwhile (a
// claim by the scheduler, fired by its shard's mark, another request) is left alone and missing
// from the result.
import * as PgTypes from "@effect/sql-pg/PgTypes"
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import { HELD_BACK_STATUSES } from "../domain/itemMatch.ts"
import type { Keyring } from "../domain/sealing.ts"
import type { TraceContext } from "../domain/traceContext.ts"
import type { RetryPolicy } from "../domain/retry.ts"
import type { HeaderPairs, TriggerDefinition, TriggerKind, TriggerStatus } from "../domain/trigger.ts"
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
  /** /declare: the digest of the compared fields (domain/itemDigest.ts, migration 20); /bulk: none. */
  readonly digest?: string | null
}

/**
 * One column of a call's rows, filled row by row: a single value while every row so far has had
 * the same one (`same`), an array from the first row that differs. The columns most calls fill
 * with one value (the kind, the status, the method, headers every item shares, null for what no
 * item has) then cost neither an array while they are filled nor one parameter element per row.
 */
class Column<A> {
  private first: A | undefined
  private values: Array<A> | undefined
  private readonly rows: number
  private readonly same: (a: A, b: A) => boolean

  constructor(rows: number, same: (a: A, b: A) => boolean) {
    this.rows = rows
    this.same = same
  }

  set(i: number, value: A): void {
    if (this.values !== undefined) {
      this.values[i] = value
    } else if (i === 0) {
      this.first = value
    } else if (!this.same(this.first as A, value)) {
      const values = new Array<A>(this.rows)
      for (let j = 0; j < i; j++) values[j] = this.first as A
      values[i] = value
      this.values = values
    }
  }

  /** True when every row has the same value (`only`). */
  get uniform(): boolean {
    return this.values === undefined
  }

  /** The value of every row, when uniform. */
  get only(): A {
    return this.first as A
  }

  /** Row i's value. */
  at(i: number): A {
    return (this.values === undefined ? this.first : this.values[i]) as A
  }

  /** Every row's value, in order. */
  all(): Array<A> {
    return this.values ?? new Array<A>(this.rows).fill(this.first as A)
  }
}

const sameValue = <A>(a: A, b: A): boolean => a === b

/** Header pairs (or their sealed text) equal pair by pair. */
const sameHeaders = (a: HeaderPairs | string, b: HeaderPairs | string): boolean => {
  if (a === b) return true
  if (typeof a === "string" || typeof b === "string" || a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    if (a[i]![0] !== b[i]![0] || a[i]![1] !== b[i]![1]) return false
  }
  return true
}

/** Retry policies (or any JSON values) with the same JSON text (null: none). */
const sameJson = <A>(a: A, b: A): boolean => a === b || (a !== null && b !== null && JSON.stringify(a) === JSON.stringify(b))

/** How a column travels: its name in `unnest`'s row, its SQL type, and its array and single-value parameters. */
interface ColumnType {
  readonly name: string
  readonly sqlType: string
  readonly array: (values: ReadonlyArray<any>) => PgTypes.Parameter
  readonly one: (value: any) => PgTypes.Parameter
}

/** The columns, in `unnestRows`' order (tags go as array literals, `text`, cast to `text[]` by the statements). */
const COLUMN_TYPES: ReadonlyArray<ColumnType> = [
  { name: "id", sqlType: "uuid", array: uuidArray, one: PgTypes.uuid },
  { name: "shard", sqlType: "int4", array: int4Array, one: PgTypes.int4 },
  { name: "kind", sqlType: "text", array: textArray, one: PgTypes.text },
  { name: "status", sqlType: "text", array: textArray, one: PgTypes.text },
  { name: "scheduled_at", sqlType: "timestamptz", array: timestamptzArray, one: PgTypes.timestamptz },
  { name: "url", sqlType: "text", array: textArray, one: PgTypes.text },
  { name: "method", sqlType: "text", array: textArray, one: PgTypes.text },
  { name: "headers", sqlType: "jsonb", array: jsonbArray, one: PgTypes.jsonb },
  { name: "body", sqlType: "bytea", array: byteaArray, one: PgTypes.bytea },
  { name: "sealed_with", sqlType: "text", array: textArray, one: PgTypes.text },
  { name: "content_type", sqlType: "text", array: textArray, one: PgTypes.text },
  { name: "title", sqlType: "text", array: textArray, one: PgTypes.text },
  { name: "tags", sqlType: "text", array: textArray, one: PgTypes.text },
  { name: "custom_key", sqlType: "text", array: textArray, one: PgTypes.text },
  { name: "retry", sqlType: "jsonb", array: jsonbArray, one: PgTypes.jsonb },
  { name: "cron_expr", sqlType: "text", array: textArray, one: PgTypes.text },
  { name: "cron_tz", sqlType: "text", array: textArray, one: PgTypes.text },
  { name: "item_digest", sqlType: "text", array: textArray, one: PgTypes.text }
]

/**
 * Trigger rows gathered as columns (columnArrays.ts), headers and body sealed when ENCRYPTION_KEYS
 * is set; the call's trace context is the same for every row and goes as one value. Filled row by
 * row, from rows (`columnsOfRows`) or straight from a plan's items (commands/bulkInserts.ts), which
 * then makes no object per row. A column whose rows all hold the same value is kept as that one
 * value (Column): the insert sends it as one parameter (`shapedInsert`), the update as an array.
 */
export class TriggerColumns {
  private readonly ids: Array<string>
  private readonly shards: Column<number>
  private readonly kinds: Column<string>
  private readonly statuses: Column<string>
  private readonly scheduledAts: Column<number | null>
  private readonly urls: Column<string>
  private readonly methods: Column<string>
  private readonly headers: Column<HeaderPairs | string>
  private readonly bodies: Column<Uint8Array | null>
  private readonly sealedWith: Column<string | null>
  private readonly contentTypes: Column<string | null>
  private readonly titles: Column<string | null>
  private readonly tags: Column<string>
  private readonly customKeys: Column<string | null>
  private readonly retries: Column<RetryPolicy | null>
  private readonly cronExprs: Column<string | null>
  private readonly cronTzs: Column<string | null>
  private readonly digests: Column<string | null>
  private readonly keyring: Keyring | null
  private filled = 0

  /** Room for exactly `rows` rows (an array is made at its size, and only for a column whose rows differ). */
  constructor(keyring: Keyring | null, rows: number) {
    this.keyring = keyring
    this.ids = new Array(rows)
    this.shards = new Column(rows, sameValue)
    this.kinds = new Column(rows, sameValue)
    this.statuses = new Column(rows, sameValue)
    this.scheduledAts = new Column(rows, sameValue)
    this.urls = new Column(rows, sameValue)
    this.methods = new Column(rows, sameValue)
    this.headers = new Column(rows, sameHeaders)
    // bodies are compared by reference only: equal bytes in two objects go as two elements
    this.bodies = new Column(rows, sameValue)
    this.sealedWith = new Column(rows, sameValue)
    this.contentTypes = new Column(rows, sameValue)
    this.titles = new Column(rows, sameValue)
    this.tags = new Column(rows, sameValue)
    this.customKeys = new Column(rows, sameValue)
    this.retries = new Column(rows, sameJson)
    this.cronExprs = new Column(rows, sameValue)
    this.cronTzs = new Column(rows, sameValue)
    this.digests = new Column(rows, sameValue)
  }

  get length(): number {
    return this.ids.length
  }

  /** The next row; `scheduledAtMs` for one-shots, `cron` for generators (else null); `digest` from /declare. */
  push(
    id: string,
    shard: number,
    kind: TriggerKind,
    status: ItemTriggerRow["status"],
    scheduledAtMs: number | null,
    cron: ItemTriggerRow["cron"],
    d: TriggerDefinition,
    digest: string | null = null
  ): void {
    const i = this.filled++
    if (i >= this.ids.length) throw new RangeError(`TriggerColumns: more than ${this.ids.length} rows`)
    // plain (no keys): the definition's own headers and body, no object per row
    const request = this.keyring === null ? null : sealRequest(d.headers, d.body, this.keyring)
    this.ids[i] = id
    this.shards.set(i, shard)
    this.kinds.set(i, kind)
    this.statuses.set(i, status)
    this.scheduledAts.set(i, scheduledAtMs)
    this.urls.set(i, d.url)
    this.methods.set(i, d.method)
    this.headers.set(i, request === null ? d.headers : request.headers)
    this.bodies.set(i, request === null ? d.body : request.body)
    this.sealedWith.set(i, request === null ? null : request.sealedWith)
    this.contentTypes.set(i, d.contentType)
    this.titles.set(i, d.title)
    this.tags.set(i, textArrayLiteral(d.tags))
    this.customKeys.set(i, d.customKey)
    this.retries.set(i, d.retry)
    this.cronExprs.set(i, cron === null ? null : cron.cronExpr)
    this.cronTzs.set(i, cron === null ? null : cron.cronTz)
    this.digests.set(i, digest)
  }

  /** Row i's id, kind, status and custom key (what /bulk answers for it). */
  idAt(i: number): string {
    return this.ids[i]!
  }
  kindAt(i: number): TriggerKind {
    return this.kinds.at(i) as TriggerKind
  }
  statusAt(i: number): ItemTriggerRow["status"] {
    return this.statuses.at(i) as ItemTriggerRow["status"]
  }
  customKeyAt(i: number): string | null {
    return this.customKeys.at(i)
  }

  /** The columns in `COLUMN_TYPES`' order, ids first; every row must have been pushed. */
  private columns(): ReadonlyArray<Column<any> | Array<string>> {
    if (this.filled !== this.ids.length) throw new RangeError(`TriggerColumns: ${this.filled} of ${this.ids.length} rows`)
    return [
      this.ids, this.shards, this.kinds, this.statuses, this.scheduledAts, this.urls, this.methods, this.headers, this.bodies,
      this.sealedWith, this.contentTypes, this.titles, this.tags, this.customKeys, this.retries, this.cronExprs, this.cronTzs,
      this.digests
    ]
  }

  /** Every column as a typed array parameter, in `unnestRows`' column order. */
  parameters(): ReadonlyArray<PgTypes.Parameter> {
    return this.columns().map((column, i) => COLUMN_TYPES[i]!.array(Array.isArray(column) ? column : column.all()))
  }

  /**
   * The columns split: those whose rows differ as arrays (`arrays`, ids first), those uniform as one
   * value each (`ones`); `uniform` has bit i set when column i of COLUMN_TYPES is one value.
   */
  shaped(): { readonly uniform: number; readonly arrays: Array<PgTypes.Parameter>; readonly ones: Array<PgTypes.Parameter> } {
    let uniform = 0
    const arrays: Array<PgTypes.Parameter> = []
    const ones: Array<PgTypes.Parameter> = []
    this.columns().forEach((column, i) => {
      const type = COLUMN_TYPES[i]!
      if (Array.isArray(column)) {
        arrays.push(type.array(column))
      } else if (column.uniform) {
        uniform |= 1 << i
        ones.push(type.one(column.only))
      } else {
        arrays.push(type.array(column.all()))
      }
    })
    return { uniform, arrays, ones }
  }
}

/** The rows as arrays of columns. */
const columnsOfRows = (rows: ReadonlyArray<ItemTriggerRow>, keyring: Keyring | null): TriggerColumns => {
  const columns = new TriggerColumns(keyring, rows.length)
  for (const row of rows) columns.push(row.id, row.shard, row.kind, row.status, row.scheduledAtMs, row.cron, row.definition, row.digest ?? null)
  return columns
}

/** The rows of `TriggerColumns.parameters` read back (tags arrive as array literals), with the expected statuses of an update. */
const unnestRows = (sql: SqlClient.SqlClient, c: ReadonlyArray<PgTypes.Parameter>, expected: PgTypes.Parameter) =>
  sql`unnest(${sql.csv([...c, expected].map((parameter) => sql`${parameter}`))}) AS x(${
    sql.literal(COLUMN_TYPES.map((type) => type.name).join(", "))}, expected)`

/**
 * The text of the insert for a shape of columns (`uniform`: TriggerColumns.shaped): $1 the project,
 * $2 the key scope, $3 and $4 the trace context, $5 the moment; then one parameter per uniform column
 * and one array per other column, in COLUMN_TYPES' order. Each shape's text is made once; at most
 * MAX_SHAPES are kept (131,072 shapes exist: calls could otherwise grow the map without end).
 */
const MAX_SHAPES = 64
const insertTexts = new Map<number, string>()
/** How many shapes' texts are kept now (for tests). */
export const insertShapesKept = (): number => insertTexts.size
export const insertText = (uniform: number): string => {
  const known = insertTexts.get(uniform)
  if (known !== undefined) return known
  let next = 6
  const value = new Map<string, string>()
  const varying: Array<string> = []
  const unnested: Array<string> = []
  COLUMN_TYPES.forEach((type, i) => {
    if ((uniform & (1 << i)) !== 0) value.set(type.name, `$${next++}::${type.sqlType}`)
    else varying.push(type.name)
  })
  for (const name of varying) {
    value.set(name, `x.${name}`)
    unnested.push(`$${next++}`)
  }
  const v = (name: string) => value.get(name)!
  const text = `INSERT INTO triggers (id, project_id, kind, shard, status, scheduled_at, due_at, url, method, headers, body,
      sealed_with, content_type, title, tags, custom_key, retry, cron_expr, cron_tz, item_digest, key_scope, traceparent, tracestate,
      created_at, updated_at)
    SELECT ${v("id")}, $1::uuid, ${v("kind")}, ${v("shard")}, ${v("status")}, ${v("scheduled_at")},
      CASE WHEN ${v("status")} = 'registered' THEN ${v("scheduled_at")} END, ${v("url")}, ${v("method")}, ${v("headers")},
      ${v("body")}, ${v("sealed_with")}, ${v("content_type")}, ${v("title")}, ${v("tags")}::text[], ${v("custom_key")},
      ${v("retry")}, ${v("cron_expr")}, ${v("cron_tz")}, ${v("item_digest")}, $2::text, $3::text, $4::text, $5::timestamptz, $5::timestamptz
    FROM unnest(${unnested.join(", ")}) AS x(${varying.join(", ")})`
  if (insertTexts.size >= MAX_SHAPES) insertTexts.clear()
  insertTexts.set(uniform, text)
  return text
}

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
  const { uniform, ones, arrays } = input.columns.shaped()
  yield* sql.unsafe(insertText(uniform), [
    PgTypes.uuid(input.projectId), PgTypes.text(input.keyScope), PgTypes.text(input.trace?.traceparent ?? null),
    PgTypes.text(input.trace?.tracestate ?? null), PgTypes.timestamptz(input.nowMs), ...ones, ...arrays
  ])
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
      custom_key = x.custom_key, retry = x.retry, cron_expr = x.cron_expr, cron_tz = x.cron_tz, item_digest = x.item_digest,
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
