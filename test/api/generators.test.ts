// Recurring triggers (generators) through /schedule and /cancel against the real service
// (docs/scheduling.md "Editing", "Errors", "DELETE /cancel"; docs/cron.md; docs/reading.md "A
// trigger"): the cron check rows with exact bodies, quota, what a create or an edit stores (generator
// row and its first instance), kind switches under one custom key, the read view, stable `H`, and
// cancelling generators and instances. States the API cannot reach directly (queued, retrying,
// completed instances) are set with SQL.
import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { SqlClient } from "effect/sql"
import { nextFireAfter, parseCronValue } from "../../src/domain/cron/index.ts"
import { nextInstanceAfter } from "../../src/domain/generator.ts"
import { NodeIdentity } from "../../src/cluster/node.ts"
import { instancesInsert } from "../../src/store/generators.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { insertTrigger, instancesOf, projectIdOfKey, quotaUsed, setStatus, triggerRow, type TriggerRow } from "../support/fixtures.ts"
import { cancel, type Headers, newKey, schedule, type ScheduleBody, scheduled, TestServer, testServerLayer } from "../support/server.ts"
import { waitUntil } from "../support/wait.ts"
import { assertError, assertNoContent } from "../support/assertions.ts"

const FAR = "2099-01-01T00:00:00Z"
/** A daily time about 12 hours away, so no instance of it comes due while the file runs. */
const DAILY = `cron(0 ${(new Date().getUTCHours() + 12) % 24} * * *)`
/** The discard port: the few instances that do come due here (`*\/10` seconds) are refused at once. */
const URL_OK = "http://127.0.0.1:9/hook"
const UNKNOWN_KEY = "ttr_" + "0".repeat(48)
const UNKNOWN_ID = "01890000-0000-7000-8000-000000000000"
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** A valid cron request for `key`, with overrides (undefined removes a header). */
const valid = (key: string, overrides: Record<string, string | undefined> = {}): Record<string, string> => {
  const all: Record<string, string | undefined> = { "ttr-api-key": key, "ttr-url": URL_OK, "ttr-scheduled-at": DAILY, ...overrides }
  return Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== undefined))
}

const getJob = (key: string, id: string) =>
  Effect.gen(function*() {
    const server = yield* TestServer
    return yield* server.call("GET", `/jobs/${id}`, { headers: { "ttr-api-key": key } })
  })

/** The single registered (upcoming) instance of a generator. */
const upcomingOf = (generatorId: string) =>
  Effect.map(instancesOf(generatorId), (rows) => {
    const upcoming = rows.filter((row) => row.status === "registered")
    assert.strictEqual(upcoming.length, 1, `one upcoming instance of ${generatorId}`)
    return upcoming[0]!
  })

/**
 * Asserts that `scheduledAt` is the first fire time of `value` strictly after the request moment,
 * which lies between `beforeMs` and `afterMs` (`H` seeded with `seed`, as the service does).
 */
const assertNextFire = (scheduledAt: string, value: string, beforeMs: number, afterMs: number, seed?: string) => {
  const parsed = parseCronValue(value, seed === undefined ? undefined : { hashSeed: seed })
  assert.strictEqual(parsed._tag, "Ok", value)
  if (parsed._tag !== "Ok") return
  const candidates = [nextFireAfter(parsed.schedule, beforeMs), nextFireAfter(parsed.schedule, afterMs)]
    .map((ms) => new Date(ms!).toISOString())
  assert.include(candidates, scheduledAt, `next fire of ${value}`)
}

/** An instance of a generator inserted in `status` (claimed by this node when queued), atomically. */
const instanceIn = (projectId: string, generatorId: string, day: number, status: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(Effect.gen(function*() {
      const id = yield* insertTrigger({ projectId, generatorId, status, scheduledAt: new Date(Date.UTC(2020, 0, day)) })
      yield* setStatus(id, status)
      return id
    }))
  }).pipe(Effect.orDie)

/**
 * Sends `request` (an edit or a cancel) at the materializer's moment: the upcoming instance
 * `claimed` was just claimed (queued) and the next one (stored schedule and data) has been inserted
 * by the materializer's own statement, uncommitted. The request is sent once that insert is done;
 * the transaction commits once the request waits on its locks (or has been answered). Returns
 * what the request returned.
 */
const whileMaterializerInsertHeldOpen = <A>(id: string, cronExpr: string, claimed: TriggerRow, request: Effect.Effect<A, never, TestServer>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const node = (yield* NodeIdentity).id
    /** The backend of the materializer's transaction, once its insert is done. */
    const inserted = yield* Deferred.make<number>()
    const commit = yield* Deferred.make<void>()
    const materializer = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
      yield* sql`UPDATE triggers SET status = 'queued', due_at = NULL, claimed_by = ${node} WHERE id = ${claimed.id}`
      const nowMs = Date.now()
      const next = nextInstanceAfter({ id, cronExpr, cronTz: "UTC" }, claimed.scheduled_at!.getTime())!
      const created = yield* instancesInsert({ instances: [{ generatorId: id, instanceId: uuidv7(nowMs), scheduledAtMs: next }], nowMs })
      assert.strictEqual(created.length, 1)
      const [backend] = yield* sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`
      yield* Deferred.succeed(inserted, backend!.pid)
      yield* Deferred.await(commit)
    })))
    // a materializer that fails before its insert is done fails the test here instead of leaving it waiting
    const pid = yield* Effect.raceFirst(Deferred.await(inserted), Effect.andThen(Fiber.join(materializer), Effect.never))
    const sent = yield* Effect.forkChild(request)
    yield* waitUntil("the request to wait on the materializer's locks", Effect.gen(function*() {
      if (sent.pollUnsafe() !== undefined) return true
      const blocked = yield* sql`SELECT 1 FROM pg_stat_activity WHERE ${pid}::int = ANY(pg_blocking_pids(pid))`
      return blocked.length > 0
    }))
    yield* Deferred.succeed(commit, undefined)
    yield* Fiber.join(materializer)
    return yield* Fiber.join(sent)
  }).pipe(Effect.orDie)

/** A generator created through /schedule; its key, id and response. */
const generator = (overrides: Record<string, string | undefined> = {}, monthlyQuota?: number) =>
  Effect.gen(function*() {
    const key = yield* newKey(monthlyQuota)
    const body = yield* scheduled(valid(key, overrides))
    assert.strictEqual(body.kind, "generator")
    return { key, id: body.triggerId, body }
  })

interface CheckRow {
  readonly name: string
  readonly request: Effect.Effect<Headers, never, TestServer | SqlClient.SqlClient | NodeIdentity>
  readonly status: number
  readonly message: string
}

const withKey = (f: (key: string) => Headers, monthlyQuota?: number): CheckRow["request"] => Effect.map(newKey(monthlyQuota), f)

const badCron = (value: string, message: string): CheckRow => ({
  name: value,
  request: withKey((key) => valid(key, { "ttr-scheduled-at": value })),
  status: 400,
  message
})

const CHECKS: ReadonlyArray<CheckRow> = [
  // Invalid cron expression (after the key check, before the quota check)
  badCron("cron(61 * * * *)", "Invalid cron expression: minute value 61 out of range 0-59"),
  badCron("cron(0 0 * * MON-FRY)", "Invalid cron expression: day-of-week value \"FRY\" is not valid (use 0-7 or SUN-SAT)"),
  badCron("cron(* * * *)", "Invalid cron expression: expected 5 fields (minute hour day-of-month month day-of-week) or 6 with a leading second, got 4"),
  badCron("cron(0 0 0 * * * 2030)", "Invalid cron expression: expected 5 or 6 fields, got 7 (a year field is not supported)"),
  badCron("cron(@reboot)", "Invalid cron expression: @reboot is not supported"),
  badCron("cron(0 0 * * *, Mars/Olympus_Mons)", "Invalid cron expression: unknown time zone \"Mars/Olympus_Mons\""),
  badCron("cron(0 0 30 2 *)", "Invalid cron expression: day-of-month 30 does not exist in FEB"),
  badCron("cron(@midnight)", "Invalid cron expression: @midnight is not supported"),
  badCron("cron(0 0 31 2,4 *)", "Invalid cron expression: day-of-month 31 does not exist in any of FEB, APR"),
  badCron("cron(0 0 * * 1, 5)", "Invalid cron expression: unknown time zone \"5\" (lists take no spaces after their commas)"),
  badCron("cron(0 0 * * * | add 1h)", "Invalid cron expression: expected 5 or 6 fields, got 8 (a year field is not supported)"),
  // operations cannot follow cron(...): the value is read as a date
  badCron("cron(0 0 * * *) | add 1h", "Invalid date: cron(0 0 * * *) | add 1h"),
  // `cron` is lowercase and directly followed by `(`: otherwise a date
  badCron("CRON(0 0 * * *)", "Invalid date: CRON(0 0 * * *)"),
  badCron("Cron(0 0 * * *)", "Invalid date: Cron(0 0 * * *)"),
  // order around the cron check
  { name: "bad cron with an unknown key → 401", request: Effect.succeed(valid(UNKNOWN_KEY, { "ttr-scheduled-at": "cron(61 * * * *)" })), status: 401, message: "Invalid api key" },
  { name: "bad cron with a relative URL → Invalid URL", request: withKey((key) => valid(key, { "ttr-url": "hooks", "ttr-scheduled-at": "cron(61 * * * *)" })), status: 400, message: "Invalid URL: hooks" },
  { name: "bad cron with a used-up quota → 400, not 402", request: withKey((key) => valid(key, { "ttr-scheduled-at": "cron(61 * * * *)" }), 0), status: 400, message: "Invalid cron expression: minute value 61 out of range 0-59" },
  { name: "valid cron, quota 0 → 402", request: withKey((key) => valid(key), 0), status: 402, message: "Monthly quota of 0 triggers exceeded" },
  { name: "valid cron, quota 0, unknown generator id → 402 before 404", request: withKey((key) => valid(key, { "ttr-trigger-id": UNKNOWN_ID }), 0), status: 402, message: "Monthly quota of 0 triggers exceeded" },
  // Generator not found (ttr-trigger-id with cron)
  { name: "unknown generator id", request: withKey((key) => valid(key, { "ttr-trigger-id": UNKNOWN_ID })), status: 404, message: "Generator not found" },
  { name: "malformed generator id", request: withKey((key) => valid(key, { "ttr-trigger-id": "not-a-uuid" })), status: 404, message: "Generator not found" },
  {
    name: "a one-shot's id with cron",
    request: Effect.gen(function*() {
      const key = yield* newKey()
      const oneShot = yield* scheduled(valid(key, { "ttr-scheduled-at": FAR }))
      return valid(key, { "ttr-trigger-id": oneShot.triggerId })
    }),
    status: 404,
    message: "Generator not found"
  },
  {
    name: "an instance's id with cron",
    request: Effect.gen(function*() {
      const { key, id } = yield* generator()
      const instance = yield* upcomingOf(id)
      return valid(key, { "ttr-trigger-id": instance.id })
    }),
    status: 404,
    message: "Generator not found"
  },
  {
    name: "another project's generator id",
    request: Effect.gen(function*() {
      const { id } = yield* generator()
      return valid(yield* newKey(), { "ttr-trigger-id": id })
    }),
    status: 404,
    message: "Generator not found"
  },
  {
    name: "unknown id with the custom key of a pending one-shot: with cron the id is always checked",
    request: Effect.gen(function*() {
      const key = yield* newKey()
      yield* scheduled(valid(key, { "ttr-scheduled-at": FAR, "ttr-custom-key": "k" }))
      return valid(key, { "ttr-custom-key": "k", "ttr-trigger-id": UNKNOWN_ID })
    }),
    status: 404,
    message: "Generator not found"
  },
  // Generator is no longer active
  {
    name: "a cancelled generator edited by id",
    request: Effect.gen(function*() {
      const { key, id } = yield* generator()
      assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }))
      return valid(key, { "ttr-trigger-id": id, "ttr-scheduled-at": "cron(0 12 * * *)" })
    }),
    status: 410,
    message: "Generator is no longer active"
  }
]

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("generators", (it) => {
  describe("/schedule cron checks, in order", () => {
    for (const row of CHECKS) {
      it.effect(`${row.name} → ${row.status} ${row.message}`, () =>
        Effect.gen(function*() {
          assertError(yield* schedule(yield* row.request), row.status, row.message)
        }))
    }

    it.effect("a 404 with cron leaves the pending one-shot owning the custom key untouched", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const oneShot = yield* scheduled(valid(key, { "ttr-scheduled-at": FAR, "ttr-custom-key": "keep" }))
        assertError(yield* schedule(valid(key, { "ttr-custom-key": "keep", "ttr-trigger-id": UNKNOWN_ID })), 404, "Generator not found")
        assert.strictEqual((yield* triggerRow(oneShot.triggerId)).status, "registered")
        const sql = yield* SqlClient.SqlClient
        const generators = yield* sql`SELECT id FROM triggers WHERE project_id = ${yield* projectIdOfKey(key)} AND kind = 'generator'`
        assert.strictEqual(generators.length, 0)
      }))

    it.effect("a 410 leaves the cancelled generator as it was, with no new instance", () =>
      Effect.gen(function*() {
        const { key, id } = yield* generator()
        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }))
        assertError(yield* schedule(valid(key, { "ttr-trigger-id": id, "ttr-url": "http://127.0.0.1:9/other" })), 410, "Generator is no longer active")
        const row = yield* triggerRow(id)
        assert.strictEqual(row.status, "cancelled")
        assert.strictEqual(row.url, URL_OK)
        assert.deepStrictEqual((yield* instancesOf(id)).map((i) => i.status), ["cancelled"])
      }))
  })

  describe("quota", () => {
    it.effect("one unit per cron call (edits, 404 and 410 included); 400 and /cancel cost nothing", () =>
      Effect.gen(function*() {
        const key = yield* newKey(5)
        assertError(yield* schedule(valid(key, { "ttr-scheduled-at": "cron(* * * *)" })), 400,
          "Invalid cron expression: expected 5 fields (minute hour day-of-month month day-of-week) or 6 with a leading second, got 4")
        assert.strictEqual(yield* quotaUsed(key), 0)
        const created = yield* scheduled(valid(key, { "ttr-custom-key": "q" }))
        assert.strictEqual(created.monthQuotaRemaining, 4)
        assert.strictEqual((yield* scheduled(valid(key, { "ttr-custom-key": "q" }))).monthQuotaRemaining, 3)
        assertError(yield* schedule(valid(key, { "ttr-trigger-id": UNKNOWN_ID })), 404, "Generator not found")
        assert.strictEqual(yield* quotaUsed(key), 3)
        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": created.triggerId }))
        assert.strictEqual(yield* quotaUsed(key), 3)
        assertError(yield* schedule(valid(key, { "ttr-trigger-id": created.triggerId })), 410, "Generator is no longer active")
        assert.strictEqual(yield* quotaUsed(key), 4)
        assert.strictEqual((yield* scheduled(valid(key))).monthQuotaRemaining, 0)
        assertError(yield* schedule(valid(key)), 402, "Monthly quota of 5 triggers exceeded")
        assert.strictEqual(yield* quotaUsed(key), 5)
      }))
  })

  describe("create", () => {
    it.effect("response: generator id, next matching time, schedule, generator; the first instance exists at once with a copy of the request", () =>
      Effect.gen(function*() {
        const key = yield* newKey(100)
        const value = "cron(30 9 * * MON-FRI, Europe/Paris)"
        const before = Date.now()
        const response = yield* schedule([
          ["ttr-api-key", key], ["ttr-url", "http://127.0.0.1:9/gen?x=1"], ["ttr-scheduled-at", value],
          ["ttr-tags", "alpha,beta"], ["ttr-title", "Nightly"], ["ttr-run-missed", "true"],
          ["ttr-retry-strategy", "fixed"], ["ttr-retry-max-attempts", "4"],
          ["x-extra", "one"], ["x-extra", "two"], ["authorization", "Bearer target"], ["content-type", "text/plain"]
        ], { method: "PUT", body: "payload" })
        const after = Date.now()
        assert.strictEqual(response.status, 200, response.text)
        assert.strictEqual(response.headers["content-type"], "application/json")
        const body = response.json() as ScheduleBody
        assert.deepStrictEqual(Object.keys(body).sort(), ["kind", "monthQuotaRemaining", "operation", "scheduledAt", "status", "triggerId"])
        assert.strictEqual(body.status, "active")
        assert.match(body.triggerId, UUID_V7)
        assert.strictEqual(body.kind, "generator")
        assert.strictEqual(body.operation, "schedule")
        assert.strictEqual(body.monthQuotaRemaining, 99)
        // run-missed has no effect: the first time is the next matching one, not now
        assertNextFire(body.scheduledAt, value, before, after)
        assert.isAbove(Date.parse(body.scheduledAt), after)

        const gen = yield* triggerRow(body.triggerId)
        assert.strictEqual(gen.kind, "generator")
        assert.strictEqual(gen.status, "active")
        assert.isNull(gen.generator_id)
        assert.strictEqual(gen.cron_expr, "30 9 * * MON-FRI")
        assert.strictEqual(gen.cron_tz, "Europe/Paris")
        // title has no effect on recurring triggers
        assert.isNull(gen.title)

        const instances = yield* instancesOf(body.triggerId)
        assert.strictEqual(instances.length, 1)
        const instance = instances[0]!
        assert.notStrictEqual(instance.id, body.triggerId)
        assert.match(instance.id, UUID_V7)
        assert.strictEqual(instance.kind, "job")
        assert.strictEqual(instance.generator_id, body.triggerId)
        assert.strictEqual(instance.status, "registered")
        assert.strictEqual(instance.scheduled_at?.toISOString(), body.scheduledAt)
        assert.strictEqual(instance.due_at?.toISOString(), body.scheduledAt)
        assert.strictEqual(instance.url, "http://127.0.0.1:9/gen?x=1")
        assert.strictEqual(instance.method, "PUT")
        assert.deepStrictEqual(
          instance.headers.map(([name, v]) => [name.toLowerCase(), v]),
          [["x-extra", "one"], ["x-extra", "two"], ["authorization", "Bearer target"]]
        )
        assert.strictEqual(Buffer.from(instance.body!).toString(), "payload")
        assert.strictEqual(instance.content_type, "text/plain")
        assert.deepStrictEqual([...instance.tags], ["alpha", "beta"])
        assert.deepStrictEqual(instance.retry, {
          strategy: "fixed", maxAttempts: 4, initialDelaySeconds: 30, maxDelaySeconds: null, jitter: false, retryOn: "5xx_and_network"
        })
        assert.deepStrictEqual(instance.retry, gen.retry)
        assert.isNull(instance.title)
        assert.isNull(instance.custom_key)
        assert.isNull(instance.cron_expr)
      }))

    const firstTimes: ReadonlyArray<string> = [
      "cron(*/10 * * * * *)",
      "cron(0 0 1 * *)",
      "cron(0 0 L * *)",
      "cron(0 12 * * 5L, America/New_York)",
      "cron(0 8 * * MON#2, Asia/Tokyo)",
      "cron( @weekly , UTC )",
      "cron(0 0 29 2 *)"
    ]
    for (const value of firstTimes) {
      it.effect(`${value}: scheduledAt and the first instance are its next fire time`, () =>
        Effect.gen(function*() {
          const key = yield* newKey()
          const before = Date.now()
          const body = yield* scheduled(valid(key, { "ttr-scheduled-at": value }))
          const after = Date.now()
          assertNextFire(body.scheduledAt, value, before, after)
          assert.strictEqual((yield* upcomingOf(body.triggerId)).scheduled_at?.toISOString(), body.scheduledAt)
        }))
    }

    it.effect("a non-ASCII ttr-title and an invalid ttr-run-missed are ignored for cron (no effect on recurring triggers)", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const body = yield* scheduled([
          ...Object.entries(valid(key)),
          ["ttr-title", "Caf\u00e9"],
          ["ttr-run-missed", "maybe"]
        ] as Array<[string, string]>)
        assert.strictEqual(body.kind, "generator")
        assert.isNull((yield* triggerRow(body.triggerId)).title)
        // the same headers on a one-shot are still rejected
        assertError(yield* schedule(valid(key, { "ttr-scheduled-at": FAR, "ttr-run-missed": "maybe" })), 400,
          "Invalid ttr-run-missed: maybe (true or false)")
        assertError(yield* schedule([...Object.entries(valid(key, { "ttr-scheduled-at": FAR })), ["ttr-title", "Caf\u00e9"]] as Array<[string, string]>), 400,
          "Invalid ttr-title: ASCII text only")
      }))

    it.effect("concurrent creates with the same new custom key → one generator with one upcoming instance", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const responses = yield* Effect.all(
          Array.from({ length: 4 }, () => scheduled(valid(key, { "ttr-custom-key": "race" }))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(new Set(responses.map((r) => r.triggerId)).size, 1)
        assert.deepStrictEqual(responses.map((r) => r.operation).sort(), ["reschedule", "reschedule", "reschedule", "schedule"])
        const id = responses[0]!.triggerId
        const upcoming = yield* upcomingOf(id)
        assert.strictEqual(upcoming.scheduled_at?.toISOString(), responses[0]!.scheduledAt)
        const sql = yield* SqlClient.SqlClient
        const generators = yield* sql`SELECT id FROM triggers WHERE project_id = ${yield* projectIdOfKey(key)} AND kind = 'generator'`
        assert.strictEqual(generators.length, 1)
      }))
  })

  describe("edit", () => {
    it.effect("by id: updated in place (same id, reschedule), the upcoming instance is replaced at once", () =>
      Effect.gen(function*() {
        const { key, id, body: first } = yield* generator({ "ttr-tags": "old", "ttr-custom-key": "edit-id" })
        const oldInstance = yield* upcomingOf(id)
        assert.strictEqual(oldInstance.scheduled_at?.toISOString(), first.scheduledAt)

        const value = "cron(15 12 * * *, Asia/Kolkata)"
        const before = Date.now()
        const edit = yield* scheduled(valid(key, {
          "ttr-trigger-id": id, "ttr-scheduled-at": value, "ttr-url": "http://127.0.0.1:9/new", "ttr-tags": "new"
        }), { method: "DELETE" })
        const after = Date.now()
        assert.strictEqual(edit.triggerId, id)
        assert.strictEqual(edit.operation, "reschedule")
        assert.strictEqual(edit.kind, "generator")
        assertNextFire(edit.scheduledAt, value, before, after)

        assert.strictEqual((yield* triggerRow(oldInstance.id)).status, "cancelled")
        const instance = yield* upcomingOf(id)
        assert.notStrictEqual(instance.id, oldInstance.id)
        assert.strictEqual(instance.scheduled_at?.toISOString(), edit.scheduledAt)
        assert.strictEqual(instance.url, "http://127.0.0.1:9/new")
        assert.strictEqual(instance.method, "DELETE")
        assert.deepStrictEqual([...instance.tags], ["new"])

        const gen = yield* triggerRow(id)
        assert.strictEqual(gen.status, "active")
        assert.strictEqual(gen.cron_expr, "15 12 * * *")
        assert.strictEqual(gen.cron_tz, "Asia/Kolkata")
        assert.strictEqual(gen.url, "http://127.0.0.1:9/new")
        // the whole definition is replaced: no custom key sent, so none kept
        assert.isNull(gen.custom_key)
      }))

    it.effect("by custom key: updated in place, the upcoming instance is replaced at once (same time → new id)", () =>
      Effect.gen(function*() {
        const { key, id, body: first } = yield* generator({ "ttr-custom-key": "nightly" })
        const oldInstance = yield* upcomingOf(id)
        const edit = yield* scheduled(valid(key, { "ttr-custom-key": "nightly", "ttr-url": "http://127.0.0.1:9/v2" }))
        assert.strictEqual(edit.triggerId, id)
        assert.strictEqual(edit.operation, "reschedule")
        assert.strictEqual(edit.kind, "generator")
        // same expression: same next time, but a new instance
        assert.strictEqual(edit.scheduledAt, first.scheduledAt)
        assert.strictEqual((yield* triggerRow(oldInstance.id)).status, "cancelled")
        const instance = yield* upcomingOf(id)
        assert.notStrictEqual(instance.id, oldInstance.id)
        assert.strictEqual(instance.scheduled_at?.toISOString(), edit.scheduledAt)
        assert.strictEqual(instance.url, "http://127.0.0.1:9/v2")
        assert.strictEqual((yield* triggerRow(id)).custom_key, "nightly")
        assert.strictEqual((yield* instancesOf(id)).length, 2)
      }))

    it.effect("edits leave queued and retrying instances in place", () =>
      Effect.gen(function*() {
        const { key, id } = yield* generator({ "ttr-custom-key": "busy" })
        const projectId = yield* projectIdOfKey(key).pipe(Effect.orDie)
        const queued = yield* instanceIn(projectId, id, 1, "queued")
        const retrying = yield* instanceIn(projectId, id, 2, "retrying")
        yield* scheduled(valid(key, { "ttr-custom-key": "busy", "ttr-scheduled-at": "cron(0 6 * * *)" }))
        assert.strictEqual((yield* triggerRow(queued)).status, "queued")
        assert.strictEqual((yield* triggerRow(retrying)).status, "retrying")
        yield* upcomingOf(id)
      }))

    it.effect("an edit racing the materializer's insert of the next instance still replaces it (new data, response time)", () =>
      Effect.gen(function*() {
        const { key, id } = yield* generator({ "ttr-scheduled-at": "cron(0 3 * * *)" })
        const claimed = yield* upcomingOf(id)
        const body = yield* whileMaterializerInsertHeldOpen(id, "0 3 * * *", claimed,
          scheduled(valid(key, { "ttr-trigger-id": id, "ttr-scheduled-at": "cron(0 15 * * *)", "ttr-url": "http://127.0.0.1:9/edited" })))
        const upcoming = yield* upcomingOf(id)
        assert.strictEqual(upcoming.scheduled_at?.toISOString(), body.scheduledAt)
        assert.strictEqual(upcoming.url, "http://127.0.0.1:9/edited")
        assert.strictEqual((yield* triggerRow(claimed.id)).status, "queued")
      }))

    it.effect("H is stable: the same generator edited with the same H expression keeps its schedule", () =>
      Effect.gen(function*() {
        const value = "cron(H H H * * *)"
        const before = Date.now()
        const { key, id, body: first } = yield* generator({ "ttr-scheduled-at": value, "ttr-custom-key": "hashed" })
        const after = Date.now()
        assertNextFire(first.scheduledAt, value, before, after, id)
        const expected = nextInstanceAfter({ id, cronExpr: "H H H * * *", cronTz: "UTC" }, before)
        assert.strictEqual(first.scheduledAt, new Date(expected!).toISOString())
        const byId = yield* scheduled(valid(key, { "ttr-trigger-id": id, "ttr-custom-key": "hashed", "ttr-scheduled-at": value }))
        const byKey = yield* scheduled(valid(key, { "ttr-custom-key": "hashed", "ttr-scheduled-at": value }))
        assert.deepStrictEqual([byId.triggerId, byKey.triggerId], [id, id])
        // the edits happen within a second of the create, far from a daily fire time: same time
        assert.deepStrictEqual([byId.scheduledAt, byKey.scheduledAt], [first.scheduledAt, first.scheduledAt])
        assert.strictEqual((yield* upcomingOf(id)).scheduled_at?.toISOString(), first.scheduledAt)
      }))
  })

  describe("a custom key switching kind", () => {
    it.effect("a pending one-shot under K, then cron with K → the one-shot is cancelled, a generator is created", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const oneShot = yield* scheduled(valid(key, { "ttr-scheduled-at": FAR, "ttr-custom-key": "K" }))
        assert.strictEqual(oneShot.kind, "job")
        const gen = yield* scheduled(valid(key, { "ttr-custom-key": "K" }))
        assert.strictEqual(gen.kind, "generator")
        assert.notStrictEqual(gen.triggerId, oneShot.triggerId)
        assert.strictEqual(gen.operation, "reschedule")
        const old = yield* triggerRow(oneShot.triggerId)
        assert.strictEqual(old.status, "cancelled")
        assert.isNull(old.due_at)
        const row = yield* triggerRow(gen.triggerId)
        assert.strictEqual(row.status, "active")
        assert.strictEqual(row.custom_key, "K")
        assert.strictEqual((yield* upcomingOf(gen.triggerId)).scheduled_at?.toISOString(), gen.scheduledAt)
      }))

    it.effect("a skipped one-shot under K is replaced as well", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const oneShot = yield* scheduled(valid(key, { "ttr-scheduled-at": "2001-01-01", "ttr-custom-key": "K" }))
        assert.strictEqual((yield* triggerRow(oneShot.triggerId)).status, "skipped")
        const gen = yield* scheduled(valid(key, { "ttr-custom-key": "K" }))
        assert.strictEqual(gen.kind, "generator")
        assert.strictEqual((yield* triggerRow(oneShot.triggerId)).status, "cancelled")
      }))

    it.effect("a generator under K, then a date with K → the generator and its upcoming instance are cancelled, a one-shot is created", () =>
      Effect.gen(function*() {
        const { key, id } = yield* generator({ "ttr-custom-key": "K" })
        const instance = yield* upcomingOf(id)
        const oneShot = yield* scheduled(valid(key, { "ttr-scheduled-at": FAR, "ttr-custom-key": "K" }))
        assert.strictEqual(oneShot.kind, "job")
        assert.strictEqual(oneShot.operation, "reschedule")
        assert.notStrictEqual(oneShot.triggerId, id)
        assert.strictEqual(oneShot.scheduledAt, "2099-01-01T00:00:00.000Z")
        assert.strictEqual((yield* triggerRow(id)).status, "cancelled")
        assert.strictEqual((yield* triggerRow(instance.id)).status, "cancelled")
        const row = yield* triggerRow(oneShot.triggerId)
        assert.strictEqual(row.status, "registered")
        assert.strictEqual(row.custom_key, "K")
        assert.isNull(row.generator_id)
        // and back: cron under K replaces the one-shot with a new generator
        const again = yield* scheduled(valid(key, { "ttr-custom-key": "K" }))
        assert.strictEqual(again.kind, "generator")
        assert.notStrictEqual(again.triggerId, id)
        assert.strictEqual((yield* triggerRow(oneShot.triggerId)).status, "cancelled")
      }))
  })

  describe("GET /jobs/{id}", () => {
    it.effect("a generator: kind generator, status active, scheduledAt of its upcoming instance, no cron expression or zone anywhere", () =>
      Effect.gen(function*() {
        const { key, id, body } = yield* generator({
          "ttr-scheduled-at": "cron(17 4 * * *, Pacific/Chatham)", "ttr-custom-key": "view", "ttr-tags": "v"
        })
        const response = yield* getJob(key, id)
        assert.strictEqual(response.status, 200, response.text)
        const view = response.json()
        assert.strictEqual(view.id, id)
        assert.strictEqual(view.kind, "generator")
        assert.strictEqual(view.status, "active")
        assert.strictEqual(view.scheduledAt, body.scheduledAt)
        assert.strictEqual(view.customKey, "view")
        assert.deepStrictEqual(view.tags, ["v"])
        assert.isNull(view.generatorId)
        assert.isNull(view.title)
        for (const secret of ["17 4", "Chatham", "Pacific", "cron"]) assert.notInclude(response.text, secret)

        // the instance: an ordinary trigger pointing at its generator, no key, no title
        const instance = yield* upcomingOf(id)
        const instanceView = (yield* getJob(key, instance.id)).json()
        assert.strictEqual(instanceView.kind, "job")
        assert.strictEqual(instanceView.status, "registered")
        assert.strictEqual(instanceView.generatorId, id)
        assert.strictEqual(instanceView.scheduledAt, body.scheduledAt)
        assert.isNull(instanceView.customKey)
        assert.isNull(instanceView.title)

        // after an edit the view follows the new upcoming instance; after a cancel it has none
        const edit = yield* scheduled(valid(key, { "ttr-trigger-id": id, "ttr-scheduled-at": "cron(45 21 * * *, Pacific/Chatham)" }))
        assert.strictEqual((yield* getJob(key, id)).json().scheduledAt, edit.scheduledAt)
        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }))
        const cancelled = (yield* getJob(key, id)).json()
        assert.strictEqual(cancelled.status, "cancelled")
        assert.isNull(cancelled.scheduledAt)
      }))
  })

  describe("/cancel", () => {
    it.effect("by id → 204: the generator and its upcoming instance are cancelled; queued, retrying and past instances are not", () =>
      Effect.gen(function*() {
        const { key, id } = yield* generator()
        const projectId = yield* projectIdOfKey(key).pipe(Effect.orDie)
        const upcoming = yield* upcomingOf(id)
        const queued = yield* instanceIn(projectId, id, 1, "queued")
        const retrying = yield* instanceIn(projectId, id, 2, "retrying")
        const completed = yield* instanceIn(projectId, id, 3, "completed")

        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }))
        assert.strictEqual((yield* triggerRow(id)).status, "cancelled")
        const upcomingAfter = yield* triggerRow(upcoming.id)
        assert.strictEqual(upcomingAfter.status, "cancelled")
        assert.isNull(upcomingAfter.due_at)
        assert.strictEqual((yield* triggerRow(queued)).status, "queued")
        assert.strictEqual((yield* triggerRow(retrying)).status, "retrying")
        assert.strictEqual((yield* triggerRow(completed)).status, "completed")

        // again by id: 410
        assertError(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": id }), 410, "Generator already cancelled")
        // a retrying instance needs its own id; a queued one is no longer cancellable
        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": retrying }))
        assert.strictEqual((yield* triggerRow(retrying)).status, "cancelled")
        assertError(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": queued }), 410, "Job is no longer cancellable (status=queued)")
      }))

    it.effect("by custom key an active generator is cancelled first, even when a completed one-shot had the key", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const oneShot = yield* scheduled(valid(key, { "ttr-scheduled-at": FAR, "ttr-custom-key": "shared" }))
        yield* setStatus(oneShot.triggerId, "completed")
        const gen = yield* scheduled(valid(key, { "ttr-custom-key": "shared" }))
        assert.strictEqual(gen.kind, "generator")
        assert.strictEqual(gen.operation, "schedule")
        const upcoming = yield* upcomingOf(gen.triggerId)

        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-custom-key": "shared" }))
        assert.strictEqual((yield* triggerRow(gen.triggerId)).status, "cancelled")
        assert.strictEqual((yield* triggerRow(upcoming.id)).status, "cancelled")
        assert.strictEqual((yield* triggerRow(oneShot.triggerId)).status, "completed")
        // now only the completed one-shot carries the key
        assertError(yield* cancel({ "ttr-api-key": key, "ttr-custom-key": "shared" }), 410, "Job is no longer cancellable (status=completed)")
      }))

    it.effect("by custom key, a generator whose key is the only one → 204, then 404 (a cancelled generator by key)", () =>
      Effect.gen(function*() {
        const { key, id } = yield* generator({ "ttr-custom-key": "solo" })
        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-custom-key": "solo" }))
        assert.strictEqual((yield* triggerRow(id)).status, "cancelled")
        assertError(yield* cancel({ "ttr-api-key": key, "ttr-custom-key": "solo" }), 404, "Job not found")
      }))

    it.effect("a cancel racing the materializer's insert of the next instance cancels that instance too", () =>
      Effect.gen(function*() {
        const { key, id } = yield* generator({ "ttr-scheduled-at": "cron(0 3 * * *)" })
        const claimed = yield* upcomingOf(id)
        const response = yield* whileMaterializerInsertHeldOpen(id, "0 3 * * *", claimed, cancel({ "ttr-api-key": key, "ttr-trigger-id": id }))
        assertNoContent(response)
        assert.strictEqual((yield* triggerRow(id)).status, "cancelled")
        const instances = yield* instancesOf(id)
        assert.strictEqual(instances.length, 2)
        assert.deepStrictEqual(instances.map((row) => row.status), ["queued", "cancelled"])
      }))

    it.effect("an instance is cancelled by its own id; the generator stays active", () =>
      Effect.gen(function*() {
        const { key, id } = yield* generator()
        const instance = yield* upcomingOf(id)
        assertNoContent(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": instance.id }))
        assert.strictEqual((yield* triggerRow(instance.id)).status, "cancelled")
        assert.strictEqual((yield* triggerRow(id)).status, "active")
        assertError(yield* cancel({ "ttr-api-key": key, "ttr-trigger-id": instance.id }), 410, "Job is no longer cancellable (status=cancelled)")
      }))
  })
})
