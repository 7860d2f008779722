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

/** The admin with this e-mail (compared case-insensitively), if any. */
export const adminsFindByEmail = Effect.fnUntraced(function*(email: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string; email: string; password_hash: string }>`
    SELECT id, email, password_hash FROM admins WHERE lower(email) = lower(${email}) ORDER BY created_at LIMIT 1`
  const row = rows[0]
  return row === undefined ? undefined : { id: row.id, email: row.email, passwordHash: row.password_hash }
})
