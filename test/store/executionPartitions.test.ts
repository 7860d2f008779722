// The executions table by day on a real database (docs/operations.md "How history is stored"):
// the migration "executions partitioned by day" makes the table as it was the partition of every id before its bound, its rows
// readable as before by every read; the days ahead are made once however many nodes make them at
// once, and again makes nothing; a row the default partition took for a day made later moves into
// that day; dropping before a cutoff drops only the days wholly before it. A read of a trigger's
// executions reaches only the days from the one it was made on (store/executionFloor.ts).
import { assert, describe, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { DAY_MS, dayStartMs, EXECUTION_FLOOR_MARGIN_MS, executionIdFloor } from "../../src/domain/executionDays.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { migrate } from "../../src/store/db.ts"
import { executionsGet, executionsList, executionsListForTrigger, executionsLatestOfTriggers } from "../../src/store/executionReads.ts"
import { deadLettersList } from "../../src/store/deadLetters.ts"
import { executionFloorSql } from "../../src/store/executionFloor.ts"
import { triggerFilterClauses } from "../../src/store/triggerFilter.ts"
import { executionPartitionsDropBefore, executionPartitionsEnsure, executionPartitionsList, executionsDefaultDeleteBefore } from "../../src/store/executionPartitions.ts"
import { retentionSessionOpen } from "../../src/store/retention.ts"
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

/** The tables with a foreign key to triggers. */
const foreignKeysToTriggers = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ name: string }>`SELECT DISTINCT conrelid::regclass::text AS name FROM pg_constraint
      WHERE contype = 'f' AND confrelid = 'triggers'::regclass ORDER BY 1`,
    (rows) => rows.map((r) => r.name)
  ))

layer(Database, { timeout: "120 seconds" })("executions by day", (it) => {
  describe("the migration partitioning executions, on a database with executions", () => {
    it.effect("the table as it was becomes the partition before its bound: every row read as before, new days after it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* migrate({ shards: 4, nowMs: 0, migrations: MIGRATIONS.filter((m) => m.version < PARTITIONING) })
        assert.strictEqual((yield* sql<{ kind: string }>`SELECT relkind::text AS kind FROM pg_class WHERE relname = 'executions'`)[0]!.kind, "r")
        yield* ensureProject(PROJECT)
        // one trigger made 21 days ago with OLD_ROWS attempts over the last 20 days, as delivery mints their ids
        const now = Date.now()
        const triggerId = yield* insertTrigger({ id: uuidv7(now - 21 * DAY_MS), projectId: PROJECT, status: "completed", attempts: OLD_ROWS })
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
        // the bound: two days on (writes of nodes still running must keep within it while the migration runs)
        const boundMs = dayStartMs(now) + 2 * DAY_MS
        const boundDay = new Date(boundMs).toISOString().slice(0, 10).replaceAll("-", "")
        assert.deepStrictEqual(yield* names, [`executions_until_${boundDay}`])
        assert.deepStrictEqual((yield* sql<{ id: string }>`SELECT id FROM executions ORDER BY id`).map((r) => r.id), before.map((r) => r.id))
        assert.strictEqual(yield* partitionOf(before[0]!.id), `executions_until_${boundDay}`)

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
        const made = yield* executionPartitionsEnsure(boundMs)
        assert.strictEqual(made[0], `executions_${boundDay}`)
        const next = yield* insertExecution({ id: uuidv7(boundMs + 5_000), projectId: PROJECT, triggerId, attempt: OLD_ROWS + 1 })
        assert.strictEqual(yield* partitionOf(next), `executions_${boundDay}`)
        // (a page reads one more row than its limit)
        assert.deepStrictEqual((yield* executionsList({ projectId: PROJECT, limit: 1 })).map((r) => r.id), [next, newest])
        // the foreign key to triggers is gone (its cascade would read every day for each trigger deleted)
        assert.deepStrictEqual(yield* foreignKeysToTriggers, ["gate_slots", "replay_overrides"])
        // a trigger retention deletes takes its executions in every partition before the cutoff along
        // (the partition from before the migration, and the day after it)
        yield* sql`UPDATE triggers SET updated_at = ${new Date(boundMs + 10_000)} WHERE id = ${triggerId}`
        assert.strictEqual(yield* Effect.scoped(Effect.flatMap(retentionSessionOpen, (session) =>
          session!.deleteBatch({ beforeMs: boundMs + DAY_MS, limit: 10 }))), 1)
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

    it.effect("retention's batch deletes its triggers' attempts left in the days before the cutoff (and the clock margin after it), not later ones", () =>
      Effect.gen(function*() {
        const at = (day: number, h: number, m = 0) => Date.UTC(2031, 2, day, h, m)
        yield* executionPartitionsEnsure(at(20, 1)) // the 20th to the 23rd: the 18th and 19th go to the default partition
        const cutoff = at(20, 12)
        const finished = yield* insertTrigger({ id: uuidv7(at(19, 5)), projectId: PROJECT, status: "completed", attempts: 4, updatedAt: new Date(at(20, 11)) })
        const stays = yield* insertTrigger({ id: uuidv7(at(19, 6)), projectId: PROJECT, status: "completed", attempts: 1, updatedAt: new Date(at(20, 13)) })
        const inDefault = yield* insertExecution({ id: uuidv7(at(19, 6)), projectId: PROJECT, triggerId: finished, attempt: 1 })
        const inDay = yield* insertExecution({ id: uuidv7(at(20, 2)), projectId: PROJECT, triggerId: finished, attempt: 2 })
        const inMargin = yield* insertExecution({ id: uuidv7(at(20, 12, 30)), projectId: PROJECT, triggerId: finished, attempt: 3 })
        const pastMargin = yield* insertExecution({ id: uuidv7(at(21, 0, 30)), projectId: PROJECT, triggerId: finished, attempt: 4 })
        const other = yield* insertExecution({ id: uuidv7(at(20, 3)), projectId: PROJECT, triggerId: stays })
        assert.strictEqual(yield* partitionOf(inDefault), "executions_default")
        assert.strictEqual(yield* partitionOf(pastMargin), day(21))
        yield* Effect.scoped(Effect.flatMap(retentionSessionOpen, (session) => session!.deleteBatch({ beforeMs: cutoff, limit: 1_000 })))
        const left = (id: string) => Effect.map(executionsGet({ projectId: PROJECT, id }), (row) => row?.id === id)
        assert.deepStrictEqual(yield* Effect.all([left(inDefault), left(inDay), left(inMargin)]), [false, false, false])
        // an attempt more than the margin after its trigger's last change (clocks that far apart) is left to its day's drop
        assert.isTrue(yield* left(pastMargin))
        assert.isTrue(yield* left(other))
      }))
  })

  describe("reads of a trigger's executions, from the day it was made on", () => {
    const PROJECT_B = "00000000-0000-7000-8000-0000000000ac"
    const at = (day: number, h: number, m = 0) => Date.UTC(2031, 3, day, h, m)

    it.effect("the SQL floor is the domain's, for ids of any time of day, near midnight and not UUIDv7", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const ids = [
          uuidv7(at(4, 0)), uuidv7(at(4, 0) + EXECUTION_FLOOR_MARGIN_MS - 1), uuidv7(at(4, 0) + EXECUTION_FLOOR_MARGIN_MS),
          uuidv7(at(4, 12)), uuidv7(at(4, 23, 59)), uuidv7(1_000), "6ba7b810-9dad-41d1-80b4-00c04fd430c8"
        ]
        const rows = yield* sql<{ id: string; floor: string }>`
          SELECT x.id, ${sql.unsafe(executionFloorSql("x.id"))} AS floor FROM unnest(${ids}::uuid[]) AS x(id)`
        assert.deepStrictEqual(rows.map((r) => r.floor), ids.map(executionIdFloor))
      }))

    it.effect("rows of the creation day (from its first millisecond) and of the margin before it are read; rows of days before are not", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* ensureProject(PROJECT_B)
        yield* executionPartitionsEnsure(at(1, 12))
        yield* executionPartitionsEnsure(at(4, 12))
        // rows no trigger can have (attempts before it was made, in a day before the floor), each the
        // trigger's highest attempt: a read reaching their day would take them as the latest
        const a = yield* insertTrigger({ id: uuidv7(at(4, 12)), projectId: PROJECT_B, status: "completed", attempts: 3 })
        const a1 = yield* insertExecution({ id: uuidv7(at(4, 0)), projectId: PROJECT_B, triggerId: a, attempt: 1, status: "failed", httpStatus: 500 })
        const a2 = yield* insertExecution({ id: uuidv7(at(5, 6)), projectId: PROJECT_B, triggerId: a, attempt: 2 })
        yield* insertExecution({ id: uuidv7(at(2, 12)), projectId: PROJECT_B, triggerId: a, attempt: 3, status: "failed", httpStatus: 500 })
        // made 30 minutes after midnight, sent by a node whose clock is behind: its attempt is of the day before
        const b = yield* insertTrigger({ id: uuidv7(at(4, 0, 30)), projectId: PROJECT_B, status: "completed", attempts: 2 })
        yield* insertExecution({ id: uuidv7(at(3, 23, 50)), projectId: PROJECT_B, triggerId: b, attempt: 1 })
        yield* insertExecution({ id: uuidv7(at(2, 6)), projectId: PROJECT_B, triggerId: b, attempt: 2, status: "failed", httpStatus: 500 })
        // ended in a dead letter
        const c = yield* insertTrigger({ id: uuidv7(at(4, 10)), projectId: PROJECT_B, status: "completed", attempts: 2 })
        const c1 = yield* insertExecution({
          id: uuidv7(at(4, 10, 1)), projectId: PROJECT_B, triggerId: c, attempt: 1, status: "failed", httpStatus: 500, isDeadLetter: true
        })
        yield* insertExecution({ id: uuidv7(at(2, 13)), projectId: PROJECT_B, triggerId: c, attempt: 2, status: "failed", httpStatus: 500 })

        assert.deepStrictEqual((yield* executionsListForTrigger({ projectId: PROJECT_B, triggerId: a, limit: 10 })).map((r) => r.id), [a1, a2])
        assert.deepStrictEqual((yield* executionsList({ projectId: PROJECT_B, jobId: a, limit: 10 })).map((r) => r.id), [a2, a1])
        const latest = yield* executionsLatestOfTriggers({ projectId: PROJECT_B, triggerIds: [a, b, c] })
        assert.deepStrictEqual(latest.get(a), { succeeded: true, isDeadLetter: false })
        assert.deepStrictEqual(latest.get(b), { succeeded: true, isDeadLetter: false })
        assert.deepStrictEqual(latest.get(c), { succeeded: false, isDeadLetter: true })
        const matching = (filter: Parameters<typeof triggerFilterClauses>[2]) =>
          Effect.map(
            sql<{ id: string }>`SELECT t.id FROM triggers t WHERE ${sql.and(triggerFilterClauses(sql, PROJECT_B, filter))} ORDER BY t.id`,
            (rows) => rows.map((r) => r.id)
          )
        assert.deepStrictEqual(yield* matching({ deadLetter: true }), [c])
        assert.deepStrictEqual(yield* matching({ outcome: "delivered" }), [b, a])
        assert.deepStrictEqual(yield* matching({ outcome: "dead_letter" }), [c])
        assert.deepStrictEqual((yield* deadLettersList({ projectId: PROJECT_B, limit: 10 })).map((r) => r.execution_id), [c1])
      }))

    it.effect("a read of one trigger's attempts scans no day partition before the one it was made on", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const trigger = uuidv7(at(4, 12))
        const lines = (rows: ReadonlyArray<{ "QUERY PLAN": string }>) => rows.map((r) => r["QUERY PLAN"])
        // a known trigger: pruned when planned
        const planned = lines(yield* sql<{ "QUERY PLAN": string }>`EXPLAIN (COSTS OFF)
          SELECT e.id FROM executions e WHERE e.trigger_id = ${trigger} AND e.id >= ${executionIdFloor(trigger)}`).join("\n")
        assert.notInclude(planned, "executions_20310402")
        assert.notInclude(planned, "executions_20310403")
        assert.include(planned, "executions_20310404")
        // triggers joined row by row: pruned as each runs (the days before are never executed)
        const ran = lines(yield* sql<{ "QUERY PLAN": string }>`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
          SELECT e.id FROM unnest(${[trigger]}::uuid[]) AS t(id) CROSS JOIN LATERAL (
            SELECT e.id FROM executions e WHERE e.trigger_id = t.id AND e.id >= ${sql.unsafe(executionFloorSql("t.id"))}
            ORDER BY e.attempt DESC LIMIT 1) e`)
        const scanOf = (day: string) => ran.find((line) => line.includes(`on executions_${day}`))
        assert.include(scanOf("20310402"), "never executed")
        assert.include(scanOf("20310403"), "never executed")
        assert.notInclude(scanOf("20310404"), "never executed")
      }))
  })
})
