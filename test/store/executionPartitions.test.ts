// The executions table by day on a real database (docs/operations.md "How history is stored"):
// the migration "executions partitioned by day" makes the table as it was the partition of every id before its bound, its rows
// readable as before by every read; the days ahead are made once however many nodes make them at
// once, and again makes nothing; a row the default partition took for a day made later moves into
// that day; dropping before a cutoff drops only the days wholly before it.
import { assert, describe, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { DAY_MS, dayStartMs } from "../../src/domain/executionDays.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { migrate } from "../../src/store/db.ts"
import { executionsGet, executionsList, executionsListForTrigger, executionsLatestOfTriggers } from "../../src/store/executionReads.ts"
import { executionPartitionsDropBefore, executionPartitionsEnsure, executionPartitionsList, executionsDefaultDeleteBefore } from "../../src/store/executionPartitions.ts"
import { MIGRATIONS } from "../../src/store/schema.ts"

/** The migration that partitions executions by day. */
const PARTITIONING = MIGRATIONS.find((m) => m.name === "executions partitioned by day")!.version
import { freshDatabaseUrl } from "../support/database.ts"
import { ensureProject, insertExecution, insertTrigger } from "../support/fixtures.ts"

const Database = Layer.unwrap(Effect.map(freshDatabaseUrl, (url) => PgClient.layer({ url: Redacted.make(url), maxConnections: 6 })))

const PROJECT = "00000000-0000-7000-8000-0000000000ab"
const OLD_ROWS = 3_000

/** The partition holding the execution `id`. */
const partitionOf = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return (yield* sql<{ name: string }>`SELECT tableoid::regclass::text AS name FROM executions WHERE id = ${id}`)[0]?.name
  })

const names = Effect.map(executionPartitionsList, (list) => list.map((p) => p.name).sort())

layer(Database, { timeout: "120 seconds" })("executions by day", (it) => {
  describe("the migration partitioning executions, on a database with executions", () => {
    it.effect("the table as it was becomes the partition before its bound: every row read as before, new days after it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* migrate({ shards: 4, nowMs: 0, migrations: MIGRATIONS.filter((m) => m.version < PARTITIONING) })
        assert.strictEqual((yield* sql<{ kind: string }>`SELECT relkind::text AS kind FROM pg_class WHERE relname = 'executions'`)[0]!.kind, "r")
        yield* ensureProject(PROJECT)
        // one trigger with OLD_ROWS attempts over the last 20 days, as delivery mints their ids
        const triggerId = yield* insertTrigger({ projectId: PROJECT, status: "completed", attempts: OLD_ROWS })
        const now = Date.now()
        yield* sql`INSERT INTO executions (id, trigger_id, project_id, attempt, status, started_at, finished_at, duration_ms,
            http_status, is_dead_letter, connect_timeout_seconds, timeout_seconds, url)
          SELECT (lpad(to_hex(${now - 20 * DAY_MS}::bigint + g * ${Math.floor(20 * DAY_MS / OLD_ROWS)}::bigint), 12, '0')
              || '7' || lpad(to_hex(g), 3, '0') || '8000' || lpad(to_hex(g), 12, '0'))::uuid,
            ${triggerId}, ${PROJECT}, g, CASE WHEN g = ${OLD_ROWS} THEN 'failed' ELSE 'succeeded' END, now(), now(), 5,
            CASE WHEN g = ${OLD_ROWS} THEN 500 ELSE 200 END, g = ${OLD_ROWS}, 10, 30, 'https://example.test/hook'
          FROM generate_series(1, ${OLD_ROWS}) AS g`
        const before = yield* sql<{ id: string }>`SELECT id FROM executions ORDER BY id`

        assert.deepStrictEqual(yield* migrate({ shards: 4, nowMs: 0 }), MIGRATIONS.filter((m) => m.version >= PARTITIONING).map((m) => m.version))
        assert.strictEqual((yield* sql<{ kind: string }>`SELECT relkind::text AS kind FROM pg_class WHERE relname = 'executions'`)[0]!.kind, "p")
        const tomorrow = new Date(dayStartMs(now) + DAY_MS).toISOString().slice(0, 10).replaceAll("-", "")
        assert.deepStrictEqual(yield* names, [`executions_until_${tomorrow}`])
        assert.deepStrictEqual((yield* sql<{ id: string }>`SELECT id FROM executions ORDER BY id`).map((r) => r.id), before.map((r) => r.id))
        assert.strictEqual(yield* partitionOf(before[0]!.id), `executions_until_${tomorrow}`)

        // the reads of the log endpoints
        const newest = before[before.length - 1]!.id
        assert.strictEqual((yield* executionsGet({ projectId: PROJECT, id: newest }))?.attempt, OLD_ROWS)
        const page = yield* executionsList({ projectId: PROJECT, limit: 10 })
        assert.deepStrictEqual(page.map((r) => r.id), before.slice(-11).reverse().map((r) => r.id))
        const deadLetters = yield* executionsList({ projectId: PROJECT, limit: 10, deadLetterOnly: true })
        assert.deepStrictEqual(deadLetters.map((r) => r.id), [newest])
        const attempts = yield* executionsListForTrigger({ projectId: PROJECT, triggerId, limit: 5 })
        assert.deepStrictEqual(attempts.map((r) => r.attempt), [1, 2, 3, 4, 5])
        const latest = yield* executionsLatestOfTriggers({ projectId: PROJECT, triggerIds: [triggerId] })
        assert.deepStrictEqual(latest.get(triggerId), { succeeded: false, isDeadLetter: true })

        // the days from the bound on are made; a new attempt goes into its day, an old one stays
        const made = yield* executionPartitionsEnsure(dayStartMs(now) + DAY_MS)
        assert.strictEqual(made[0], `executions_${tomorrow}`)
        const next = yield* insertExecution({ id: uuidv7(dayStartMs(now) + DAY_MS + 5_000), projectId: PROJECT, triggerId, attempt: OLD_ROWS + 1 })
        assert.strictEqual(yield* partitionOf(next), `executions_${tomorrow}`)
        // (a page reads one more row than its limit)
        assert.deepStrictEqual((yield* executionsList({ projectId: PROJECT, limit: 1 })).map((r) => r.id), [next, newest])
        // a trigger deleted takes its executions in every partition along (the foreign key cascades)
        yield* sql`DELETE FROM triggers WHERE id = ${triggerId}`
        assert.strictEqual(Number((yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM executions`)[0]!.n), 0)
      }))
  })

  describe("days ahead", () => {
    const at = Date.UTC(2031, 2, 10, 15, 30)
    const day = (d: number) => `executions_203103${String(d).padStart(2, "0")}`

    it.effect("made once by two nodes at once; again makes nothing; the default partition's rows of a new day move into it", () =>
      Effect.gen(function*() {
        const triggerId = yield* insertTrigger({ projectId: PROJECT, status: "completed", attempts: 1 })
        // a row of a day not made yet goes to the default partition
        const early = yield* insertExecution({ id: uuidv7(Date.UTC(2031, 2, 12, 1)), projectId: PROJECT, triggerId })
        assert.strictEqual(yield* partitionOf(early), "executions_default")

        const [a, b] = yield* Effect.all([executionPartitionsEnsure(at), executionPartitionsEnsure(at)], { concurrency: 2 })
        assert.deepStrictEqual([...a!, ...b!].sort(), [day(10), day(11), day(12), day(13)])
        assert.deepStrictEqual(yield* executionPartitionsEnsure(at), [])
        assert.deepStrictEqual(yield* executionPartitionsEnsure(at + DAY_MS), [day(14)])
        assert.strictEqual(yield* partitionOf(early), day(12))
        assert.strictEqual((yield* executionsGet({ projectId: PROJECT, id: early }))?.id, early)
        const late = yield* insertExecution({ id: uuidv7(Date.UTC(2031, 2, 13, 23, 59)), projectId: PROJECT, triggerId, attempt: 2 })
        assert.strictEqual(yield* partitionOf(late), day(13))
      }))

    it.effect("dropping before a cutoff drops the days wholly before it, and the partition from before the migration", () =>
      Effect.gen(function*() {
        const before = yield* names
        // 2031-03-12 12:00: the 10th and 11th are wholly before it, the 12th not
        const dropped = yield* executionPartitionsDropBefore(Date.UTC(2031, 2, 12, 12))
        // oldest first: the partition from before the migration, the four days made after it, the 10th, the 11th
        assert.deepStrictEqual([...dropped].sort(), before.filter((n) => n < day(12) || n.startsWith("executions_until_")))
        assert.strictEqual(dropped.length, 7)
        assert.match(dropped[0]!, /^executions_until_/)
        assert.deepStrictEqual(dropped.slice(5), [day(10), day(11)])
        assert.deepStrictEqual(yield* names, before.filter((n) => !dropped.includes(n)))
        assert.deepStrictEqual(yield* executionPartitionsDropBefore(Date.UTC(2031, 2, 12, 12)), [])
      }))

    it.effect("a drop that cannot have its lock in time (a long read of executions) is left to the next turn, without waiting longer", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const cutoff = Date.UTC(2031, 2, 13, 12) // the 12th is wholly before it
        const reader = yield* sql.reserve
        yield* reader.executeRaw("BEGIN", [])
        yield* reader.executeRaw("SELECT count(*) FROM executions", [])
        const t0 = Date.now()
        assert.deepStrictEqual(yield* executionPartitionsDropBefore(cutoff), [])
        const waited = Date.now() - t0
        assert.isAtLeast(waited, 1_900)
        assert.isBelow(waited, 10_000)
        assert.include(yield* names, day(12))
        yield* reader.executeRaw("COMMIT", [])
        assert.deepStrictEqual(yield* executionPartitionsDropBefore(cutoff), [day(12)])
      }).pipe(Effect.scoped))

    it.effect("a dropped day keeps the attempts of a trigger retention keeps (still retrying); a finished one's go with it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const retrying = yield* insertTrigger({ projectId: PROJECT, status: "retrying", attempts: 1 })
        const finished = yield* insertTrigger({ projectId: PROJECT, status: "completed", attempts: 1 })
        yield* executionPartitionsEnsure(Date.UTC(2031, 2, 14, 1))
        const kept = yield* insertExecution({ id: uuidv7(Date.UTC(2031, 2, 14, 2)), projectId: PROJECT, triggerId: retrying })
        const gone = yield* insertExecution({ id: uuidv7(Date.UTC(2031, 2, 14, 3)), projectId: PROJECT, triggerId: finished })
        assert.strictEqual(yield* partitionOf(kept), day(14))
        const outboxBefore = (yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM alert_outbox`)[0]!.n
        const cutoff = Date.UTC(2031, 2, 15, 12)
        assert.include(yield* executionPartitionsDropBefore(cutoff), day(14))
        assert.notInclude(yield* names, day(14))
        assert.strictEqual(yield* partitionOf(kept), "executions_default")
        assert.strictEqual((yield* executionsGet({ projectId: PROJECT, id: kept }))?.id, kept)
        assert.isUndefined((yield* executionsGet({ projectId: PROJECT, id: gone }))?.id)
        // copied without alerting again
        assert.strictEqual((yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM alert_outbox`)[0]!.n, outboxBefore)
        // the default partition's clean-up leaves it while its trigger is kept, and takes it once the trigger finished before the cutoff
        yield* executionsDefaultDeleteBefore({ beforeMs: cutoff, limit: 100 })
        assert.strictEqual((yield* executionsGet({ projectId: PROJECT, id: kept }))?.id, kept)
        yield* sql`UPDATE triggers SET status = 'completed' WHERE id = ${retrying}`
        assert.strictEqual(yield* executionsDefaultDeleteBefore({ beforeMs: cutoff, limit: 100 }), 1)
        assert.isUndefined((yield* executionsGet({ projectId: PROJECT, id: kept }))?.id)
      }))
  })
})
