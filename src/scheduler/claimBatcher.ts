// Group commit of claims: every shard actor claims what comes due in its own wheel, and at thousands
// of due triggers per second spread over 64 shards that was a one-row UPDATE per trigger. Actors queue
// their claims here instead; a few rounds take whatever has queued and claim it in one statement each,
// handing every actor back exactly its own rows. A failed statement fails each of its claims.
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import { SqlClient } from "effect/sql"
import { type ClaimedRow, triggersClaim } from "../store/schedulerQueries.ts"
import { NodeIdentity } from "./node.ts"

interface Pending {
  readonly ids: ReadonlyArray<string>
  readonly untilMs: number
  readonly done: Deferred.Deferred<ReadonlyArray<ClaimedRow>, unknown>
}

/** Claims per statement: a burst of 64 shards × 300 rows becomes 8 statements of ~2,400 rows. */
const MAX_CLAIMS_PER_ROUND = 8
/** Statements in flight at once, so a burst uses PostgreSQL's cores. */
const ROUNDS_IN_FLIGHT = 4

export class ClaimBatcher extends Context.Service<ClaimBatcher, {
  /**
   * Claims those of `ids` still pending and due by `untilMs` (or by the latest cutoff of the claims
   * sharing the statement: at most a few milliseconds later, and the rows are still handed over at
   * their own due time).
   */
  readonly claim: (ids: ReadonlyArray<string>, untilMs: number) => Effect.Effect<ReadonlyArray<ClaimedRow>, unknown>
}>()("timewheel/ClaimBatcher") {
  static readonly layer = Layer.effect(ClaimBatcher, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const node = (yield* NodeIdentity).id
    const queue = yield* Queue.unbounded<Pending>()

    const round = Effect.gen(function*() {
      const batch = yield* Queue.takeBetween(queue, 1, MAX_CLAIMS_PER_ROUND)
      const ids = batch.flatMap((pending) => pending.ids)
      const untilMs = Math.max(...batch.map((pending) => pending.untilMs))
      yield* triggersClaim({ ids, untilMs, node }).pipe(
        Effect.flatMap((rows) => {
          const owner = new Map<string, number>()
          batch.forEach((pending, i) => pending.ids.forEach((id) => owner.set(id, i)))
          const perClaim = batch.map((): Array<ClaimedRow> => [])
          for (const row of rows) perClaim[owner.get(row.id)!]!.push(row)
          return Effect.forEach(batch, (pending, i) => Deferred.succeed(pending.done, perClaim[i]!), { discard: true })
        }),
        Effect.catchCause((cause) => Effect.forEach(batch, (pending) => Deferred.failCause(pending.done, cause), { discard: true })),
        Effect.provideService(SqlClient.SqlClient, sql)
      )
    })
    for (let i = 0; i < ROUNDS_IN_FLIGHT; i++) yield* Effect.forkScoped(Effect.forever(round))

    return ClaimBatcher.of({
      claim: (ids, untilMs) =>
        Effect.gen(function*() {
          const done = yield* Deferred.make<ReadonlyArray<ClaimedRow>, unknown>()
          yield* Queue.offer(queue, { ids, untilMs, done })
          return yield* Deferred.await(done)
        })
    })
  }))
}
