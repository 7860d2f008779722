// Retention by day against the real service (docs/operations.md "Retention"): a housekeeping sweep
// past RETENTION_DAYS drops the partition of the old day and deletes the finished trigger last
// changed then; the attempts of the day of a trigger it keeps stay, the days after it stay, and every
// read endpoint answers as before on what is left:
// GET /jobs/{id} and its executions, GET /executions (filters and cursors across the days), GET
// /executions/{id}, GET /jobs?deadLetter=true and the dashboard's GET /dead-letters.
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { DAY_MS } from "../../src/domain/executionDays.ts"
import { uuidv7 } from "../../src/domain/ids.ts"
import { type HousekeepingEvent, sweep } from "../../src/scheduler/housekeeping.ts"
import { executionPartitionsEnsure } from "../../src/store/executionPartitions.ts"
import { insertExecution, insertTrigger } from "../support/fixtures.ts"
import { newProject } from "../support/projectClient.ts"
import { testServerLayer } from "../support/server.ts"
import { newAdmin, sessionCall, signedIn } from "../support/dashboard.ts"

/** May 2031, day `day` at `hour` UTC. */
const at = (day: number, hour: number) => Date.UTC(2031, 4, day, hour)

layer(testServerLayer(), { timeout: "120 seconds" })("history by day", (it) => {
  it.effect("a sweep drops the old day and its finished trigger; every read answers as before on the rest", () =>
    Effect.gen(function*() {
      const p = yield* newProject
      assert.deepStrictEqual(yield* executionPartitionsEnsure(at(1, 0)),
        ["executions_20310501", "executions_20310502", "executions_20310503", "executions_20310504"])
      const execution = (triggerId: string, ms: number, attempt: number, deadLetter: boolean) =>
        insertExecution({
          id: uuidv7(ms), projectId: p.projectId, triggerId, attempt, startedAt: new Date(ms),
          ...(deadLetter ? { status: "failed", httpStatus: 500, isDeadLetter: true } : {})
        })
      // a: failed on the 1st, delivered on the 2nd; b: a dead letter on the 1st; c: a dead letter on the 3rd
      const a = yield* insertTrigger({ projectId: p.projectId, status: "completed", attempts: 2, updatedAt: new Date(at(2, 2)) })
      const a1 = yield* insertExecution({ id: uuidv7(at(1, 10)), projectId: p.projectId, triggerId: a, startedAt: new Date(at(1, 10)), status: "failed", httpStatus: 500 })
      const a2 = yield* execution(a, at(2, 1), 2, false)
      const b = yield* insertTrigger({ projectId: p.projectId, status: "completed", attempts: 1, updatedAt: new Date(at(1, 12)) })
      const b1 = yield* execution(b, at(1, 11), 1, true)
      const c = yield* insertTrigger({ projectId: p.projectId, status: "completed", attempts: 1, updatedAt: new Date(at(3, 5)) })
      const c1 = yield* execution(c, at(3, 4), 1, true)

      const admin = yield* newAdmin
      const token = yield* signedIn(admin.email, admin.password)
      const ids = (entries: ReadonlyArray<{ id: string }>) => entries.map((entry) => entry.id)
      const executionPages = Effect.gen(function*() {
        const seen: Array<string> = []
        let cursor: string | null = null
        do {
          const body: { executions: Array<{ id: string }>; nextCursor: string | null } =
            (yield* p.get(`/executions?limit=1${cursor === null ? "" : `&cursor=${cursor}`}`)).json()
          seen.push(...ids(body.executions))
          cursor = body.nextCursor
        } while (cursor !== null && seen.length < 10)
        return seen
      })
      const reads = Effect.gen(function*() {
        const job = yield* p.get(`/jobs/${a}`)
        assert.strictEqual(job.status, 200, job.text)
        const deadLetters = yield* sessionCall(token, "GET", "/dead-letters", { project: p.projectId })
        assert.strictEqual(deadLetters.status, 200, deadLetters.text)
        return {
          status: job.json().status,
          attempts: (yield* p.get(`/jobs/${a}/executions`)).json().executions.map((e: { attempt: number }) => e.attempt),
          executions: ids((yield* p.get("/executions")).json().executions),
          pages: yield* executionPages,
          failed: ids((yield* p.get("/executions?executionStatus=failed")).json().executions),
          deadLetterJobs: ids((yield* p.get("/jobs?deadLetter=true")).json().jobs),
          deadLetters: ids(deadLetters.json().triggers),
          b: (yield* p.get(`/jobs/${b}`)).status,
          a1: (yield* p.get(`/executions/${a1}`)).status
        }
      })
      assert.deepStrictEqual(yield* reads, {
        status: "completed", attempts: [1, 2], executions: [c1, a2, b1, a1], pages: [c1, a2, b1, a1],
        failed: [c1, b1, a1], deadLetterJobs: [c, b], deadLetters: [c, b], b: 200, a1: 200
      })

      // 30 days after the 2nd at 01:00: the 1st is wholly past the cutoff, the 2nd not; b last changed before it
      yield* TestClock.setTime(at(2, 1) + 30 * DAY_MS)
      const events: Array<HousekeepingEvent> = []
      yield* sweep({ retentionDays: 30, onEvent: (event) => Effect.sync(() => void events.push(event)) })
      const dropped = events.flatMap((event) => event._tag === "Partitions" ? event.dropped : [])
      assert.include(dropped, "executions_20310501")
      assert.notInclude(dropped, "executions_20310502")
      assert.deepStrictEqual(events.at(-1), { _tag: "Swept", deleted: 1 })

      // a finished after the cutoff: retention keeps it with every attempt, its 1st-day one included
      // (moved to the default partition as its day was dropped); b went with its day
      assert.deepStrictEqual(yield* reads, {
        status: "completed", attempts: [1, 2], executions: [c1, a2, a1], pages: [c1, a2, a1],
        failed: [c1, a1], deadLetterJobs: [c], deadLetters: [c], b: 404, a1: 200
      })
    }))
})
