// Transactions for the use cases: `withTransaction(effect)` runs every statement of `effect` in one
// transaction on one connection, committed when it succeeds and rolled back when it fails.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

export const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(effect))
