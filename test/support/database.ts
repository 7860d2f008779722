// A fresh database per test file: a new database on the DATABASE_URL server when it is set (dropped
// afterwards), else a real embedded PostgreSQL in a temporary directory (stopped afterwards).
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { migrate } from "../../src/store/db.ts"
import { embeddedUrl, startEmbedded } from "../../src/store/embedded.ts"

export const SHARDS_IN_TESTS = 8

/** A temporary directory the embedded server's `postgres` user can traverse. */
export const makeTempDir = (label: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `timewheel-${label}-`))
  fs.chmodSync(dir, 0o755)
  return dir
}

const adminQuery = (url: string, statement: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(statement)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))

/** Creates the database and returns its URL; the scope drops it (or stops the embedded server). */
export const freshDatabaseUrl = Effect.gen(function*() {
  const serverUrl = process.env.DATABASE_URL
  const name = `tw_test_${crypto.randomBytes(6).toString("hex")}`
  if (serverUrl !== undefined && serverUrl !== "") {
    yield* adminQuery(serverUrl, `CREATE DATABASE ${name}`)
    yield* Effect.addFinalizer(() =>
      adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
    )
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    return url.toString()
  }
  const dir = makeTempDir("db")
  const server = yield* Effect.acquireRelease(
    Effect.promise(() => startEmbedded(dir, () => {})),
    (server) => Effect.promise(() => server.stop().then(() => fs.rmSync(dir, { recursive: true, force: true })))
  )
  yield* adminQuery(embeddedUrl(server, "postgres"), `CREATE DATABASE ${name}`)
  return embeddedUrl(server, name)
})

/** SqlClient/PgClient on a fresh, migrated database. */
export const TestDatabase = Layer.unwrap(Effect.gen(function*() {
  const url = yield* freshDatabaseUrl
  const client = PgClient.layer({ url: Redacted.make(url), maxConnections: 10 })
  return Layer.provideMerge(
    Layer.effectDiscard(migrate({ shards: SHARDS_IN_TESTS, nowMs: 0 })),
    client
  )
}))
