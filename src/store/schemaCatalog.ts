// Today's schema as PostgreSQL holds it once every migration ran (store/migrations/): each table's
// columns, constraints, indexes and triggers, read from the catalog and written out as Markdown.
// `npm run schema` regenerates docs/schema.md with it, and a test checks that page is current, so a
// reader sees the schema without replaying twenty migrations in their head. A partitioned table is
// listed once, with its partition key; its partitions (one per day, made as time passes) are not.
import * as Effect from "effect/Effect"
import { SqlClient } from "effect/sql"

export interface TableDescription {
  readonly name: string
  /** `PARTITION BY …` of a partitioned table, else null. */
  readonly partitionKey: string | null
  readonly columns: ReadonlyArray<{ readonly name: string; readonly type: string; readonly notNull: boolean; readonly defaultValue: string | null }>
  readonly constraints: ReadonlyArray<{ readonly name: string; readonly definition: string }>
  readonly indexes: ReadonlyArray<{ readonly name: string; readonly definition: string }>
  readonly triggers: ReadonlyArray<{ readonly name: string; readonly definition: string }>
}

/** Every table of the public schema but partitions, in name order. */
export const schemaDescribe = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql<{ oid: number; name: string; partition_key: string | null }>`
    SELECT c.oid::int AS oid, c.relname AS name,
      CASE WHEN c.relkind = 'p' THEN pg_get_partkeydef(c.oid) END AS partition_key
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
    ORDER BY c.relname COLLATE "C"`
  const columns = yield* sql<{ oid: number; name: string; type: string; not_null: boolean; default_value: string | null }>`
    SELECT a.attrelid::int AS oid, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type,
      a.attnotnull AS not_null, pg_get_expr(d.adbin, d.adrelid) AS default_value
    FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE a.attrelid = ANY(${tables.map((t) => t.oid)}::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY a.attrelid, a.attnum`
  const constraints = yield* sql<{ oid: number; name: string; definition: string }>`
    SELECT conrelid::int AS oid, conname AS name, pg_get_constraintdef(oid) AS definition
    FROM pg_constraint WHERE conrelid = ANY(${tables.map((t) => t.oid)}::oid[]) AND contype <> 'n'
    ORDER BY conrelid, conname COLLATE "C"`
  const indexes = yield* sql<{ oid: number; name: string; definition: string }>`
    SELECT i.indrelid::int AS oid, c.relname AS name, pg_get_indexdef(i.indexrelid) AS definition
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = ANY(${tables.map((t) => t.oid)}::oid[])
    ORDER BY i.indrelid, c.relname COLLATE "C"`
  const triggers = yield* sql<{ oid: number; name: string; definition: string }>`
    SELECT tgrelid::int AS oid, tgname AS name, pg_get_triggerdef(oid) AS definition
    FROM pg_trigger WHERE tgrelid = ANY(${tables.map((t) => t.oid)}::oid[]) AND NOT tgisinternal
    ORDER BY tgrelid, tgname COLLATE "C"`
  const of = <R extends { oid: number }>(rows: ReadonlyArray<R>, oid: number) => rows.filter((row) => row.oid === oid)
  return tables.map((table): TableDescription => ({
    name: table.name,
    partitionKey: table.partition_key,
    columns: of(columns, table.oid).map((c) => ({ name: c.name, type: c.type, notNull: c.not_null, defaultValue: c.default_value })),
    constraints: of(constraints, table.oid).map(({ definition, name }) => ({ name, definition })),
    indexes: of(indexes, table.oid).map(({ definition, name }) => ({ name, definition: definition.replace(/ ON (?:ONLY )?public\./, " ON ") })),
    triggers: of(triggers, table.oid).map(({ definition, name }) => ({ name, definition: definition.replace(/ ON public\./, " ON ") }))
  }))
})

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n\s*/g, " ")

/** docs/schema.md: one section per table. */
export const schemaMarkdown = (tables: ReadonlyArray<TableDescription>, lastMigration: { readonly version: number; readonly name: string }): string => {
  const lines = [
    "<!-- docs/schema.md: every table, column, constraint, index and trigger of the database, generated from the migrations by npm run schema. -->",
    "# The database schema",
    "",
    `What PostgreSQL holds once every migration has run (the last: ${lastMigration.version}, "${lastMigration.name}").`,
    "The migrations themselves, with a comment on why each table and index is there, are in",
    "`src/store/migrations/` (one numbered `.sql` file each); this page is generated from the catalog by `npm run schema` (do not edit it:",
    "a test fails when it differs from what the migrations make).",
    ""
  ]
  for (const table of tables) {
    lines.push(`## ${table.name}`, "")
    if (table.partitionKey !== null) lines.push(`Partitioned: \`PARTITION BY ${table.partitionKey}\`.`, "")
    lines.push("| column | type | null | default |", "| --- | --- | --- | --- |")
    for (const column of table.columns) {
      lines.push(`| ${column.name} | ${cell(column.type)} | ${column.notNull ? "not null" : ""} | ${column.defaultValue === null ? "" : `\`${cell(column.defaultValue)}\``} |`)
    }
    lines.push("")
    for (const [title, list] of [["Constraints", table.constraints], ["Indexes", table.indexes], ["Triggers", table.triggers]] as const) {
      if (list.length === 0) continue
      lines.push(`${title}:`, "")
      for (const item of list) lines.push(`- \`${item.name}\`: \`${cell(item.definition)}\``)
      lines.push("")
    }
  }
  return lines.join("\n")
}
