// ShardManager: owns shards through PostgreSQL advisory locks held on one reserved session per
// process (its application_name names the node, so nodes can count each other). Every second it
// takes free shards up to ceil(shards / live nodes), releases extras so a joining node gets its
// share, runs one ShardActor fiber per owned shard, routes LISTEN/NOTIFY wake-ups to them, and
// beats the `scheduler` heartbeat. Ownership is an optimisation: claims are compare-and-sets.
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import { NodeIdentity } from "../cluster/node.ts"
import { decodeWake, type WakeItem, Wakeups } from "../cluster/wakeups.ts"
import { forkLoop } from "../lib/backgroundLoop.ts"
import { type Database, ShardCount } from "../store/db.ts"
import { nodesLive } from "../store/nodePresence.ts"
import { Notifications, WAKE_CHANNEL } from "../store/notifications.ts"
import { shardLocksOpen } from "../store/shardLocks.ts"
import { Heartbeats } from "./heartbeats.ts"
import { runShardActor } from "./shardActor.ts"

const REBALANCE_EVERY = "1 second"

export const ShardManagerLive = Layer.effectDiscard(Effect.gen(function*() {
  const node = (yield* NodeIdentity).id
  const wakeups = yield* Wakeups
  const heartbeats = yield* Heartbeats
  const notifications = yield* Notifications
  const shards = (yield* ShardCount).count
  const locks = yield* shardLocksOpen(node)
  const services = yield* Effect.context<Database>()
  const liveNodes = Effect.provideContext(nodesLive, services)

  const actors = new Map<number, Fiber.Fiber<unknown, unknown>>()

  const startActor = (shard: number) =>
    Effect.gen(function*() {
      const mailbox = yield* Queue.unbounded<WakeItem>()
      yield* wakeups.attach(shard, (items) => Queue.offerAll(mailbox, items).pipe(Effect.asVoid))
      const fiber = yield* Effect.forkDetach(runShardActor({ shard, node, mailbox, liveNodes }))
      actors.set(shard, fiber)
    })

  const stopActor = (shard: number) =>
    Effect.gen(function*() {
      const fiber = actors.get(shard)
      actors.delete(shard)
      yield* wakeups.detach(shard)
      if (fiber !== undefined) yield* Fiber.interrupt(fiber)
      yield* locks.unlock(shard)
    })

  const rebalance = Effect.gen(function*() {
    const nodes = Math.max(1, (yield* liveNodes).length)
    const target = Math.ceil(shards / nodes)
    const offset = Math.floor(Math.random() * shards)
    for (let i = 0; i < shards && actors.size < target; i++) {
      const shard = (offset + i) % shards
      if (!actors.has(shard) && (yield* locks.tryLock(shard))) yield* startActor(shard)
    }
    for (const shard of [...actors.keys()].slice(0, Math.max(0, actors.size - target))) yield* stopActor(shard)
    yield* heartbeats.beat("scheduler")
  })

  const routeNotifications = Effect.scoped(Effect.gen(function*() {
    const next = yield* notifications.listen(WAKE_CHANNEL)
    for (;;) {
      const payload = yield* next
      yield* wakeups.wake(decodeWake(payload).filter((item) => actors.has(item.shard)))
    }
  }))

  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      for (const shard of [...actors.keys()]) yield* stopActor(shard)
    }).pipe(Effect.ignore)
  )
  yield* Effect.ignore(rebalance)
  yield* forkLoop("wake-up listener", routeNotifications)
  yield* forkLoop("shard rebalance", rebalance, { every: REBALANCE_EVERY })
}))
