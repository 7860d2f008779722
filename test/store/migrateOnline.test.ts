// Migrations with online steps (store/db.ts migrate): each step commits in a transaction of its own
// before the migration's, and none runs again once the migration is applied. The partitioning of
// executions validates its bound in such a step, so its own transaction (the one holding the
// exclusive lock on executions) scans nothing (docs/operations.md "Upgrading to partitioned executions").
// Dropping the foreign key from executions to triggers asks for its exclusive locks in short tries, so
// a long transaction on triggers delays the migration, not the writes queued behind its request.
import { assert, describe, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect, Fiber, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { uuidv7 } from "../../src/domain/ids.ts"
import { migrate } from "../../src/store/db.ts"
import { type Migration, MIGRATIONS, parseMigration } from "../../src/store/schema.ts"
import { freshDatabaseUrl } from "../support/database.ts"

const Database = Layer.unwrap(Effect.map(freshDatabaseUrl, (url) => PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })))

const PARTITIONING = MIGRATIONS.find((m) => m.name === "executions partitioned by day")!

const ONLINE: Migration = {
  version: 100_001,
  name: "a migration with online steps",
  sql: `INSERT INTO online_runs (what, tx) VALUES ('migration', txid_current());`,
  online: [
    `CREATE TABLE IF NOT EXISTS online_runs (what text NOT NULL, tx bigint NOT NULL);
INSERT INTO online_runs (what, tx) VALUES ('first step', txid_current());`,
    `INSERT INTO online_runs (what, tx) VALUES ('second step', txid_current());`
  ]
}

layer(Database, { timeout: "60 seconds" })("migrations with online steps", (it) => {
  it.effect("each step commits in its own transaction, before the migration's; applied, none runs again", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* migrate({ shards: 4, nowMs: 0 })
      assert.deepStrictEqual(yield* migrate({ shards: 4, nowMs: 0, migrations: [...MIGRATIONS, ONLINE] }), [ONLINE.version])
      const runs = yield* sql<{ what: string; tx: string }>`SELECT what, tx::text FROM online_runs ORDER BY tx`
      assert.deepStrictEqual(runs.map((r) => r.what), ["first step", "second step", "migration"])
      assert.strictEqual(new Set(runs.map((r) => r.tx)).size, 3)
      assert.deepStrictEqual(yield* migrate({ shards: 4, nowMs: 0, migrations: [...MIGRATIONS, ONLINE] }), [])
      assert.strictEqual((yield* sql`SELECT 1 FROM online_runs`).length, 3)
    }))

  it("a file's parts before its last \"-- Commit\" line are its online steps", () => {
    assert.deepStrictEqual(parseMigration("0009_split.sql", "-- Migration 9: split\nSELECT 1;\n-- Commit\nSELECT 2;\n-- Commit\nSELECT 3;\n"), {
      version: 9, name: "split", sql: "SELECT 3;\n", online: ["SELECT 1;\n", "SELECT 2;\n"]
    })
    assert.deepStrictEqual(parseMigration("0009_whole.sql", "-- Migration 9: whole\nSELECT 1;\n"), { version: 9, name: "whole", sql: "SELECT 1;\n" })
  })

  describe("the partitioning of executions", () => {

    it("validates its bound in an online step, and its own transaction validates nothing", () => {
      assert.isTrue((PARTITIONING.online ?? []).some((step) => /VALIDATE CONSTRAINT/.test(step)))
      assert.notMatch(PARTITIONING.sql.replace(/--.*$/gm, ""), /VALIDATE/)
    })
  })
})

// a database of its own: the partitioning must not have run yet
layer(Database, { timeout: "60 seconds" })("the partitioning of executions, nodes starting together", (it) => {
  it.effect("nodes starting together: another start's first step after this one's second keeps the validated bound", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const statements = (text: string) => text.split(/;\s*(?:\n|$)/).filter((s) => s.replace(/--.*$/gm, "").trim() !== "")
      const run = (text: string) => Effect.forEach(statements(text), (s) => sql.unsafe(s), { discard: true })
      yield* migrate({ shards: 4, nowMs: 0, migrations: MIGRATIONS.filter((m) => m.version < PARTITIONING.version) })
      const [bound, validate] = PARTITIONING.online!
      yield* run(bound!)
      yield* run(validate!)
      yield* run(bound!) // a second node's turn, between this one's steps and its migration
      const kept = yield* sql<{ convalidated: boolean }>`SELECT convalidated FROM pg_constraint WHERE conname = 'executions_legacy_bound'`
      assert.deepStrictEqual(kept.map((c) => c.convalidated), [true])
      yield* sql.withTransaction(run(PARTITIONING.sql))
      const kind = yield* sql<{ relkind: string }>`SELECT relkind::text FROM pg_class WHERE oid = 'executions'::regclass`
      assert.strictEqual(kind[0]!.relkind, "p")
    }))
})

// a database of its own, with room for a reader, a writer and the migration (the foreign key must not have been
// dropped yet), on the real clock
const Database4 = Layer.unwrap(Effect.map(freshDatabaseUrl, (url) => PgClient.layer({ url: Redacted.make(url), maxConnections: 4 })))
layer(Database4, { timeout: "60 seconds", excludeTestServices: true })("dropping the foreign key from executions to triggers", (it) => {
  const DROP_FK = MIGRATIONS.find((m) => m.name === "executions without a foreign key to triggers")!
  const PROJECT = "00000000-0000-7000-8000-0000000000f1"
  const TRIGGER = "00000000-0000-7000-8000-0000000000f2"

  it.effect("waits behind a transaction holding triggers in tries of 100 ms: writes of executions wait about that long at most", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* migrate({ shards: 4, nowMs: 0, migrations: MIGRATIONS.filter((m) => m.version < DROP_FK.version) })
      yield* sql`INSERT INTO projects (id, name, monthly_quota, retry_policy, created_at, updated_at)
        VALUES (${PROJECT}, 'p', 10, '{}'::jsonb, now(), now())`
      yield* sql`INSERT INTO triggers (id, project_id, kind, shard, status, url, method, headers, attempts, created_at, updated_at)
        VALUES (${TRIGGER}, ${PROJECT}, 'job', 0, 'completed', 'https://example.test/hook', 'POST', '[]', 1, now(), now())`
      // a read of triggers in a transaction left open for 1.5 s (its lock conflicts with the migration's)
      const holder = yield* sql.reserve
      yield* holder.executeRaw("BEGIN", [])
      yield* holder.executeRaw("SELECT count(*) FROM triggers", [])
      const released = yield* Effect.forkChild(Effect.andThen(Effect.sleep(1_500), holder.executeRaw("COMMIT", [])))
      // a writer of executions on its own connection, timed
      const writer = yield* sql.reserve
      const waits: Array<number> = []
      let attempt = 0
      const writing = yield* Effect.forkChild(Effect.forever(Effect.gen(function*() {
        const t0 = performance.now()
        yield* writer.executeRaw(`INSERT INTO executions (id, trigger_id, project_id, attempt, status, started_at, finished_at, duration_ms,
            connect_timeout_seconds, timeout_seconds, url)
          VALUES ($1, $2, $3, $4, 'succeeded', now(), now(), 1, 10, 30, 'https://example.test/hook')`, [uuidv7(Date.now()), TRIGGER, PROJECT, ++attempt])
        waits.push(performance.now() - t0)
        yield* Effect.sleep(10)
      })))
      yield* Effect.sleep(100)
      const t0 = performance.now()
      assert.deepStrictEqual(yield* migrate({ shards: 4, nowMs: 0, migrations: MIGRATIONS.filter((m) => m.version <= DROP_FK.version) }), [DROP_FK.version])
      const took = performance.now() - t0
      yield* Fiber.join(released)
      yield* Effect.sleep(100)
      yield* Fiber.interrupt(writing)
      // it waited for the reader, and the writer went on meanwhile
      assert.isAtLeast(took, 1_300)
      assert.isAtLeast(waits.length, 20)
      assert.isBelow(Math.max(...waits), 1_000, `longest insert ${Math.max(...waits).toFixed(0)} ms`)
      yield* Effect.logInfo(`migration ${DROP_FK.version}: ${took.toFixed(0)} ms behind a 1.5 s reader; longest insert meanwhile ${Math.max(...waits).toFixed(0)} ms`)
      const keys = yield* sql<{ name: string }>`SELECT conname AS name FROM pg_constraint WHERE contype = 'f' AND confrelid = 'triggers'::regclass
        AND conrelid IN (SELECT relid FROM pg_partition_tree('executions'))`
      assert.deepStrictEqual(keys, [])
      // a second start finds it applied
      assert.deepStrictEqual(yield* migrate({ shards: 4, nowMs: 0, migrations: MIGRATIONS.filter((m) => m.version <= DROP_FK.version) }), [])
    }).pipe(Effect.scoped))
})
