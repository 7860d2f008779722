// Each shard's fired mark (migration 7 in store/migrations): how the owner of a shard hands its keyless
// one-shots to delivery without a write per trigger. Before it sends what comes due up to an
// instant, the owner advances its shard's mark to that instant (one small HOT update for the shard,
// committed durably before anything it covers is sent); from then on every trigger the mark covers — `fired`: still registered
// or retrying, no custom key, not a generator's instance, due at or before the mark — is being sent
// by that node and reads as `running` until its outcome is recorded (one write, store/executions.ts).
// Triggers with a custom key, instances and gated triggers are still claimed one by one (their
// unique indexes and gates read the status column); the mark only ever covers them briefly.
//
// What keeps this exact: a command that acts on a pending keyless trigger near its time (cancel,
// edit, /declare, /bulk) locks its shard's mark row FOR SHARE and reads it then (a lock always
// reads the newest version of the row), and the advance is an UPDATE of that row, which waits for
// such locks. Every transaction locks a shard's mark before any of its triggers (a takeover locks
// the mark, then the fired triggers; a command the mark, then the triggers it changes). So a command either finishes before the mark moves (and the owner's fetch after the
// move sees its change) or sees the moved mark and answers as for a running trigger. Writes of new
// due times (a new trigger, an edit, a retry) need no lock: one landing at or before the mark is
// `fired` at once, and its wake-up (or the owner's sweep) sends it.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { Fragment } from "effect/sql/Statement"

/**
 * Whether the trigger of alias `a` is fired (see above); SQL over that alias. `coalesce`: a shard
 * without a mark, or a trigger without a due time, is not fired (and `NOT` of it stays true).
 */
export const firedSql = (a: string) =>
  `(${markable(a)} AND coalesce(${a}.due_at <= (SELECT m.fired_at FROM shard_marks m WHERE m.shard = ${a}.shard), false))`

/** The status a reader sees for the trigger of alias `a`: `running` while fired, else its stored status. */
export const effectiveStatusSql = (a: string) => `CASE WHEN ${firedSql(a)} THEN 'running' ELSE ${a}.status END`

/** `a`'s status as a reader sees it equals `status` (a filter of the log endpoints). */
export const effectiveStatusIs = (sql: SqlClient.SqlClient, a: string, status: string): Fragment => {
  if (status === "running") return sql`(${sql.unsafe(a)}.status = 'running' OR ${sql.unsafe(firedSql(a))})`
  if (status === "registered" || status === "retrying") {
    return sql`(${sql.unsafe(a)}.status = ${status} AND NOT ${sql.unsafe(firedSql(a))})`
  }
  return sql`${sql.unsafe(a)}.status = ${status}`
}

/**
 * How far ahead of the database's clock a command must lock a trigger's mark: a trigger due later
 * than this cannot be fired before the command commits (a node advances a mark to its own clock
 * plus the claim lead; node clocks are expected within a few seconds of the database's).
 */
export const NEAR_DUE_SQL = `now() + interval '10 seconds'`

/** Keyless one-shot registered or retrying: what a mark can fire (SQL over the alias `a`). */
export const markable = (a: string) =>
  `${a}.status IN ('registered', 'retrying') AND ${a}.custom_key IS NULL AND ${a}.generator_id IS NULL`

/**
 * Locks (FOR SHARE, until the transaction ends) the marks of the shards where one of `ids` could be
 * fired any moment (markable and near its time), and returns those shards; a compare-and-set on the
 * triggers then tests `unfiredUnder` with them.
 */
export const shardMarksLockNear = Effect.fnUntraced(function*(ids: ReadonlyArray<string>) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ shard: number }>`
    SELECT m.shard FROM shard_marks m
    WHERE m.shard IN (SELECT t.shard FROM triggers t WHERE t.id = ANY(${ids}::uuid[]) AND ${sql.unsafe(markable("t"))}
      AND t.due_at <= ${sql.unsafe(NEAR_DUE_SQL)})
    ORDER BY m.shard FOR SHARE`
  return rows.map((row) => row.shard)
})

/**
 * For a compare-and-set on a trigger a command read earlier (after `shardMarksLockNear`): true
 * unless it is fired, or near its time on a shard whose mark is not locked (it may be fired any
 * moment: left alone, as a trigger that changed meanwhile is).
 */
export const unfiredUnder = (sql: SqlClient.SqlClient, a: string, lockedShards: ReadonlyArray<number>): Fragment =>
  sql`NOT (${sql.unsafe(markable(a))} AND (
    (coalesce(${sql.unsafe(a)}.due_at <= ${sql.unsafe(NEAR_DUE_SQL)}, false) AND NOT (${sql.unsafe(a)}.shard = ANY(${lockedShards}::int[])))
    OR coalesce(${sql.unsafe(a)}.due_at <= (SELECT m.fired_at FROM shard_marks m WHERE m.shard = ${sql.unsafe(a)}.shard), false)))`

/** The mark of the shard as a millisecond time (the beginning of time when none). */
const markMs = (value: string | null) => (value === null ? -Infinity : Number(value))

/**
 * Moves the marks of shards owned by `node` forward to each `untilMs` (never back), in one
 * statement. Returns the shards moved: a shard missing from it is no longer this node's (another
 * took it over) and must not be fired.
 *
 * The commit is synchronous (it waits for the WAL flush), because every send of a trigger the move
 * covers depends on it: a move lost with a crash of PostgreSQL itself would make the triggers this
 * node already sent read as pending again, so a cancel would answer `204` for a delivered trigger
 * (docs/internals.md, "The delivery engine", faults). The flush is shared by the shards moved
 * together, and it is paid once per fire window, not per trigger (BENCHMARKS.md says what it costs).
 */
export const shardMarksAdvance = Effect.fnUntraced(function*(input: {
  readonly node: string
  readonly marks: ReadonlyArray<{ readonly shard: number; readonly untilMs: number }>
}) {
  if (input.marks.length === 0) return new Set<number>()
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ shard: number }>`
    UPDATE shard_marks m SET fired_at = GREATEST(m.fired_at, v.until)
    FROM unnest(${input.marks.map((m) => m.shard)}::int[],
      ${input.marks.map((m) => new Date(m.untilMs).toISOString())}::timestamptz[]) AS v(shard, until)
    WHERE m.shard = v.shard AND m.node = ${input.node}
    RETURNING m.shard`
  return new Set(rows.map((row) => row.shard))
})

/** The previous holder of a shard's mark, as a new owner finds it. */
export interface MarkTakeOver {
  /** The mark (ms); -Infinity when the shard never fired. */
  readonly firedAtMs: number
  /** The node that advanced it last (this node's own id after a restart of its actor). */
  readonly previousNode: string
  /** Whether that node handed the shard over while it ran (shardMarksHandOver), rather than losing it. */
  readonly handedOver: boolean
}

/**
 * Makes `node` the holder of the shard's mark (creating it), within the caller's transaction, and
 * returns what it was. The row stays locked until the transaction ends.
 */
export const shardMarkTakeOver = Effect.fnUntraced(function*(input: { readonly shard: number; readonly node: string }) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO shard_marks (shard, fired_at, node) VALUES (${input.shard}, '-infinity', ${input.node})
    ON CONFLICT (shard) DO NOTHING`
  const rows = yield* sql<{ node: string; fired_ms: string | null; handed_over: boolean }>`
    SELECT node, CASE WHEN fired_at = '-infinity' THEN NULL ELSE (extract(epoch FROM fired_at) * 1000)::bigint::text END AS fired_ms,
      handed_over
    FROM shard_marks WHERE shard = ${input.shard} FOR UPDATE`
  const row = rows[0]!
  if (row.node !== input.node || row.handed_over) {
    yield* sql`UPDATE shard_marks SET node = ${input.node}, handed_over = false WHERE shard = ${input.shard}`
  }
  return { firedAtMs: markMs(row.fired_ms), previousNode: row.node, handedOver: row.handed_over } satisfies MarkTakeOver
})

/**
 * A live node gives shards up (a rebalance, a graceful stop): their marks say so before it lets go
 * of their locks, so the next owner takes what they cover as still being sent by a live node. A
 * mark left without it belongs to a node whose lock session ended: it died, or lost its connection
 * (then it lost its presence too). Deciding this from the node's presence lock alone is a race: a
 * dying session releases its locks one at a time, and under load the new owner can take a shard
 * lock while the same session's presence lock is not yet released.
 */
export const shardMarksHandOver = Effect.fnUntraced(function*(input: { readonly node: string; readonly shards: ReadonlyArray<number> }) {
  if (input.shards.length === 0) return
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE shard_marks SET handed_over = true WHERE shard = ANY(${input.shards}::int[]) AND node = ${input.node}`
})

/**
 * A compare-and-set on triggers read earlier, which also leaves alone those fired meanwhile: the
 * marks of their shards near their time are locked first (shardMarks.ts), in one transaction.
 */
export const unfiredCompareAndSet = <A>(
  ids: ReadonlyArray<string>,
  statement: (lockedShards: ReadonlyArray<number>) => Effect.Effect<A, SqlError, never>
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(Effect.flatMap(shardMarksLockNear(ids), statement)))
