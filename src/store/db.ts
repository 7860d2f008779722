// The database layer: @effect/sql-pg on DATABASE_URL, or on the embedded server in DATA_DIR/pg.
// Building it also applies the migrations (serialised across processes by an advisory lock).
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import { EMBEDDED_DATABASE, embeddedUrl, startEmbedded } from "./embedded.ts"
import { type Migration, MIGRATIONS } from "./schema.ts"

/** What every store function needs: the connection pool (callers need not know it speaks SQL). */
export type Database = SqlClient.SqlClient

/** Advisory lock key taken while migrating ("timewheel" in ASCII, as a bigint). */
const MIGRATION_LOCK = 0x74696d6577686565n

export const migrate = Effect.fnUntraced(function*(options: {
  readonly shards: number
  readonly nowMs: number
  /** Every migration by default; a test applies fewer to check what a later one does to existing rows. */
  readonly migrations?: ReadonlyArray<Migration>
}) {
  const sql = yield* SqlClient.SqlClient
  /** A step in a transaction of its own, holding the migration lock: processes starting at once take turns. */
  const locked = <A, E, R>(step: Effect.Effect<A, E, R>) =>
    sql.withTransaction(Effect.andThen(sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`, step))
  yield* locked(sql`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`)
  const now = new Date(options.nowMs)
  const ran: Array<number> = []
  const isApplied = (version: number) =>
    Effect.map(sql`SELECT 1 FROM schema_migrations WHERE version = ${version}`, (rows) => rows.length > 0)
  // the driver speaks only the extended protocol: one statement per query
  const runStatements = (text: string) =>
    Effect.forEach(
      text.split(/;\s*(?:\n|$)/).filter((statement) => statement.replace(/--.*$/gm, "").trim() !== ""),
      (statement) => sql.unsafe(statement),
      { discard: true }
    )
  for (const migration of options.migrations ?? MIGRATIONS) {
    // its online steps first, each committed on its own (skipped once another process applied it)
    for (const step of migration.online ?? []) {
      yield* locked(Effect.gen(function*() {
        if (!(yield* isApplied(migration.version))) yield* runStatements(step)
      }))
    }
    // each migration in its own transaction: one that fails leaves those before it applied
    const applied = yield* locked(Effect.gen(function*() {
      if (yield* isApplied(migration.version)) return false
      yield* runStatements(migration.sql)
      yield* sql`INSERT INTO schema_migrations (version, name, applied_at)
        VALUES (${migration.version}, ${migration.name}, ${now})`
      return true
    }))
    if (applied) ran.push(migration.version)
  }
  yield* locked(Effect.gen(function*() {
    // SHARDS is fixed when the database is created; later starts read it from here.
    yield* sql`INSERT INTO settings (key, value) VALUES ('shards', ${String(options.shards)})
      ON CONFLICT (key) DO NOTHING`
    // every shard has its fired mark from the start (store/shardMarks.ts): a command locking it
    // must find a row to lock
    yield* sql`INSERT INTO shard_marks (shard, fired_at, node)
      SELECT s, '-infinity', '' FROM settings, generate_series(0, value::int - 1) AS s WHERE key = 'shards'
      ON CONFLICT (shard) DO NOTHING`
  }))
  return ran
})

/** The shard count stored in the database (docs/settings.md, SHARDS: fixed at creation). */
export const storedShardCount = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ value: string }>`SELECT value FROM settings WHERE key = 'shards'`
  return Number(rows[0]!.value)
})

/** The cluster's shard count, read once from the database (not from SHARDS, which only seeds it). */
export class ShardCount extends Context.Service<ShardCount, { readonly count: number }>()("timewheel/ShardCount") {
  static readonly layer = Layer.effect(ShardCount, Effect.map(storedShardCount, (count) => ({ count })))
}

const clientLayer = (url: string, applicationName: string, maxConnections: number) =>
  PgClient.layer({ url: Redacted.make(url), applicationName, maxConnections, connectTimeout: "10 seconds" })

/** Creates the embedded server's application database on first use. */
const ensureDatabase = (adminUrl: string, database: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const exists = yield* sql`SELECT 1 FROM pg_database WHERE datname = ${database}`
    if (exists.length > 0) return
    yield* sql.unsafe(`CREATE DATABASE "${database}"`).pipe(
      // another process may have created it at the same moment
      Effect.catch((error) =>
        Effect.flatMap(sql`SELECT 1 FROM pg_database WHERE datname = ${database}`, (rows) =>
          rows.length > 0 ? Effect.void : Effect.fail(error))
      )
    )
  }).pipe(Effect.provide(clientLayer(adminUrl, "timewheel-setup", 1)))

/** Where the database is: a server's URL (DATABASE_URL), else the embedded server's data directory. */
export interface DatabaseSettings {
  readonly databaseUrl: string | undefined
  readonly dataDir: string
  /** SHARDS: the shard count of a database created now (later starts read it from the database). */
  readonly shards: number
}

/** The connection URL: DATABASE_URL, or the embedded server (started here, stopped with the scope). */
export const databaseUrl = (config: DatabaseSettings) => Effect.gen(function*() {
  if (config.databaseUrl !== undefined) return config.databaseUrl
  const server = yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: () => startEmbedded(config.dataDir, (line) => console.error(line)),
      catch: (cause) => new Error(`cannot start the embedded PostgreSQL in ${path.join(config.dataDir, "pg")}: ${String(cause)}`)
    }),
    (server) => Effect.promise(() => server.stop())
  )
  yield* ensureDatabase(embeddedUrl(server, "postgres"), EMBEDDED_DATABASE)
  return embeddedUrl(server, EMBEDDED_DATABASE)
})

/** SqlClient + PgClient for the service or the CLI, migrated. */
export const DatabaseLive = (
  config: DatabaseSettings,
  options: { readonly applicationName: string; readonly maxConnections: number }
) =>
  Layer.unwrap(Effect.gen(function*() {
    const url = yield* databaseUrl(config)
    const client = clientLayer(url, options.applicationName, options.maxConnections)
    const migrated = Layer.effectDiscard(Effect.gen(function*() {
      const nowMs = yield* Clock.currentTimeMillis
      yield* migrate({ shards: config.shards, nowMs })
    }))
    return Layer.provideMerge(migrated, client)
  }))
