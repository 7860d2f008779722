// The circuit breakers' shared state in PostgreSQL (store/targetCircuits.ts): one row per project
// and origin, made by the first failure; outcomes settled under its lock with the database's clock;
// an opening written with its cooldown and reason, announced to every node and put in the project's
// failure alerts; the single probe claimed by one node, refused to a second while its holder lives,
// taken over once the holder is gone from the database's sessions; a stopping node gives its probes
// back. The lease round of an origin's gate reads the target policy (its own, else `*`) and the circuit.
import { assert, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { circuitPhase } from "../../src/domain/gates/circuitBreaker.ts"
import { gateLeasesRound } from "../../src/store/gateLeases.ts"
import { nodeApplicationName } from "../../src/store/nodePresence.ts"
import { TARGET_CIRCUITS_CHANNEL } from "../../src/store/notifications.ts"
import {
  type CircuitNotice, targetCircuitsClaimProbe, targetCircuitsLeave, targetCircuitsReleaseProbe, targetCircuitsSettle
} from "../../src/store/targetCircuits.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, nextId } from "../support/fixtures.ts"

const ORIGIN = "https://api.example.com"
const SETTINGS = { failures: 2, cooldownSeconds: 1 }

const failure = (reason = "HTTP 500") => ({ _tag: "Failure" as const, atMs: Date.now(), reason })

const freshProject = Effect.gen(function*() {
  const projectId = nextId()
  yield* ensureProject(projectId)
  return projectId
})

const circuitRow = (projectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ failures: number; open_until: Date | null; reason: string | null; cooldown_ms: number; probe_node: string | null }>`
      SELECT failures, open_until, reason, cooldown_ms, probe_node FROM target_circuits WHERE project_id = ${projectId} AND origin = ${ORIGIN}`)
    .pipe(Effect.map((rows) => rows[0]))

/** Opens the origin's circuit and waits out its cooldown: probing. */
const probing = (projectId: string) =>
  Effect.gen(function*() {
    yield* targetCircuitsSettle({ projectId, origin: ORIGIN, settings: SETTINGS, events: [failure(), failure()], triggerId: nextId() })
    yield* Effect.sleep("1100 millis")
  })

layer(TestDatabase, { timeout: "60 seconds", excludeTestServices: true })("circuit breakers in PostgreSQL", (it) => {
  it.effect("an answer on a closed origin writes nothing; failures make the row, the second opens it for the cooldown, announced", () =>
    Effect.scoped(Effect.gen(function*() {
      const projectId = yield* freshProject
      const pg = yield* PgClient.PgClient
      const notices = yield* pg.listen(TARGET_CIRCUITS_CHANNEL)
      yield* targetCircuitsSettle({ projectId, origin: ORIGIN, settings: SETTINGS, events: [{ _tag: "Answer", atMs: Date.now() }], triggerId: nextId() })
      assert.isUndefined(yield* circuitRow(projectId))

      const first = yield* targetCircuitsSettle({ projectId, origin: ORIGIN, settings: SETTINGS, events: [failure()], triggerId: nextId() })
      assert.deepStrictEqual([first.state.failures, first.opened], [1, false])
      const second = yield* targetCircuitsSettle({ projectId, origin: ORIGIN, settings: SETTINGS, events: [failure("timeout")], triggerId: nextId() })
      assert.isTrue(second.opened)
      assert.strictEqual(circuitPhase(second.state, second.nowMs), "open")
      assert.strictEqual(second.state.openUntilMs! - second.nowMs, 1_000)
      const row = (yield* circuitRow(projectId))!
      assert.deepStrictEqual([row.reason, row.cooldown_ms, row.open_until?.getTime()], ["timeout", 1_000, second.state.openUntilMs])
      const heard: Array<CircuitNotice> = []
      while (heard.length < 2) heard.push(JSON.parse((yield* Queue.take(notices)).payload) as CircuitNotice)
      assert.deepStrictEqual(heard.map((notice) => [notice.projectId, notice.origin, notice.state.failures]), [[projectId, ORIGIN, 1], [projectId, ORIGIN, 0]])
      assert.strictEqual(heard[1]!.state.openUntilMs, second.state.openUntilMs)
    })))

  it.effect("an opening goes to the alerts outbox of a project with an alert target", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* freshProject
      yield* sql`INSERT INTO project_alerts (project_id, webhook_url, updated_at) VALUES (${projectId}, 'http://127.0.0.1:9/alerts', now())`
      const triggerId = nextId()
      yield* targetCircuitsSettle({ projectId, origin: ORIGIN, settings: SETTINGS, events: [failure(), failure("HTTP 502")], triggerId })
      const rows = yield* sql<{ kind: string; url: string; trigger_id: string; error: string }>`
        SELECT kind, url, trigger_id, error FROM alert_outbox WHERE project_id = ${projectId}`
      assert.deepStrictEqual(rows, [{ kind: "circuit_open", url: ORIGIN, trigger_id: triggerId, error: "circuit opened for 1 s after HTTP 502" }])
    }))

  it.effect("one probe: granted to one node, refused to another while it lives, given back; its failure reopens for twice as long", () =>
    Effect.gen(function*() {
      const projectId = yield* freshProject
      yield* probing(projectId)
      // node-b is alive: a session of the database carries its name
      yield* Effect.scoped(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const session = yield* sql.reserve
        yield* session.executeRaw(`SET application_name = '${nodeApplicationName("node-b")}'`, [])
        const b = yield* targetCircuitsClaimProbe({ projectId, origin: ORIGIN, node: "node-b", graceMs: 0 })
        assert.isTrue(b.granted)
        const a = yield* targetCircuitsClaimProbe({ projectId, origin: ORIGIN, node: "node-a", graceMs: 0 })
        assert.isFalse(a.granted)
        assert.strictEqual((yield* circuitRow(projectId))!.probe_node, "node-b")
        yield* targetCircuitsReleaseProbe({ projectId, origin: ORIGIN, node: "node-b" })
        assert.isNull((yield* circuitRow(projectId))!.probe_node)
      }))
      assert.isTrue((yield* targetCircuitsClaimProbe({ projectId, origin: ORIGIN, node: "node-a", graceMs: 0 })).granted)
      const reopened = yield* targetCircuitsSettle({
        projectId, origin: ORIGIN, settings: SETTINGS, events: [{ _tag: "Probed", node: "node-a", verdict: "failure", reason: "HTTP 500" }],
        triggerId: nextId()
      })
      assert.isTrue(reopened.opened)
      assert.deepStrictEqual([reopened.state.cooldownMs, reopened.state.openUntilMs! - reopened.nowMs, reopened.state.probe], [2_000, 2_000, null])
    }))

  it.effect("a probe whose node is gone (no session) is taken over; its outcome then changes nothing, the new holder's closes it", () =>
    Effect.gen(function*() {
      const projectId = yield* freshProject
      yield* probing(projectId)
      assert.isTrue((yield* targetCircuitsClaimProbe({ projectId, origin: ORIGIN, node: "node-gone", graceMs: 0 })).granted)
      // within the database's restart grace nobody is taken for gone
      assert.isFalse((yield* targetCircuitsClaimProbe({ projectId, origin: ORIGIN, node: "node-a", graceMs: 3_600_000_000 })).granted)
      assert.isTrue((yield* targetCircuitsClaimProbe({ projectId, origin: ORIGIN, node: "node-a", graceMs: 0 })).granted)
      const late = yield* targetCircuitsSettle({
        projectId, origin: ORIGIN, settings: SETTINGS, events: [{ _tag: "Probed", node: "node-gone", verdict: "failure", reason: "x" }],
        triggerId: nextId()
      })
      assert.isFalse(late.opened)
      const closed = yield* targetCircuitsSettle({
        projectId, origin: ORIGIN, settings: SETTINGS, events: [{ _tag: "Probed", node: "node-a", verdict: "answer", reason: "" }],
        triggerId: nextId()
      })
      assert.strictEqual(circuitPhase(closed.state, closed.nowMs), "closed")
      const row = (yield* circuitRow(projectId))!
      assert.deepStrictEqual([row.failures, row.open_until, row.cooldown_ms, row.probe_node], [0, null, 0, null])
    }))

  it.effect("a stopping node gives its probes back", () =>
    Effect.gen(function*() {
      const projectId = yield* freshProject
      yield* probing(projectId)
      yield* targetCircuitsClaimProbe({ projectId, origin: ORIGIN, node: "node-stopping", graceMs: 0 })
      yield* targetCircuitsLeave("node-stopping")
      assert.isNull((yield* circuitRow(projectId))!.probe_node)
    }))

  it.effect("an origin's lease round reads its own target policy, else *, and its circuit; a tag's reads the tag policy", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const projectId = yield* freshProject
      const other = "https://other.example.com"
      yield* sql`INSERT INTO target_policies (id, project_id, origin, max_concurrent, circuit_failures, circuit_cooldown_seconds, created_at, updated_at)
        VALUES (${nextId()}, ${projectId}, '*', 10, NULL, NULL, now(), now()),
          (${nextId()}, ${projectId}, ${ORIGIN}, 3, 2, 1, now(), now())`
      yield* sql`INSERT INTO tag_policies (id, project_id, tag, max_concurrent, created_at, updated_at)
        VALUES (${nextId()}, ${projectId}, 'billing', 7, now(), now())`
      yield* targetCircuitsSettle({ projectId, origin: ORIGIN, settings: SETTINGS, events: [failure()], triggerId: nextId() })
      const { result: read } = yield* gateLeasesRound({
        node: "node-a",
        gates: [{ projectId, tag: ORIGIN }, { projectId, tag: other }, { projectId, tag: "billing" }, { projectId, tag: "plain" }],
        ttlMs: 2_000,
        graceMs: 0,
        decide: (read) => ({ writes: { keep: [], drop: [], reclaim: [], purge: [], durable: false }, result: read })
      })
      const byTag = new Map(read.gates.map((gate) => [gate.tag, gate]))
      assert.deepStrictEqual(byTag.get(ORIGIN)!.policy?.circuitBreaker, { failures: 2, cooldownSeconds: 1 })
      assert.strictEqual(byTag.get(ORIGIN)!.policy?.maxConcurrent, 3)
      assert.deepStrictEqual([byTag.get(ORIGIN)!.circuit?.state.failures, byTag.get(ORIGIN)!.circuit?.version], [1, 1])
      assert.deepStrictEqual([byTag.get(other)!.policy?.maxConcurrent, byTag.get(other)!.policy?.circuitBreaker, byTag.get(other)!.circuit],
        [10, null, null])
      assert.deepStrictEqual([byTag.get("billing")!.policy?.maxConcurrent, byTag.get("billing")!.circuit], [7, null])
      assert.isNull(byTag.get("plain")!.policy)
    }))
})


