// POST /declare against the real service and database, read like docs/declare-and-bulk.md "What the
// call does": the rows of its matching table and its rules, asserted on the answer and on the stored
// rows (ids kept or new, statuses, instances). States the API cannot reach (retrying, queued — claimed
// by a node, or held back by a tag gate with no node — running, completed) are set with SQL. What a
// target receives, and rules that need a delivery: test/e2e/declare.test.ts.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { instancesOf, setStatus, statusOf, triggerRow } from "../support/fixtures.ts"
import { bulkCall, declareCall, declared, entryLines, holdBack, instanceCameDue } from "../support/items.ts"
import { newKey, scheduled, testServerLayer } from "../support/server.ts"
import { waitUntil } from "../support/wait.ts"

const URL = "http://127.0.0.1:9/hook"
const FAR = "2099-01-01T00:00:00.000Z"
const PAST = "2020-01-01T00:00:00.000Z"
/** A daily time about 12 hours away: no instance comes due while the file runs. */
const DAILY = `cron(0 ${(new Date().getUTCHours() + 12) % 24} * * *)`
const TAG = "rules"

const item = (customKey: string | undefined, over: Record<string, unknown> = {}) => ({
  url: URL, scheduledAt: FAR, ...(customKey === undefined ? {} : { customKey }), ...over
})
const gen = (customKey: string, over: Record<string, unknown> = {}) => item(customKey, { scheduledAt: DAILY, ...over })

/** A key of a new project and `declare(items, options)` on TAG for it. */
const project = Effect.gen(function*() {
  const key = yield* newKey()
  return {
    key,
    declare: (items: ReadonlyArray<unknown>, over: Record<string, unknown> = {}) => declared(key, { tag: TAG, items, ...over })
  }
})

const idOf = (answer: { readonly operations: ReadonlyArray<{ readonly customKey: string | null; readonly id: string }> }, key: string) =>
  answer.operations.find((entry) => entry.customKey === key)!.id

/** The generator's registered instances, once the materializer made one (at most about 5 s). */
const upcomingOf = (generatorId: string) =>
  Effect.gen(function*() {
    yield* waitUntil(`an upcoming instance of ${generatorId}`, Effect.map(instancesOf(generatorId), (rows) => rows.some((r) => r.status === "registered")), 8_000)
    return (yield* instancesOf(generatorId)).filter((row) => row.status === "registered")
  })

layer(testServerLayer(), { timeout: "120 seconds" })("POST /declare rules", (it) => {
  describe("matching of an item with a customKey", () => {
    it.effect("none: added (registered), or skipped for a past one-shot; new ids; the tag added to the item's tags", () =>
      Effect.gen(function*() {
        const p = yield* project
        const answer = yield* p.declare([item("a", { tags: ["x"] }), item("p", { scheduledAt: PAST }), gen("g")])
        assert.deepStrictEqual(entryLines(answer), ["added job a", "skipped job p", "added generator g"])
        assert.deepStrictEqual(answer.summary, { unchanged: 0, added: 2, skipped: 1, updated: 0, cancelled: 0 })
        assert.strictEqual(answer.tag, TAG)
        const a = yield* triggerRow(idOf(answer, "a"))
        assert.deepStrictEqual([a.status, [...a.tags]], ["registered", ["x", TAG]])
        assert.strictEqual((yield* triggerRow(idOf(answer, "p"))).status, "skipped")
        const g = yield* triggerRow(idOf(answer, "g"))
        assert.deepStrictEqual([g.kind, g.status, g.cron_tz], ["generator", "active", "UTC"])
      }))

    it.effect("same kind, all fields equal: unchanged, same id (one-shot, skipped one-shot, generator)", () =>
      Effect.gen(function*() {
        const p = yield* project
        const items = [item("a", { body: { x: 1 }, headers: { "X-A": "1" } }), item("p", { scheduledAt: PAST }), gen("g", { title: "café" })]
        const first = yield* p.declare(items)
        const second = yield* p.declare(items)
        assert.deepStrictEqual(entryLines(second).slice(0, 3), ["unchanged job a", "unchanged job p", "unchanged generator g"])
        for (const key of ["a", "p", "g"]) assert.strictEqual(idOf(second, key), idOf(first, key))
      }))

    it.effect("one-shot registered or skipped, something differs: updated in place, same id", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([item("a"), item("p", { scheduledAt: PAST })])
        const second = yield* p.declare([item("a", { method: "post" }), item("p", { scheduledAt: FAR })])
        assert.deepStrictEqual(entryLines(second), ["updated job a [method]", "updated job p [scheduledAt]"])
        assert.strictEqual(idOf(second, "a"), idOf(first, "a"))
        assert.strictEqual((yield* triggerRow(idOf(first, "a"))).method, "POST")
        // moved to the future: registered again
        assert.strictEqual((yield* triggerRow(idOf(first, "p"))).status, "registered")
      }))

    it.effect("one-shot retrying, something differs: updated, new id; the old one and its retry cancelled, no entry of its own", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([item("r")])
        const old = idOf(first, "r")
        yield* setStatus(old, "retrying")
        const unchanged = yield* p.declare([item("r")])
        assert.deepStrictEqual(entryLines(unchanged), ["unchanged job r"])
        const second = yield* p.declare([item("r", { url: "http://127.0.0.1:9/other" })])
        assert.deepStrictEqual(entryLines(second), ["updated job r [url]"])
        assert.notStrictEqual(idOf(second, "r"), old)
        assert.strictEqual(yield* statusOf(old), "cancelled")
        assert.strictEqual((yield* triggerRow(idOf(second, "r"))).status, "registered")
      }))

    it.effect("generator, something differs: updated in place, same id; its upcoming instance replaced", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([gen("g")])
        const id = idOf(first, "g")
        const [upcoming] = yield* upcomingOf(id)
        const second = yield* p.declare([gen("g", { scheduledAt: "cron(0 0 1 1 *, Europe/Paris)" })])
        assert.deepStrictEqual(entryLines(second), ["updated generator g [cronExpr,tz]", "cancelled job -"])
        assert.strictEqual(second.operations[1]!.id, upcoming!.id)
        assert.strictEqual(idOf(second, "g"), id)
        assert.deepStrictEqual([(yield* triggerRow(id)).cron_expr, (yield* triggerRow(id)).cron_tz], ["0 0 1 1 *", "Europe/Paris"])
        const [next] = yield* upcomingOf(id)
        assert.notStrictEqual(next!.id, upcoming!.id)
        assert.strictEqual(yield* statusOf(upcoming!.id), "cancelled")
      }))

    it.effect("the other kind: updated with the kind switch only, new id, the old one cancelled (a generator with its instances)", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([item("s"), gen("t")])
        const [instance] = yield* upcomingOf(idOf(first, "t"))
        const second = yield* p.declare([gen("s"), item("t")])
        assert.deepStrictEqual(entryLines(second), ["updated generator s [kind:job→generator]", "updated job t [kind:generator→job]", "cancelled job -"])
        assert.notStrictEqual(idOf(second, "s"), idOf(first, "s"))
        assert.notStrictEqual(idOf(second, "t"), idOf(first, "t"))
        for (const id of [idOf(first, "s"), idOf(first, "t"), instance!.id]) assert.strictEqual(yield* statusOf(id), "cancelled")
      }))
  })

  describe("rules", () => {
    it.effect("1: every field is compared, changedFields in the documented order; status and runMissed are not", () =>
      Effect.gen(function*() {
        const p = yield* project
        yield* p.declare([item("a"), item("p", { scheduledAt: PAST })])
        const changed = item("a", {
          scheduledAt: "2098-01-01T00:00:00Z", url: "http://127.0.0.1:9/b", method: "PUT", headers: { a: "1" }, body: "x",
          title: "t", tags: ["more"], retry: {}
        })
        const answer = yield* p.declare([changed, item("p", { scheduledAt: PAST })], { runMissed: true })
        assert.deepStrictEqual(entryLines(answer), [
          "updated job a [scheduledAt,url,method,headers,body,title,tags,retry]",
          // States: "skipped, item unchanged and run-missed true alone: skipped"
          "unchanged job p"
        ])
        assert.strictEqual((yield* triggerRow(idOf(answer, "p"))).status, "skipped")
      }))

    it.effect("3: a now-based time is recomputed on every call: updated while pending", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([item("n", { scheduledAt: "now | add 1h" })])
        const second = yield* p.declare([item("n", { scheduledAt: "now | add 1h" })])
        assert.deepStrictEqual(entryLines(second), ["updated job n [scheduledAt]"])
        assert.strictEqual(idOf(second, "n"), idOf(first, "n"))
      }))

    it.effect("4: cancelled — keys absent from items, every keyless pending trigger, held-back queued one-shots; one-shots then generators", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([gen("g"), item("a"), item("p", { scheduledAt: PAST }), item(undefined), item("q"), item(undefined, { title: "held" })])
        const keyless = first.operations.filter((e) => e.customKey === null).map((e) => e.id)
        yield* holdBack(idOf(first, "q"))
        yield* holdBack(keyless[1]!)
        const second = yield* p.declare([item(undefined)])
        // the item first, then the cancelled one-shots (oldest first: these were created in one call, in any
        // order within its millisecond), then the generators
        const lines = entryLines(second)
        assert.deepStrictEqual([lines[0], lines[6]], ["added job -", "cancelled generator g"])
        assert.sameMembers(lines.slice(1, 6), ["cancelled job a", "cancelled job p", "cancelled job -", "cancelled job q", "cancelled job -"])
        assert.strictEqual(second.summary.cancelled, 6)
        for (const id of [idOf(first, "g"), idOf(first, "a"), idOf(first, "p"), idOf(first, "q"), ...keyless]) {
          assert.strictEqual(yield* statusOf(id), "cancelled", id)
        }
        // keyless items are re-created with new ids each call
        const third = yield* p.declare([item(undefined)])
        assert.deepStrictEqual(entryLines(third), ["added job -", "cancelled job -"])
        assert.strictEqual(third.operations[1]!.id, second.operations[0]!.id)
      }))

    it.effect("4: never touched — running, completed, cancelled, queued claimed by a node, triggers without the tag", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([item("run"), item("done"), item("gone"), item("claimed")])
        yield* setStatus(idOf(first, "run"), "running")
        yield* setStatus(idOf(first, "done"), "completed")
        yield* setStatus(idOf(first, "gone"), "cancelled")
        yield* setStatus(idOf(first, "claimed"), "queued")
        const other = yield* declared(p.key, { tag: "elsewhere", items: [item("x")] })
        const plain = yield* scheduled({ "ttr-api-key": p.key, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-tags": "unrelated" })
        const answer = yield* p.declare([])
        assert.deepStrictEqual(entryLines(answer), [])
        const expected = [["run", "running"], ["done", "completed"], ["gone", "cancelled"], ["claimed", "queued"]] as const
        for (const [key, status] of expected) assert.strictEqual(yield* statusOf(idOf(first, key)), status, key)
        assert.strictEqual(yield* statusOf(idOf(other, "x")), "registered")
        assert.strictEqual(yield* statusOf(plain.triggerId), "registered")
      }))

    it.effect("4, 6: a cancelled generator's upcoming instance is cancelled with an entry, its held-back instances silently; a kept generator's stay", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([gen("dead"), gen("kept")])
        const [deadUpcoming] = yield* upcomingOf(idOf(first, "dead"))
        const [keptUpcoming] = yield* upcomingOf(idOf(first, "kept"))
        // make each upcoming instance a held-back (queued) one; the materializer brings new upcoming ones
        yield* instanceCameDue(deadUpcoming!.id, "queued")
        yield* instanceCameDue(keptUpcoming!.id, "queued")
        const [deadNext] = yield* upcomingOf(idOf(first, "dead"))
        const [keptNext] = yield* upcomingOf(idOf(first, "kept"))
        const answer = yield* p.declare([gen("kept")])
        assert.deepStrictEqual(entryLines(answer), ["unchanged generator kept", "cancelled job -", "cancelled job -", "cancelled generator dead"])
        assert.sameMembers(answer.operations.slice(1, 3).map((e) => e.id), [deadNext!.id, keptNext!.id])
        assert.strictEqual(yield* statusOf(deadUpcoming!.id), "cancelled")
        assert.strictEqual(yield* statusOf(keptUpcoming!.id), "queued")
      }))

    it.effect("5: every generator with the tag has its upcoming (and a retrying) instance cancelled and re-created on every call", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([gen("g")])
        const id = idOf(first, "g")
        const [up] = yield* upcomingOf(id)
        yield* instanceCameDue(up!.id, "retrying")
        const [up2] = yield* upcomingOf(id)
        const answer = yield* p.declare([gen("g")])
        assert.deepStrictEqual(entryLines(answer), ["unchanged generator g", "cancelled job -", "cancelled job -"])
        assert.deepStrictEqual(answer.operations.slice(1).map((e) => e.id), [up!.id, up2!.id])
        const [up3] = yield* upcomingOf(id)
        assert.notInclude([up!.id, up2!.id], up3!.id)
      }))

    it.effect("7: past one-shots are skipped, except now-based values and runMissed; moving into the past: skipped, entry updated", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([item("past", { scheduledAt: PAST }), item("move"), item("nowish", { scheduledAt: "now | subtract 1h" })])
        assert.deepStrictEqual(entryLines(first), ["skipped job past", "added job move", "added job nowish"])
        const moved = yield* p.declare([item("past", { scheduledAt: PAST }), item("move", { scheduledAt: PAST })])
        assert.deepStrictEqual(entryLines(moved).slice(0, 2), ["unchanged job past", "updated job move [scheduledAt]"])
        assert.strictEqual(yield* statusOf(idOf(first, "move")), "skipped")
        const missed = yield* declared(p.key, { tag: "rule7b", items: [item("late", { scheduledAt: PAST, retry: { strategy: "none" } })], runMissed: true })
        assert.deepStrictEqual(entryLines(missed), ["added job late"])
      }))

    it.effect("8: a key matches only pending triggers: a new trigger for a held-back queued, completed or cancelled one, which stays", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([item("q"), item("c"), item("x")])
        yield* holdBack(idOf(first, "q"))
        yield* setStatus(idOf(first, "c"), "completed")
        yield* setStatus(idOf(first, "x"), "cancelled")
        const second = yield* p.declare([item("q"), item("c"), item("x")])
        assert.deepStrictEqual(entryLines(second), ["added job q", "added job c", "added job x"])
        assert.strictEqual(yield* statusOf(idOf(first, "q")), "queued")
        assert.strictEqual(yield* statusOf(idOf(first, "c")), "completed")
        for (const key of ["q", "c", "x"]) assert.notStrictEqual(idOf(second, key), idOf(first, key))
      }))

    it.effect("9: a key is matched only within the tag; /schedule then edits the trigger outside any tag", () =>
      Effect.gen(function*() {
        const p = yield* project
        const outside = yield* scheduled({ "ttr-api-key": p.key, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-custom-key": "k" })
        const outsideGen = yield* scheduled({ "ttr-api-key": p.key, "ttr-url": URL, "ttr-scheduled-at": DAILY, "ttr-custom-key": "kg" })
        const answer = yield* p.declare([item("k"), item("kg")])
        assert.deepStrictEqual(entryLines(answer), ["added job k", "added job kg"])
        const again = yield* p.declare([item("k"), item("kg")])
        assert.deepStrictEqual(entryLines(again), ["unchanged job k", "unchanged job kg"])
        // another tag: a third trigger with the same key
        const other = yield* declared(p.key, { tag: "rule9b", items: [item("k")] })
        assert.deepStrictEqual(entryLines(other), ["added job k"])
        // /schedule with the key edits the unscoped one
        const edit = yield* scheduled({ "ttr-api-key": p.key, "ttr-url": URL, "ttr-scheduled-at": "2097-01-01T00:00:00Z", "ttr-custom-key": "k" })
        assert.deepStrictEqual([edit.operation, edit.triggerId], ["reschedule", outside.triggerId])
        assert.strictEqual((yield* triggerRow(idOf(answer, "k"))).scheduled_at!.toISOString(), FAR)
        assert.strictEqual(yield* statusOf(outsideGen.triggerId), "active")
      }))

    it.effect("9: a declared trigger edited away from its tag by /schedule is outside it; the next call creates the key again", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([item("e")])
        const edit = yield* scheduled({ "ttr-api-key": p.key, "ttr-url": URL, "ttr-scheduled-at": FAR, "ttr-custom-key": "e" })
        assert.strictEqual(edit.triggerId, idOf(first, "e"))
        assert.deepStrictEqual([...(yield* triggerRow(idOf(first, "e"))).tags], [])
        const second = yield* p.declare([item("e")])
        assert.deepStrictEqual(entryLines(second), ["added job e"])
        assert.strictEqual(yield* statusOf(idOf(first, "e")), "registered")
      }))

    it.effect("10: an empty-string key is never matched: a new trigger each call, the previous one cancelled", () =>
      Effect.gen(function*() {
        const p = yield* project
        const first = yield* p.declare([item("")])
        const second = yield* p.declare([item("")])
        assert.deepStrictEqual(entryLines(second), ["added job -", "cancelled job -"])
        assert.strictEqual(second.operations[1]!.id, first.operations[0]!.id)
      }))

    it.effect("11: a failure mid-call leaves the applied steps and cancels nothing; resending completes the call", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const p = yield* project
        const before = yield* p.declare([item("old")])
        const items = Array.from({ length: 1_500 }, (_, i) => item(`k${i}`))
        const poisoned = [...items.slice(0, 1_200), item("bad", { url: "http://127.0.0.1:9/poison" }), ...items.slice(1_200)]
        yield* sql`ALTER TABLE triggers ADD CONSTRAINT test_poison CHECK (url <> 'http://127.0.0.1:9/poison') NOT VALID`
        const failed = yield* Effect.ensuring(
          declareCall(p.key, { tag: TAG, items: poisoned }),
          sql`ALTER TABLE triggers DROP CONSTRAINT test_poison`.pipe(Effect.orDie)
        )
        assert.strictEqual(failed.status, 500, failed.text)
        // the first step (1,000 items) was applied, the second (with the poison) was not, nothing was cancelled
        const count = (yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM triggers
          WHERE key_scope = ${TAG} AND custom_key LIKE 'k%' AND status = 'registered'
            AND project_id = (SELECT project_id FROM triggers WHERE id = ${idOf(before, "old")})`)[0]!.n
        assert.strictEqual(count, "1000")
        assert.strictEqual(yield* statusOf(idOf(before, "old")), "registered")
        const resent = yield* p.declare(items)
        assert.deepStrictEqual(resent.summary, { unchanged: 1_000, added: 500, skipped: 0, updated: 0, cancelled: 1 })
      }))
  })

  describe("the stored digest of the compared fields (domain/itemDigest.ts, migration 20)", () => {
    const digestOf = (id: string) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.map(sql<{ d: string | null }>`SELECT item_digest AS d FROM triggers WHERE id = ${id}`, (rows) => rows[0]!.d)).pipe(Effect.orDie)

    it.effect("every trigger /declare writes has one; equal fields, however written (header order and case, tag order), are unchanged", () =>
      Effect.gen(function*() {
        const p = yield* project
        const a = item("a", { headers: { b: "2", a: "1" }, tags: ["y", "x"], body: { n: 1 }, retry: { maxAttempts: 2 } })
        const first = yield* p.declare([a, gen("g"), item("keyless-none")])
        for (const entry of first.operations) assert.notStrictEqual(yield* digestOf(entry.id), null, entry.customKey ?? "")
        const same = item("a", { headers: { A: "1", B: "2" }, tags: ["x", "y"], body: { n: 1 }, retry: { maxAttempts: 2 } })
        const again = yield* p.declare([same, gen("g"), item("keyless-none")])
        // (then the generator's upcoming instance, when made already: rule 5)
        assert.deepStrictEqual(entryLines(again).slice(0, 3), ["unchanged job a", "unchanged generator g", "unchanged job keyless-none"])
        const before = yield* digestOf(idOf(first, "a"))
        const changed = yield* p.declare([item("a", { headers: { a: "1", b: "2" }, tags: ["x", "y"], body: { n: 2 } }), gen("g"), item("keyless-none")])
        assert.deepStrictEqual(entryLines(changed).slice(0, 3), ["updated job a [body,retry]", "unchanged generator g", "unchanged job keyless-none"])
        assert.strictEqual(idOf(changed, "a"), idOf(first, "a"))
        const after = yield* digestOf(idOf(changed, "a"))
        assert.notStrictEqual(after, null)
        assert.notStrictEqual(after, before)
      }))

    it.effect("a trigger another writer changed since (/bulk, /schedule's edit) is compared field by field", () =>
      Effect.gen(function*() {
        const p = yield* project
        const items = [item("b"), item("s"), item("q"), gen("g"), ...Array.from({ length: 6 }, (_, i) => item(`same${i}`))]
        const first = yield* p.declare(items)
        const bulk = yield* bulkCall(p.key, { upserts: [item("b", { title: "by bulk", tags: [TAG] })] })
        assert.strictEqual(bulk.status, 200, bulk.text)
        assert.strictEqual(yield* digestOf(idOf(first, "b")), null)
        // /schedule with the key and the tag edits the declared one-shot and generator in place (its method: POST)
        const elsewhere = { "ttr-api-key": p.key, "ttr-url": "http://127.0.0.1:9/elsewhere", "ttr-tags": TAG }
        const q = yield* scheduled({ ...elsewhere, "ttr-scheduled-at": FAR, "ttr-custom-key": "q" })
        const g = yield* scheduled({ ...elsewhere, "ttr-scheduled-at": DAILY, "ttr-custom-key": "g" })
        assert.deepStrictEqual([q.triggerId, g.triggerId], [idOf(first, "q"), idOf(first, "g")])
        for (const key of ["q", "g"]) assert.strictEqual(yield* digestOf(idOf(first, key)), null, key)
        // a status change alone keeps it
        yield* setStatus(idOf(first, "s"), "skipped")
        assert.notStrictEqual(yield* digestOf(idOf(first, "s")), null)
        const again = yield* p.declare(items)
        assert.deepStrictEqual(entryLines(again).slice(0, 4), ["updated job b [title]", "unchanged job s", "updated job q [url,method]", "updated generator g [url,method]"])
        assert.deepStrictEqual([again.summary.unchanged, again.summary.added, again.summary.updated], [7, 0, 3])
        // and written again with the call's digest
        for (const key of ["b", "q", "g"]) assert.notStrictEqual(yield* digestOf(idOf(again, key)), null, key)
        const third = yield* p.declare(items)
        assert.deepStrictEqual([third.summary.unchanged, third.summary.added, third.summary.updated], [10, 0, 0])
      }))
  })
})
