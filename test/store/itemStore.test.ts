// The store of /declare and /bulk on a real database: which triggers each read returns (statuses,
// held-back versus claimed queued triggers, generators' instances, other projects), the
// compare-and-set writes (a status that moved is left alone), the custom-key indexes of migration 3
// (docs/internals.md "/declare and /bulk"), and the apply step of commands/itemWrites.ts when a trigger was claimed
// between the read and the write (/declare carries on, /bulk stops).
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { applyItemWrites } from "../../src/commands/itemWrites.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { parseEncryptionKeys } from "../../src/domain/sealing.ts"
import type { PlannedTrigger, StoredTrigger } from "../../src/domain/itemMatch.ts"
import type { TriggerDefinition } from "../../src/domain/trigger.ts"
import { itemsReadForBulk, itemsReadForDeclare } from "../../src/store/itemReads.ts"
import {
  insertShapesKept, insertText, type ItemTriggerRow, itemTriggersCancel, itemTriggersInsert, itemTriggersUpdate, TriggerColumns
} from "../../src/store/itemWrites.ts"
import { EncryptionKeys } from "../../src/store/sealedRequests.ts"
import { withTransaction } from "../../src/store/transaction.ts"
import { TestDatabase } from "../support/database.ts"
import { ensureProject, insertTrigger, nextId, statusOf, triggerRow, type TriggerFixture } from "../support/fixtures.ts"

const NOW = Date.UTC(2030, 0, 1)
const FAR = Date.UTC(2031, 0, 1)

const newProject = Effect.gen(function*() {
  const id = nextId()
  yield* ensureProject(id)
  return id
})

const definition = (over: Partial<TriggerDefinition> = {}): TriggerDefinition => ({
  url: "http://127.0.0.1:9/x", method: "GET", headers: [["a", "1"]], body: new Uint8Array([0, 1, 255]), contentType: null,
  title: "t", tags: ["tag"], customKey: null, retry: null, ...over
})

const planned = (over: Partial<PlannedTrigger> = {}): PlannedTrigger => ({
  id: nextId(), kind: "job", status: "registered", definition: definition(), schedule: { _tag: "Once", fireAtMs: FAR, nowBased: false }, ...over
})

const ids = (triggers: ReadonlyArray<StoredTrigger>) => triggers.map((t) => t.id)

layer(TestDatabase, { timeout: "60 seconds" })("store of /declare and /bulk", (it) => {
  describe("itemsReadForDeclare", () => {
    it.effect("the tag's pending and held-back triggers and its active generators' live instances, oldest first", () =>
      Effect.gen(function*() {
        const projectId = yield* newProject
        const at = (fixture: Omit<TriggerFixture, "projectId">) => insertTrigger({ projectId, tags: ["t"], ...fixture })
        const registered = yield* at({ customKey: "a", headers: [["X-A", "1"]], body: new Uint8Array([1, 2]), retry: { strategy: "none" } })
        const skipped = yield* at({ status: "skipped" })
        const retrying = yield* at({ status: "retrying" })
        const held = yield* at({ status: "queued" })
        yield* at({ status: "queued", claimedBy: "some-node" })
        yield* at({ status: "running", claimedBy: "some-node" })
        yield* at({ status: "completed" })
        yield* at({ status: "cancelled" })
        const generator = yield* at({ kind: "generator", cronExpr: "0 9 * * *", cronTz: "Europe/Paris" })
        // instances need not carry the tag; a running one is not live
        const instance = (minute: number, fixture: Omit<TriggerFixture, "projectId"> = {}) =>
          insertTrigger({ projectId, generatorId: generator, tags: [], scheduledAt: new Date(Date.UTC(2030, 0, 1, 9, minute)), ...fixture })
        const upcoming = yield* instance(3)
        const heldInstance = yield* instance(2, { status: "queued" })
        yield* instance(1, { status: "running", claimedBy: "n" })
        const dead = yield* at({ kind: "generator", status: "cancelled", cronExpr: "0 9 * * *", cronTz: "UTC" })
        yield* insertTrigger({ projectId, generatorId: dead, tags: [] })
        yield* insertTrigger({ projectId, tags: ["other"] })
        const otherProject = yield* newProject
        yield* insertTrigger({ projectId: otherProject, tags: ["t"] })

        const read = yield* itemsReadForDeclare({ projectId, tag: "t" })
        assert.deepStrictEqual(ids(read), [registered, skipped, retrying, held, generator, upcoming, heldInstance])
        const first = read[0]!
        assert.deepStrictEqual(first.definition, {
          url: "http://127.0.0.1:9/hook", method: "POST", headers: [["X-A", "1"]], body: new Uint8Array([1, 2]), contentType: null,
          title: null, tags: ["t"], customKey: "a", retry: { strategy: "none" } as never
        })
        assert.strictEqual(first.scheduledAtMs, Date.UTC(2030, 5, 1))
        assert.deepStrictEqual(read.find((t) => t.id === generator)!.cron, { cronExpr: "0 9 * * *", cronTz: "Europe/Paris" })
        assert.strictEqual(read.find((t) => t.id === upcoming)!.generatorId, generator)
      }))
    it.effect("reads back every field as written (unicode, nulls, header order, any bytes, long bodies, sealed or plain), as /bulk's read does", () =>
      Effect.gen(function*() {
        const projectId = yield* newProject
        const allBytes = new Uint8Array(256).map((_, i) => i)
        const longBody = new Uint8Array(1_000).map((_, i) => (i * 7) % 256)
        const unicode = "é☃ \"q\" \\ \n\t \u00a0 \u2028 𝄞 <&>"
        const definitions: ReadonlyArray<TriggerDefinition> = [
          definition(),
          definition({ headers: [], body: null, title: null, retry: null, tags: ["t"] }),
          definition({ body: new Uint8Array(0), headers: [["Z", "1"], ["a", "2"], ["Z", "0"]], contentType: "text/plain; charset=utf-8" }),
          definition({ url: `http://127.0.0.1:9/${encodeURI(unicode)}`, title: unicode, customKey: unicode, tags: [unicode, "t", "{a,b}"],
            headers: [[unicode, unicode]], body: new TextEncoder().encode(unicode) }),
          definition({ body: allBytes, retry: { strategy: "exponential", maxAttempts: 7, initialDelaySeconds: 3, maxDelaySeconds: 600, jitter: true, retryOn: "5xx" } as never }),
          definition({ body: longBody, method: "PATCH", customKey: "long" })
        ]
        const rows = definitions.map((d, i) => ({
          id: nextId(), shard: i, kind: "job" as const, status: "registered" as const, scheduledAtMs: FAR + i * 1_001, cron: null,
          definition: { ...d, tags: d.tags.includes("t") ? d.tags : [...d.tags, "t"] }
        }))
        const generator = {
          id: nextId(), shard: 9, kind: "generator" as const, status: "active" as const, scheduledAtMs: null,
          cron: { cronExpr: "0 9 * * *", cronTz: "Europe/Paris" }, definition: definition({ tags: ["t"], customKey: "g" })
        }
        const keyring = parseEncryptionKeys(`k1:${Buffer.alloc(32, 7).toString("base64")}`)
        if (typeof keyring === "string") return assert.fail(keyring)
        const sealedRows = rows.map((row) => ({ ...row, id: nextId(), definition: { ...row.definition, tags: [...row.definition.tags, "s"] } }))
        yield* itemTriggersInsert({ projectId, keyScope: "t", rows: [...rows, generator], nowMs: NOW })
        yield* itemTriggersInsert({ projectId, keyScope: null, rows: sealedRows, nowMs: NOW }).pipe(Effect.provideService(EncryptionKeys, keyring))
        const sql = yield* SqlClient.SqlClient
        const sealed = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM triggers WHERE project_id = ${projectId} AND sealed_with = 'k1'`
        assert.strictEqual(sealed[0]!.n, String(sealedRows.length))

        const read = yield* itemsReadForDeclare({ projectId, tag: "t" }).pipe(Effect.provideService(EncryptionKeys, keyring))
        // bytes compared as plain Uint8Arrays (an opened sealed body is a Buffer)
        const plain = (bytes: Uint8Array | null) => (bytes === null ? null : new Uint8Array(bytes))
        const written = [...rows, generator, ...sealedRows].sort((a, b) => (a.id < b.id ? -1 : 1))
        assert.deepStrictEqual(read.map((t) => t.id), written.map((row) => row.id))
        written.forEach((row, i) => {
          const stored = read[i]!
          assert.deepStrictEqual(
            { kind: stored.kind, status: stored.status, generatorId: stored.generatorId, definition: { ...stored.definition, body: plain(stored.definition.body) },
              scheduledAtMs: stored.scheduledAtMs, cron: stored.cron },
            { kind: row.kind, status: row.status, generatorId: null, definition: { ...row.definition, body: plain(row.definition.body) },
              scheduledAtMs: row.scheduledAtMs, cron: row.cron }
          )
          assert.strictEqual(stored.keyScope, sealedRows.includes(row as never) ? null : "t")
        })
        // /bulk's read of the same triggers decodes them alike
        const byRows = yield* itemsReadForBulk({ projectId, ids: [], customKeys: [], tags: ["t"] }).pipe(Effect.provideService(EncryptionKeys, keyring))
        assert.deepStrictEqual(read, byRows)
        // empty
        assert.deepStrictEqual(yield* itemsReadForDeclare({ projectId, tag: "none" }), [])
      }))
  })

  describe("itemsReadForBulk", () => {
    it.effect("ids in any status, pending owners of the keys, the tags' live triggers, upcoming instances of generators found", () =>
      Effect.gen(function*() {
        const projectId = yield* newProject
        const done = yield* insertTrigger({ projectId, status: "completed" })
        const keyed = yield* insertTrigger({ projectId, customKey: "k" })
        yield* insertTrigger({ projectId, customKey: "k", status: "completed" })
        const generator = yield* insertTrigger({ projectId, kind: "generator", customKey: "g", cronExpr: "* * * * *", cronTz: "UTC" })
        const upcoming = yield* insertTrigger({ projectId, generatorId: generator, scheduledAt: new Date(Date.UTC(2030, 0, 2)) })
        yield* insertTrigger({ projectId, generatorId: generator, status: "retrying", scheduledAt: new Date(Date.UTC(2030, 0, 1)) })
        const tagged = yield* insertTrigger({ projectId, tags: ["x", "y"] })
        const heldTagged = yield* insertTrigger({ projectId, tags: ["y"], status: "queued" })
        yield* insertTrigger({ projectId, tags: ["y"], status: "queued", claimedBy: "n" })
        assert.deepStrictEqual(yield* itemsReadForBulk({ projectId, ids: [], customKeys: [], tags: [] }), [])
        const read = yield* itemsReadForBulk({ projectId, ids: [done, "01890000-0000-7000-8000-000000000000"], customKeys: ["k", "g"], tags: ["y", "z"] })
        assert.deepStrictEqual(ids(read), [done, keyed, generator, upcoming, tagged, heldTagged])
      }))
  })

  describe("compare-and-set writes", () => {
    it.effect("update and cancel leave a trigger of another project alone, whatever its id and status", () =>
      Effect.gen(function*() {
        const projectId = yield* newProject
        const other = yield* newProject
        const theirs = yield* insertTrigger({ projectId: other })
        const mine = yield* insertTrigger({ projectId })
        const row = (id: string) => ({
          id, shard: 0, kind: "job" as const, status: "registered" as const, scheduledAtMs: FAR, cron: null,
          definition: definition({ title: "changed" }), expectedStatus: "registered" as const
        })
        const updated = yield* itemTriggersUpdate({ projectId, nowMs: NOW, rows: [row(theirs), row(mine)] })
        assert.deepStrictEqual(updated.map((r) => r.id), [mine])
        assert.strictEqual((yield* triggerRow(theirs)).title, null)
        const cancelled = yield* itemTriggersCancel({
          projectId, nowMs: NOW, rows: [{ id: theirs, expectedStatus: "registered" }, { id: mine, expectedStatus: "registered" }]
        })
        assert.deepStrictEqual(cancelled.map((r) => r.id), [mine])
        assert.deepStrictEqual([yield* statusOf(theirs), yield* statusOf(mine)], ["registered", "cancelled"])
      }))

    it.effect("cancel: only while the status is the one read, a queued one only while no node claimed it", () =>
      Effect.gen(function*() {
        const projectId = yield* newProject
        const a = yield* insertTrigger({ projectId })
        const b = yield* insertTrigger({ projectId, status: "running" })
        const held = yield* insertTrigger({ projectId, status: "queued" })
        const claimed = yield* insertTrigger({ projectId, status: "queued", claimedBy: "n" })
        const rows = yield* itemTriggersCancel({
          projectId, nowMs: NOW,
          rows: [{ id: a, expectedStatus: "registered" }, { id: b, expectedStatus: "registered" }, { id: held, expectedStatus: "queued" },
            { id: claimed, expectedStatus: "queued" }]
        })
        assert.sameMembers(rows.map((row) => row.id), [a, held])
        assert.deepStrictEqual([yield* statusOf(a), yield* statusOf(b), yield* statusOf(held), yield* statusOf(claimed)],
          ["cancelled", "running", "cancelled", "queued"])
      }))

    it.effect("insert and update many in one statement each; an update whose status moved is left alone", () =>
      Effect.gen(function*() {
        const projectId = yield* newProject
        const one = planned({ definition: definition({ customKey: "one", retry: { strategy: "fixed", maxAttempts: 2, initialDelaySeconds: 1, maxDelaySeconds: null, jitter: false, retryOn: "non_2xx" } }) })
        const gen = planned({ kind: "generator", status: "active", schedule: { _tag: "Cron", cronExpr: "0 9 * * *", cronTz: "UTC" } })
        const rowOf = (p: PlannedTrigger) => ({
          id: p.id, shard: 3, kind: p.kind, status: p.status, definition: p.definition,
          scheduledAtMs: p.schedule._tag === "Once" ? p.schedule.fireAtMs : null,
          cron: p.schedule._tag === "Cron" ? { cronExpr: p.schedule.cronExpr, cronTz: p.schedule.cronTz } : null
        })
        yield* itemTriggersInsert({ projectId, keyScope: "t", rows: [rowOf(one), rowOf(gen)], nowMs: NOW })
        const stored = yield* triggerRow(one.id)
        assert.deepStrictEqual([stored.status, stored.due_at?.getTime(), stored.shard, [...stored.tags], stored.body], ["registered", FAR, 3, ["tag"], new Uint8Array([0, 1, 255])])
        assert.deepStrictEqual((yield* triggerRow(gen.id)).cron_expr, "0 9 * * *")
        const sql = yield* SqlClient.SqlClient
        assert.strictEqual((yield* sql<{ key_scope: string }>`SELECT key_scope FROM triggers WHERE id = ${one.id}`)[0]!.key_scope, "t")

        yield* sql`UPDATE triggers SET status = 'running' WHERE id = ${gen.id}`
        const updated = yield* itemTriggersUpdate({
          projectId, nowMs: NOW,
          rows: [
            { ...rowOf(one), status: "skipped", definition: definition({ customKey: "one", url: "http://127.0.0.1:9/new" }), expectedStatus: "registered" },
            { ...rowOf(gen), expectedStatus: "active" }
          ]
        })
        assert.deepStrictEqual(updated.map((row) => row.id), [one.id])
        const after = yield* triggerRow(one.id)
        assert.deepStrictEqual([after.status, after.due_at, after.url, after.retry], ["skipped", null, "http://127.0.0.1:9/new", null])
      }))
  })

  describe("rows sent as arrays of columns", () => {
    it.effect("every column reads back as written, by insert and by update: tags that need quoting, no body, nulls, the trace context", () =>
      Effect.gen(function*() {
        const projectId = yield* newProject
        const sql = yield* SqlClient.SqlClient
        const rowOf = (p: PlannedTrigger, shard: number) => ({
          id: p.id, shard, kind: p.kind, status: p.status, definition: p.definition,
          scheduledAtMs: p.schedule._tag === "Once" ? p.schedule.fireAtMs : null,
          cron: p.schedule._tag === "Cron" ? { cronExpr: p.schedule.cronExpr, cronTz: p.schedule.cronTz } : null
        })
        const oddTags = ["a\"b", "back\\slash", "{brace}", "comma,space ", "", "NULL", "é✓"]
        const odd = planned({
          status: "skipped",
          definition: definition({
            headers: [["x-q", "\"quoted\" \\ {x}"], ["x-q", "again"]], body: null, title: null, tags: oddTags, contentType: "text/plain"
          })
        })
        const plain = planned({ definition: definition({ tags: [], customKey: "k" }) })
        const trace = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "a=b" }
        yield* itemTriggersInsert({ projectId, keyScope: null, rows: [rowOf(odd, 7), rowOf(plain, 8)], nowMs: NOW, trace })
        const read = (id: string) =>
          sql<{ tags: ReadonlyArray<string>; headers: unknown; body: Uint8Array | null; title: string | null; content_type: string | null;
            custom_key: string | null; key_scope: string | null; traceparent: string | null; tracestate: string | null; shard: number;
            status: string; scheduled_at: Date; due_at: Date | null; created_at: Date }>`SELECT tags, headers, body, title, content_type,
            custom_key, key_scope, traceparent, tracestate, shard, status, scheduled_at, due_at, created_at FROM triggers WHERE id = ${id}`
            .pipe(Effect.map((rows) => rows[0]!))
        const a = yield* read(odd.id)
        assert.deepStrictEqual([...a.tags], oddTags)
        assert.deepStrictEqual(a.headers, [["x-q", "\"quoted\" \\ {x}"], ["x-q", "again"]])
        assert.deepStrictEqual([a.body, a.title, a.content_type, a.custom_key, a.key_scope, a.shard, a.status],
          [null, null, "text/plain", null, null, 7, "skipped"])
        assert.deepStrictEqual([a.traceparent, a.tracestate], [trace.traceparent, trace.tracestate])
        assert.deepStrictEqual([a.scheduled_at.getTime(), a.due_at, a.created_at.getTime()], [FAR, null, NOW])
        const b = yield* read(plain.id)
        assert.deepStrictEqual([[...b.tags], b.custom_key, b.shard, b.due_at?.getTime(), b.body], [[], "k", 8, FAR, new Uint8Array([0, 1, 255])])

        const updated = yield* itemTriggersUpdate({
          projectId, nowMs: NOW + 1,
          rows: [
            { ...rowOf(odd, 7), status: "registered", definition: definition({ tags: ["x\"y"], body: new Uint8Array([9]) }), expectedStatus: "skipped" },
            { ...rowOf(plain, 8), definition: definition({ tags: oddTags, title: "t\"2", customKey: "k" }), expectedStatus: "registered" }
          ]
        })
        assert.sameMembers(updated.map((row) => row.id), [odd.id, plain.id])
        const a2 = yield* read(odd.id)
        assert.deepStrictEqual([[...a2.tags], a2.body, a2.status, a2.due_at?.getTime(), a2.traceparent], [["x\"y"], new Uint8Array([9]), "registered", FAR, null])
        const b2 = yield* read(plain.id)
        assert.deepStrictEqual([[...b2.tags], b2.title], [oddTags, "t\"2"])
      }))
  })

  describe("a column every row shares goes as one value", () => {
    const RETRY = { strategy: "fixed", maxAttempts: 4, initialDelaySeconds: 5, maxDelaySeconds: null, jitter: false, retryOn: "5xx_and_network" } as const
    /** A row whose values are all fresh objects (headers, body, retry): shared by content, not by reference. */
    const base = (): ItemTriggerRow => ({
      id: nextId(), shard: 3, kind: "job", status: "registered", scheduledAtMs: FAR, cron: null,
      definition: definition({ headers: [["content-type", "application/json"]], body: new Uint8Array([1, 2]), tags: ["a"], retry: { ...RETRY } })
    })
    /** Each changes one column (or the few a generator changes together) of the last row of a call. */
    const changes: ReadonlyArray<readonly [string, (row: ItemTriggerRow) => ItemTriggerRow]> = [
      ["shard", (r) => ({ ...r, shard: 4 })],
      ["status", (r) => ({ ...r, status: "skipped" })],
      ["scheduled_at", (r) => ({ ...r, scheduledAtMs: FAR + 1_000 })],
      ["kind, cron", (r) => ({ ...r, kind: "generator", status: "active", scheduledAtMs: null, cron: { cronExpr: "0 9 * * *", cronTz: "UTC" } })],
      ["url", (r) => ({ ...r, definition: { ...r.definition, url: "http://127.0.0.1:9/y" } })],
      ["method", (r) => ({ ...r, definition: { ...r.definition, method: "POST" } })],
      ["headers", (r) => ({ ...r, definition: { ...r.definition, headers: [["content-type", "text/plain"]] } })],
      ["more headers", (r) => ({ ...r, definition: { ...r.definition, headers: [["content-type", "application/json"], ["x", "1"]] } })],
      ["body", (r) => ({ ...r, definition: { ...r.definition, body: null } })],
      ["content_type", (r) => ({ ...r, definition: { ...r.definition, contentType: "text/plain" } })],
      ["title", (r) => ({ ...r, definition: { ...r.definition, title: null } })],
      ["tags", (r) => ({ ...r, definition: { ...r.definition, tags: ["a", "b\"c"] } })],
      ["custom_key", (r) => ({ ...r, definition: { ...r.definition, customKey: `k-${r.id}` } })],
      ["retry", (r) => ({ ...r, definition: { ...r.definition, retry: { ...RETRY, maxAttempts: 5 } } })],
      ["no retry", (r) => ({ ...r, definition: { ...r.definition, retry: null } })]
    ]

    it("TriggerColumns.shaped: one value per column while every row has it, an array from the first row that differs", () => {
      const columns = (rows: ReadonlyArray<ItemTriggerRow>) => {
        const c = new TriggerColumns(null, rows.length)
        for (const r of rows) c.push(r.id, r.shard, r.kind, r.status, r.scheduledAtMs, r.cron, r.definition)
        return c
      }
      const same = columns([base(), base(), base()]).shaped()
      // only the ids and the bodies differ (bodies are compared by reference): 16 columns of one value each (the digest
      // null), two arrays
      assert.strictEqual(same.uniform, 0b111111111011111110)
      assert.deepStrictEqual([same.arrays.length, same.ones.length], [2, 16])
      assert.deepStrictEqual(same.ones[6]!.value, [["content-type", "application/json"]])
      const url = columns([base(), base(), changes[4]![1](base())])
      const shaped = url.shaped()
      assert.strictEqual(shaped.uniform, 0b111111111011011110)
      assert.deepStrictEqual(shaped.arrays[1]!.value, ["http://127.0.0.1:9/x", "http://127.0.0.1:9/x", "http://127.0.0.1:9/y"])
      // the update's parameters: every column an array
      assert.deepStrictEqual(url.parameters().map((p) => (p.value as ReadonlyArray<unknown>).length), new Array(18).fill(3))
    })

    it("the insert's text of a shape names each shared column by its parameter; at most 64 shapes' texts are kept", () => {
      const text = insertText(0b111111111011011110)
      // ids, url and body unnested after the 5 fixed parameters and the 15 shared columns
      assert.include(text, "unnest($21, $22, $23) AS x(id, url, body)")
      assert.include(text, "$7::text, $6::int4, $8::text")
      for (let shape = 0; shape < 200; shape++) insertText(shape << 1)
      assert.isAtMost(insertShapesKept(), 64)
    })

    it.effect("every row reads back as written whichever columns are shared: each column differing in the last row only, a row alone, all sealed", () =>
      Effect.gen(function*() {
        const projectId = yield* newProject
        const sql = yield* SqlClient.SqlClient
        const keyring = parseEncryptionKeys(`k1:${Buffer.alloc(32, 7).toString("base64")}`)
        if (typeof keyring === "string") return assert.fail(keyring)
        const calls = [...changes.map(([, change]) => [base(), base(), change(base())]), [base()], [base(), base()]]
        for (const rows of calls) yield* itemTriggersInsert({ projectId, keyScope: "scope", rows, nowMs: NOW })
        const sealed = [base(), base()]
        yield* itemTriggersInsert({ projectId, keyScope: null, rows: sealed, nowMs: NOW }).pipe(Effect.provideService(EncryptionKeys, keyring))
        const stored = yield* sql<{
          id: string; shard: number; kind: string; status: string; scheduled_at: Date | null; due_at: Date | null; url: string; method: string
          headers: unknown; body: Uint8Array | null; sealed_with: string | null; content_type: string | null; title: string | null
          tags: ReadonlyArray<string>; custom_key: string | null; retry: unknown; cron_expr: string | null; cron_tz: string | null
          key_scope: string | null; created_at: Date
        }>`SELECT id, shard, kind, status, scheduled_at, due_at, url, method, headers, body, sealed_with, content_type, title, tags,
            custom_key, retry, cron_expr, cron_tz, key_scope, created_at FROM triggers WHERE project_id = ${projectId}`
        const byId = new Map(stored.map((row) => [row.id, row]))
        const rows = calls.flat()
        assert.strictEqual(stored.length, rows.length + sealed.length)
        for (const row of rows) {
          const got = byId.get(row.id)!
          const d = row.definition
          assert.deepStrictEqual(
            { ...got, tags: [...got.tags], body: got.body === null ? null : new Uint8Array(got.body), scheduled_at: got.scheduled_at?.getTime() ?? null,
              due_at: got.due_at?.getTime() ?? null, created_at: got.created_at.getTime() },
            {
              id: row.id, shard: row.shard, kind: row.kind, status: row.status, scheduled_at: row.scheduledAtMs,
              due_at: row.status === "registered" ? row.scheduledAtMs : null, url: d.url, method: d.method,
              headers: d.headers.map(([name, value]) => [name, value]), body: d.body, sealed_with: null, content_type: d.contentType,
              title: d.title, tags: [...d.tags], custom_key: d.customKey, retry: d.retry, cron_expr: row.cron?.cronExpr ?? null,
              cron_tz: row.cron?.cronTz ?? null, key_scope: "scope", created_at: NOW
            },
            row.id
          )
        }
        // sealed: headers and bodies differ row by row (each sealed apart), the key id is shared
        const [s1, s2] = sealed.map((row) => byId.get(row.id)!)
        assert.deepStrictEqual([s1!.sealed_with, s2!.sealed_with, s1!.key_scope], ["k1", "k1", null])
        assert.notDeepEqual(s1!.headers, s2!.headers)
        assert.strictEqual(typeof s1!.headers, "string")
      }))
  })

  describe("custom keys (migration 3)", () => {
    const pendingWith = (projectId: string, customKey: string, keyScope: string | null, tags: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const id = yield* insertTrigger({ projectId, customKey, tags, status: "completed" })
        yield* sql`UPDATE triggers SET key_scope = ${keyScope}, status = 'registered' WHERE id = ${id}`
        return id
      })

    it.effect("one unscoped pending owner per key; one per tag among those still carrying it; a completed one holds nothing", () =>
      Effect.gen(function*() {
        const projectId = yield* newProject
        const unique = (effect: Effect.Effect<unknown, unknown, SqlClient.SqlClient>) =>
          Effect.map(Effect.exit(effect), (exit) => exit._tag === "Failure")
        yield* pendingWith(projectId, "k", null, [])
        assert.isTrue(yield* unique(pendingWith(projectId, "k", null, ["t"])), "two unscoped")
        yield* pendingWith(projectId, "k", "t", ["t"])
        yield* pendingWith(projectId, "k", "u", ["u"])
        assert.isTrue(yield* unique(pendingWith(projectId, "k", "t", ["t", "x"])), "two in scope t")
        // a scoped trigger edited away from its tag no longer holds the key in that scope
        yield* pendingWith(projectId, "k2", "t", [])
        yield* pendingWith(projectId, "k2", "t", ["t"])
        const done = yield* insertTrigger({ projectId, customKey: "k3", status: "completed" })
        assert.isString(done)
        yield* insertTrigger({ projectId, customKey: "k3" })
      }))
  })

  describe("applying item writes when a trigger was claimed after the read", () => {
    const setup = Effect.gen(function*() {
      const projectId = yield* newProject
      const claimedId = yield* insertTrigger({ projectId, customKey: "c", tags: ["tag"], url: "http://127.0.0.1:9/x" })
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE triggers SET status = 'running', claimed_by = 'n' WHERE id = ${claimedId}`
      // what the plan was made from: still registered
      const stored: StoredTrigger = {
        id: claimedId, kind: "job", status: "registered", generatorId: null, definition: definition({ customKey: "c" }),
        scheduledAtMs: FAR, cron: null
      }
      const update = planned({ id: claimedId, definition: definition({ customKey: "c", title: "new" }) })
      const insert = planned({ definition: definition({ customKey: "fresh" }) })
      return { projectId, claimedId, stored, writes: [{ _tag: "Update" as const, trigger: update }, { _tag: "Insert" as const, trigger: insert }] }
    })
    const apply = (s: Effect.Success<typeof setup>, strict: boolean) =>
      withTransaction(applyItemWrites({
        projectId: s.projectId, keyScope: "tag", shards: 8, nowMs: NOW, wakeHorizonMs: NOW, stored: new Map([[s.stored.id, s.stored]]),
        cancelIds: [], writes: s.writes, strict, newId: () => uuidv7(NOW)
      }))

    it.effect("/declare (lenient): the update becomes a new trigger (rule 8), its entry `added`; the claimed one runs on untouched", () =>
      Effect.gen(function*() {
        const s = yield* setup
        const applied = yield* apply(s, false)
        assert.deepStrictEqual(applied.missedUpdates.map((t) => t.id), [s.claimedId])
        const entry = applied.changedEntries.get(s.claimedId)!
        assert.deepStrictEqual([entry.operation, entry.customKey, entry.kind], ["added", "c", "job"])
        assert.notStrictEqual(entry.id, s.claimedId)
        assert.strictEqual((yield* triggerRow(entry.id)).title, "new")
        assert.strictEqual(yield* statusOf(s.claimedId), "running")
        assert.strictEqual(yield* statusOf(s.writes[1]!.trigger.id), "registered")
      }))

    it.effect("/bulk (strict): it stops before inserting anything and reports the miss", () =>
      Effect.gen(function*() {
        const s = yield* setup
        const applied = yield* apply(s, true)
        assert.strictEqual(applied.missedUpdates.length, 1)
        assert.isUndefined(yield* statusOf(s.writes[1]!.trigger.id))
      }))
  })
})
