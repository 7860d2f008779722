// Dashboard sessions (schema migration 6): rows keyed by the SHA-256 of the cookie's token, so every
// node honours them and a stolen database holds no usable token; and the failed sign-ins counted for
// throttling. The rules (limits, expiry) are in domain/auth/signin.ts; these are the statements.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

export interface StoredSession {
  readonly adminId: string
  readonly email: string
  readonly createdAtMs: number
  readonly lastSeenAtMs: number
  readonly expiresAtMs: number
}

export const sessionsCreate = Effect.fnUntraced(function*(input: {
  readonly tokenHash: Uint8Array
  readonly adminId: string
  readonly nowMs: number
  readonly expiresAtMs: number
  readonly address: string | null
}) {
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  yield* sql`INSERT INTO admin_sessions (token_hash, admin_id, created_at, last_seen_at, expires_at, address)
    VALUES (${input.tokenHash}, ${input.adminId}, ${now}, ${now}, ${new Date(input.expiresAtMs)}, ${input.address})`
})

/** The session with this token hash, with its admin's e-mail (expired or not: the caller decides). */
export const sessionsFind = Effect.fnUntraced(function*(tokenHash: Uint8Array) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ admin_id: string; email: string; created_at: Date; last_seen_at: Date; expires_at: Date }>`
    SELECT s.admin_id, a.email, s.created_at, s.last_seen_at, s.expires_at
    FROM admin_sessions s JOIN admins a ON a.id = s.admin_id WHERE s.token_hash = ${tokenHash}`
  const row = rows[0]
  return row === undefined ? undefined : {
    adminId: row.admin_id,
    email: row.email,
    createdAtMs: row.created_at.getTime(),
    lastSeenAtMs: row.last_seen_at.getTime(),
    expiresAtMs: row.expires_at.getTime()
  } satisfies StoredSession
})

export const sessionsTouch = Effect.fnUntraced(function*(input: { readonly tokenHash: Uint8Array; readonly nowMs: number }) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE admin_sessions SET last_seen_at = ${new Date(input.nowMs)} WHERE token_hash = ${input.tokenHash}`
})

export const sessionsDelete = Effect.fnUntraced(function*(tokenHash: Uint8Array) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM admin_sessions WHERE token_hash = ${tokenHash}`
})

/** Deletes sessions past their absolute or idle limit, and failed sign-ins older than `failuresBeforeMs`. */
export const sessionsDeleteExpired = Effect.fnUntraced(function*(input: {
  readonly nowMs: number
  readonly idleMs: number
  readonly failuresBeforeMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  yield* sql`DELETE FROM admin_sessions WHERE expires_at <= ${now} OR last_seen_at <= ${new Date(input.nowMs - input.idleMs)}`
  yield* sql`DELETE FROM signin_failures WHERE failed_at < ${new Date(input.failuresBeforeMs)}`
})

/** Failed sign-ins since `sinceMs` for the account and for the address, with the oldest of each. */
export const signinFailuresCount = Effect.fnUntraced(function*(input: {
  readonly account: string
  readonly address: string | null
  readonly sinceMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const since = new Date(input.sinceMs)
  const rows = yield* sql<{ scope: string; n: number; oldest: Date }>`
    SELECT scope, count(*)::int AS n, min(failed_at) AS oldest FROM signin_failures
    WHERE failed_at > ${since} AND ((scope = 'account' AND subject = ${input.account})
      OR (scope = 'address' AND subject = ${input.address ?? ""}))
    GROUP BY scope`
  const of = (scope: string) => rows.find((row) => row.scope === scope)
  return {
    account: of("account")?.n ?? 0,
    accountOldestMs: of("account")?.oldest.getTime() ?? null,
    address: of("address")?.n ?? 0,
    addressOldestMs: of("address")?.oldest.getTime() ?? null
  }
})

export const signinFailuresRecord = Effect.fnUntraced(function*(input: {
  readonly account: string
  readonly address: string | null
  readonly nowMs: number
}) {
  const sql = yield* SqlClient.SqlClient
  const now = new Date(input.nowMs)
  yield* sql`INSERT INTO signin_failures (scope, subject, failed_at) VALUES ('account', ${input.account}, ${now})`
  if (input.address !== null) yield* sql`INSERT INTO signin_failures (scope, subject, failed_at) VALUES ('address', ${input.address}, ${now})`
})

export const signinFailuresClearAccount = Effect.fnUntraced(function*(account: string) {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DELETE FROM signin_failures WHERE scope = 'account' AND subject = ${account}`
})
