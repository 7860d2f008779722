// The bulk actions as MCP tools (docs/mcp.md): list_jobs with the actions' filter fields shows the set a
// dry run counts; cancel_by_filter and replay_by_filter preview (dryRun → {matched}) then act, and
// get_action follows them to completion; a filter matching nothing, an action repeated after it
// finished, another project's triggers untouched, the HTTP endpoint's messages as tool errors. The
// filter's arguments are the fields of GET /jobs and POST /actions, by the same names (outcome too).
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { FILTER_ARGUMENTS } from "../../src/api/mcp/bulkTools.ts"
import { FILTER_FIELDS } from "../../src/domain/triggerFilter.ts"
import { insertDeadLetters, insertTrigger, projectIdOfKey, statusOf } from "../support/fixtures.ts"
import { connect, failed, ok } from "../support/mcpClient.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { target } from "../support/target.ts"
import { pollUntil } from "../support/wait.ts"

/** A project, its id and an MCP client of its key. */
const project = Effect.gen(function*() {
  const key = yield* (yield* TestServer).newKey()
  const projectId = yield* projectIdOfKey(key)
  const { client } = yield* connect({ "ttr-api-key": key })
  return { projectId, client }
})

/** get_action until the action is no longer running. */
const finished = (client: Client, id: string) =>
  pollUntil(`action ${id} to finish`, Effect.map(ok(client, "get_action", { id }), (action) => (action.status === "running" ? undefined : action)))

layer(testServerLayer(), { timeout: "90 seconds" })("bulk actions over MCP", (it) => {
  it.effect("the filter's arguments are the fields of GET /jobs and POST /actions, by the same names; list_jobs takes outcome", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(Object.keys(FILTER_ARGUMENTS), [...FILTER_FIELDS])
      const a = yield* project
      const [dead] = yield* insertDeadLetters([{ projectId: a.projectId }])
      yield* insertTrigger({ projectId: a.projectId })
      const listed = yield* ok(a.client, "list_jobs", { outcome: "dead_letter" })
      assert.deepStrictEqual(listed.jobs.map((job: { id: string }) => job.id), [dead])
    }))

  describe("cancel_by_filter", () => {
    it.effect("list_jobs shows the set, a dry run counts it, the action cancels it; another project untouched; repeated after it finished", () =>
      Effect.gen(function*() {
        const a = yield* project
        const b = yield* project
        const tags = ["churned"]
        const pending = yield* Effect.forEach([1, 2, 3], () => insertTrigger({ projectId: a.projectId, tags, scheduledAt: new Date("2030-04-02T00:00:00Z") }))
        const later = yield* insertTrigger({ projectId: a.projectId, tags, scheduledAt: new Date("2030-09-01T00:00:00Z") })
        const completed = yield* insertTrigger({ projectId: a.projectId, tags, status: "completed", scheduledAt: new Date("2030-04-03T00:00:00Z") })
        const theirs = yield* insertTrigger({ projectId: b.projectId, tags, scheduledAt: new Date("2030-04-02T00:00:00Z") })
        const filter = { tag: "churned", scheduledFrom: "2030-04-01", scheduledTo: "2030-05-01" }

        const listed = yield* ok(a.client, "list_jobs", filter)
        assert.sameMembers(listed.jobs.map((job: { id: string }) => job.id), [...pending, completed])
        assert.deepStrictEqual(yield* ok(a.client, "cancel_by_filter", { filter, dryRun: true }), { matched: 4 })
        assert.strictEqual(yield* statusOf(pending[0]!), "registered")

        const action = yield* ok(a.client, "cancel_by_filter", { filter })
        assert.deepStrictEqual([action.action, action.matched, action.filter], ["cancel", 4, {
          tag: "churned", scheduledFrom: "2030-04-01T00:00:00.000Z", scheduledTo: "2030-05-01T00:00:00.000Z"
        }])
        const done = yield* finished(a.client, action.id)
        assert.deepStrictEqual([done.status, done.processed, done.cancelled, done.untouched], ["completed", 4, 3, { completed: 1 }])
        for (const id of pending) assert.strictEqual(yield* statusOf(id), "cancelled")
        assert.deepStrictEqual([yield* statusOf(later), yield* statusOf(completed), yield* statusOf(theirs)], ["registered", "completed", "registered"])
        assert.deepStrictEqual(yield* failed(b.client, "get_action", { id: action.id }), { _tag: "NotFound", message: "Action not found" })

        const again = yield* ok(a.client, "cancel_by_filter", { filter })
        assert.notStrictEqual(again.id, action.id)
        const repeated = yield* finished(a.client, again.id)
        assert.deepStrictEqual([repeated.matched, repeated.cancelled, repeated.untouched], [4, 0, { cancelled: 3, completed: 1 }])
      }).pipe(Effect.scoped))

    it.effect("a filter matching nothing; the HTTP endpoint's messages as tool errors", () =>
      Effect.gen(function*() {
        const a = yield* project
        yield* insertTrigger({ projectId: a.projectId, tags: ["kept"] })
        const none = yield* ok(a.client, "cancel_by_filter", { filter: { tag: "absent" } })
        assert.deepStrictEqual([none.status, none.matched, none.cancelled], ["completed", 0, 0])
        assert.deepStrictEqual(yield* failed(a.client, "cancel_by_filter", { filter: {} }), {
          _tag: "BadRequest", message: "A cancel needs at least one filter field"
        })
        assert.deepStrictEqual(yield* failed(a.client, "cancel_by_filter", { filter: { scheduledFrom: "next week" }, dryRun: true }), {
          _tag: "BadRequest", message: "Invalid date: next week"
        })
        assert.deepStrictEqual(yield* failed(a.client, "list_jobs", { deadLetter: true, scheduledFrom: "2030-02-01", scheduledTo: "2030-01-01" }), {
          _tag: "BadRequest", message: "scheduledFrom must be before scheduledTo"
        })
      }).pipe(Effect.scoped))
  })

  describe("replay_by_filter", () => {
    it.effect("a dry run, then the dead letters redriven to another URL; another project's untouched", () =>
      Effect.gen(function*() {
        const a = yield* project
        const b = yield* project
        const hooks = yield* target
        const dead = yield* insertDeadLetters([1, 2].map((n) => ({ projectId: a.projectId, url: `${hooks.origin}/down?n=${n}` })))
        yield* insertTrigger({ projectId: a.projectId, url: `${hooks.origin}/down` }) // registered: not a dead letter
        yield* insertDeadLetters([{ projectId: b.projectId, url: `${hooks.origin}/theirs` }])
        const listed = yield* ok(a.client, "list_jobs", { deadLetter: true })
        assert.sameMembers(listed.jobs.map((job: { id: string }) => job.id), dead)
        assert.deepStrictEqual(yield* ok(a.client, "replay_by_filter", { filter: { deadLetter: true }, dryRun: true }), { matched: 2 })

        const action = yield* ok(a.client, "replay_by_filter", { filter: {}, url: `${hooks.origin}/up`, headers: { "x-redrive": "1" } })
        const done = yield* finished(a.client, action.id)
        // an empty filter is every dead letter (the registered trigger is not in the set)
        assert.deepStrictEqual([done.action, done.matched, done.replayed, done.untouched], ["replay", 2, 2, {}])
        yield* pollUntil("two replays", Effect.sync(() => (hooks.at("/up").length === 2 ? true : undefined)))
        assert.strictEqual(hooks.at("/down").length + hooks.at("/theirs").length, 0)

        yield* pollUntil("the replays recorded", Effect.map(ok(a.client, "list_jobs", { deadLetter: true }), (page) => (page.jobs.length === 0 ? true : undefined)))
        const again = yield* ok(a.client, "replay_by_filter", { filter: { deadLetter: true } })
        assert.deepStrictEqual([again.status, again.matched, again.replayed], ["completed", 0, 0])
        assert.deepStrictEqual(yield* failed(a.client, "replay_by_filter", { filter: {}, url: "ftp://x" }), {
          _tag: "BadRequest", message: "Invalid URL: ftp://x"
        })
      }).pipe(Effect.scoped))
  })
})
