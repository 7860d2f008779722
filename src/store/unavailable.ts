// Whether a failure means the database cannot be reached (docs/errors.md: the 503), and the store helper
// that turns such a failure into the domain's ServiceUnavailable (503 `Database unavailable` with
// `Retry-After: 1` at the API) as it leaves the store; every other failure passes through unchanged.
//
// What @effect/sql-pg 4 reports, as observed against a real server (a stopped embedded PostgreSQL, and
// `pg_terminate_backend` plus `ALLOW_CONNECTIONS false` on a test database):
// - a statement in flight when the server goes away: SqlError / ConnectionError "Connection closed";
// - a new connection to a stopped server: ConnectionError (operation `connect`, ECONNREFUSED), or
//   after `connectTimeout` "Connection timed out";
// - a server that answers but refuses the session: operation `connect` with the server's SQLSTATE,
//   classified by its class (55000 "not currently accepting connections" and 57P03 "the database
//   system is shutting down" are UnknownError, a bad password an AuthenticationError): any failure
//   to open a connection means the database cannot be reached;
// - SQLSTATE 57P01–57P05 (admin or crash shutdown, database dropped, session timeout) on a statement.
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import { isSqlError } from "effect/sql/SqlError"
import { ServiceUnavailable } from "../domain/errors.ts"

const GONE_SQLSTATE = /^57P0[1-5]$/

/** An SqlError saying the database cannot be reached right now (see the header comment). */
export const isDatabaseUnavailable = (error: unknown): boolean => {
  if (!isSqlError(error)) return false
  const reason = error.reason
  if (reason._tag === "ConnectionError" || reason.operation === "connect") return true
  const code = (reason.cause as { readonly code?: unknown } | undefined)?.code
  return typeof code === "string" && GONE_SQLSTATE.test(code)
}

/** The failure (or defect) of `cause` that says the database cannot be reached, if any. */
const unavailableIn = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.some((reason) =>
    (Cause.isFailReason(reason) && isDatabaseUnavailable(reason.error)) ||
    (Cause.isDieReason(reason) && isDatabaseUnavailable(reason.defect)))

/** What went wrong, for a log or a stored error: PostgreSQL's own message for an SqlError (its `message` is generic). */
export const failureText = (error: unknown): string => {
  if (!isSqlError(error)) return error instanceof Error ? error.message : String(error)
  const cause = error.reason.cause as { readonly message?: unknown } | undefined
  return typeof cause?.message === "string" ? cause.message : error.message
}

export const databaseUnavailable = () => new ServiceUnavailable("Database unavailable")

/**
 * `effect`, with a database that cannot be reached reported as ServiceUnavailable (also when it
 * surfaced as a defect); other failures and interruptions unchanged.
 */
export const orUnavailable = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | ServiceUnavailable, R> =>
  Effect.catchCause(effect, (cause): Effect.Effect<never, E | ServiceUnavailable> =>
    !Cause.hasInterruptsOnly(cause) && unavailableIn(cause) ? Effect.fail(databaseUnavailable()) : Effect.failCause(cause))
