// Group commit of quota units: /schedule calls queue here; a single fiber takes whatever has
// queued, asks the store once per (project, month) for that many units, and hands each call its
// own result. While one round runs the next batch fills, so the batch size follows the load.
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import { SqlClient } from "effect/sql"
import { monthOf, type QuotaResult, quotaTake, splitGrant } from "../store/quota.ts"

interface Pending {
  readonly projectId: string
  readonly month: string
  readonly result: Deferred.Deferred<QuotaResult, unknown>
}

const MAX_BATCH = 2_000

export class QuotaBatcher extends Context.Service<QuotaBatcher, {
  readonly consume: (projectId: string, nowMs: number) => Effect.Effect<QuotaResult, unknown>
}>()("timewheel/QuotaBatcher") {
  static readonly layer = Layer.effect(QuotaBatcher, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const queue = yield* Queue.unbounded<Pending>()

    const settle = (calls: ReadonlyArray<Pending>) =>
      quotaTake({ projectId: calls[0]!.projectId, month: calls[0]!.month, units: calls.length }).pipe(
        Effect.flatMap((grant) =>
          Effect.forEach(splitGrant(grant, calls.length), (result, i) => Deferred.succeed(calls[i]!.result, result))),
        Effect.catchCause((cause) => Effect.forEach(calls, (call) => Deferred.failCause(call.result, cause))),
        Effect.provideService(SqlClient.SqlClient, sql)
      )

    const round = Effect.gen(function*() {
      const batch = yield* Queue.takeBetween(queue, 1, MAX_BATCH)
      const groups = new Map<string, Array<Pending>>()
      for (const call of batch) {
        const key = `${call.projectId} ${call.month}`
        const group = groups.get(key)
        if (group === undefined) groups.set(key, [call])
        else group.push(call)
      }
      yield* Effect.forEach(groups.values(), settle, { concurrency: "unbounded", discard: true })
    })
    yield* Effect.forkScoped(Effect.forever(round))

    return QuotaBatcher.of({
      consume: (projectId, nowMs) =>
        Effect.gen(function*() {
          const result = yield* Deferred.make<QuotaResult, unknown>()
          yield* Queue.offer(queue, { projectId, month: monthOf(nowMs), result })
          return yield* Deferred.await(result)
        })
    })
  }))
}
