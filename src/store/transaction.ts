// Transactions for the use cases: `withTransaction(effect)` runs every statement of `effect` in one
// transaction on one connection, committed when it succeeds and rolled back when it fails. A store
// statement that finds it would have to take a lock out of the one order every transaction follows
// (a shard's mark before its triggers: store/shardMarks.ts) fails with TransactionRestart instead,
// and the transaction is run again from its start, its locks released.
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

/** The transaction must start over (see above); `reason` says why, for a log. */
export class TransactionRestart extends Data.TaggedError("TransactionRestart")<{ readonly reason: string }> {}

/** Restarts before giving up: each needs another transaction to change the same row in between. */
const RESTARTS = 5

export const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(effect).pipe(
      Effect.retry({ while: (error) => error instanceof TransactionRestart, times: RESTARTS }),
      Effect.catchIf((error): error is Extract<typeof error, TransactionRestart> => error instanceof TransactionRestart, Effect.die)
    ))
