// Retention (RETENTION_DAYS): finished triggers — completed, cancelled or skipped — that last changed
// before a cutoff are deleted with their executions, oldest first, a small batch per statement; a
// cancelled generator only once none of its instances is still pending, queued or running. Most of
// their executions are gone already, with the day partitions retention drops first
// (store/executionPartitions.ts); the statement deleting a batch of triggers deletes the rest, in
// the partitions that may still hold them only (no foreign key cascades from triggers: on the table
// partitioned by day it would look in every day for each trigger; docs/operations.md "How history
// is stored"). One node at a time: the sweep holds a session-level advisory lock on one reserved
// session (as shardLocks.ts does), and a node that dies mid-sweep loses it with its session.
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { SqlClient } from "effect/sql"
import { EXECUTION_FLOOR_MARGIN_MS, uuidFloor } from "../domain/executionDays.ts"

/** Key of the advisory lock ("tr", 0): the shard locks use 0x7477, the gates 0x7467. */
const RETENTION_LOCK = [0x7472, 0] as const

/**
 * One batch: the oldest finished triggers past the cutoff, over the partial index triggers_finished
 * (its predicate is this status list), from $4 on: the newest last change of the session's batch
 * before (see RetentionSession). Rows another transaction holds (a replay moving a completed
 * trigger back to queued) are skipped, never waited for; a row that left the finished statuses by
 * the time it is locked is re-checked out. Their executions go in the same statement: every one has
 * an id (its attempt's time) before the trigger last changed, so before the cutoff, give or take the
 * nodes' clock differences ($3: the cutoff plus EXECUTION_FLOOR_MARGIN_MS): the days wholly after it
 * are not read. The trigger ids are one array, so each day left is read once per batch, by its
 * executions_trigger index.
 */
const DELETE_BATCH = `
  WITH doomed AS (
    SELECT t.id FROM triggers t
    WHERE t.status IN ('completed', 'cancelled', 'skipped') AND t.updated_at < $1::timestamptz
      AND t.updated_at >= $4::timestamptz
      AND (t.kind = 'job' OR NOT EXISTS (
        SELECT 1 FROM triggers i WHERE i.generator_id = t.id AND i.status NOT IN ('completed', 'cancelled', 'skipped')))
    ORDER BY t.updated_at
    LIMIT $2
    FOR UPDATE OF t SKIP LOCKED
  ), gone AS (
    DELETE FROM triggers d USING doomed WHERE d.id = doomed.id
    RETURNING d.id, d.updated_at
  ), attempts AS (
    DELETE FROM executions e WHERE e.id < $3::uuid AND e.trigger_id = ANY(ARRAY(SELECT id FROM gone))
  )
  SELECT count(*)::int AS deleted, max(updated_at)::text AS newest FROM gone`

/**
 * A sweep's session. Its batches for one cutoff read triggers_finished from the newest last change
 * the batch before deleted: a deleted row's index entry stays until VACUUM, so reading from the
 * oldest each time stepped over every row the sweep had deleted so far, a cost growing with each
 * batch (docs/operations.md "Retention"). A row passed over meanwhile (held by another transaction,
 * or a cancelled generator with live instances) waits for the next sweep, which opens a new session.
 */
export interface RetentionSession {
  /** Deletes at most `limit` finished triggers that last changed before `beforeMs`; how many it deleted. */
  readonly deleteBatch: (input: { readonly beforeMs: number; readonly limit: number }) => Effect.Effect<number, unknown>
}

/**
 * Takes the retention lock on a reserved session for the scope's lifetime; `undefined` when another
 * node holds it (it sweeps now). Closing the scope unlocks and gives the session back.
 */
export const retentionSessionOpen: Effect.Effect<RetentionSession | undefined, unknown, SqlClient.SqlClient | Scope.Scope> =
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const session = yield* sql.reserve
    const locked = yield* Effect.acquireRelease(
      Effect.map(
        session.execute("SELECT pg_try_advisory_lock($1, $2) AS ok", [...RETENTION_LOCK], undefined),
        (rows) => (rows as ReadonlyArray<{ ok: boolean }>)[0]?.ok === true
      ),
      (ok) => ok ? Effect.ignore(session.execute("SELECT pg_advisory_unlock($1, $2)", [...RETENTION_LOCK], undefined)) : Effect.void
    )
    if (!locked) return undefined
    // the newest last change deleted so far for a cutoff, as this session's PostgreSQL wrote it (text read back as it was written)
    let from: { readonly beforeMs: number; readonly newest: string } | undefined
    return {
      deleteBatch: ({ beforeMs, limit }) =>
        Effect.map(
          session.execute(DELETE_BATCH, [
            new Date(beforeMs).toISOString(), limit, uuidFloor(beforeMs + EXECUTION_FLOOR_MARGIN_MS),
            from?.beforeMs === beforeMs ? from.newest : "-infinity"
          ], undefined),
          (rows) => {
            const row = (rows as ReadonlyArray<{ deleted: number; newest: string | null }>)[0]!
            if (row.newest !== null) from = { beforeMs, newest: row.newest }
            return row.deleted
          }
        )
    } satisfies RetentionSession
  })
