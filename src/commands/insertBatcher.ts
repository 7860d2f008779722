// Group commit of plain creates: /schedule calls that create a one-shot trigger without a custom key
// or id queue their row here; one fiber takes whatever has queued and, per project and month, takes
// the quota units and inserts the granted rows in one statement, so many calls share one round trip
// and one WAL flush. Each call learns its own quota result (rows past the quota are not created);
// a failed batch fails each of its calls.
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import { SqlClient } from "effect/sql"
import { monthOf, type QuotaResult, splitGrant } from "../store/quota.ts"
import { type NewOneShot, triggersCreateWithinQuota } from "../store/triggers.ts"

interface Pending {
  readonly row: NewOneShot
  readonly month: string
  readonly done: Deferred.Deferred<QuotaResult, unknown>
}

const MAX_BATCH = 1_000

export class InsertBatcher extends Context.Service<InsertBatcher, {
  /** Creates the trigger if the project's monthly quota allows it (one unit), and says which. */
  readonly insert: (row: NewOneShot) => Effect.Effect<QuotaResult, unknown>
}>()("timewheel/InsertBatcher") {
  static readonly layer = Layer.effect(InsertBatcher, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const queue = yield* Queue.unbounded<Pending>()

    const settle = (calls: ReadonlyArray<Pending>) =>
      triggersCreateWithinQuota({ projectId: calls[0]!.row.projectId, month: calls[0]!.month, rows: calls.map((call) => call.row) }).pipe(
        Effect.flatMap((grant) =>
          Effect.forEach(splitGrant(grant, calls.length), (result, i) => Deferred.succeed(calls[i]!.done, result), { discard: true })),
        Effect.catchCause((cause) => Effect.forEach(calls, (call) => Deferred.failCause(call.done, cause), { discard: true })),
        Effect.provideService(SqlClient.SqlClient, sql)
      )

    const round = Effect.gen(function*() {
      const batch = yield* Queue.takeBetween(queue, 1, MAX_BATCH)
      const groups = new Map<string, Array<Pending>>()
      for (const call of batch) {
        const key = `${call.row.projectId} ${call.month}`
        const group = groups.get(key)
        if (group === undefined) groups.set(key, [call])
        else group.push(call)
      }
      yield* Effect.forEach(groups.values(), settle, { concurrency: "unbounded", discard: true })
    })
    yield* Effect.forkScoped(Effect.forever(round))

    return InsertBatcher.of({
      insert: (row) =>
        Effect.gen(function*() {
          const done = yield* Deferred.make<QuotaResult, unknown>()
          yield* Queue.offer(queue, { row, month: monthOf(row.nowMs), done })
          return yield* Deferred.await(done)
        })
    })
  }))
}
