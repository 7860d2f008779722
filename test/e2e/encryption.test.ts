// Encryption at rest (docs/encryption.md): with ENCRYPTION_KEYS set, the headers and bodies /schedule,
// /declare, /bulk and generators' instances store are sealed (the rows in PostgreSQL hold neither a
// credential nor the body text), and everything that reads them gets them back: delivery (at its time,
// and a replay), GET /jobs and GET /jobs/{id}, the dashboard's calls, and /declare's diff (an unchanged
// item stays `unchanged`). The headers a bulk replay adds are sealed too, in both tables that hold them
// (bulk_actions.replay, replay_overrides), and the same replay called again while it runs is still the
// same action. Then, on one database: rows written plain and with an older key are re-sealed by `keys
// rotate-encryption` (the CLI, as an operator runs it), the service runs with the new key alone, and a
// start with a key missing for stored rows is refused with one clear line, in-process and as `npm
// start`.
import { assert, describe, it, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import * as crypto from "node:crypto"
import { EncryptionKeysMissing } from "../../src/domain/sealing.ts"
import { DECLARE_WORDING, decodeItem, type Item, validateItems } from "../../src/domain/item.ts"
import { itemDigest } from "../../src/domain/itemDigest.ts"
import { newAdmin, sessionCall, signedIn } from "../support/dashboard.ts"
import { programLines, runChild } from "../support/cli.ts"
import { freshDatabaseUrl } from "../support/database.ts"
import { insertDeadLetters, projectIdOfKey } from "../support/fixtures.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { arrivalsAt, headerValues, target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"

const keyText = () => crypto.randomBytes(32).toString("base64")
const K1 = `k1:${keyText()}`
const K2 = `k2:${keyText()}`
const SECRET = "Bearer s3cr3t-credential-of-the-target"
const BODY = "{\"card\":\"4111 1111 1111 1111\"}"
const FAR = "2099-01-01T00:00:00Z"

/** Every stored row of the project: headers and body as PostgreSQL holds them (text and bytes). */
const storedRows = (projectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ id: string; kind: string; generator_id: string | null; headers: string; body: Uint8Array | null; sealed_with: string | null }>`
      SELECT id, kind, generator_id, headers::text AS headers, body, sealed_with FROM triggers WHERE project_id = ${projectId} ORDER BY id`)

/** Every table holding request material besides triggers: the replays' headers, as PostgreSQL holds them. */
const storedReplays = (projectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ table: string; headers: string; sealed_with: string | null }>`
      SELECT 'bulk_actions' AS table, replay::text AS headers, sealed_with FROM bulk_actions WHERE project_id = ${projectId} AND replay IS NOT NULL
      UNION ALL
      SELECT 'replay_overrides', o.headers::text, o.sealed_with FROM replay_overrides o JOIN triggers t ON t.id = o.trigger_id
        WHERE t.project_id = ${projectId}
      ORDER BY 1`)

/** The body of POST /actions for a bulk replay of the project's dead letters that adds the credential header. */
const replayAction = (url: string) => ({
  action: "replay", filter: { deadLetter: true }, replay: { url, headers: { authorization: SECRET, "x-tenant": "acme" } }
})

/** Neither the credential nor the body appears in a stored row. */
const assertNoPlainText = (rows: ReadonlyArray<{ readonly headers: string; readonly body: Uint8Array | null }>) => {
  for (const row of rows) {
    const stored = row.headers + (row.body === null ? "" : Buffer.from(row.body).toString("latin1"))
    for (const secret of ["s3cr3t-credential", "4111 1111", "authorization", "x-tenant"]) assert.notInclude(stored.toLowerCase(), secret)
  }
}

const call = (method: string, path: string, key: string, body?: unknown) =>
  Effect.flatMap(TestServer, (server) =>
    server.call(method, path, {
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }))

const schedule = (key: string, headers: Record<string, string>, body?: string) =>
  Effect.flatMap(TestServer, (server) =>
    Effect.map(server.call("POST", "/schedule", { headers: { "ttr-api-key": key, ...headers }, ...(body === undefined ? {} : { body }) }), (response) => {
      assert.strictEqual(response.status, 200, response.text)
      return response.json().triggerId as string
    }))

layer(testServerLayer({ ENCRYPTION_KEYS: K1 }), { timeout: "120 seconds", excludeTestServices: true })("ENCRYPTION_KEYS set", (it) => {
  it.effect("/schedule: the row holds no plain text; the target, GET /jobs, the dashboard and a replay get the request back", () =>
    Effect.gen(function*() {
      const t = yield* target
      const server = yield* TestServer
      const key = yield* server.newKey()
      const projectId = yield* projectIdOfKey(key)
      const id = yield* schedule(key, {
        "ttr-url": `${t.origin}/card`, "ttr-scheduled-at": "now", authorization: SECRET, "x-tenant": "acme", "content-type": "application/json"
      }, BODY)
      const [arrival] = yield* arrivalsAt(t, "/card", 1)
      assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "authorization"), [SECRET])
      assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "x-tenant"), ["acme"])
      assert.strictEqual(arrival!.body.toString("utf8"), BODY)

      const rows = yield* storedRows(projectId)
      assert.deepStrictEqual(rows.map((row) => row.sealed_with), ["k1"])
      assertNoPlainText(rows)

      const view = (yield* call("GET", `/jobs/${id}`, key)).json()
      assert.deepStrictEqual(view.headers, { authorization: SECRET, "x-tenant": "acme" })
      assert.deepStrictEqual([view.body, view.contentType], [{ encoding: "text", value: BODY, size: BODY.length }, "application/json"])
      const listed = (yield* call("GET", "/jobs", key)).json().jobs
      assert.deepStrictEqual(listed.map((job: { headers: unknown; body: unknown }) => [job.headers, job.body]), [[view.headers, view.body]])

      // the dashboard reads through its session
      const admin = yield* newAdmin
      const session = yield* signedIn(admin.email, admin.password)
      const dashboard = yield* sessionCall(session, "GET", `/jobs/${id}`, { project: projectId })
      assert.strictEqual(dashboard.status, 200, dashboard.text)
      assert.deepStrictEqual([dashboard.json().headers, dashboard.json().body], [view.headers, view.body])

      // a replay reads the sealed row again
      yield* pollUntil("completed", Effect.map(call("GET", `/jobs/${id}`, key), (r) => (r.json().status === "completed" ? true : undefined)))
      const replay = yield* call("POST", `/jobs/${id}/executions`, key, { triggeredBy: "retry" })
      assert.isTrue(replay.status < 300, replay.text)
      const [, again] = yield* arrivalsAt(t, "/card", 2)
      assert.deepStrictEqual(headerValues(again!.rawHeaders, "authorization"), [SECRET])
      assert.strictEqual(again!.body.toString("utf8"), BODY)
    }))

  it.effect("a bulk replay's headers are sealed with the action and with each trigger; the same replay again is the same action", () =>
    Effect.gen(function*() {
      const t = yield* target
      const server = yield* TestServer
      const sql = yield* SqlClient.SqlClient
      const key = yield* server.newKey()
      const projectId = yield* projectIdOfKey(key)
      const ids = yield* insertDeadLetters(Array.from({ length: 3 }, () => ({ projectId, url: "http://127.0.0.1:9/old" })))
      // a claim-like lock on one dead letter: the action waits there, still running
      const locked = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT 1 FROM triggers WHERE id = ${ids.at(-1)!} FOR UPDATE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(release)
      })))
      yield* Deferred.await(locked)
      const body = replayAction(`${t.origin}/redrive`)
      const first = yield* call("POST", "/actions", key, body)
      assert.strictEqual(first.status, 202, first.text)
      const again = yield* call("POST", "/actions", key, body)
      assert.strictEqual(again.json().id, first.json().id, "sealed differently each time, still the same replay")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)

      const arrivals = yield* arrivalsAt(t, "/redrive", 3)
      for (const arrival of arrivals) assert.deepStrictEqual(headerValues(arrival.rawHeaders, "authorization"), [SECRET])
      const rows = yield* storedReplays(projectId)
      assert.deepStrictEqual(rows.map((row) => [row.table, row.sealed_with]), [
        ["bulk_actions", "k1"], ["replay_overrides", "k1"], ["replay_overrides", "k1"], ["replay_overrides", "k1"]
      ])
      assertNoPlainText(rows.map((row) => ({ headers: row.headers, body: null })))
    }))

  it.effect("a body over 64 KiB: listed with its plain size and encoding, whole in GET /jobs/{id}", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const key = yield* server.newKey()
      const big = "é".repeat(40_000) // 80,000 bytes of UTF-8
      const id = yield* schedule(key, { "ttr-url": "http://127.0.0.1:9/big", "ttr-scheduled-at": FAR }, big)
      const [listed] = (yield* call("GET", "/jobs", key)).json().jobs
      assert.deepStrictEqual(listed.body, { encoding: "text", value: null, size: 80_000, truncated: true })
      assert.strictEqual((yield* call("GET", `/jobs/${id}`, key)).json().body.value, big)
      const binary = crypto.randomBytes(70_000)
      binary[0] = 0xff // not UTF-8 from its first byte
      yield* Effect.flatMap(TestServer, (s) => s.call("POST", "/schedule", {
        headers: { "ttr-api-key": key, "ttr-url": "http://127.0.0.1:9/bin", "ttr-scheduled-at": FAR }, body: binary
      }))
      const [newest] = (yield* call("GET", "/jobs", key)).json().jobs
      assert.deepStrictEqual(newest.body, { encoding: "base64", value: null, size: 70_000, truncated: true })
    }))

  it.effect("/declare, /bulk and a generator's instances store sealed rows; declaring the same items again changes nothing", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const key = yield* server.newKey()
      const projectId = yield* projectIdOfKey(key)
      const item = (customKey: string, scheduledAt = FAR) => ({
        customKey, url: "http://127.0.0.1:9/declared", scheduledAt, method: "POST",
        headers: { authorization: SECRET, "x-tenant": "acme" }, body: { _tag: "text", value: BODY }
      })
      const declare = { tag: "sealed", items: [item("a"), item("b"), item("every-minute", "cron(* * * * *)")] }
      const first = yield* call("POST", "/declare", key, declare)
      assert.deepStrictEqual(first.json().summary, { unchanged: 0, added: 3, skipped: 0, updated: 0, cancelled: 0 })
      const bulk = yield* call("POST", "/bulk", key, { upserts: [item("c")], cancels: [] })
      assert.strictEqual(bulk.status, 200, bulk.text)
      const again = yield* call("POST", "/declare", key, declare)
      assert.deepStrictEqual(again.json().summary, { unchanged: 3, added: 0, skipped: 0, updated: 0, cancelled: 0 })
      // the digests of the compared fields (domain/itemDigest.ts) are keyed: not the plain SHA-256 of the item's fields
      const digests = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ custom_key: string; item_digest: string | null }>`
          SELECT custom_key, item_digest FROM triggers WHERE project_id = ${projectId} AND custom_key IN ('a', 'b')`)
      const validated = validateItems([decodeItem(item("a"))], Date.now(), DECLARE_WORDING, "sealed")
      assert.strictEqual(validated._tag, "Ok")
      const plain = itemDigest((validated as { readonly items: ReadonlyArray<Item> }).items[0]!, null)
      assert.strictEqual(digests.length, 2)
      for (const row of digests) assert.notInclude([null, plain], row.item_digest, row.custom_key)
      assert.strictEqual(digests[0]!.item_digest, digests[1]!.item_digest)

      // a, b, the generator, c, and the generator's instance (made by the materializer, copying the sealed generator)
      const rows = yield* pollUntil("the generator's instance", Effect.map(storedRows(projectId), (rows) => (rows.length === 5 ? rows : undefined)))
      assert.strictEqual(rows.filter((row) => row.generator_id !== null).length, 1)
      assert.deepStrictEqual(new Set(rows.map((row) => row.sealed_with)), new Set(["k1"]))
      assertNoPlainText(rows)
      for (const job of (yield* call("GET", "/jobs", key)).json().jobs) {
        assert.deepStrictEqual(job.headers, { authorization: SECRET, "x-tenant": "acme" })
        assert.deepStrictEqual(job.body, { encoding: "text", value: BODY, size: BODY.length })
      }
    }))
})

describe("keys rotate-encryption and missing keys", () => {
  it.live("plain and k1 rows are re-sealed with k2; k2 alone reads and delivers them; a start without k2 is refused", () =>
    Effect.scoped(Effect.gen(function*() {
      const databaseUrl = yield* freshDatabaseUrl
      const withService = <A, E>(env: Record<string, string>, use: Effect.Effect<A, E, TestServer | SqlClient.SqlClient | Scope.Scope>) =>
        Effect.scoped(Effect.flatMap(Layer.build(testServerLayer({ DATABASE_URL: databaseUrl, ...env })), (context) =>
          Effect.provideContext(use, context)))
      const far = (key: string, path: string) =>
        schedule(key, { "ttr-url": `http://127.0.0.1:9${path}`, "ttr-scheduled-at": FAR, authorization: SECRET }, BODY)

      // written plain (no keys): a trigger, and a bulk replay of a dead letter with its headers; then with k1
      const { key, projectId, plainId } = yield* withService({}, Effect.gen(function*() {
        const key = yield* (yield* TestServer).newKey()
        const projectId = yield* projectIdOfKey(key)
        yield* insertDeadLetters([{ projectId, url: "http://127.0.0.1:9/dead" }])
        const action = yield* call("POST", "/actions", key, replayAction("http://127.0.0.1:9/redrive"))
        assert.strictEqual(action.status, 202, action.text)
        yield* pollUntil("the replay action done", Effect.map(call("GET", `/actions/${action.json().id}`, key),
          (r) => (r.json().status === "completed" ? true : undefined)))
        return { key, projectId, plainId: yield* far(key, "/plain") }
      }))
      const sealedId = yield* withService({ ENCRYPTION_KEYS: K1 }, far(key, "/sealed"))
      // a start without k1 now is refused
      const refused = yield* Effect.exit(withService({}, Effect.void))
      assert.isTrue(refused._tag === "Failure")
      assert.include(String(refused), `stored triggers are sealed with the encryption key "k1", but ENCRYPTION_KEYS is not set`)

      // the operator adds k2 first and re-seals (the CLI, as a child process)
      const cli = yield* Effect.promise(() =>
        runChild("npm", ["run", "--silent", "cli", "--", "keys", "rotate-encryption"], {
          env: { DATABASE_URL: databaseUrl, ENCRYPTION_KEYS: `${K2},${K1}` }, timeoutMs: 90_000
        }))
      assert.strictEqual(cli.code, 0, cli.stderr)
      assert.strictEqual(cli.stdout.trim(),
        `3 triggers and 2 bulk replays' headers sealed with key "k2"; every stored request now is (older keys can leave ENCRYPTION_KEYS)`)

      // k2 alone: the rows read back, and a re-sealed row delivers at its time
      yield* withService({ ENCRYPTION_KEYS: K2 }, Effect.gen(function*() {
        const rows = (yield* storedRows(projectId)).filter((row) => row.id === plainId || row.id === sealedId)
        assert.deepStrictEqual(rows.map((row) => [row.id, row.sealed_with]), [[plainId, "k2"], [sealedId, "k2"]])
        assertNoPlainText(yield* storedRows(projectId))
        const replays = yield* storedReplays(projectId)
        assert.deepStrictEqual(replays.map((row) => [row.table, row.sealed_with]), [["bulk_actions", "k2"], ["replay_overrides", "k2"]])
        assertNoPlainText(replays.map((row) => ({ headers: row.headers, body: null })))
        for (const id of [plainId, sealedId]) {
          const view = (yield* call("GET", `/jobs/${id}`, key)).json()
          assert.deepStrictEqual([view.headers, view.body.value], [{ authorization: SECRET }, BODY])
        }
        // sent (as a replay of it once completed: delivery reads the re-sealed row)
        const t = yield* target
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE triggers SET url = ${`${t.origin}/now`}, status = 'completed', due_at = NULL WHERE id = ${sealedId}`
        const replay = yield* call("POST", `/jobs/${sealedId}/executions`, key, { triggeredBy: "retry" })
        assert.isTrue(replay.status < 300, replay.text)
        const [arrival] = yield* arrivalsAt(t, "/now", 1)
        assert.deepStrictEqual(headerValues(arrival!.rawHeaders, "authorization"), [SECRET])
        assert.strictEqual(arrival!.body.toString("utf8"), BODY)
      }))

      // k1 alone (k2 missing): refused in-process, and by npm start with one line
      const exit = yield* Effect.exit(withService({ ENCRYPTION_KEYS: K1 }, Effect.void))
      assert.isTrue(exit._tag === "Failure" && String(exit.cause).includes(new EncryptionKeysMissing(["k2"], true).message), String(exit))
      const start = yield* Effect.promise(() =>
        runChild("npm", ["start"], { env: { DATABASE_URL: databaseUrl, ENCRYPTION_KEYS: K1, PORT: "0", OPS_PORT: "off" }, timeoutMs: 90_000 }))
      assert.strictEqual(start.code, 1)
      assert.deepStrictEqual(programLines(start.stderr), [`timewheel: ${new EncryptionKeysMissing(["k2"], true).message}`])
    })), 240_000)
})
