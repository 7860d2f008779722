// The one PostgreSQL server of a benchmark run: DATABASE_URL when set, else the embedded server in a
// temporary directory. Each workload of each system gets a fresh database, dropped afterwards.
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import { makeTempDir, removeTempDir } from "./common.ts"
import { embeddedUrl, startEmbedded } from "../../src/store/embedded.ts"

export interface DatabaseServer {
  /** URL of the maintenance database (`postgres`) used to create and drop the per-run databases. */
  readonly adminUrl: string
  readonly description: string
  readonly stop: () => Promise<void>
}

/** One statement on a connection of its own (opened and closed here). */
export const query = <A extends object>(url: string, statement: string) =>
  Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.unsafe<A>(statement)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))))

export const openDatabaseServer = async (): Promise<DatabaseServer> => {
  const fromEnv = process.env.DATABASE_URL
  if (fromEnv !== undefined && fromEnv.trim() !== "") {
    const url = new URL(fromEnv)
    url.pathname = "/postgres"
    return { adminUrl: url.toString(), description: `server of DATABASE_URL (${url.host})`, stop: async () => {} }
  }
  const dir = makeTempDir("pg")
  fs.chmodSync(dir, 0o755) // the embedded server's postgres user must traverse it when run as root
  let stopping = false // once stopping, the FATAL lines of the connections it ends are noise
  const server = await startEmbedded(dir, (line) => stopping || process.stderr.write(`embedded PostgreSQL: ${line}\n`))
  return {
    adminUrl: embeddedUrl(server, "postgres"),
    description: "embedded server",
    stop: async () => {
      stopping = true
      await server.stop()
      removeTempDir(dir)
    }
  }
}

export const serverVersion = async (server: DatabaseServer): Promise<string> => {
  const rows = await query<{ server_version: string }>(server.adminUrl, "SHOW server_version")
  return rows[0]?.server_version ?? "unknown"
}

/**
 * Creates an empty database, or a copy of `template` (which must have no connection meanwhile; copied file by
 * file on PostgreSQL 15+, whose default copies through the WAL); returns its URL and a function dropping it
 * (connections forced off).
 */
export const freshDatabase = async (server: DatabaseServer, label: string, template?: string) => {
  const name = `bench_${label.replace(/[^a-z0-9]+/g, "_")}_${crypto.randomBytes(4).toString("hex")}`
  if (template === undefined) await query(server.adminUrl, `CREATE DATABASE ${name}`)
  else {
    const version = await query<{ server_version_num: string }>(server.adminUrl, "SHOW server_version_num")
    const fileCopy = Number(version[0]?.server_version_num ?? 0) >= 150_000 ? " STRATEGY FILE_COPY" : ""
    await query(server.adminUrl, `CREATE DATABASE ${name} TEMPLATE ${template}${fileCopy}`)
  }
  const url = new URL(server.adminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: () => query(server.adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => undefined)
  }
}
