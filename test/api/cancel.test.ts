// DELETE /cancel against the real service (docs/scheduling.md "DELETE /cancel", its checks in order):
// one table row per check in the documented order (identifiers before the key), every trigger state by
// id and by custom key, generators, and that a cancelled trigger never fires. States the API cannot
// reach directly are set with SQL.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { NodeIdentity } from "../../src/cluster/node.ts"
import { insertTrigger, projectIdOfKey, setStatus, statusOf, triggerRow } from "../support/fixtures.ts"
import { cancel, newKey, scheduled, TestServer, testServerLayer } from "../support/server.ts"
import { target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"
import { assertError, assertNoContent } from "../support/assertions.ts"

const FAR = "2099-01-01T00:00:00Z"
const URL_OK = "http://127.0.0.1:9/hook"
const UNKNOWN_KEY = "ttr_" + "0".repeat(48)
const UNKNOWN_ID = "01890000-0000-7000-8000-000000000000"

/** A one-shot trigger created through /schedule; its id. */
const scheduleOne = (key: string, extra: Record<string, string> = {}) =>
  Effect.map(
    scheduled({ "ttr-api-key": key, "ttr-url": URL_OK, "ttr-scheduled-at": FAR, ...extra }),
    (body) => body.triggerId
  )

/** The trigger's status and due time. */
const stateOf = (id: string) => Effect.map(triggerRow(id), ({ due_at, status }) => ({ status, due_at }))

const NEITHER = "Must provide either ttr-trigger-id or ttr-custom-key header"
const BOTH = "Provide either ttr-trigger-id or ttr-custom-key, not both"

interface CheckRow {
  readonly name: string
  readonly request: Effect.Effect<Record<string, string>, never, TestServer | SqlClient.SqlClient | NodeIdentity>
  readonly status: number
  readonly message: string | null
}

const withKey = (f: (key: string) => Record<string, string>): CheckRow["request"] => Effect.map(newKey(), f)

/** A trigger in `status` (via /schedule, then SQL); its key and id. */
const triggerIn = (status: string, extra: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const key = yield* newKey()
    const id = yield* scheduleOne(key, extra)
    if (status !== "registered") yield* setStatus(id, status)
    return { key, id }
  })

const generatorFixture = (status: "active" | "cancelled", customKey?: string) =>
  Effect.gen(function*() {
    const key = yield* newKey()
    const projectId = yield* projectIdOfKey(key)
    const id = yield* insertTrigger({ projectId, kind: "generator", status, cronExpr: "0 0 * * *", cronTz: "UTC", customKey: customKey ?? null })
    return { key, projectId, id }
  }).pipe(Effect.orDie)

const CHECKS: ReadonlyArray<CheckRow> = [
  // 1. key missing: empty 400, even with both identifiers or none
  { name: "key missing, both identifiers", request: Effect.succeed({ "ttr-trigger-id": UNKNOWN_ID, "ttr-custom-key": "k" }), status: 400, message: null },
  { name: "key missing, no identifier", request: Effect.succeed({}), status: 400, message: null },
  { name: "key missing, Bearer sent instead", request: withKey((key) => ({ authorization: `Bearer ${key}`, "ttr-trigger-id": UNKNOWN_ID })), status: 400, message: null },
  // 2. neither identifier, or an empty one (checked before the key)
  { name: "no identifier", request: withKey((key) => ({ "ttr-api-key": key })), status: 400, message: NEITHER },
  { name: "no identifier, unknown key", request: Effect.succeed({ "ttr-api-key": UNKNOWN_KEY }), status: 400, message: NEITHER },
  { name: "no identifier, empty key", request: Effect.succeed({ "ttr-api-key": "" }), status: 400, message: NEITHER },
  { name: "empty trigger id", request: withKey((key) => ({ "ttr-api-key": key, "ttr-trigger-id": "" })), status: 400, message: NEITHER },
  { name: "empty custom key", request: Effect.succeed({ "ttr-api-key": UNKNOWN_KEY, "ttr-custom-key": "" }), status: 400, message: NEITHER },
  // 3. both identifiers (before the key)
  { name: "both identifiers", request: withKey((key) => ({ "ttr-api-key": key, "ttr-trigger-id": UNKNOWN_ID, "ttr-custom-key": "k" })), status: 400, message: BOTH },
  { name: "both identifiers, unknown key", request: Effect.succeed({ "ttr-api-key": UNKNOWN_KEY, "ttr-trigger-id": UNKNOWN_ID, "ttr-custom-key": "k" }), status: 400, message: BOTH },
  // 4. key empty or unknown
  { name: "empty key", request: Effect.succeed({ "ttr-api-key": "", "ttr-trigger-id": UNKNOWN_ID }), status: 401, message: "Invalid api key" },
  { name: "unknown key", request: Effect.succeed({ "ttr-api-key": UNKNOWN_KEY, "ttr-custom-key": "k" }), status: 401, message: "Invalid api key" },
  {
    name: "unknown key with a real trigger id",
    request: Effect.map(triggerIn("registered"), ({ id }) => ({ "ttr-api-key": UNKNOWN_KEY, "ttr-trigger-id": id })),
    status: 401,
    message: "Invalid api key"
  },
  // 5. Generator already cancelled (by id only)
  {
    name: "a cancelled generator by id",
    request: Effect.map(generatorFixture("cancelled"), ({ key, id }) => ({ "ttr-api-key": key, "ttr-trigger-id": id })),
    status: 410,
    message: "Generator already cancelled"
  },
  {
    name: "a cancelled generator by custom key",
    request: Effect.map(generatorFixture("cancelled", "gen-key"), ({ key }) => ({ "ttr-api-key": key, "ttr-custom-key": "gen-key" })),
    status: 404,
    message: "Job not found"
  },
  // 6. Job not found
  { name: "unknown id", request: withKey((key) => ({ "ttr-api-key": key, "ttr-trigger-id": UNKNOWN_ID })), status: 404, message: "Job not found" },
  { name: "malformed id", request: withKey((key) => ({ "ttr-api-key": key, "ttr-trigger-id": "not-a-uuid" })), status: 404, message: "Job not found" },
  { name: "unknown custom key", request: withKey((key) => ({ "ttr-api-key": key, "ttr-custom-key": "nobody" })), status: 404, message: "Job not found" },
  {
    name: "another project's trigger id",
    request: Effect.gen(function*() {
      const { id } = yield* triggerIn("registered")
      return { "ttr-api-key": yield* newKey(), "ttr-trigger-id": id }
    }),
    status: 404,
    message: "Job not found"
  },
  {
    name: "another project's custom key",
    request: Effect.gen(function*() {
      yield* triggerIn("registered", { "ttr-custom-key": "theirs" })
      return { "ttr-api-key": yield* newKey(), "ttr-custom-key": "theirs" }
    }),
    status: 404,
    message: "Job not found"
  },
  {
    name: "a cancelled one-shot by custom key",
    request: Effect.map(triggerIn("cancelled", { "ttr-custom-key": "gone" }), ({ key }) => ({ "ttr-api-key": key, "ttr-custom-key": "gone" })),
    status: 404,
    message: "Job not found"
  },
  // 7. Job is no longer cancellable
  ...(["queued", "running", "completed", "cancelled"] as const).map((status): CheckRow => ({
    name: `a ${status} one-shot by id`,
    request: Effect.map(triggerIn(status), ({ key, id }) => ({ "ttr-api-key": key, "ttr-trigger-id": id })),
    status: 410,
    message: `Job is no longer cancellable (status=${status})`
  })),
  ...(["queued", "running", "completed"] as const).map((status): CheckRow => ({
    name: `a ${status} one-shot by custom key`,
    request: Effect.map(triggerIn(status, { "ttr-custom-key": `k-${status}` }), ({ key }) => ({ "ttr-api-key": key, "ttr-custom-key": `k-${status}` })),
    status: 410,
    message: `Job is no longer cancellable (status=${status})`
  }))
]

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("DELETE /cancel", (it) => {
  describe("checks, in order", () => {
    for (const row of CHECKS) {
      it.effect(`${row.name} → ${row.status} ${row.message ?? "(empty)"}`, () =>
        Effect.gen(function*() {
          assertError(yield* cancel(yield* row.request), row.status, row.message)
        }))
    }
  })

  describe("only DELETE is accepted", () => {
    for (const method of ["POST", "GET", "PUT", "PATCH"]) {
      it.effect(`${method} /cancel → 404 empty, the trigger stays`, () =>
        Effect.gen(function*() {
          const { key, id } = yield* triggerIn("registered")
          assertError(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }, method), 404, null)
          assert.strictEqual(yield* statusOf(id), "registered")
        }))
    }
  })

  describe("cancellable states → 204 empty, status cancelled", () => {
    for (const status of ["registered", "skipped", "retrying"] as const) {
      it.effect(`${status} by id`, () =>
        Effect.gen(function*() {
          const { key, id } = yield* triggerIn(status)
          assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }))
          assert.deepStrictEqual(yield* stateOf(id), { status: "cancelled", due_at: null })
          // a second cancel by id: 410 (status=cancelled)
          assertError(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }), 410, "Job is no longer cancellable (status=cancelled)")
        }))
      it.effect(`${status} by custom key`, () =>
        Effect.gen(function*() {
          const { key, id } = yield* triggerIn(status, { "ttr-custom-key": "mine" })
          assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-custom-key": "mine" }))
          assert.deepStrictEqual(yield* stateOf(id), { status: "cancelled", due_at: null })
          // a second cancel by key: nothing uncancelled carries the key any more
          assertError(yield* cancel({ "ttr-api-key": key, "ttr-custom-key": "mine" }), 404, "Job not found")
        }))
    }

    it.effect("a skipped trigger created through /schedule (past date) is cancellable", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const id = yield* scheduleOne(key, { "ttr-scheduled-at": "2001-01-01T00:00:00Z" })
        assert.strictEqual(yield* statusOf(id), "skipped")
        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }))
        assert.strictEqual(yield* statusOf(id), "cancelled")
      }))

    it.effect("upper-case id is the same id", () =>
      Effect.gen(function*() {
        const { key, id } = yield* triggerIn("registered")
        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id.toUpperCase() }))
        assert.strictEqual(yield* statusOf(id), "cancelled")
      }))

    it.effect("by custom key, the pending trigger is cancelled even when a completed one had the key before", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const old = yield* scheduleOne(key, { "ttr-custom-key": "again" })
        yield* setStatus(old, "completed")
        const current = yield* scheduleOne(key, { "ttr-custom-key": "again" })
        assert.notStrictEqual(current, old)
        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-custom-key": "again" }))
        assert.strictEqual(yield* statusOf(current), "cancelled")
        assert.strictEqual(yield* statusOf(old), "completed")
        // now only the completed one carries the key: 410
        assertError(yield* cancel({ "ttr-api-key": key, "ttr-custom-key": "again" }), 410, "Job is no longer cancellable (status=completed)")
      }))

    it.effect("cancel uses no quota and never answers 402", () =>
      Effect.gen(function*() {
        const key = yield* newKey(1)
        const id = yield* scheduleOne(key)
        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }))
        const sql = yield* SqlClient.SqlClient
        const used = yield* sql<{ used: string }>`SELECT used::text FROM quota_usage WHERE project_id = ${yield* projectIdOfKey(key)}`
        assert.deepStrictEqual(used.map((r) => Number(r.used)), [1])
      }))
  })

  describe("generators", () => {
    it.effect("an active generator by id → 204; it and its upcoming instance are cancelled, a past instance stays", () =>
      Effect.gen(function*() {
        const { key, projectId, id } = yield* generatorFixture("active")
        const upcoming = yield* insertTrigger({ projectId, generatorId: id, dueAt: new Date(Date.UTC(2099, 0, 1)) })
        const past = yield* insertTrigger({ projectId, generatorId: id, status: "completed", scheduledAt: new Date(Date.UTC(2020, 0, 1)) })
        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }))
        assert.strictEqual(yield* statusOf(id), "cancelled")
        assert.strictEqual(yield* statusOf(upcoming), "cancelled")
        assert.strictEqual(yield* statusOf(past), "completed")
        assertError(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }), 410, "Generator already cancelled")
      }))

    it.effect("by custom key an active generator comes first", () =>
      Effect.gen(function*() {
        const { key, id } = yield* generatorFixture("active", "shared-key")
        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-custom-key": "shared-key" }))
        assert.strictEqual(yield* statusOf(id), "cancelled")
      }))
  })

  it.effect("a cancelled trigger never fires (a sentinel scheduled just after it does)", () =>
    Effect.gen(function*() {
      const key = yield* newKey()
      const t = yield* target
      const at = (ms: number) => new Date(ms).toISOString()
      const base = Date.now()
      const doomed = yield* scheduleOne(key, { "ttr-url": `${t.origin}/doomed`, "ttr-scheduled-at": at(base + 1_500) })
      const byKey = yield* scheduleOne(key, { "ttr-url": `${t.origin}/doomed-key`, "ttr-scheduled-at": at(base + 1_500), "ttr-custom-key": "doomed" })
      yield* scheduleOne(key, { "ttr-url": `${t.origin}/sentinel`, "ttr-scheduled-at": at(base + 1_800) })
      assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": doomed }))
      assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-custom-key": "doomed" }))
      yield* pollUntil("the sentinel", Effect.sync(() => (t.at("/sentinel").length > 0 ? true : undefined)))
      // no wait for stragglers: only a claimed trigger is sent, and a claimed one is never cancelled
      // again; still cancelled (below) once the later sentinel was sent means never claimed, never sent
      assert.strictEqual(t.at("/doomed").length, 0)
      assert.strictEqual(t.at("/doomed-key").length, 0)
      assert.strictEqual(yield* statusOf(doomed), "cancelled")
      assert.strictEqual(yield* statusOf(byKey), "cancelled")
    }))

  it.effect("a delivered trigger → 410 (status=completed)", () =>
    Effect.gen(function*() {
      const key = yield* newKey()
      const t = yield* target
      const id = yield* scheduleOne(key, { "ttr-url": `${t.origin}/done`, "ttr-scheduled-at": "now", "ttr-custom-key": "delivered" })
      yield* pollUntil("completed", Effect.map(statusOf(id), (status) => (status === "completed" ? true : undefined)))
      assert.strictEqual(t.at("/done").length, 1)
      assertError(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }), 410, "Job is no longer cancellable (status=completed)")
      assertError(yield* cancel({ "ttr-api-key": key, "ttr-custom-key": "delivered" }), 410, "Job is no longer cancellable (status=completed)")
    }))
})
