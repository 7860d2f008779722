// A Dispatcher for tests of what hands triggers to delivery (shard actors, bulk actions): it sends
// nothing and tells `onHandedOver` the ids it was given (submitted ids, or the rows' ids; a row
// handed over ahead of its time when that time comes, by the live release loop on the test's clock),
// and holds fired rows as the live one does (never the same one twice). It carries every trigger it
// was given for good (it records no outcome).
import { Effect, Layer } from "effect"
import { Dispatcher, makeFiredHolds } from "../../src/delivery/dispatcher.ts"
import { makeEarlyRelease } from "../../src/delivery/earlyRelease.ts"
import type { ClaimedRow } from "../../src/domain/trigger.ts"

export const recordingDispatcher = (onHandedOver: (ids: ReadonlyArray<string>) => Effect.Effect<void>) =>
  Layer.effect(Dispatcher, Effect.gen(function*() {
  const fired = makeFiredHolds()
  const given = new Set<string>()
  const handedOver = (ids: ReadonlyArray<string>) => Effect.suspend(() => {
    for (const id of ids) given.add(id)
    return onHandedOver(ids)
  })
  const deliver = (rows: ReadonlyArray<{ readonly id: string }>) => handedOver(rows.map((row) => row.id))
  const early = yield* makeEarlyRelease<ClaimedRow>(deliver)
  yield* Effect.forkScoped(Effect.forever(early.releaseTurn))
  return Dispatcher.of({
    submit: handedOver,
    deliver,
    deliverAt: early.deliverAt,
    quietFrom: early.quietFrom,
    hold: fired.hold,
    holds: fired.holds,
    held: fired.held,
    carries: (id) => given.has(id) || fired.holds(id),
    awaitRoom: () => Effect.void,
    drain: () => Effect.void
  })
}))
