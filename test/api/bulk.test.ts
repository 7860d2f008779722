// POST /bulk against the real service and database, read like docs/declare-and-bulk.md "POST /bulk" and
// "Errors": the check table (each message and its order), the cancel targets (id, object id, customKey,
// tag; skipped silently when they match nothing or nothing cancellable), upserts matched across the
// project, calls adding the same new keys at once, a generator edit that keeps its upcoming instance,
// all-or-nothing: a call failing after some of its rows were written leaves nothing, and what a call
// that only adds holds while its insert runs (its columns, not its decoded items: docs/internals.md).
import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { SqlClient } from "effect/sql"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { BulkCall, bulkTriggers } from "../../src/commands/bulk.ts"
import { decodeBulkBody } from "../../src/domain/bulk.ts"
import { withTransaction } from "../../src/store/transaction.ts"
import { assertError } from "../support/assertions.ts"
import { ensureProject, instancesOf, nextId, quotaUsed, setStatus, statusOf, triggerRow } from "../support/fixtures.ts"
import { bulkCall, bulked, declared, entryLines, instanceCameDue, post } from "../support/items.ts"
import { newKey, scheduled, testServerLayer } from "../support/server.ts"
import { waitUntil } from "../support/wait.ts"

const URL = "http://127.0.0.1:9/hook"
const FAR = "2099-01-01T00:00:00.000Z"
const PAST = "2020-01-01T00:00:00.000Z"
const DAILY = `cron(0 ${(new Date().getUTCHours() + 12) % 24} * * *)`
const UNKNOWN_KEY = "ttr_" + "0".repeat(48)
const UNKNOWN_ID = "01890000-0000-7000-8000-000000000000"

const up = (customKey: string | undefined, over: Record<string, unknown> = {}) => ({
  url: URL, scheduledAt: FAR, ...(customKey === undefined ? {} : { customKey }), ...over
})

const idOf = (answer: { readonly operations: ReadonlyArray<{ readonly customKey: string | null; readonly id: string }> }, key: string) =>
  answer.operations.find((entry) => entry.customKey === key)!.id

const upcomingOf = (generatorId: string) =>
  Effect.gen(function*() {
    yield* waitUntil("an upcoming instance", Effect.map(instancesOf(generatorId), (rows) => rows.some((r) => r.status === "registered")), 8_000)
    return (yield* instancesOf(generatorId)).find((row) => row.status === "registered")!
  })

layer(testServerLayer(), { timeout: "120 seconds" })("POST /bulk", (it) => {
  describe("while its insert runs", () => {
    /**
     * The route's body source for `upserts`, with weak references to the decoded items and to the last
     * one's headers (its validated item refers to them; the insert's columns keep only the first
     * item's headers when every item has the same).
     */
    const source = (upserts: ReadonlyArray<unknown>) => {
      const text = JSON.stringify({ upserts })
      const decoded = decodeBulkBody(JSON.parse(text))
      if (decoded._tag !== "Ok") throw new Error(decoded.reason)
      const last = decoded.value.upserts[decoded.value.upserts.length - 1]!
      return { body: BulkCall.ofText(decoded.value, text, Date.now()), items: new WeakRef(decoded.value.upserts), lastHeaders: new WeakRef(last.headers) }
    }
    const collectGarbage = (): void => {
      v8.setFlagsFromString("--expose-gc")
      ;(vm.runInNewContext("gc") as () => void)()
    }

    it.effect("a call that only adds holds none of its decoded items (a key held by an open transaction makes its insert wait)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const projectId = nextId()
        yield* ensureProject(projectId)
        // another transaction inserts the key first and stays open: the call's insert waits on the key's index entry
        const inserted = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const holder = yield* withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO triggers (id, project_id, kind, shard, status, scheduled_at, due_at, url, method, headers, tags,
              custom_key, created_at, updated_at)
            VALUES (${nextId()}, ${projectId}, 'job', 0, 'registered', now() + interval '1 day', now() + interval '1 day', ${URL},
              'GET', '[]'::jsonb, '{}'::text[], 'held', now(), now())`
          yield* Deferred.succeed(inserted, undefined)
          yield* Deferred.await(release)
          return yield* Effect.fail("rolled back")
        })).pipe(Effect.forkChild)
        yield* Deferred.await(inserted)
        const { body, items, lastHeaders } = source([up("held", { headers: { x: "1" } }), ...Array.from({ length: 200 }, () => up(undefined, { headers: { x: "1" } }))])
        const call = yield* bulkTriggers(projectId, body).pipe(Effect.forkChild)
        yield* waitUntil("the call's insert waiting on the key", Effect.map(
          sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO triggers%'`,
          (rows) => rows[0]!.n > 0
        ), 8_000)
        collectGarbage()
        assert.isUndefined(items.deref(), "the decoded items are still alive while the insert runs")
        assert.isUndefined(lastHeaders.deref(), "the validated items are still alive while the insert runs")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.await(holder)
        const answer = JSON.parse(yield* Fiber.join(call)) as { summary: { added: number } }
        // the key was free once the other transaction rolled back
        assert.strictEqual(answer.summary.added, 201)
      }))
  })

  describe("planned again", () => {
    /**
     * A row trigger on `triggers` for the rows whose url is `url`: the first `times` statements that
     * reach it fail (`fail`: as a key taken meanwhile, 23505) or change nothing (`skip`: as a trigger
     * claimed between the read and the write). A sequence counts them (it is not rolled back).
     */
    const interfering = (name: string, url: string, event: "INSERT" | "UPDATE", effect: "fail" | "skip", times: number) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const act = effect === "fail" ? "RAISE unique_violation USING MESSAGE = 'taken meanwhile (test)'" : "RETURN NULL"
        yield* sql.unsafe(`CREATE SEQUENCE ${name}_seen`)
        yield* sql.unsafe(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.url = '${url}' THEN IF nextval('${name}_seen') <= ${times} THEN ${act}; END IF; END IF; RETURN NEW; END $$`)
        yield* sql.unsafe(`CREATE TRIGGER ${name} BEFORE ${event} ON triggers FOR EACH ROW EXECUTE FUNCTION ${name}()`)
        return {
          seen: Effect.map(sql.unsafe<{ n: string }>(`SELECT last_value::text AS n FROM ${name}_seen`), (rows) => Number(rows[0]!.n)),
          drop: Effect.forEach([`DROP TRIGGER ${name} ON triggers`, `DROP FUNCTION ${name}()`, `DROP SEQUENCE ${name}_seen`], (statement) => sql.unsafe(statement), { discard: true })
        }
      })

    it.effect("a key taken meanwhile: planned again (decoded and validated again from the request) until it can be written", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const url = "http://127.0.0.1:9/taken-twice"
        const interference = yield* interfering("bulk_taken_twice", url, "INSERT", "fail", 2)
        const answer = yield* bulked(key, { upserts: [up("a", { url, title: "t" }), up(undefined, { url })] })
        yield* interference.drop
        assert.deepStrictEqual(entryLines(answer), ["added job a", "added job -"])
        assert.strictEqual((yield* triggerRow(idOf(answer, "a"))).title, "t")
      }))

    it.effect("an update that missed (a trigger changed after the read): rolled back, planned again from the new state", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const url = "http://127.0.0.1:9/stale-once"
        const first = yield* bulked(key, { upserts: [up("s", { url })] })
        const interference = yield* interfering("bulk_stale_once", url, "UPDATE", "skip", 1)
        const second = yield* bulked(key, { upserts: [up("s", { url, title: "new" }), up("n", { url })] })
        const seen = yield* interference.seen
        yield* interference.drop
        // the first attempt's update was skipped (and its insert rolled back); the second wrote both
        assert.strictEqual(seen, 2)
        assert.deepStrictEqual(entryLines(second), ["updated job s [title]", "added job n"])
        assert.strictEqual(idOf(second, "s"), idOf(first, "s"))
        assert.strictEqual((yield* triggerRow(idOf(first, "s"))).title, "new")
      }))

    it.effect("409 after five attempts that each failed, nothing written", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const url = "http://127.0.0.1:9/always-taken"
        const interference = yield* interfering("bulk_always_taken", url, "INSERT", "fail", 1_000)
        const response = yield* bulkCall(key, { upserts: [up(undefined, { url: "http://127.0.0.1:9/other" }), up(undefined, { url })] })
        const seen = yield* interference.seen
        yield* interference.drop
        assertError(response, 409, "The triggers of this call kept changing while it was applied; nothing was written")
        assert.strictEqual(seen, 5)
        const sql = yield* SqlClient.SqlClient
        const [other] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM triggers WHERE url = 'http://127.0.0.1:9/other'`
        assert.strictEqual(other!.n, 0)
      }))
  })

  describe("checks, in order", () => {
    it.effect("415 first, even with an unknown key and invalid JSON", () =>
      Effect.gen(function*() {
        const response = yield* bulkCall(UNKNOWN_KEY, "{", { "content-type": "text/csv" })
        assert.strictEqual(response.status, 415)
        assert.strictEqual(response.text, "Unsupported content-type: text/csv")
      }))

    const shapes: ReadonlyArray<readonly [name: string, text: string]> = [
      ["invalid JSON", "{"],
      ["not an object", "[]"],
      ["upserts not a list", JSON.stringify({ upserts: {} })],
      ["upserts null", JSON.stringify({ upserts: null })],
      ["cancels not a list", JSON.stringify({ cancels: "x" })],
      ["a cancels entry a number", JSON.stringify({ cancels: [1] })],
      ["a cancels entry null", JSON.stringify({ cancels: [null] })],
      ["a cancels entry naming nothing", JSON.stringify({ cancels: [{}] })],
      ["a cancels entry naming two things", JSON.stringify({ cancels: [{ id: UNKNOWN_ID, tag: "t" }] })],
      ["a cancels entry with a number id", JSON.stringify({ cancels: [{ id: 1 }] })],
      ["a cancels entry with a null customKey", JSON.stringify({ cancels: [{ customKey: null }] })],
      ["an upsert without url", JSON.stringify({ upserts: [{ customKey: "a" }] })],
      ["an upsert field null", JSON.stringify({ upserts: [up("a", { title: null })] })]
    ]
    it.effect.each(shapes)("400 empty body before the key: %s", ([, text]) =>
      Effect.gen(function*() {
        assertError(yield* bulkCall(UNKNOWN_KEY, text), 400, null)
      }))

    it.effect("401 after the shape: `Invalid api key` for an unknown key (header or Bearer), `Unauthorized` without credentials", () =>
      Effect.gen(function*() {
        assertError(yield* bulkCall(UNKNOWN_KEY, { upserts: [up("a", { scheduledAt: "x" })] }), 401, "Invalid api key")
        assertError(yield* post("/bulk", {}, { authorization: `Bearer ${UNKNOWN_KEY}` }), 401, "Invalid api key")
        assertError(yield* post("/bulk", {}, {}), 401, "Unauthorized")
        assertError(yield* post("/bulk", {}, { authorization: "Token abc" }), 401, "Unauthorized")
        const key = yield* newKey()
        assert.strictEqual((yield* post("/bulk", {}, { authorization: `Bearer ${key}` })).status, 200)
      }))

    const messages: ReadonlyArray<readonly [name: string, body: unknown, message: string]> = [
      ["repeated key", { upserts: [up("a"), up("b"), up("a")] }, "Duplicate customKey in upserts: a"],
      ["the repeated key before the upsert checks", { upserts: [up("x", { scheduledAt: "soon" }), up("a"), up("a")] },
        "Duplicate customKey in upserts: a"],
      ["repeated tag", { upserts: [up("a", { tags: ["x", "x"] })] }, "Upsert a: duplicate tag \"x\" in tags"],
      ["keyless upsert", { upserts: [up(undefined, { scheduledAt: "soon" })] }, "Upsert (no customKey): Invalid date: soon"],
      ["cron", { upserts: [up("c", { scheduledAt: "cron(* * *)" })] },
        "Upsert c: Invalid cron expression: expected 5 fields (minute hour day-of-month month day-of-week) or 6 with a leading second, got 3"],
      ["pipe", { upserts: [up("p", { scheduledAt: "now | times 2" })] }, "Upsert p: Unknown pipe operation: times 2"],
      ["an id PostgreSQL cannot store, after the upserts", { upserts: [up("fine")], cancels: ["a\u0000b"] },
        "cancels[0].id must not contain NUL characters"]
    ]
    it.effect.each(messages)("400 %s; nothing written, nothing cancelled", ([, body, message]) =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const victim = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-tags": "victim" })
        const withCancel = { ...(body as object), cancels: [...((body as { cancels?: Array<unknown> }).cancels ?? []), victim.triggerId] }
        assertError(yield* bulkCall(key, withCancel), 400, message)
        assert.strictEqual(yield* statusOf(victim.triggerId), "registered")
      }))

    it.effect("`{}` is valid; no quota is used or checked", () =>
      Effect.gen(function*() {
        const key = yield* newKey(0)
        assert.deepStrictEqual(yield* bulked(key, {}), { summary: { added: 0, updated: 0, unchanged: 0, skipped: 0, cancelled: 0 }, operations: [] })
        const answer = yield* bulked(key, { upserts: [up("q")] })
        assert.deepStrictEqual(entryLines(answer), ["added job q"])
        assert.strictEqual(yield* quotaUsed(key), 0)
      }))
  })

  describe("cancels", () => {
    it.effect("by id (string or {id}), by customKey (an active generator first), by tag; entries: one-shots and instances, then generators", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const a = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": FAR })
        const s = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": PAST })
        const g = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": DAILY, "ttr-custom-key": "gk" })
        const gUp = yield* upcomingOf(g.triggerId)
        const t1 = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-tags": "batch" })
        const t2 = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-tags": "batch,other" })
        const answer = yield* bulked(key, { cancels: [a.triggerId, { id: s.triggerId }, { customKey: "gk" }, { tag: "batch" }, a.triggerId] })
        // in target order (a tag's triggers oldest first), one-shots and instances before generators
        const entries = answer.operations.map((e) => [e.operation, e.kind, e.id])
        assert.deepStrictEqual(entries.slice(0, 3).concat(entries.slice(5)), [
          ["cancelled", "job", a.triggerId], ["cancelled", "job", s.triggerId], ["cancelled", "job", gUp.id],
          ["cancelled", "generator", g.triggerId]
        ])
        assert.sameDeepMembers(entries.slice(3, 5), [["cancelled", "job", t1.triggerId], ["cancelled", "job", t2.triggerId]])
        assert.strictEqual(answer.summary.cancelled, 6)
        for (const id of [a.triggerId, s.triggerId, g.triggerId, gUp.id, t1.triggerId, t2.triggerId]) assert.strictEqual(yield* statusOf(id), "cancelled")
      }))

    it.effect("a tag also cancels a generator's held-back (queued) and retrying instances; a queued one claimed by a node stays", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const g = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": DAILY, "ttr-tags": "fleet" })
        const first = yield* upcomingOf(g.triggerId)
        yield* instanceCameDue(first.id, "queued")
        const second = yield* upcomingOf(g.triggerId)
        yield* instanceCameDue(second.id, "retrying")
        const third = yield* upcomingOf(g.triggerId)
        const claimed = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-tags": "fleet" })
        yield* setStatus(claimed.triggerId, "queued")
        const answer = yield* bulked(key, { cancels: [{ tag: "fleet" }] })
        assert.sameMembers(answer.operations.map((e) => e.id), [g.triggerId, first.id, second.id, third.id])
        for (const id of [g.triggerId, first.id, second.id, third.id]) assert.strictEqual(yield* statusOf(id), "cancelled")
        assert.strictEqual(yield* statusOf(claimed.triggerId), "queued")
      }))

    it.effect("targets matching nothing, or nothing cancellable, are skipped without error", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const done = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-custom-key": "done", "ttr-tags": "finished" })
        yield* setStatus(done.triggerId, "completed")
        const running = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": FAR })
        yield* setStatus(running.triggerId, "running")
        const otherKey = yield* newKey()
        const foreign = yield* scheduled({ "ttr-api-key": otherKey, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-custom-key": "mine", "ttr-tags": "mine" })
        const answer = yield* bulked(key, {
          cancels: ["not-a-uuid", UNKNOWN_ID, { id: done.triggerId }, running.triggerId, { customKey: "done" }, { customKey: "" }, { tag: "finished" },
            { tag: "nothing" }, foreign.triggerId, { customKey: "mine" }, { tag: "mine" }]
        })
        assert.deepStrictEqual(answer.operations, [])
        assert.strictEqual(yield* statusOf(done.triggerId), "completed")
        assert.strictEqual(yield* statusOf(running.triggerId), "running")
        assert.strictEqual(yield* statusOf(foreign.triggerId), "registered")
      }))
  })

  describe("upserts", () => {
    it.effect("matched by key across the project, no tag added: added, unchanged, updated in place, kind switch; the unscoped owner first", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const plain = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-custom-key": "k", "ttr-tags": "a" })
        // a /declare trigger with the same key in tag "d" (docs/internals.md "/declare and /bulk")
        const declaredK = yield* declared(key, { tag: "d", items: [up("k"), up("only-declared")] })
        const first = yield* bulked(key, { upserts: [up("k", { tags: ["a"], method: "POST" }), up("only-declared", { tags: ["d"] }), up("new"), up("past", { scheduledAt: PAST })] })
        assert.deepStrictEqual(entryLines(first), ["unchanged job k", "unchanged job only-declared", "added job new", "skipped job past"])
        assert.strictEqual(idOf(first, "k"), plain.triggerId)
        assert.strictEqual(idOf(first, "only-declared"), idOf(declaredK, "only-declared"))
        assert.deepStrictEqual([...(yield* triggerRow(idOf(first, "new"))).tags], [])
        const second = yield* bulked(key, { upserts: [up("k", { url: "http://127.0.0.1:9/two" }), up("new", { scheduledAt: DAILY })] })
        assert.deepStrictEqual(entryLines(second), ["updated job k [url,method,tags]", "updated generator new [kind:job→generator]"])
        assert.strictEqual(idOf(second, "k"), plain.triggerId)
        assert.strictEqual(yield* statusOf(idOf(first, "new")), "cancelled")
        // the declared trigger with key k was left alone
        assert.strictEqual((yield* triggerRow(idOf(declaredK, "k"))).url, URL)
      }))

    it.effect("calls adding the same new keys at once: one trigger per key, added by one call, unchanged in the others; none fails", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const keys = Array.from({ length: 40 }, (_, i) => `race-${i}`)
        const body = { upserts: [...keys.map((k) => up(k)), up(undefined)] }
        const answers = yield* Effect.all(Array.from({ length: 6 }, () => bulked(key, body)), { concurrency: "unbounded" })
        for (const k of keys) {
          const entries = answers.map((answer) => answer.operations.find((entry) => entry.customKey === k)!)
          assert.deepStrictEqual(entries.map((entry) => entry.operation).sort(), ["added", ...Array(5).fill("unchanged")])
          assert.strictEqual(new Set(entries.map((entry) => entry.id)).size, 1)
        }
        // every call added its keyless upsert
        assert.deepStrictEqual(answers.map((answer) => answer.summary.added + answer.summary.unchanged), Array(6).fill(keys.length + 1))
        const sql = yield* SqlClient.SqlClient
        const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM triggers WHERE custom_key IS NOT NULL
          AND project_id = (SELECT project_id FROM triggers WHERE id = ${idOf(answers[0]!, "race-0")})`
        assert.strictEqual(count!.n, keys.length)
      }))

    it.effect("a generator edit keeps its upcoming instance (new settings from the run after it)", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const first = yield* bulked(key, { upserts: [up("g", { scheduledAt: DAILY })] })
        const id = idOf(first, "g")
        const instance = yield* upcomingOf(id)
        const second = yield* bulked(key, { upserts: [up("g", { scheduledAt: DAILY, title: "new title" })] })
        assert.deepStrictEqual(entryLines(second), ["updated generator g [title]"])
        assert.strictEqual(idOf(second, "g"), id)
        assert.strictEqual(yield* statusOf(instance.id), "registered")
        assert.strictEqual((yield* triggerRow(id)).title, "new title")
        assert.isNull((yield* triggerRow(instance.id)).title)
      }))

    it.effect("cancels apply first: a key cancelled in the same call is free again, its upsert is added", () =>
      Effect.gen(function*() {
        const key = yield* newKey()
        const old = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-custom-key": "re" })
        const answer = yield* bulked(key, { cancels: [{ customKey: "re" }], upserts: [up("re")] })
        assert.deepStrictEqual(entryLines(answer), ["added job re", "cancelled job re"])
        assert.strictEqual(answer.operations[1]!.id, old.triggerId)
        assert.strictEqual(yield* statusOf(old.triggerId), "cancelled")
        assert.strictEqual(yield* statusOf(idOf(answer, "re")), "registered")
      }))
  })

  it.effect("all-or-nothing: a call failing after its cancels and updates were written leaves nothing written and nothing cancelled", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const key = yield* newKey()
      const a = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-tags": "gone" })
      const b = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-custom-key": "b" })
      const g = yield* scheduled({ "ttr-api-key": key, "ttr-url": URL, "ttr-scheduled-at": DAILY, "ttr-custom-key": "g" })
      const gUp = yield* upcomingOf(g.triggerId)
      const body = {
        cancels: [{ tag: "gone" }, { customKey: "g" }],
        upserts: [
          up("b", { url: "http://127.0.0.1:9/changed" }),
          ...Array.from({ length: 300 }, (_, i) => up(`new-${i}`)),
          up("last", { url: "http://127.0.0.1:9/poison" })
        ]
      }
      // a constraint only the last insert breaks: the cancels and the update have run when it fails
      yield* sql`ALTER TABLE triggers ADD CONSTRAINT test_bulk_poison CHECK (url <> 'http://127.0.0.1:9/poison') NOT VALID`
      const failed = yield* Effect.ensuring(bulkCall(key, body), sql`ALTER TABLE triggers DROP CONSTRAINT test_bulk_poison`.pipe(Effect.orDie))
      assert.strictEqual(failed.status, 500, failed.text)
      for (const id of [a.triggerId, b.triggerId, gUp.id]) assert.strictEqual(yield* statusOf(id), "registered")
      assert.strictEqual(yield* statusOf(g.triggerId), "active")
      assert.strictEqual((yield* triggerRow(b.triggerId)).url, URL)
      const created = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM triggers WHERE custom_key LIKE 'new-%' OR custom_key = 'last'`
      assert.strictEqual(created[0]!.n, "0")
      // the same call without the poison applies whole
      const answer = yield* bulked(key, body)
      assert.deepStrictEqual(answer.summary, { added: 301, updated: 1, unchanged: 0, skipped: 0, cancelled: 3 })
    }))
})
