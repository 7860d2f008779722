// Dashboard administrators: email and scrypt password hash.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

/** Creates an admin; `false` when the email is taken. */
export const adminsCreate = Effect.fnUntraced(function*(input: {
  readonly id: string
  readonly email: string
  readonly passwordHash: string
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql`INSERT INTO admins (id, email, password_hash, created_at)
    VALUES (${input.id}, ${input.email}, ${input.passwordHash}, ${new Date(input.nowMs)})
    ON CONFLICT (email) DO NOTHING RETURNING id`
  return rows.length === 1
})
