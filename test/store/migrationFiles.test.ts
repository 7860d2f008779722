// The migrations are numbered .sql files (src/store/migrations/, read by store/schema.ts): a name
// NNNN_words.sql, a first line "-- Migration N: name" with the same N, numbered from 1 without a gap.
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { MIGRATIONS, parseMigration, readMigrations } from "../../src/store/schema.ts"

describe("migration files", () => {
  it.each([
    ["a well-formed file", "0007_fired_marks.sql", "-- Migration 7: fired marks\nCREATE TABLE t ();\n", { version: 7, name: "fired marks", sql: "CREATE TABLE t ();\n" }],
    ["a header number unlike the file's", "0007_fired_marks.sql", "-- Migration 8: fired marks\nSELECT 1;\n", "throws"],
    ["no header", "0007_fired_marks.sql", "CREATE TABLE t ();\n", "throws"],
    ["a name without its number", "fired_marks.sql", "-- Migration 7: fired marks\n", "throws"],
    ["a name with capitals or spaces", "0007_Fired marks.sql", "-- Migration 7: fired marks\n", "throws"]
  ] as const)("%s", (_, fileName, text, expected) => {
    if (expected === "throws") expect(() => parseMigration(fileName, text)).toThrow()
    else expect(parseMigration(fileName, text)).toEqual(expected)
  })

  it("the repository's migrations are numbered from 1 without a gap, each with a name and SQL", () => {
    expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1))
    expect(MIGRATIONS.length).toBeGreaterThanOrEqual(17)
    for (const migration of MIGRATIONS) {
      expect(migration.name).not.toBe("")
      expect(migration.sql.trim()).not.toBe("")
    }
  })

  it("a gap in the numbers is refused", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tw-migrations-"))
    try {
      fs.writeFileSync(path.join(dir, "0001_first.sql"), "-- Migration 1: first\nSELECT 1;\n")
      fs.writeFileSync(path.join(dir, "0003_third.sql"), "-- Migration 3: third\nSELECT 1;\n")
      expect(() => readMigrations(dir)).toThrow(/migration 2 is missing/)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
