// Group commit of new one-shot triggers: /schedule calls that create a plain trigger (no custom key,
// no id to edit) queue their row here; one fiber inserts whatever has queued in one statement, so
// many calls share one WAL flush. A failed batch fails each of its calls.
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import { SqlClient } from "effect/sql"
import { type NewOneShot, triggersInsertOneShots } from "../store/triggers.ts"

interface Pending {
  readonly row: NewOneShot
  readonly done: Deferred.Deferred<void, unknown>
}

const MAX_BATCH = 1_000

export class InsertBatcher extends Context.Service<InsertBatcher, {
  readonly insert: (row: NewOneShot) => Effect.Effect<void, unknown>
}>()("timewheel/InsertBatcher") {
  static readonly layer = Layer.effect(InsertBatcher, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const queue = yield* Queue.unbounded<Pending>()
    const round = Effect.gen(function*() {
      const batch = yield* Queue.takeBetween(queue, 1, MAX_BATCH)
      yield* triggersInsertOneShots(batch.map((pending) => pending.row)).pipe(
        Effect.andThen(Effect.forEach(batch, (pending) => Deferred.succeed(pending.done, undefined), { discard: true })),
        Effect.catchCause((cause) => Effect.forEach(batch, (pending) => Deferred.failCause(pending.done, cause), { discard: true })),
        Effect.provideService(SqlClient.SqlClient, sql)
      )
    })
    yield* Effect.forkScoped(Effect.forever(round))
    return InsertBatcher.of({
      insert: (row) =>
        Effect.gen(function*() {
          const done = yield* Deferred.make<void, unknown>()
          yield* Queue.offer(queue, { row, done })
          yield* Deferred.await(done)
        })
    })
  }))
}
