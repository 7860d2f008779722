// Notifications between the nodes of a cluster, besides the tables: wake-ups for the owner of a
// shard, key revocations for every node's key cache, tag and target policy changes, gate holds and
// circuit changes for every node. Live: PostgreSQL LISTEN/NOTIFY. `memory` is an in-process twin for tests without a database.
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"

/** Wake-ups for shard owners (payload: cluster/wakeups.ts encodeWake). */
export const WAKE_CHANNEL = "timewheel_wake"
/** A key was revoked: every node forgets the keys it remembered (payload: the key id). */
export const KEY_REVOKED_CHANNEL = "timewheel_key_revoked"
/** A project's tag policies changed: every node forgets the ones it remembered (payload: the project id). */
export const TAG_POLICIES_CHANGED_CHANNEL = "timewheel_tag_policies"
/** A tag was held after a refusal of its target: every node holds it too (payload: `projectId tag heldUntilMs`). */
export const GATE_HOLDS_CHANNEL = "timewheel_gate_holds"

/** A project's target policies changed: every node reads them again (payload: the project id). */
export const TARGET_POLICIES_CHANGED_CHANNEL = "timewheel_target_policies"
/** An origin's circuit changed: every node applies it (payload: store/targetCircuits.ts CircuitNotice as JSON). */
export const TARGET_CIRCUITS_CHANNEL = "timewheel_target_circuits"

export type Channel =
  | typeof WAKE_CHANNEL
  | typeof KEY_REVOKED_CHANNEL
  | typeof TAG_POLICIES_CHANGED_CHANNEL
  | typeof GATE_HOLDS_CHANNEL
  | typeof TARGET_POLICIES_CHANGED_CHANNEL
  | typeof TARGET_CIRCUITS_CHANNEL

export class Notifications extends Context.Service<Notifications, {
  /** Sends one notification (delivered at commit when sent inside a transaction). */
  readonly send: (channel: Channel, payload: string) => Effect.Effect<void, unknown>
  /**
   * Listens on a channel for the scope's lifetime; returns once listening, with an effect that takes
   * the next payload (it fails when the connection is lost: listen again).
   */
  readonly listen: (channel: Channel) => Effect.Effect<Effect.Effect<string, unknown>, unknown, Scope.Scope>
}>()("timewheel/Notifications") {
  static readonly layer = Layer.effect(Notifications, Effect.gen(function*() {
    const pg = yield* PgClient.PgClient
    return Notifications.of({
      send: (channel, payload) => pg.notify(channel, payload),
      listen: (channel) =>
        Effect.map(pg.listen(channel), (queue) => Effect.map(Queue.take(queue), (notification) => notification.payload))
    })
  }))

  static readonly memory = Layer.effect(Notifications, Effect.gen(function*() {
    const hub = yield* PubSub.unbounded<readonly [Channel, string]>()
    return Notifications.of({
      send: (channel, payload) => Effect.asVoid(PubSub.publish(hub, [channel, payload])),
      listen: (channel) =>
        Effect.map(PubSub.subscribe(hub), (subscription) => {
          const next: Effect.Effect<string> = Effect.flatMap(PubSub.take(subscription), ([on, payload]) =>
            on === channel ? Effect.succeed(payload) : next)
          return next
        })
    })
  }))
}
