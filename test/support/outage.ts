// Database outages for tests, without touching the machine's shared server: the test's own database is
// closed to new sessions (`ALLOW_CONNECTIONS false`) and its sessions are terminated, from an admin
// connection to the server's `postgres` database; reopening undoes it. Also the service on a database
// URL of the test's choosing (a private embedded server that a test may stop).
import { PgClient } from "@effect/sql-pg"
import { Clock, Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs"
import { loadTls } from "../../src/api/tls.ts"
import { createApiKey } from "../../src/commands/apiKeys.ts"
import { createProject } from "../../src/commands/projects.ts"
import { loadConfig } from "../../src/config.ts"
import { ServiceLive } from "../../src/service.ts"
import { makeTempDir, SHARDS_IN_TESTS } from "./database.ts"
import { call, TestServer } from "./server.ts"

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

/** LIVE clock (see test/support/server.ts): the service sleeps and stamps in real time. */
const LIVE_CLOCK = Effect.runSync(Effect.clockWith((clock) => Effect.succeed(clock)))

let projectCounter = 0

/** The whole service on `databaseUrl` (like testServerLayer, which always makes a fresh database). */
export const serviceOnDatabase = (databaseUrl: string, env: Record<string, string> = {}) =>
  Layer.unwrap(Effect.gen(function*() {
    const dataDir = makeTempDir("data")
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dataDir, { recursive: true, force: true })))
    const config = loadConfig({
      PORT: "0", HOST: "127.0.0.1", SHARDS: String(SHARDS_IN_TESTS), LOG_LEVEL: "none", ...env,
      DATABASE_URL: databaseUrl, DATA_DIR: dataDir
    })
    const tls = yield* Effect.promise(() => loadTls(config))
    const service = ServiceLive(config, tls).pipe(Layer.provide(Layer.succeed(Clock.Clock)(LIVE_CLOCK)))
    const testServer = Layer.effect(TestServer, Effect.gen(function*() {
      const server = yield* HttpServer.HttpServer
      const port = "port" in server.address ? server.address.port : 0
      const baseUrl = `https://127.0.0.1:${port}`
      const context = yield* Effect.context<never>()
      return TestServer.of({
        baseUrl,
        config,
        call: (method, path, options) => call(baseUrl, method, path, options),
        newKey: (options) =>
          Effect.gen(function*() {
            const name = `outage-${++projectCounter}-${Math.random().toString(36).slice(2, 8)}`
            yield* createProject(name, options?.monthlyQuota)
            return yield* createApiKey(name)
          }).pipe(Effect.provideContext(context), Effect.orDie) as Effect.Effect<string>
      })
    }))
    return Layer.provideMerge(testServer, service)
  }))
