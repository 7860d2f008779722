// A Dispatcher for tests of what hands triggers to delivery (shard actors, bulk actions): it sends
// nothing and tells `onHandedOver` the ids it was given (submitted ids, or the rows' ids), and holds
// fired rows as the live one does (never the same one twice).
import { Effect, Layer } from "effect"
import { Dispatcher } from "../../src/delivery/dispatch.ts"

export const recordingDispatcher = (onHandedOver: (ids: ReadonlyArray<string>) => Effect.Effect<void>) => {
  const held = new Set<string>()
  return Layer.succeed(Dispatcher)({
    submit: (ids) => onHandedOver(ids),
    deliver: (rows) => onHandedOver(rows.map((row) => row.id)),
    hold: (rows) => {
      const fresh = rows.filter((row) => !held.has(row.id))
      for (const row of fresh) held.add(row.id)
      return fresh
    },
    holds: (id) => held.has(id),
    held: () => [...held],
    awaitRoom: () => Effect.void,
    drain: () => Effect.void
  })
}
