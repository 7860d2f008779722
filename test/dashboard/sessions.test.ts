// Dashboard sign-in and sessions against the real service (docs/dashboard.md): the cookie's attributes,
// refusals (wrong password, unknown e-mail, throttling per account and per address, a cross-origin
// or Origin-less POST), sessions bound to their admin, sign-out everywhere, idle and absolute expiry,
// the session on the shared endpoints (Timewheel-Project missing or unknown: 400; never /schedule or
// /cancel), and the dashboard-only endpoints refusing API keys in either header.
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { hashSessionToken, SESSION_COOKIE } from "../../src/domain/auth/signin.ts"
import { projectIdOfKey } from "../support/fixtures.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { cookieOf, newAdmin, sessionCall, signedIn, signInCall } from "../support/dashboard.ts"

const unauthorized = (message: string) => ({ _tag: "Unauthorized", message })

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("dashboard sessions", (it) => {
  it.effect("sign-in sets an HttpOnly, Secure, SameSite=Strict __Host- cookie and answers the admin", () =>
    Effect.gen(function*() {
      const admin = yield* newAdmin
      const response = yield* signInCall(admin.email.toUpperCase(), admin.password)
      assert.strictEqual(response.status, 200, response.text)
      assert.strictEqual(response.json().email, admin.email)
      const setCookie = String(response.headers["set-cookie"])
      assert.match(setCookie, new RegExp(`^${SESSION_COOKIE}=[A-Za-z0-9_-]{43}; Path=/; Max-Age=43200; HttpOnly; Secure; SameSite=Strict$`))
      const token = cookieOf(response)!
      const who = yield* sessionCall(token, "GET", "/session")
      assert.strictEqual(who.status, 200)
      assert.strictEqual(who.json().email, admin.email)
      // only the hash is stored
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM admin_sessions WHERE token_hash = ${hashSessionToken(token)}`
      assert.strictEqual(rows[0]!.n, 1)
    }))

  it.effect("wrong password and unknown e-mail (one holding NUL included: it was a 500): 401 with one message, no cookie", () =>
    Effect.gen(function*() {
      const admin = yield* newAdmin
      const cases = [[admin.email, "wrong password"], ["nobody@example.com", admin.password], [`${admin.email}\u0000`, admin.password], ["\u0000", "\u0000"]] as const
      for (const [email, password] of cases) {
        const response = yield* signInCall(email, password, { "x-test": "1" })
        assert.strictEqual(response.status, 401)
        assert.deepStrictEqual(response.json(), unauthorized("Wrong e-mail or password"))
        assert.isUndefined(cookieOf(response))
      }
      const empty = yield* signInCall(admin.email, "")
      assert.strictEqual(empty.status, 400)
    }))

  it.effect("a POST from another origin, or without Origin, is refused with 403 before anything is checked", () =>
    Effect.gen(function*() {
      const admin = yield* newAdmin
      const cross = yield* signInCall(admin.email, admin.password, { origin: "https://evil.example" })
      assert.strictEqual(cross.status, 403)
      assert.deepStrictEqual(cross.json(), { _tag: "Forbidden", message: "Cross-origin request refused" })
      const server = yield* TestServer
      const bare = yield* server.call("POST", "/session", {
        headers: { "content-type": "application/json" }, body: JSON.stringify(admin)
      })
      assert.strictEqual(bare.status, 403)
      // a session's mutation from another origin too
      const token = yield* signedIn(admin.email, admin.password)
      const key = yield* server.newKey()
      const project = yield* projectIdOfKey(key)
      const policy = yield* sessionCall(token, "POST", "/tag-policies", {
        project, body: `{"tag":"x","maxConcurrent":1}`, headers: { origin: "https://evil.example" }
      })
      assert.strictEqual(policy.status, 403)
      const ok = yield* sessionCall(token, "POST", "/tag-policies", { project, body: `{"tag":"x","maxConcurrent":1}` })
      assert.strictEqual(ok.status, 201, ok.text)
    }))

  it.effect("throttling: the 6th try within 15 minutes of an account with 5 failures is 429, even with the right password", () =>
    Effect.gen(function*() {
      const admin = yield* newAdmin
      for (let i = 0; i < 5; i++) assert.strictEqual((yield* signInCall(admin.email, `wrong ${i}`)).status, 401)
      const refused = yield* signInCall(admin.email, admin.password)
      assert.strictEqual(refused.status, 429)
      assert.deepStrictEqual(refused.json(), { _tag: "TooManyRequests", message: "Too many failed sign-ins for this account; try again in 15 minutes" })
      const retryAfter = Number(refused.headers["retry-after"])
      assert.isTrue(retryAfter > 800 && retryAfter <= 900, String(retryAfter))
      // another account from the same address still signs in
      const other = yield* newAdmin
      assert.strictEqual((yield* signInCall(other.email, other.password)).status, 200)
      // the window passed: allowed again, and a success clears the account's failures
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE signin_failures SET failed_at = failed_at - interval '16 minutes' WHERE scope = 'account' AND subject = ${admin.email.toLowerCase()}`
      assert.strictEqual((yield* signInCall(admin.email, admin.password)).status, 200)
    }))

  it.effect("throttling per address: 20 failures from one address, whatever the accounts, refuse it", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`DELETE FROM signin_failures`
      for (let i = 0; i < 20; i++) assert.strictEqual((yield* signInCall(`nobody-${i}@example.com`, "x")).status, 401)
      const admin = yield* newAdmin
      const refused = yield* signInCall(admin.email, admin.password)
      assert.strictEqual(refused.status, 429)
      assert.strictEqual(refused.json().message, "Too many failed sign-ins from this address; try again in 15 minutes")
      yield* sql`DELETE FROM signin_failures`
    }))

  it.effect("sessions are bound to their admin; sign-out ends the session and clears the cookie", () =>
    Effect.gen(function*() {
      const first = yield* newAdmin
      const second = yield* newAdmin
      const one = yield* signedIn(first.email, first.password)
      const two = yield* signedIn(second.email, second.password)
      assert.strictEqual((yield* sessionCall(one, "GET", "/session")).json().email, first.email)
      assert.strictEqual((yield* sessionCall(two, "GET", "/session")).json().email, second.email)
      const out = yield* sessionCall(one, "DELETE", "/session")
      assert.strictEqual(out.status, 204)
      assert.match(String(out.headers["set-cookie"]), new RegExp(`^${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict$`))
      assert.strictEqual((yield* sessionCall(one, "GET", "/session")).status, 401)
      assert.strictEqual((yield* sessionCall(two, "GET", "/session")).status, 200)
      // a made-up token, and a well-formed unknown one
      assert.strictEqual((yield* sessionCall("nope", "GET", "/session")).status, 401)
      assert.strictEqual((yield* sessionCall("A".repeat(43), "GET", "/session")).status, 401)
    }))

  it.effect("a session ends at its absolute limit and after the idle limit", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const admin = yield* newAdmin
      const absolute = yield* signedIn(admin.email, admin.password)
      yield* sql`UPDATE admin_sessions SET expires_at = now() - interval '1 second' WHERE token_hash = ${hashSessionToken(absolute)}`
      assert.strictEqual((yield* sessionCall(absolute, "GET", "/session")).status, 401)
      const idle = yield* signedIn(admin.email, admin.password)
      yield* sql`UPDATE admin_sessions SET last_seen_at = now() - interval '29 minutes' WHERE token_hash = ${hashSessionToken(idle)}`
      assert.strictEqual((yield* sessionCall(idle, "GET", "/session")).status, 200) // used: seen again now
      yield* sql`UPDATE admin_sessions SET last_seen_at = now() - interval '31 minutes' WHERE token_hash = ${hashSessionToken(idle)}`
      assert.strictEqual((yield* sessionCall(idle, "GET", "/session")).status, 401)
      const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM admin_sessions WHERE token_hash = ${hashSessionToken(idle)}`
      assert.strictEqual(rows[0]!.n, 0) // an ended session is deleted when seen
    }))

  it.effect("on the shared endpoints a session names its project: missing or unknown Timewheel-Project is 400", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const admin = yield* newAdmin
      const token = yield* signedIn(admin.email, admin.password)
      const project = yield* projectIdOfKey(yield* server.newKey())
      const missing = yield* sessionCall(token, "GET", "/jobs")
      assert.strictEqual(missing.status, 400)
      assert.deepStrictEqual(missing.json(), { _tag: "BadRequest", message: "A dashboard session names its project in the Timewheel-Project header" })
      const unknown = yield* sessionCall(token, "GET", "/jobs", { project: "0190f1b2-0000-7000-8000-000000000000" })
      assert.deepStrictEqual(unknown.json(), { _tag: "BadRequest", message: "Unknown project: 0190f1b2-0000-7000-8000-000000000000" })
      assert.strictEqual((yield* sessionCall(token, "GET", "/jobs", { project: "not-a-uuid" })).status, 400)
      for (const path of ["/jobs", "/executions", "/tag-policies", "/project/retry-policy", "/keys", "/alerts", "/overview"]) {
        const ok = yield* sessionCall(token, "GET", path, { project })
        assert.strictEqual(ok.status, 200, `${path}: ${ok.text}`)
      }
      const declare = yield* sessionCall(token, "POST", "/declare", { project, body: `{"tag":"t","items":[]}` })
      assert.strictEqual(declare.status, 200, declare.text)
      const bulk = yield* sessionCall(token, "POST", "/bulk", { project, body: `{"upserts":[],"cancels":[]}` })
      assert.strictEqual(bulk.status, 200, bulk.text)
      // the cookie never authenticates /schedule or /cancel: they see no key (empty 400)
      const schedule = yield* sessionCall(token, "POST", "/schedule", { project, headers: { "ttr-url": "http://127.0.0.1:9/", "ttr-scheduled-at": "now" } })
      assert.strictEqual(schedule.status, 400)
      assert.strictEqual(schedule.text, "")
      const cancel = yield* sessionCall(token, "DELETE", "/cancel", { project, headers: { "ttr-trigger-id": "0190f1b2-0000-7000-8000-000000000000" } })
      assert.strictEqual(cancel.status, 400)
      // without any session: 401
      assert.strictEqual((yield* server.call("GET", "/jobs", { headers: { "timewheel-project": project } })).status, 401)
      assert.strictEqual((yield* server.call("GET", "/keys", { headers: { "timewheel-project": project } })).status, 401)
    }))

  it.effect("the API reference (GET /docs) belongs to no project: a session opens it without Timewheel-Project", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const admin = yield* newAdmin
      const token = yield* signedIn(admin.email, admin.password)
      const docs = yield* sessionCall(token, "GET", "/docs")
      assert.strictEqual(docs.status, 200, docs.text.slice(0, 200))
      assert.include(docs.text, "Scalar.createApiReference")
      // a browser without a session is sent to sign in, and back; an API client gets the 401
      const browser = yield* server.call("GET", "/docs", { headers: { accept: "text/html,application/xhtml+xml" } })
      assert.deepStrictEqual([browser.status, browser.headers["location"]], [303, "/dashboard/sign-in?next=%2Fdocs"])
      const client = yield* server.call("GET", "/docs")
      assert.strictEqual(client.status, 401)
      assert.deepStrictEqual(client.json(), { _tag: "Unauthorized", message: "Unauthorized" })
    }))

  it.effect("a session reaches a project's data only through that project's header: another project's ids are not found", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const keyA = yield* server.newKey()
      const keyB = yield* server.newKey()
      const projectA = yield* projectIdOfKey(keyA)
      const projectB = yield* projectIdOfKey(keyB)
      const scheduled = yield* server.call("POST", "/schedule", {
        headers: { "ttr-api-key": keyB, "ttr-url": "http://127.0.0.1:9/", "ttr-scheduled-at": "now | add 1h" }
      })
      const triggerOfB = scheduled.json().triggerId as string
      const policyOfB = (yield* server.call("POST", "/tag-policies", {
        headers: { "ttr-api-key": keyB, "content-type": "application/json" }, body: `{"tag":"b","maxConcurrent":1}`
      })).json().id as string
      const admin = yield* newAdmin
      const token = yield* signedIn(admin.email, admin.password)
      assert.strictEqual((yield* sessionCall(token, "GET", `/jobs/${triggerOfB}`, { project: projectA })).status, 404)
      assert.strictEqual((yield* sessionCall(token, "POST", `/jobs/${triggerOfB}/cancel`, { project: projectA })).status, 404)
      assert.strictEqual((yield* sessionCall(token, "PUT", `/tag-policies/${policyOfB}`, { project: projectA, body: `{"maxConcurrent":2}` })).status, 404)
      assert.strictEqual((yield* sessionCall(token, "GET", `/jobs/${triggerOfB}`, { project: projectB })).status, 200)
      assert.strictEqual((yield* sessionCall(token, "POST", `/jobs/${triggerOfB}/cancel`, { project: projectB })).status, 204)
    }))

  it.effect("/keys, /keys/{id}, /alerts and /overview answer 401 to an API key in the key header and as Bearer, session or not", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const key = yield* server.newKey()
      const project = yield* projectIdOfKey(key)
      const admin = yield* newAdmin
      const token = yield* signedIn(admin.email, admin.password)
      const calls: ReadonlyArray<readonly [string, string]> = [
        ["GET", "/keys"], ["POST", "/keys"], ["DELETE", "/keys/0190f1b2-0000-7000-8000-000000000000"], ["GET", "/alerts"],
        ["PUT", "/alerts"], ["POST", "/alerts/test"], ["GET", "/overview"], ["POST", "/jobs/0190f1b2-0000-7000-8000-000000000000/cancel"]
      ]
      for (const [method, path] of calls) {
        for (const credentials of [{ "ttr-api-key": key }, { authorization: `Bearer ${key}` }]) {
          const bare = yield* server.call(method, path, { headers: credentials })
          assert.strictEqual(bare.status, 401, `${method} ${path}`)
          assert.deepStrictEqual(bare.json(), unauthorized("API keys are not accepted here: sign in to the dashboard"))
          const withSession = yield* sessionCall(token, method, path, { project, headers: credentials })
          assert.strictEqual(withSession.status, 401, `${method} ${path} with a session`)
        }
      }
    }))

  it.effect("keys: created (clear key shown once), used by /schedule, listed with hint, revoked (401 at once); another project's key is 404", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const project = yield* projectIdOfKey(yield* server.newKey())
      const otherProject = yield* projectIdOfKey(yield* server.newKey())
      const admin = yield* newAdmin
      const token = yield* signedIn(admin.email, admin.password)
      const created = yield* sessionCall(token, "POST", "/keys", { project })
      assert.strictEqual(created.status, 201)
      const { id, key, hint } = created.json()
      assert.match(key, /^ttr_[0-9a-f]{48}$/)
      assert.strictEqual(hint, `ttr_…${key.slice(-4)}`)
      const scheduled = yield* server.call("POST", "/schedule", {
        headers: { "ttr-api-key": key, "ttr-url": "http://127.0.0.1:9/", "ttr-scheduled-at": "now | add 1h" }
      })
      assert.strictEqual(scheduled.status, 200, scheduled.text)
      const listed = (yield* sessionCall(token, "GET", "/keys", { project })).json().keys as Array<any>
      const entry = listed.find((k) => k.id === id)
      assert.deepStrictEqual(Object.keys(entry).sort(), ["createdAt", "hint", "id", "label", "lastUsedAt", "revokedAt"])
      assert.strictEqual(entry.label, null)
      assert.isUndefined(listed.find((k) => "key" in k))
      assert.strictEqual((yield* sessionCall(token, "DELETE", `/keys/${id}`, { project: otherProject })).status, 404)
      assert.strictEqual((yield* sessionCall(token, "DELETE", `/keys/${id}`, { project })).status, 204)
      assert.strictEqual((yield* sessionCall(token, "DELETE", `/keys/${id}`, { project })).status, 404)
      const refused = yield* server.call("POST", "/schedule", {
        headers: { "ttr-api-key": key, "ttr-url": "http://127.0.0.1:9/", "ttr-scheduled-at": "now | add 1h" }
      })
      assert.strictEqual(refused.status, 401)
      const after = (yield* sessionCall(token, "GET", "/keys", { project })).json().keys as Array<any>
      assert.isString(after.find((k) => k.id === id).revokedAt)
    }))

  it.effect("keys: an optional label at creation, trimmed and listed; a bad label or body is a 400 naming it, and no key is made", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const project = yield* projectIdOfKey(yield* server.newKey())
      const admin = yield* newAdmin
      const token = yield* signedIn(admin.email, admin.password)
      const labelled = yield* sessionCall(token, "POST", "/keys", { project, body: JSON.stringify({ label: "  billing worker  " }) })
      assert.strictEqual(labelled.status, 201, labelled.text)
      assert.strictEqual(labelled.json().label, "billing worker")
      for (const body of ["{}", "{\"label\":null}", "{\"label\":\"  \"}"]) {
        const plain = yield* sessionCall(token, "POST", "/keys", { project, body })
        assert.strictEqual(plain.status, 201, plain.text)
        assert.strictEqual(plain.json().label, null)
      }
      const before = (yield* sessionCall(token, "GET", "/keys", { project })).json().keys as Array<any>
      // the project's first key (of the test server) and these four, oldest first
      assert.deepStrictEqual(before.map((k) => k.label), [null, "billing worker", null, null, null])
      for (const [body, message] of [
        [JSON.stringify({ label: "x".repeat(101) }), "label must be at most 100 characters"],
        [JSON.stringify({ label: 5 }), "label must be a string"],
        [JSON.stringify({ label: "a\nb" }), "label must not contain control characters or unpaired surrogates"],
        ["[1]", "body must be a JSON object"]
      ] as const) {
        const refused = yield* sessionCall(token, "POST", "/keys", { project, body })
        assert.strictEqual(refused.status, 400, body)
        assert.strictEqual(refused.json().message, message)
      }
      const after = (yield* sessionCall(token, "GET", "/keys", { project })).json().keys as Array<any>
      assert.strictEqual(after.length, before.length)
    }))

  it.effect("alerts: settings checked field by field; a test alert without a target is 400", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const project = yield* projectIdOfKey(yield* server.newKey())
      const admin = yield* newAdmin
      const token = yield* signedIn(admin.email, admin.password)
      const initial = (yield* sessionCall(token, "GET", "/alerts", { project })).json()
      assert.deepStrictEqual(initial, { webhookUrl: null, emailRecipients: [], emailConfigured: false, recent: [] })
      const noTarget = yield* sessionCall(token, "POST", "/alerts/test", { project })
      assert.strictEqual(noTarget.status, 400)
      const cases: ReadonlyArray<[unknown, string]> = [
        [{ webhookUrl: "ftp://x" }, "webhookUrl is not an absolute http:// or https:// URL: ftp://x"],
        [{ webhookUrl: 5 }, "webhookUrl must be a string or null"],
        [{ emailRecipients: "a@b" }, "emailRecipients must be a list of e-mail addresses"],
        [{ emailRecipients: ["a@b", "nope"] }, `emailRecipients: "nope" is not an e-mail address`]
      ]
      for (const [body, message] of cases) {
        const response = yield* sessionCall(token, "PUT", "/alerts", { project, body: JSON.stringify(body) })
        assert.deepStrictEqual(response.json(), { _tag: "BadRequest", message })
      }
      const saved = yield* sessionCall(token, "PUT", "/alerts", {
        project, body: JSON.stringify({ webhookUrl: "https://chat.example/hook", emailRecipients: [" ops@example.com ", "ops@example.com"] })
      })
      assert.strictEqual(saved.status, 200)
      assert.deepStrictEqual(saved.json().webhookUrl, "https://chat.example/hook")
      assert.deepStrictEqual(saved.json().emailRecipients, ["ops@example.com"])
    }))
})
