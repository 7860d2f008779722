// The day partitions of the executions table (domain/executionDays.ts, docs/operations.md "How
// history is stored"): made ahead, dropped by retention. A day is made as a plain table that is then
// attached (ATTACH PARTITION takes only a SHARE UPDATE EXCLUSIVE lock on executions, so inserts and
// reads go on; CREATE TABLE … PARTITION OF would take an exclusive one), after the rows of that day
// the default partition may hold are moved into it. A partition is dropped whole (DROP TABLE takes
// an exclusive lock on executions for an instant: a short lock_timeout, and a turn that cannot get
// it leaves the partition to the next one). Every change holds one advisory lock, so nodes doing it
// at once take turns and each finds what the one before made.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"
import { daysToMake, dayPartitionName, DAY_MS, type PartitionRange, partitionRange, partitionsToDrop, uuidFloor } from "../domain/executionDays.ts"

/** Key of the advisory lock ("tp", 0) held by every change of the partitions. */
const PARTITION_LOCK = [0x7470, 0] as const

/** How long a change waits for its lock on the tables before giving up its turn. */
const LOCK_TIMEOUT = "2s"

/** The default partition: ids no day partition covers (none while days are made ahead). */
export const DEFAULT_PARTITION = "executions_default"

const lockedTurn = (sql: SqlClient.SqlClient) =>
  Effect.andThen(
    sql`SELECT pg_advisory_xact_lock(${PARTITION_LOCK[0]}, ${PARTITION_LOCK[1]})`,
    sql.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`)
  )

/** The partitions of executions (the default one aside) with their ranges. */
export const executionPartitionsList = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ name: string }>`
    SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'executions'::regclass`
  return rows.flatMap((row) => partitionRange(row.name) ?? [])
})

/**
 * Makes the partitions of today and the days ahead that are missing (domain/executionDays.ts
 * daysToMake); the names it made. Idempotent, and nodes calling it at once make each day once.
 */
export const executionPartitionsEnsure = (nowMs: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(Effect.gen(function*() {
      yield* lockedTurn(sql)
      const made: Array<string> = []
      for (const day of daysToMake(nowMs, yield* executionPartitionsList)) {
        const name = dayPartitionName(day)
        const from = uuidFloor(day)
        const to = uuidFloor(day + DAY_MS)
        yield* sql.unsafe(`CREATE TABLE ${name} (LIKE executions INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`)
        // the day's rows the default partition took meanwhile (attaching checks it holds none)
        yield* sql.unsafe(`WITH moved AS (DELETE FROM ${DEFAULT_PARTITION} WHERE id >= $1 AND id < $2 RETURNING *)
          INSERT INTO ${name} SELECT * FROM moved`, [from, to])
        yield* sql.unsafe(`ALTER TABLE executions ATTACH PARTITION ${name} FOR VALUES FROM ('${from}') TO ('${to}')`)
        made.push(name)
      }
      return made
    }))
  })

/**
 * The triggers with attempts in a day before `toMs` that retention keeps (not finished, or finished
 * after `beforeMs`): a trigger retrying for longer than the retention, or one that finished lately
 * after attempts that old. Few, read before the day's lock is taken (by the primary key: UUIDv7 ids
 * are in creation order, and a trigger has attempts only after it was created).
 */
const keptTriggersBefore = (sql: SqlClient.SqlClient, toMs: number, beforeMs: number) =>
  Effect.map(
    sql<{ id: string }>`SELECT t.id FROM triggers t
      WHERE t.id < ${uuidFloor(toMs)}::uuid AND t.attempts > 0
        AND NOT (t.status IN ('completed', 'cancelled', 'skipped') AND t.updated_at < ${new Date(beforeMs)})`,
    (rows) => rows.map((row) => row.id)
  )

/**
 * Drops, oldest first, the partitions whose every execution is older than `beforeMs`, each in its
 * own short transaction; the names it dropped. Retention deletes finished triggers with their
 * executions, so the attempts of a trigger it keeps are kept: the day is detached, those rows copied
 * into the default partition (which then covers the day's range), and the rest dropped with the
 * table. When a partition's lock cannot be had in time (a long read of executions), it and the
 * later ones are left to the next turn (logged), and what was dropped before it stays dropped.
 */
export const executionPartitionsDropBefore = (beforeMs: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const dropped: Array<string> = []
    for (const partition of partitionsToDrop(beforeMs, yield* executionPartitionsList)) {
      const kept = yield* keptTriggersBefore(sql, partition.toMs, beforeMs)
      const gone = yield* sql.withTransaction(Effect.gen(function*() {
        yield* lockedTurn(sql)
        // another node may have dropped it since the list was read
        if (!(yield* executionPartitionsList).some((p: PartitionRange) => p.name === partition.name)) return "gone" as const
        if (kept.length > 0) {
          yield* sql.unsafe(`ALTER TABLE executions DETACH PARTITION ${partition.name}`)
          // straight into the default partition: the parent's statement trigger (the alert outbox) does not fire again
          yield* sql.unsafe(`INSERT INTO ${DEFAULT_PARTITION} SELECT * FROM ${partition.name} WHERE trigger_id = ANY($1::uuid[])`, [kept])
        }
        yield* sql.unsafe(`DROP TABLE ${partition.name}`)
        return "dropped" as const
      })).pipe(Effect.catch((error) =>
        Effect.as(Effect.logWarning(`retention: ${partition.name} not dropped now (left to the next turn)`, error), "blocked" as const)
      ))
      if (gone === "blocked") break
      if (gone === "dropped") dropped.push(partition.name)
    }
    return dropped
  })

/**
 * Deletes at most `limit` executions of the default partition older than `beforeMs` whose trigger
 * retention deletes too (finished before it) or is gone; how many it deleted. The default partition
 * holds the rows of days not made ahead in time, and the attempts of triggers kept when their day
 * was dropped. (A trigger deleted by a node of a version whose foreign key cascaded, while the
 * cluster is upgraded, leaves its attempts behind: these are the ones of the default partition.)
 */
export const executionsDefaultDeleteBefore = (input: { readonly beforeMs: number; readonly limit: number }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql.unsafe(`DELETE FROM ${DEFAULT_PARTITION} WHERE id IN (
        SELECT e.id FROM ${DEFAULT_PARTITION} e
        WHERE e.id < $1 AND NOT EXISTS (SELECT 1 FROM triggers t WHERE t.id = e.trigger_id
          AND NOT (t.status IN ('completed', 'cancelled', 'skipped') AND t.updated_at < $3))
        ORDER BY e.id LIMIT $2)
      RETURNING id`, [uuidFloor(input.beforeMs), input.limit, new Date(input.beforeMs)])
    return rows.length
  })
