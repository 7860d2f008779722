// A lease round's two statements (store/gateLeases.ts, migration 19): the gates' locks are held from
// the read to the write's commit and given back with it (or when the round fails); a row granted under
// a policy that changed since the read is not written (the round says which gates were stale); the
// rows of a gate whose policy is unchanged are. The read counts the backlog as store/gates.ts's
// WAITING_SQL says.
import { assert, layer } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { SqlClient } from "effect/sql"
import { GATE_LOCK_NAMESPACE, type OwnLease, type RoundRead, gateLeasesRound } from "../../src/store/gateLeases.ts"
import { WAITING_SQL } from "../../src/store/gates.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, nextId } from "../support/fixtures.ts"

const freshProject = Effect.gen(function*() {
  const projectId = nextId()
  yield* ensureProject(projectId)
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO tag_policies (id, project_id, tag, max_concurrent, created_at, updated_at)
    VALUES (${nextId()}, ${projectId}, 'billing', 5, now(), now()), (${nextId()}, ${projectId}, 'mail', 5, now(), now())`
  return projectId
})

/** Whether no session holds the gate's lock now. */
const lockFree = (projectId: string, tag: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_locks
      WHERE locktype = 'advisory' AND classid = ${GATE_LOCK_NAMESPACE} AND objsubid = 2
        AND objid = ((hashtext(${`${projectId}/${tag}`})::bigint + 4294967296) % 4294967296)::oid`
    return rows[0]!.n === 0
  })

const own = (projectId: string, tag: string, policySeenMs: number): OwnLease =>
  ({ projectId, tag, permits: 2, tokens: {}, demand: { concurrency: 2 }, inFlight: 0, policySeenMs })

const leaseRows = (projectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ tag: string; permits: number }>`SELECT tag, permits FROM gate_leases WHERE project_id = ${projectId} ORDER BY tag, node`)

layer(TestDatabase, { timeout: "60 seconds", excludeTestServices: true })("gate lease rounds", (it) => {
  it.effect("a round writes the rows granted under the policy it read, skips one whose policy changed since, and gives its locks back", () =>
    Effect.gen(function*() {
      const projectId = yield* freshProject
      const gates = [{ projectId, tag: "billing" }, { projectId, tag: "mail" }]
      const { result: read, stale } = yield* gateLeasesRound({
        node: "node-a",
        gates,
        ttlMs: 2_000,
        graceMs: 0,
        decide: (read: RoundRead) => {
          const seen = new Map(read.gates.map((gate) => [gate.tag, gate.policy!.updatedAtMs]))
          // mail's row as if its policy had changed after the read (granted under an older version)
          const keep = [own(projectId, "billing", seen.get("billing")!), own(projectId, "mail", seen.get("mail")! - 1)]
          return { writes: { keep, drop: [], reclaim: [], purge: [], durable: true }, result: read }
        }
      })
      assert.strictEqual(read.gates.length, 2)
      assert.deepStrictEqual(stale, [{ projectId, tag: "mail" }])
      assert.deepStrictEqual(yield* leaseRows(projectId), [{ tag: "billing", permits: 2 }])
      assert.isTrue(yield* lockFree(projectId, "billing"))
      assert.isTrue(yield* lockFree(projectId, "mail"))
    }))

  it.effect("an origin's row granted under the project's `*` is written; once the origin has a policy of its own it is stale", () =>
    Effect.gen(function*() {
      const projectId = yield* freshProject
      const sql = yield* SqlClient.SqlClient
      const origin = "https://api.example.com"
      yield* sql`INSERT INTO target_policies (id, project_id, origin, max_concurrent, created_at, updated_at)
        VALUES (${nextId()}, ${projectId}, '*', 10, now(), now())`
      const roundOf = (node: string) =>
        gateLeasesRound({
          node,
          gates: [{ projectId, tag: origin }],
          ttlMs: 2_000,
          graceMs: 0,
          decide: (read) => ({
            writes: { keep: [own(projectId, origin, read.gates[0]!.policy!.updatedAtMs)], drop: [], reclaim: [], purge: [], durable: false },
            result: read
          })
        })
      assert.deepStrictEqual((yield* roundOf("node-a")).stale, [])
      assert.deepStrictEqual(yield* leaseRows(projectId), [{ tag: origin, permits: 2 }])
      // the origin's own policy made between a round's read and its write: the read named `*`'s version
      const read = yield* roundOf("node-b")
      yield* sql`INSERT INTO target_policies (id, project_id, origin, max_concurrent, created_at, updated_at)
        VALUES (${nextId()}, ${projectId}, ${origin}, 3, now(), now())`
      const { stale } = yield* gateLeasesRound({
        node: "node-c",
        gates: [{ projectId, tag: origin }],
        ttlMs: 2_000,
        graceMs: 0,
        decide: () => ({
          writes: {
            keep: [own(projectId, origin, read.result.gates[0]!.policy!.updatedAtMs)], drop: [], reclaim: [], purge: [], durable: false
          },
          result: null
        })
      })
      assert.deepStrictEqual(stale, [{ projectId, tag: origin }])
      assert.deepStrictEqual((yield* leaseRows(projectId)).length, 2)
    }))

  it.effect("the locks are held from the read to the write: another session cannot take them meanwhile", () =>
    Effect.gen(function*() {
      const projectId = yield* freshProject
      const sql = yield* SqlClient.SqlClient
      const first = yield* gateLeasesRound({
        node: "node-a",
        gates: [{ projectId, tag: "billing" }],
        ttlMs: 2_000,
        graceMs: 0,
        decide: (read) => ({
          writes: { keep: [own(projectId, "billing", read.gates[0]!.policy!.updatedAtMs)], drop: [], reclaim: [], purge: [], durable: false },
          result: read
        })
      }).pipe(Effect.andThen(() => lockFree(projectId, "billing")))
      assert.isTrue(first)
      // a session holding the lock blocks the round's read until it lets go
      const holder = yield* Effect.scoped(Effect.gen(function*() {
        const session = yield* sql.reserve
        yield* session.execute("SELECT pg_advisory_lock($1, hashtext($2))", [GATE_LOCK_NAMESPACE, `${projectId}/billing`], undefined)
        const round = yield* Effect.forkChild(gateLeasesRound({
          node: "node-b",
          gates: [{ projectId, tag: "billing" }],
          ttlMs: 2_000,
          graceMs: 0,
          decide: (read) => ({ writes: { keep: [], drop: [], reclaim: [], purge: [], durable: false }, result: read })
        }))
        yield* Effect.sleep("200 millis")
        const doneWhileHeld = round.pollUnsafe() !== undefined
        yield* session.execute("SELECT pg_advisory_unlock($1, hashtext($2))", [GATE_LOCK_NAMESPACE, `${projectId}/billing`], undefined)
        const { result } = yield* Fiber.join(round)
        return { doneWhileHeld, leases: result.gates[0]!.leases.map((lease) => [lease.node, lease.permits]) }
      }))
      assert.isFalse(holder.doneWhileHeld)
      // it read what the first round committed
      assert.deepStrictEqual(holder.leases, [["node-a", 2]])
    }))

  it.effect("a round that fails after its read gives the locks back", () =>
    Effect.gen(function*() {
      const projectId = yield* freshProject
      const failed = yield* gateLeasesRound({
        node: "node-a",
        gates: [{ projectId, tag: "billing" }],
        ttlMs: 2_000,
        graceMs: 0,
        decide: (): never => {
          throw new Error("the decision failed")
        }
      }).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(failed))
      assert.isTrue(yield* lockFree(projectId, "billing"))
    }))

  it.effect("the round's read counts a gate's backlog with store/gates.ts's WAITING_SQL (migration 19 inlines its text)", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ src: string }>`SELECT prosrc AS src FROM pg_proc WHERE proname = 'gate_round_read'`
      assert.strictEqual(rows.length, 1)
      // the function as the migrations left it: a change of WAITING_SQL needs a migration changing it too
      assert.include(rows[0]!.src, `AND ${WAITING_SQL} AND t.claimed_by IS NULL`)
    }))
})
