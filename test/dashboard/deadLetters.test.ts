// GET /dead-letters (the dashboard's Dead letters page) against the real service: the triggers that
// end in a dead letter now, as the table below says, newest dead letter first, with their last
// attempt; the same set and count as GET /jobs?deadLetter=true, a bulk replay's dry run and the
// overview; paging by cursor; another project's never shown; a session only (an API key is 401).
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { insertDeadLetters, insertExecution, insertTrigger, projectIdOfKey } from "../support/fixtures.ts"
import { TestServer, testServerLayer } from "../support/server.ts"
import { newAdmin, sessionCall, signedIn } from "../support/dashboard.ts"

layer(testServerLayer(), { timeout: "120 seconds", excludeTestServices: true })("GET /dead-letters", (it) => {
  it.effect("lists exactly the triggers whose latest attempt is a dead letter, and counts them as the overview and the filters do", () =>
    Effect.gen(function*() {
      const server = yield* TestServer
      const key = yield* server.newKey()
      const projectId = yield* projectIdOfKey(key)
      const other = yield* projectIdOfKey(yield* server.newKey())
      const at = (minute: number) => new Date(Date.UTC(2030, 5, 1, 0, minute))

      // | trigger                                   | latest attempt         | listed |
      // | dead letter                               | 1, dead letter         | yes    |
      // | dead letter, replayed, dead letter again  | 2, dead letter         | yes    |
      // | dead letter, redriven and delivered       | 2, succeeded           | no     |
      // | retried, then delivered                   | 2, succeeded           | no     |
      // | failed, will retry                        | 1, failed, not dead    | no     |
      // | never attempted                           | none                   | no     |
      // | another project's dead letter             | 1, dead letter         | no     |
      // (executions with ids in time order, as delivery mints them)
      const deadLetter = (title: string, attempts: number) =>
        Effect.gen(function*() {
          const id = yield* insertTrigger({ projectId, title, status: "completed", attempts })
          yield* insertExecution({ projectId, triggerId: id, status: "failed", httpStatus: 500, responseBody: "down", isDeadLetter: true, startedAt: at(0) })
          return id
        })
      const plain = yield* deadLetter("plain", 1)
      const again = yield* deadLetter("again", 2)
      const redriven = yield* deadLetter("redriven", 2)
      yield* insertExecution({
        projectId, triggerId: again, attempt: 2, status: "failed", httpStatus: null, errorKind: "connection_refused",
        errorMessage: "connect ECONNREFUSED 127.0.0.1:9", isDeadLetter: true, startedAt: at(5), triggeredBy: "retry",
        url: "http://127.0.0.1:9/elsewhere", responseBody: null, responseHeaders: null
      })
      yield* insertExecution({ projectId, triggerId: redriven, attempt: 2, startedAt: at(6), triggeredBy: "retry" })
      const delivered = yield* insertTrigger({ projectId, status: "completed", attempts: 2 })
      yield* insertExecution({ projectId, triggerId: delivered, attempt: 1, status: "failed", httpStatus: 503, startedAt: at(1) })
      yield* insertExecution({ projectId, triggerId: delivered, attempt: 2, startedAt: at(2) })
      const retrying = yield* insertTrigger({ projectId, status: "retrying", attempts: 1, dueAt: new Date(Date.UTC(2099, 0, 1)) })
      yield* insertExecution({ projectId, triggerId: retrying, attempt: 1, status: "failed", httpStatus: 500, startedAt: at(3) })
      yield* insertTrigger({ projectId })
      yield* insertDeadLetters([{ projectId: other }])

      const admin = yield* newAdmin
      const token = yield* signedIn(admin.email, admin.password)
      const page = yield* sessionCall(token, "GET", "/dead-letters", { project: projectId })
      assert.strictEqual(page.status, 200, page.text)
      const body = page.json()
      assert.strictEqual(body.count, 2)
      assert.deepStrictEqual(body.triggers.map((t: { id: string }) => t.id), [again, plain], "newest dead letter first")
      assert.deepStrictEqual(body.triggers[0].lastAttempt, {
        id: body.triggers[0].lastAttempt.id, attempt: 2, finishedAt: new Date(at(5).getTime() + 120).toISOString(), httpStatus: null,
        errorKind: "connection_refused", errorCode: null, errorMessage: "connect ECONNREFUSED 127.0.0.1:9", responseExcerpt: null,
        url: "http://127.0.0.1:9/elsewhere", triggeredBy: "retry"
      })
      assert.deepStrictEqual(
        [body.triggers[0].title, body.triggers[0].attempts, body.triggers[0].status, body.triggers[1].lastAttempt.httpStatus, body.triggers[1].lastAttempt.responseExcerpt],
        ["again", 2, "completed", 500, "down"]
      )
      assert.strictEqual(body.nextCursor, null)

      // the same set as the filters of GET /jobs and the bulk actions, and the overview's count
      const jobs = yield* server.call("GET", "/jobs?deadLetter=true", { headers: { "ttr-api-key": key } })
      assert.sameMembers(jobs.json().jobs.map((j: { id: string }) => j.id), [plain, again])
      const dryRun = yield* server.call("POST", "/actions", {
        headers: { "ttr-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ action: "replay", filter: { deadLetter: true }, dryRun: true })
      })
      assert.deepStrictEqual(dryRun.json(), { matched: 2 })
      const outcome = yield* server.call("GET", "/jobs?outcome=dead_letter", { headers: { "ttr-api-key": key } })
      assert.sameMembers(outcome.json().jobs.map((j: { id: string }) => j.id), [plain, again])
      const overview = yield* sessionCall(token, "GET", "/overview?hours=1", { project: projectId })
      assert.strictEqual(overview.json().deadLetterTriggers, 2)

      // pages of one, by cursor
      const first = (yield* sessionCall(token, "GET", "/dead-letters?limit=1", { project: projectId })).json()
      assert.deepStrictEqual([first.count, first.triggers.map((t: { id: string }) => t.id)], [2, [again]])
      const second = (yield* sessionCall(token, "GET", `/dead-letters?limit=1&cursor=${first.nextCursor}`, { project: projectId })).json()
      assert.deepStrictEqual([second.triggers.map((t: { id: string }) => t.id), second.nextCursor], [[plain], null])
      const bad = yield* sessionCall(token, "GET", "/dead-letters?cursor=nope", { project: projectId })
      assert.deepStrictEqual([bad.status, bad.json().message], [400, "cursor is invalid"])

      // a session only
      assert.strictEqual((yield* server.call("GET", "/dead-letters", { headers: { "ttr-api-key": key } })).status, 401)
    }))
})
