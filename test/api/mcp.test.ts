// POST /mcp (docs/mcp.md) driven by the official TypeScript MCP client (@modelcontextprotocol/sdk) over
// HTTPS against the in-process service (its self-signed certificate accepted for loopback only):
// initialize in both protocol versions, tools/list (every tool with a schema, read-only ones said
// so), a session that schedules a trigger and sees it at a recording target, reads its executions,
// creates a tag policy, declares a tag, and gets the API's errors (a bad date, an exhausted quota,
// the same messages as the HTTP endpoints). Then the auth matrix of /mcp — key header, Bearer, both,
// none, unknown key, a browser's Origin — and another project's ids never visible, whatever session id
// a request carries. And /mcp without sessions: no answer carries a session id,
// every request stands alone (no session header needed, a sent one ignored, DELETE 405), and many
// initialize calls with big payloads leave no session open on the node (its metrics).
import { assert, describe, it, layer } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import type * as Scope from "effect/Scope"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { fetch as undiciFetch } from "undici"
import { toolCall } from "../../src/api/mcp/results.ts"
import { MalformedRequest, ServiceUnavailable } from "../../src/domain/errors.ts"
import { OpsListener } from "../../src/ops/opsServer.ts"
import { connect, failed, ok } from "../support/mcpClient.ts"
import { call, insecureAgent, TestServer, testServerLayer, type TestResponse } from "../support/server.ts"
import { headerValues, target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"

const TOOLS = [
  "schedule_trigger", "cancel_trigger", "declare_triggers", "bulk_triggers", "list_jobs", "get_job", "list_executions",
  "get_execution", "replay_job", "list_tag_policies", "create_tag_policy", "update_tag_policy", "delete_tag_policy",
  "get_retry_policy", "update_retry_policy", "cron_next", "cancel_by_filter", "replay_by_filter", "get_action",
  "list_target_policies", "create_target_policy", "update_target_policy", "delete_target_policy", "list_targets"
]
const READ_ONLY = [
  "list_jobs", "get_job", "list_executions", "get_execution", "list_tag_policies", "get_retry_policy", "cron_next", "get_action",
  "list_target_policies", "list_targets"
]
const UNKNOWN_ID = "0190b1c2-0000-7000-8000-000000000001"

/** A JSON-RPC error thrown by the client (invalid params, unknown tool). */
const rpcError = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.promise(() => client.callTool({ name, arguments: args }).then(() => undefined, (error: Error) => error))

const keyHeader = (key: string) => ({ "ttr-api-key": key })
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

const INITIALIZE = (protocolVersion: string) => ({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion, capabilities: {}, clientInfo: { name: "raw", version: "1" } }
})

const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" }

/** A raw POST /mcp; the JSON-RPC answer read from JSON or from its event stream. */
const rawMcp = (headers: Record<string, string>, message: unknown, path = "/mcp") =>
  Effect.flatMap(TestServer, (server) =>
    Effect.map(server.call("POST", path, { headers: { ...MCP_HEADERS, ...headers }, body: JSON.stringify(message) }), (response) => ({
      response,
      message: (): any => {
        const contentType = String(response.headers["content-type"] ?? "")
        if (!contentType.startsWith("text/event-stream")) return response.json()
        const data = response.text.split("\n").filter((line) => line.startsWith("data: ")).map((line) => line.slice(6))
        return JSON.parse(data.at(-1)!)
      }
    })))

v8.setFlagsFromString("--expose-gc")
const collectGarbage = vm.runInNewContext("gc") as () => void

/** The heap this process (the in-process service's) uses after a full collection, in MiB. */
const heapUsedMiB = () => {
  collectGarbage()
  collectGarbage()
  return process.memoryUsage().heapUsed / 2 ** 20
}

/** The value of an unlabelled sample in a Prometheus scrape. */
const sampleOf = (scrape: string, name: string): number => {
  const line = scrape.split("\n").find((l) => l.startsWith(`${name} `))
  assert.isDefined(line, `${name} in the scrape`)
  return Number(line!.slice(name.length + 1))
}

const assertError = (response: TestResponse, status: number, body: { _tag: string; message: string }) => {
  assert.strictEqual(response.status, status, response.text)
  assert.deepStrictEqual(response.json(), body)
}

layer(testServerLayer(), { timeout: "120 seconds" })("POST /mcp", (it) => {
  describe("with the official MCP client", () => {
    it.effect("initialize negotiates 2025-06-18 and names the server; 2025-03-26 is accepted too", () =>
      Effect.gen(function*() {
        const key = yield* (yield* TestServer).newKey()
        const { client, transport } = yield* connect(keyHeader(key))
        assert.strictEqual(transport.protocolVersion, "2025-06-18")
        assert.strictEqual(client.getServerVersion()?.name, "timewheel")
        assert.isDefined(client.getServerCapabilities()?.tools)
        assert.include(client.getInstructions() ?? "", "scoped to the project of the API key")

        const old = yield* rawMcp(keyHeader(key), INITIALIZE("2025-03-26"))
        assert.strictEqual(old.response.status, 200, old.response.text)
        assert.strictEqual(old.message().result.protocolVersion, "2025-03-26")
        assert.strictEqual(old.response.headers["mcp-protocol-version"], "2025-03-26")
        // no session: a later request needs none, in the version it names or (none named) 2025-03-26
        assert.isUndefined(old.response.headers["mcp-session-id"])
        assert.isUndefined(transport.sessionId)
        for (const version of [{ "mcp-protocol-version": "2025-03-26" }, { "mcp-protocol-version": "2025-06-18" }, {}]) {
          const listed = yield* rawMcp({ ...keyHeader(key), ...version }, { jsonrpc: "2.0", id: 2, method: "tools/list" })
          assert.strictEqual(listed.response.status, 200, listed.response.text)
          assert.isUndefined(listed.response.headers["mcp-session-id"])
          assert.sameMembers(listed.message().result.tools.map((tool: { name: string }) => tool.name), TOOLS)
        }
        // a version the server does not speak: the transport's 400
        const unsupported = yield* rawMcp({ ...keyHeader(key), "mcp-protocol-version": "1999-01-01" }, { jsonrpc: "2.0", id: 3, method: "tools/list" })
        assert.strictEqual(unsupported.response.status, 400, unsupported.response.text)
      }).pipe(Effect.scoped))

    it.effect("tools/list: every tool with a description and an object schema; read-only tools say so", () =>
      Effect.gen(function*() {
        const key = yield* (yield* TestServer).newKey()
        const { client } = yield* connect(keyHeader(key))
        const { tools } = yield* Effect.promise(() => client.listTools())
        assert.sameMembers(tools.map((tool) => tool.name), TOOLS)
        for (const tool of tools) {
          assert.isAbove((tool.description ?? "").length, 80, tool.name)
          assert.strictEqual(tool.inputSchema.type, "object", tool.name)
          const readOnly = READ_ONLY.includes(tool.name)
          assert.strictEqual(tool.annotations?.readOnlyHint, readOnly, tool.name)
          if (readOnly) assert.strictEqual(tool.annotations?.destructiveHint, false, tool.name)
          assert.isString(tool.annotations?.title, tool.name)
        }
        const schedule = tools.find((tool) => tool.name === "schedule_trigger")!
        assert.sameMembers(schedule.inputSchema.required ?? [], ["url", "scheduledAt"])
        assert.includeMembers(Object.keys(schedule.inputSchema.properties ?? {}), [
          "url", "scheduledAt", "method", "headers", "body", "tags", "title", "customKey", "triggerId", "runMissed", "retry"
        ])
        for (const property of Object.values(schedule.inputSchema.properties ?? {})) assert.isString((property as { description?: string }).description)
        const cancel = tools.find((tool) => tool.name === "cancel_trigger")!
        assert.strictEqual(cancel.annotations?.destructiveHint, true)
      }).pipe(Effect.scoped))

    it.effect("a session: tag policy, a trigger delivered to the target, its executions, a declared tag, the spec's errors", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        const recorder = yield* target
        const { client } = yield* connect(keyHeader(key))

        const policy = yield* ok(client, "create_tag_policy", { tag: "mcp-billing", maxConcurrent: 2, throughput: { "1s": 10 } })
        assert.strictEqual(policy.tag, "mcp-billing")
        assert.strictEqual(policy.maxConcurrent, 2)
        assert.deepStrictEqual(policy.throughput, { "1s": 10 })
        const policies = yield* ok(client, "list_tag_policies")
        assert.deepStrictEqual(policies.policies.map((p: { id: string }) => p.id), [policy.id])

        const scheduled = yield* ok(client, "schedule_trigger", {
          url: `${recorder.origin}/hook?from=mcp`,
          scheduledAt: "now",
          headers: { "content-type": "application/json", "x-trace": "abc", "ttr-api-key": "never-sent", host: "ignored" },
          body: { hello: "world" },
          tags: ["mcp-billing"],
          title: "first"
        })
        assert.strictEqual(scheduled.kind, "job")
        assert.strictEqual(scheduled.operation, "schedule")
        assert.isNumber(scheduled.monthQuotaRemaining)
        const arrival = yield* pollUntil("the delivery", Effect.sync(() => recorder.at("/hook")[0]))
        assert.strictEqual(arrival.method, "POST")
        assert.strictEqual(arrival.url, "/hook?from=mcp")
        assert.strictEqual(arrival.body.toString(), `{"hello":"world"}`)
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "content-type"), ["application/json"])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "x-trace"), ["abc"])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "ttr-api-key"), [])
        assert.deepStrictEqual(headerValues(arrival.rawHeaders, "timewheel-trigger-id"), [scheduled.triggerId])

        const executions = yield* pollUntil("the execution", Effect.map(
          ok(client, "list_executions", { jobId: scheduled.triggerId }),
          (page) => (page.executions.length > 0 ? page : undefined)
        ))
        assert.strictEqual(executions.nextCursor, null)
        const [execution] = executions.executions
        assert.strictEqual(execution.jobId, scheduled.triggerId)
        assert.strictEqual(execution.status, "succeeded")
        assert.strictEqual(execution.httpStatus, 200)
        assert.strictEqual(execution.isDeadLetter, false)
        assert.notProperty(execution, "responseBody")
        const full = yield* ok(client, "get_execution", { id: execution.id })
        assert.strictEqual(full.responseBody, "status 200")
        const job = yield* pollUntil("completed", Effect.map(
          ok(client, "get_job", { id: scheduled.triggerId }),
          (view) => (view.status === "completed" ? view : undefined)
        ))
        assert.deepStrictEqual(job.tags, ["mcp-billing"])
        assert.strictEqual(job.title, "first")
        assert.deepStrictEqual(job.body, { encoding: "text", value: `{"hello":"world"}`, size: 17 })
        assert.strictEqual(job.contentType, "application/json")
        assert.deepStrictEqual(job.headers, { "x-trace": "abc" })

        const declared = yield* ok(client, "declare_triggers", {
          tag: "mcp-nightly",
          items: [
            { url: `${recorder.origin}/nightly`, customKey: "report", scheduledAt: "2099-01-01T00:00:00Z", body: { _tag: "text", value: "hi" } },
            { url: `${recorder.origin}/weekly`, customKey: "weekly", scheduledAt: "cron(0 9 * * MON, Europe/Paris)" }
          ]
        })
        assert.strictEqual(declared.tag, "mcp-nightly")
        assert.deepStrictEqual(declared.summary, { unchanged: 0, added: 2, skipped: 0, updated: 0, cancelled: 0 })
        assert.deepStrictEqual(declared.operations.map((o: { kind: string }) => o.kind), ["job", "generator"])
        const listed = yield* ok(client, "list_jobs", { tag: "mcp-nightly", kind: "job" })
        assert.deepStrictEqual(listed.jobs.map((j: { customKey: string }) => j.customKey), ["report"])
        assert.deepStrictEqual(listed.jobs[0].tags, ["mcp-nightly"])
        assert.notProperty(listed.jobs[0], "body")
        const again = yield* ok(client, "declare_triggers", { tag: "mcp-nightly", items: [] })
        assert.strictEqual(again.summary.cancelled, 2)

        assert.deepStrictEqual(
          yield* failed(client, "schedule_trigger", { url: `${recorder.origin}/x`, scheduledAt: "tomorrow" }),
          { _tag: "BadRequest", message: "Invalid date: tomorrow" }
        )

        const replay = yield* ok(client, "replay_job", { id: scheduled.triggerId })
        assert.deepStrictEqual(replay, { jobId: scheduled.triggerId, status: "queued" })
        yield* pollUntil("the replayed delivery", Effect.sync(() => (recorder.at("/hook").length >= 2 ? true : undefined)))
      }).pipe(Effect.scoped))

    it.effect("an exhausted quota is QuotaExceeded, a bad date still BadRequest (checked first)", () =>
      Effect.gen(function*() {
        const key = yield* (yield* TestServer).newKey({ monthlyQuota: 1 })
        const { client } = yield* connect(keyHeader(key))
        const first = yield* ok(client, "schedule_trigger", { url: "https://example.invalid/a", scheduledAt: "2099-01-01T00:00:00Z" })
        assert.strictEqual(first.monthQuotaRemaining, 0)
        const exceeded = { _tag: "QuotaExceeded", message: "Monthly quota of 1 triggers exceeded" }
        assert.deepStrictEqual(
          yield* failed(client, "schedule_trigger", { url: "https://example.invalid/a", scheduledAt: "2099-01-01T00:00:00Z" }),
          exceeded
        )
        assert.deepStrictEqual(
          yield* failed(client, "schedule_trigger", { url: "https://example.invalid/a", scheduledAt: "now", customKey: "k" }),
          exceeded
        )
        assert.deepStrictEqual(
          yield* failed(client, "schedule_trigger", { url: "https://example.invalid/a", scheduledAt: "soon" }),
          { _tag: "BadRequest", message: "Invalid date: soon" }
        )
        // /declare never uses quota (docs/declare-and-bulk.md)
        const declared = yield* ok(client, "declare_triggers", { tag: "free", items: [{ url: "https://example.invalid/b", scheduledAt: "2099-01-01T00:00:00Z" }] })
        assert.strictEqual(declared.summary.added, 1)
      }).pipe(Effect.scoped))

    it.effect("schedule_trigger answers what /schedule answers, message for message", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        const { client } = yield* connect(keyHeader(key))
        const url = "https://example.invalid/hook"
        const cases: ReadonlyArray<{ readonly args: Record<string, unknown>; readonly headers: Record<string, string> }> = [
          { args: { url: "not a url", scheduledAt: "now" }, headers: { "ttr-url": "not a url", "ttr-scheduled-at": "now" } },
          { args: { url: "ftp://x/", scheduledAt: "now" }, headers: { "ttr-url": "ftp://x/", "ttr-scheduled-at": "now" } },
          {
            args: { url, scheduledAt: "now", tags: Array.from({ length: 11 }, (_, i) => `t${i}`) },
            headers: { "ttr-url": url, "ttr-scheduled-at": "now", "ttr-tags": Array.from({ length: 11 }, (_, i) => `t${i}`).join(",") }
          },
          { args: { url, scheduledAt: "now", tags: ["x".repeat(51)] }, headers: { "ttr-url": url, "ttr-scheduled-at": "now", "ttr-tags": "x".repeat(51) } },
          { args: { url, scheduledAt: "now", tags: ["Billing"] }, headers: { "ttr-url": url, "ttr-scheduled-at": "now", "ttr-tags": "Billing" } },
          { args: { url, scheduledAt: "" }, headers: { "ttr-url": url, "ttr-scheduled-at": "" } },
          { args: { url, scheduledAt: "now | later 5m" }, headers: { "ttr-url": url, "ttr-scheduled-at": "now | later 5m" } },
          { args: { url, scheduledAt: "now | add 5y" }, headers: { "ttr-url": url, "ttr-scheduled-at": "now | add 5y" } },
          { args: { url, scheduledAt: "cron(0 9 * *)" }, headers: { "ttr-url": url, "ttr-scheduled-at": "cron(0 9 * *)" } },
          { args: { url, scheduledAt: "cron(0 9 * * *, Mars/Base)" }, headers: { "ttr-url": url, "ttr-scheduled-at": "cron(0 9 * * *, Mars/Base)" } },
          { args: { url, scheduledAt: "cron(0 9 * * *) | add 1h" }, headers: { "ttr-url": url, "ttr-scheduled-at": "cron(0 9 * * *) | add 1h" } },
          { args: { url, scheduledAt: "now", triggerId: UNKNOWN_ID }, headers: { "ttr-url": url, "ttr-scheduled-at": "now", "ttr-trigger-id": UNKNOWN_ID } },
          {
            args: { url, scheduledAt: "cron(@daily)", triggerId: UNKNOWN_ID },
            headers: { "ttr-url": url, "ttr-scheduled-at": "cron(@daily)", "ttr-trigger-id": UNKNOWN_ID }
          }
        ]
        for (const { args, headers } of cases) {
          const http = yield* server.call("POST", "/schedule", { headers: { ...keyHeader(key), ...headers } })
          assert.isAtLeast(http.status, 400, http.text)
          assert.deepStrictEqual(yield* failed(client, "schedule_trigger", args), http.json(), JSON.stringify(args))
        }
        // a registered trigger edited by id, then no longer registered: Gone, as over HTTP
        const made = yield* ok(client, "schedule_trigger", { url, scheduledAt: "2099-01-01T00:00:00Z", customKey: "edit-me" })
        const edited = yield* ok(client, "schedule_trigger", { url, scheduledAt: "2099-02-01T00:00:00Z", triggerId: made.triggerId, customKey: "edit-me" })
        assert.deepStrictEqual([edited.triggerId, edited.operation, edited.scheduledAt], [made.triggerId, "reschedule", "2099-02-01T00:00:00.000Z"])
        assert.strictEqual(made.status, "registered")
        // a past time is skipped: the status says so, and the warning why (docs/scheduling.md "Past dates")
        const past = yield* ok(client, "schedule_trigger", { url, scheduledAt: "2020-01-01T09:00" })
        assert.deepStrictEqual([past.status, past.warning], [
          "skipped",
          `skipped: 2020-01-01T09:00:00.000Z is not in the future, so the trigger never fires (runMissed: true fires a past time at once); "2020-01-01T09:00" has no offset and was read as UTC`
        ])
        const byKey = yield* ok(client, "schedule_trigger", { url, scheduledAt: "2099-03-01T00:00:00Z", customKey: "edit-me" })
        assert.deepStrictEqual([byKey.triggerId, byKey.operation], [made.triggerId, "reschedule"])
        assert.deepStrictEqual(yield* ok(client, "cancel_trigger", { customKey: "edit-me" }), { cancelled: true, customKey: "edit-me" })
        assert.deepStrictEqual(
          yield* failed(client, "schedule_trigger", { url, scheduledAt: "now", triggerId: made.triggerId }),
          { _tag: "Gone", message: "Job is no longer in registered state" }
        )
        // the per-trigger retry object, the title and run-missed, with the tool's argument names in messages
        assert.deepStrictEqual(
          yield* failed(client, "schedule_trigger", { url, scheduledAt: "now", retry: { maxAttempts: 0 } }),
          { _tag: "BadRequest", message: "retry.maxAttempts must be an integer from 1 to 2147483647" }
        )
        assert.deepStrictEqual(
          yield* failed(client, "schedule_trigger", { url, scheduledAt: "now", title: "café" }),
          { _tag: "BadRequest", message: "Invalid title: ASCII text only" }
        )
        assert.deepStrictEqual(
          yield* failed(client, "schedule_trigger", { url, scheduledAt: "now", headers: { "x-a": "a\u0000b" } }),
          { _tag: "BadRequest", message: "header x-a must not contain U+0000" }
        )
        const retried = yield* ok(client, "schedule_trigger", {
          url, scheduledAt: "2000-01-01T00:00:00Z", runMissed: true, method: "put", retry: { strategy: "fixed", initialDelaySeconds: 5 }
        })
        const view = yield* ok(client, "get_job", { id: retried.triggerId })
        assert.strictEqual(view.method, "PUT")
        assert.notStrictEqual(view.status, "skipped")
        assert.deepStrictEqual(view.retry, { strategy: "fixed", maxAttempts: 3, initialDelaySeconds: 5, maxDelaySeconds: null, jitter: false, retryOn: "5xx_and_network" })
        const skipped = yield* ok(client, "schedule_trigger", { url, scheduledAt: "2000-01-01T00:00:00Z" })
        assert.strictEqual((yield* ok(client, "get_job", { id: skipped.triggerId })).status, "skipped")
        const generator = yield* ok(client, "schedule_trigger", { url, scheduledAt: "cron(0 9 * * MON-FRI, Europe/Paris)", customKey: "gen" })
        assert.strictEqual(generator.kind, "generator")
        const preview = yield* ok(client, "cron_next", { value: "cron(0 9 * * MON-FRI, Europe/Paris)", count: 1 })
        assert.deepStrictEqual(preview.times, [generator.scheduledAt])
        // a wrong type is the JSON-RPC "invalid params" error (the tool form of the API's empty 400)
        const invalid = yield* rpcError(client, "schedule_trigger", { url, scheduledAt: 5 })
        assert.match(String(invalid), /-32602/)
      }).pipe(Effect.scoped))

    it.effect("cancel, bulk, lists with cursors, tag policies, retry policy and cron_next", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        const { client } = yield* connect(bearer(key))
        const url = "https://example.invalid/hook"
        const later = "2099-01-01T00:00:00Z"

        assert.deepStrictEqual(yield* failed(client, "cancel_trigger", {}), {
          _tag: "BadRequest", message: "Must provide either triggerId or customKey argument"
        })
        assert.deepStrictEqual(yield* failed(client, "cancel_trigger", { triggerId: UNKNOWN_ID, customKey: "k" }), {
          _tag: "BadRequest", message: "Provide either triggerId or customKey, not both"
        })
        assert.deepStrictEqual(yield* failed(client, "cancel_trigger", { triggerId: UNKNOWN_ID }), { _tag: "NotFound", message: "Job not found" })
        const one = yield* ok(client, "schedule_trigger", { url, scheduledAt: later })
        assert.deepStrictEqual(yield* ok(client, "cancel_trigger", { triggerId: one.triggerId }), { cancelled: true, triggerId: one.triggerId })
        assert.deepStrictEqual(yield* failed(client, "cancel_trigger", { triggerId: one.triggerId }), {
          _tag: "Gone", message: "Job is no longer cancellable (status=cancelled)"
        })

        const bulk = yield* ok(client, "bulk_triggers", {
          upserts: [
            { url, customKey: "b1", scheduledAt: later, tags: ["bulk"] },
            { url, customKey: "b2", scheduledAt: later, tags: ["bulk"] },
            { url, customKey: "b3", scheduledAt: later, tags: ["bulk"] }
          ],
          cancels: [UNKNOWN_ID, { customKey: "nothing" }]
        })
        assert.deepStrictEqual(bulk.summary, { unchanged: 0, added: 3, skipped: 0, updated: 0, cancelled: 0 })
        assert.deepStrictEqual(yield* failed(client, "bulk_triggers", { upserts: [{ url, customKey: "d" }, { url, customKey: "d" }] }), {
          _tag: "BadRequest", message: "Duplicate customKey in upserts: d"
        })
        assert.deepStrictEqual(yield* failed(client, "bulk_triggers", { cancels: [{ id: UNKNOWN_ID, tag: "bulk" }] }), {
          _tag: "BadRequest",
          message: "Malformed arguments: cancels[0] must be a trigger id, or an object with exactly one of id, customKey, tag"
        })
        assert.deepStrictEqual(yield* failed(client, "declare_triggers", { tag: "x", items: [{ url, scheduledAt: "someday" }] }), {
          _tag: "BadRequest", message: "Item (no customKey): Invalid date: someday"
        })

        const first = yield* ok(client, "list_jobs", { tag: "bulk", limit: 2 })
        assert.strictEqual(first.jobs.length, 2)
        assert.isString(first.nextCursor)
        const second = yield* ok(client, "list_jobs", { tag: "bulk", limit: 2, cursor: first.nextCursor })
        assert.strictEqual(second.jobs.length, 1)
        assert.strictEqual(second.nextCursor, null)
        assert.sameMembers([...first.jobs, ...second.jobs].map((j: { customKey: string }) => j.customKey), ["b1", "b2", "b3"])
        assert.deepStrictEqual(yield* failed(client, "list_jobs", { limit: 501 }), {
          _tag: "BadRequest", message: "limit must be an integer between 1 and 500"
        })
        assert.deepStrictEqual(yield* failed(client, "list_jobs", { cursor: "nope!" }), { _tag: "BadRequest", message: "cursor is invalid" })
        assert.deepStrictEqual(yield* failed(client, "list_executions", { httpStatus: 42 }), {
          _tag: "BadRequest", message: "httpStatus must be an integer between 100 and 599"
        })
        assert.deepStrictEqual(yield* ok(client, "list_executions", { deadLetterOnly: true }), { executions: [], nextCursor: null })
        assert.deepStrictEqual(yield* failed(client, "get_job", { id: "not-a-uuid" }), { _tag: "NotFound", message: "Job not found" })
        assert.deepStrictEqual(yield* failed(client, "get_execution", { id: UNKNOWN_ID }), { _tag: "NotFound", message: "Execution not found" })
        assert.deepStrictEqual(yield* failed(client, "replay_job", { id: first.jobs[0].id }), {
          _tag: "Gone", message: "Job is not completed (status=registered)"
        })

        // tag policies: the documented validation messages, the 409, PUT as a patch, delete
        assert.deepStrictEqual(yield* failed(client, "create_tag_policy", { tag: "p" }), {
          _tag: "BadRequest", message: "At least one of throughput, concurrency, timeout, or retry strategy must be specified"
        })
        assert.deepStrictEqual(yield* failed(client, "create_tag_policy", { tag: "p", maxConcurrent: 0 }), {
          _tag: "BadRequest", message: "maxConcurrent must be ≥ 1"
        })
        assert.deepStrictEqual(yield* failed(client, "create_tag_policy", { tag: "p", throughput: { "1w": 1 } }), {
          _tag: "BadRequest", message: `Malformed arguments: throughput window "1w": a whole number followed by s, m, h or d`
        })
        const policy = yield* ok(client, "create_tag_policy", { tag: "p", requestTimeoutSeconds: 30 })
        assert.deepStrictEqual(yield* failed(client, "create_tag_policy", { tag: "p", maxConcurrent: 1 }), {
          _tag: "Conflict", message: `A tag policy for tag "p" already exists (id ${policy.id})`
        })
        const patched = yield* ok(client, "update_tag_policy", { id: policy.id, maxConcurrent: 3, requestTimeoutSeconds: null })
        assert.deepStrictEqual([patched.tag, patched.maxConcurrent, patched.requestTimeoutSeconds], ["p", 3, null])
        assert.deepStrictEqual(yield* failed(client, "update_tag_policy", { id: policy.id, retryStrategy: "fixed" }), {
          _tag: "BadRequest", message: "retryInitialDelaySeconds is required (≥0) when retryStrategy is 'fixed' or 'exponential'"
        })
        assert.deepStrictEqual(yield* ok(client, "delete_tag_policy", { id: policy.id }), { deleted: true, id: policy.id })
        assert.deepStrictEqual(yield* failed(client, "delete_tag_policy", { id: policy.id }), { _tag: "NotFound", message: "Tag policy not found" })

        // target policies: the same validation, normalised origin, 409, patch, delete; the targets
        assert.deepStrictEqual(yield* failed(client, "create_target_policy", { origin: "https://api.example.com/v1", maxConcurrent: 1 }), {
          _tag: "BadRequest", message: "Invalid origin: https://api.example.com/v1"
        })
        assert.deepStrictEqual(yield* failed(client, "create_target_policy", { origin: "*" }), {
          _tag: "BadRequest", message: "At least one of maxConcurrent, throughput or circuitBreaker must be specified"
        })
        assert.deepStrictEqual(yield* failed(client, "create_target_policy", { origin: "*", circuitBreaker: { failures: 1, cooldownSeconds: 0 } }), {
          _tag: "BadRequest", message: "circuitBreaker.cooldownSeconds must be between 1 and 3600"
        })
        const target = yield* ok(client, "create_target_policy", {
          origin: "HTTPS://API.example.com:443", maxConcurrent: 10, circuitBreaker: { failures: 5, cooldownSeconds: 30 }
        })
        assert.deepStrictEqual([target.origin, target.circuit, target.queued], ["https://api.example.com", "closed", 0])
        assert.deepStrictEqual(yield* failed(client, "create_target_policy", { origin: "https://api.example.com", maxConcurrent: 1 }), {
          _tag: "Conflict", message: `A target policy for origin "https://api.example.com" already exists (id ${target.id})`
        })
        const patchedTarget = yield* ok(client, "update_target_policy", { id: target.id, maxConcurrent: null, throughput: { "1s": 5 } })
        assert.deepStrictEqual([patchedTarget.maxConcurrent, patchedTarget.throughput, patchedTarget.circuitBreaker],
          [null, { "1s": 5 }, { failures: 5, cooldownSeconds: 30 }])
        assert.deepStrictEqual((yield* ok(client, "list_target_policies")).policies.map((p: { id: string }) => p.id), [target.id])
        assert.deepStrictEqual(yield* ok(client, "list_targets"), { targets: [] })
        assert.deepStrictEqual(yield* ok(client, "delete_target_policy", { id: target.id }), { deleted: true, id: target.id })
        assert.deepStrictEqual(yield* failed(client, "delete_target_policy", { id: target.id }), { _tag: "NotFound", message: "Target policy not found" })

        // the project retry policy
        assert.deepStrictEqual(yield* ok(client, "get_retry_policy"), {
          retryStrategy: "exponential", retryMaxAttempts: 3, retryInitialDelaySeconds: 30, retryMaxDelaySeconds: null,
          retryJitter: false, retryOn: "network_only"
        })
        const retry = yield* ok(client, "update_retry_policy", { retryMaxAttempts: 5, retryMaxDelaySeconds: 600 })
        assert.deepStrictEqual([retry.retryMaxAttempts, retry.retryMaxDelaySeconds, retry.retryStrategy], [5, 600, "exponential"])
        assert.deepStrictEqual(yield* failed(client, "update_retry_policy", { retryInitialDelaySeconds: 90000 }), {
          _tag: "BadRequest", message: "retryInitialDelaySeconds must be an integer from 0 to 86400"
        })

        // cron_next: the CLI's times, the API's messages
        const next = yield* ok(client, "cron_next", { value: "cron(30 2 * * *, America/New_York)", from: "2026-03-07T12:00:00Z", count: 3 })
        assert.deepStrictEqual(next, {
          expression: "30 2 * * *",
          timeZone: "America/New_York",
          times: ["2026-03-08T07:30:00.000Z", "2026-03-09T06:30:00.000Z", "2026-03-10T06:30:00.000Z"]
        })
        assert.deepStrictEqual(yield* failed(client, "cron_next", { value: "cron(0 9 * *)" }), {
          _tag: "BadRequest", message: (yield* failed(client, "schedule_trigger", { url, scheduledAt: "cron(0 9 * *)" })).message
        })
        assert.deepStrictEqual(yield* failed(client, "cron_next", { value: "cron(@daily)", from: "yesterday" }), {
          _tag: "BadRequest", message: "Invalid date: yesterday"
        })
        assert.deepStrictEqual(yield* failed(client, "cron_next", { value: "cron(@daily)", count: 0 }), {
          _tag: "BadRequest", message: "count must be an integer between 1 and 100"
        })
      }).pipe(Effect.scoped))
  })

  describe("authentication", () => {
    it.effect("key header, Bearer, both (the key header wins), none, unknown key, another scheme, a browser", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        const other = yield* server.newKey()
        const unknown = `ttr_${"0".repeat(48)}`
        const initialize = (headers: Record<string, string>) => Effect.map(rawMcp(headers, INITIALIZE("2025-06-18")), (r) => r.response)

        for (const headers of [keyHeader(key), bearer(key), { authorization: `bEaReR ${key}` }, { ...keyHeader(key), ...bearer(unknown) }]) {
          const response = yield* initialize(headers)
          assert.strictEqual(response.status, 200, `${JSON.stringify(headers)}: ${response.text}`)
        }
        assertError(yield* initialize({}), 401, { _tag: "Unauthorized", message: "Unauthorized" })
        assertError(yield* initialize({ "ttr-api-key": "" }), 401, { _tag: "Unauthorized", message: "Unauthorized" })
        assertError(yield* initialize({ authorization: `Basic ${key}` }), 401, { _tag: "Unauthorized", message: "Unauthorized" })
        assertError(yield* initialize(keyHeader(unknown)), 401, { _tag: "Unauthorized", message: "Invalid api key" })
        assertError(yield* initialize(bearer(unknown)), 401, { _tag: "Unauthorized", message: "Invalid api key" })
        assertError(yield* initialize({ ...keyHeader(unknown), ...bearer(key) }), 401, { _tag: "Unauthorized", message: "Invalid api key" })
        // a browser (any Origin) is refused before its credentials are looked at
        for (const origin of ["https://evil.example", server.baseUrl, "null"]) {
          const response = yield* initialize({ ...keyHeader(key), origin })
          assert.strictEqual(response.status, 403)
          assert.strictEqual(response.text, "")
        }
        assert.strictEqual((yield* initialize({ origin: "https://evil.example" })).status, 403)
        // the exact path only; other methods need the key too, then 405 (DELETE too: there are no sessions to end)
        assert.strictEqual((yield* rawMcp(keyHeader(key), INITIALIZE("2025-06-18"), "/mcp/")).response.status, 404)
        for (const method of ["GET", "DELETE", "PUT"]) {
          assert.strictEqual((yield* server.call(method, "/mcp", {})).status, 401, method)
          const refused = yield* server.call(method, "/mcp", { headers: { ...keyHeader(key), "mcp-session-id": "00000000-0000-0000-0000-000000000000" } })
          assert.strictEqual(refused.status, 405, method)
          assert.strictEqual(refused.headers["allow"], "POST", method)
        }

        // both headers: the tools act for the key header's project
        const mine = yield* connect({ ...keyHeader(key), ...bearer(other) })
        const made = yield* ok(mine.client, "schedule_trigger", { url: "https://example.invalid/x", scheduledAt: "2099-01-01T00:00:00Z" })
        const theirs = yield* connect(bearer(other))
        assert.deepStrictEqual(yield* failed(theirs.client, "get_job", { id: made.triggerId }), { _tag: "NotFound", message: "Job not found" })
        assert.strictEqual((yield* ok(mine.client, "get_job", { id: made.triggerId })).id, made.triggerId)
      }).pipe(Effect.scoped))

    it.effect("another project's ids are never visible, whatever session id a request carries", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const recorder = yield* target
        const keyA = yield* server.newKey()
        const keyB = yield* server.newKey()
        const a = yield* connect(keyHeader(keyA))
        const b = yield* connect(bearer(keyB))

        const job = yield* ok(a.client, "schedule_trigger", {
          url: `${recorder.origin}/a`, scheduledAt: "now", customKey: "shared-key", tags: ["secret"]
        })
        const execution = (yield* pollUntil("A's execution", Effect.map(
          ok(a.client, "list_executions", { jobId: job.triggerId }),
          (page) => page.executions[0]
        ))) as { id: string }
        const future = yield* ok(a.client, "schedule_trigger", { url: `${recorder.origin}/a`, scheduledAt: "2099-01-01T00:00:00Z", customKey: "future" })
        const policy = yield* ok(a.client, "create_tag_policy", { tag: "secret", maxConcurrent: 5 })

        const notFound = { _tag: "NotFound", message: "Job not found" }
        assert.deepStrictEqual(yield* failed(b.client, "get_job", { id: job.triggerId }), notFound)
        assert.deepStrictEqual(yield* failed(b.client, "replay_job", { id: job.triggerId }), notFound)
        assert.deepStrictEqual(yield* failed(b.client, "cancel_trigger", { triggerId: future.triggerId }), notFound)
        assert.deepStrictEqual(yield* failed(b.client, "cancel_trigger", { customKey: "future" }), notFound)
        assert.deepStrictEqual(yield* failed(b.client, "get_execution", { id: execution.id }), { _tag: "NotFound", message: "Execution not found" })
        assert.deepStrictEqual(yield* ok(b.client, "list_jobs"), { jobs: [], nextCursor: null })
        assert.deepStrictEqual(yield* ok(b.client, "list_jobs", { customKey: "shared-key" }), { jobs: [], nextCursor: null })
        assert.deepStrictEqual(yield* ok(b.client, "list_executions", { jobId: job.triggerId }), { executions: [], nextCursor: null })
        assert.deepStrictEqual(yield* ok(b.client, "list_executions"), { executions: [], nextCursor: null })
        assert.deepStrictEqual(yield* ok(b.client, "list_tag_policies"), { policies: [] })
        const policyNotFound = { _tag: "NotFound", message: "Tag policy not found" }
        assert.deepStrictEqual(yield* failed(b.client, "update_tag_policy", { id: policy.id, maxConcurrent: 1 }), policyNotFound)
        assert.deepStrictEqual(yield* failed(b.client, "delete_tag_policy", { id: policy.id }), policyNotFound)
        // B's bulk cancel of A's id and key is skipped; B's upsert under A's key is B's own trigger
        const bulk = yield* ok(b.client, "bulk_triggers", {
          cancels: [future.triggerId, { customKey: "future" }, { tag: "secret" }],
          upserts: [{ url: `${recorder.origin}/b`, customKey: "future", scheduledAt: "2099-01-01T00:00:00Z" }]
        })
        assert.deepStrictEqual(bulk.summary, { unchanged: 0, added: 1, skipped: 0, updated: 0, cancelled: 0 })
        assert.strictEqual((yield* ok(a.client, "get_job", { id: future.triggerId })).status, "registered")

        // whatever session id a request carries (none is ever given), its calls are its key's project's
        const started = yield* rawMcp(keyHeader(keyA), INITIALIZE("2025-06-18"))
        assert.isUndefined(started.response.headers["mcp-session-id"])
        const getJob = (headers: Record<string, string>) =>
          Effect.map(
            rawMcp({ ...headers, "mcp-protocol-version": "2025-06-18" }, { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "get_job", arguments: { id: job.triggerId } } }),
            (r) => {
              assert.strictEqual(r.response.status, 200, r.response.text)
              return r.message().result
            }
          )
        const someSession = { "mcp-session-id": "00000000-0000-0000-0000-000000000000" }
        assert.strictEqual((yield* getJob(keyHeader(keyA))).isError, false)
        assert.strictEqual((yield* getJob({ ...keyHeader(keyA), ...someSession })).isError, false)
        for (const headers of [keyHeader(keyB), { ...keyHeader(keyB), ...someSession }]) {
          const hijacked = yield* getJob(headers)
          assert.strictEqual(hijacked.isError, true)
          assert.deepStrictEqual(JSON.parse(hijacked.content[0].text), notFound)
        }
      }).pipe(Effect.scoped))
  })

  describe("without sessions", () => {
    it.effect("100 initialize calls of 2 MB each, and as many tool calls, leave no session open on the node, nor anything in its heap", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        const metrics = Effect.map(call(`${(yield* OpsListener).url!}/metrics`, "GET", ""), (scrape) => ({
          open: sampleOf(scrape.text, "timewheel_mcp_sessions"),
          opened: sampleOf(scrape.text, "timewheel_mcp_sessions_opened_total")
        }))
        const before = yield* metrics
        const heapBefore = heapUsedMiB()
        const big = "x".repeat(2 * 1024 * 1024)
        const initialize = {
          ...INITIALIZE("2025-06-18"),
          params: { protocolVersion: "2025-06-18", capabilities: { experimental: { big: { value: big } } }, clientInfo: { name: big, version: "1" } }
        }
        yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) =>
          Effect.gen(function*() {
            const answer = yield* rawMcp(keyHeader(key), { ...initialize, id: i })
            assert.strictEqual(answer.response.status, 200, answer.response.text.slice(0, 300))
            assert.strictEqual(answer.message().result.protocolVersion, "2025-06-18", answer.response.text.slice(0, 300))
            assert.isUndefined(answer.response.headers["mcp-session-id"])
            const called = yield* rawMcp(
              { ...keyHeader(key), "mcp-protocol-version": "2025-06-18" },
              { jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "cron_next", arguments: { value: "cron(0 0 * * *)", count: 1 } } }
            )
            assert.strictEqual(called.message().result.isError, false, called.response.text)
          }), { concurrency: 8 })
        const after = yield* metrics
        // each request had a session of its own, and the server confirmed the end of every one
        assert.strictEqual(after.opened - before.opened, 200)
        assert.strictEqual(after.open, 0)
        // and nothing of them stays in the heap (kept sessions held 2 MB each: 200 MiB), once effect/ai's
        // per-client state of each exchange has expired (10 s idle)
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 11_000)))
        assert.isBelow(heapUsedMiB() - heapBefore, 20)

        // the official client still works end to end with the stateless server
        const { client } = yield* connect(keyHeader(key))
        assert.strictEqual((yield* ok(client, "cron_next", { value: "cron(0 0 1 1 *)", from: "2030-06-01T00:00:00Z", count: 1 })).times[0], "2031-01-01T00:00:00.000Z")
        assert.strictEqual((yield* metrics).open, 0)
      }).pipe(Effect.scoped))
  })

  describe("batches", () => {
    it.effect("a 2025-03-26 batch is answered; one of more than 100 messages is an empty 400 (20,000 went unanswered)", () =>
      Effect.gen(function*() {
        const key = yield* (yield* TestServer).newKey()
        const headers = { ...keyHeader(key), "mcp-protocol-version": "2025-03-26" }
        const both = yield* rawMcp(headers, [{ jsonrpc: "2.0", id: 1, method: "tools/list" }, { jsonrpc: "2.0", id: 2, method: "ping" }])
        assert.strictEqual(both.response.status, 200, both.response.text)
        assert.deepStrictEqual(JSON.parse(both.response.text).map((answer: { id: number }) => answer.id), [1, 2])
        const notifications = (n: number) => Array.from({ length: n }, () => ({ jsonrpc: "2.0", method: "notifications/initialized" }))
        assert.strictEqual((yield* rawMcp(headers, notifications(100))).response.status, 202)
        for (const n of [101, 20_000]) {
          const refused = yield* rawMcp(headers, notifications(n))
          assert.strictEqual(refused.response.status, 400, String(n))
          assert.strictEqual(refused.response.text, "")
        }
      }))
  })

  describe("bounded answers", () => {
    it.effect("get_job leaves out a body whose value would take over 64 KiB in JSON; GET /jobs/{id} has it whole", () =>
      Effect.gen(function*() {
        const server = yield* TestServer
        const key = yield* server.newKey()
        const schedule = (body: string) =>
          Effect.map(server.call("POST", "/schedule", {
            headers: { "ttr-api-key": key, "ttr-url": "http://127.0.0.1:9/hook", "ttr-scheduled-at": "2099-01-01T00:00:00Z", "content-type": "text/plain" },
            body
          }), (response) => response.json().triggerId as string)
        const big = yield* schedule("\u0001".repeat(65_520)) // 65,520 bytes stored, 393,120 as JSON
        const small = yield* schedule("hello")
        const { client } = yield* connect(keyHeader(key))
        assert.deepStrictEqual((yield* ok(client, "get_job", { id: big })).body, { encoding: "text", value: null, size: 65_520, truncated: true })
        assert.deepStrictEqual((yield* ok(client, "get_job", { id: small })).body, { encoding: "text", value: "hello", size: 5 })
        const whole = (yield* server.call("GET", `/jobs/${big}`, { headers: keyHeader(key) })).json().body
        assert.strictEqual(whole.value, "\u0001".repeat(65_520))
      }).pipe(Effect.scoped))
  })

  it.effect("the OpenAPI document lists /mcp", () =>
    Effect.gen(function*() {
      const response = yield* (yield* TestServer).call("GET", "/openapi/json")
      const paths = response.json().paths
      assert.strictEqual(paths["/mcp"].post.operationId, "mcp")
      assert.deepStrictEqual(Object.keys(paths["/mcp"].post.responses).sort(), ["200", "202", "400", "401", "403", "404", "406", "415", "503"])
    }))
})

describe("tool errors", () => {
  it.effect("a spec failure keeps its _tag and message, the empty 400 is a BadRequest, anything else a defect", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(
        yield* Effect.flip(toolCall(Effect.fail(new ServiceUnavailable("Database unavailable")))),
        { _tag: "ServiceUnavailable", message: "Database unavailable" }
      )
      assert.deepStrictEqual(yield* Effect.flip(toolCall(Effect.fail(new MalformedRequest("items[0].url is required (a string)")))), { _tag: "BadRequest", message: "Malformed arguments: items[0].url is required (a string)" })
      const unexpected = yield* Effect.exit(toolCall(Effect.fail(new Error("boom"))))
      assert.isTrue(Exit.isFailure(unexpected) && Cause.hasDies(unexpected.cause))
    }))
})
