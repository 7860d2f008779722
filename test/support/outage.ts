// Database outages for tests, without touching the machine's shared server: the test's own database is
// closed to new sessions (`ALLOW_CONNECTIONS false`) and its sessions are terminated, from an admin
// connection to the server's `postgres` database; reopening undoes it. Also the service on a database
// URL of the test's choosing (a private embedded server that a test may stop).
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { serviceOn, TestServer } from "./server.ts"

const databaseName = (url: string) => new URL(url).pathname.slice(1)

const adminUrl = (url: string) => {
  const admin = new URL(url)
  admin.pathname = "/postgres"
  return admin.toString()
}

const admin = (url: string, statement: (sql: SqlClient.SqlClient, name: string) => Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* statement(sql, databaseName(url))
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(adminUrl(url)), maxConnections: 1 })), Effect.orDie)

/** The database stops accepting sessions and every session on it is ended (the service's included). */
export const closeDatabase = (url: string) =>
  admin(url, (sql, name) =>
    Effect.gen(function*() {
      yield* sql.unsafe(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`)
      yield* sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name} AND pid <> pg_backend_pid()`
    }))

/** The database accepts sessions again. */
export const reopenDatabase = (url: string) =>
  admin(url, (sql, name) => sql.unsafe(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`))

/** The database URL the test server runs on. */
export const databaseUrlOf = Effect.map(TestServer, (server) => server.config.databaseUrl!)

/** The whole service on `databaseUrl` (like testServerLayer, which always makes a fresh database); logs off. */
export const serviceOnDatabase = (databaseUrl: string, env: Record<string, string> = {}) =>
  serviceOn(databaseUrl, { LOG_LEVEL: "none", ...env }, "outage")
