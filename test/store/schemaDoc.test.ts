// docs/schema.md is what the migrations make: regenerated from a freshly migrated database's catalog
// (store/schemaCatalog.ts), it must equal the committed page (`npm run schema` rewrites it).
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { MIGRATIONS } from "../../src/store/schema.ts"
import { schemaDescribe, schemaMarkdown } from "../../src/store/schemaCatalog.ts"
import { TestDatabase } from "../support/database.ts"

const PAGE = path.join(import.meta.dirname, "..", "..", "docs", "schema.md")

layer(TestDatabase, { timeout: "60 seconds" })("docs/schema.md", (it) => {
  it.effect("is the schema every migration makes (run npm run schema after adding one)", () =>
    Effect.gen(function*() {
      const tables = yield* schemaDescribe
      assert.isAbove(tables.length, 20)
      assert.strictEqual(fs.readFileSync(PAGE, "utf8"), schemaMarkdown(tables, MIGRATIONS[MIGRATIONS.length - 1]!))
    }))
})
