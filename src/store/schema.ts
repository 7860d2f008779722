// The database schema as ordered migrations: the numbered files of migrations/ (`0001_….sql`, each
// opening with `-- Migration N: name`), read once at start. Each is applied in a transaction of its
// own under an advisory lock (store/db.ts), so processes starting at once take turns and each
// migration runs exactly once; a file may split its work into several transactions ("-- Commit").
// Today's schema they make is docs/schema.md.
// Designed for tens of millions of trigger and execution rows: every hot path has a narrow
// (mostly partial) index, and ids are UUIDv7 so "newest first" is an index scan on the primary key.
import * as fs from "node:fs"
import * as path from "node:path"

export interface Migration {
  readonly version: number
  readonly name: string
  /** What its transaction runs (recording it as applied). */
  readonly sql: string
  /**
   * Steps run before `sql`, each in a transaction of its own (store/db.ts migrate): long work that
   * must not hold the locks `sql` takes, such as validating a constraint while writes go on. Each
   * must be safe to run again (a start that stopped between them runs them all again). In a file,
   * the parts before the last line `-- Commit`.
   */
  readonly online?: ReadonlyArray<string>
}

/** A line of a migration file ending a transaction: what precedes it runs and commits before what follows. */
const COMMIT = /^-- Commit\n/m

/**
 * Where the files are: beside this module in the sources and in tsc's output (the build copies
 * them to dist/store/migrations), or from the bundled service (dist/main.js or one of its chunks).
 */
const migrationsDirectory = (): string => {
  const here = import.meta.dirname
  const candidates = [path.join(here, "migrations"), path.join(here, "store", "migrations"), path.join(here, "..", "store", "migrations")]
  const found = candidates.find((dir) => fs.existsSync(dir))
  if (found === undefined) throw new Error(`the migrations are missing: looked in ${candidates.join(", ")}`)
  return found
}

const FILE_NAME = /^(\d{4})_[a-z0-9_]+\.sql$/
const HEADER = /^-- Migration (\d+): (.+)\n/

/** A migration file's version (its number), name (its header) and SQL; a file that breaks the pattern throws. */
export const parseMigration = (fileName: string, text: string): Migration => {
  const file = FILE_NAME.exec(fileName)
  const header = HEADER.exec(text)
  if (file === null || header === null || Number(file[1]) !== Number(header[1])) {
    throw new Error(`migration ${fileName}: expected a name NNNN_words.sql and a first line "-- Migration N: name" with the same N`)
  }
  const parts = text.slice(header[0].length).split(COMMIT)
  const sql = parts.pop()!
  return parts.length === 0 ? { version: Number(file[1]), name: header[2]!, sql } : { version: Number(file[1]), name: header[2]!, sql, online: parts }
}

/** The migrations in order of version, numbered 1, 2, 3… without a gap. */
export const readMigrations = (directory: string = migrationsDirectory()): ReadonlyArray<Migration> => {
  const migrations = fs.readdirSync(directory).filter((name) => name.endsWith(".sql")).sort()
    .map((name) => parseMigration(name, fs.readFileSync(path.join(directory, name), "utf8")))
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) throw new Error(`migration ${index + 1} is missing (found ${migration.version})`)
  })
  return migrations
}

export const MIGRATIONS: ReadonlyArray<Migration> = readMigrations()
