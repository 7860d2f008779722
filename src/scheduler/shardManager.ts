// ShardManager: owns shards through PostgreSQL advisory locks held on one reserved session per
// process (its application_name names the node, so nodes can count each other). Every second it
// takes free shards up to ceil(shards / live nodes), releases extras so a joining node gets its
// share, runs one ShardActor fiber per owned shard, routes LISTEN/NOTIFY wake-ups to them, and
// beats the `scheduler` heartbeat. Ownership is an optimisation: claims are compare-and-sets.
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import { SqlClient } from "effect/sql"
import { ShardCount } from "../store/db.ts"
import { Heartbeats } from "./heartbeats.ts"
import { NODE_APPLICATION_PREFIX, NodeIdentity } from "./node.ts"
import { runShardActor } from "./shardActor.ts"
import { decodeWake, WAKE_CHANNEL, type WakeItem, Wakeups } from "./wake.ts"

/** First key of the two-int advisory locks ("tw"). */
const LOCK_NAMESPACE = 0x7477
const REBALANCE_EVERY = "1 second"

export const ShardManagerLive = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const pg = yield* PgClient.PgClient
  const node = (yield* NodeIdentity).id
  const wakeups = yield* Wakeups
  const heartbeats = yield* Heartbeats
  const shards = (yield* ShardCount).count
  const session = yield* sql.reserve
  yield* session.execute(`SET application_name = '${NODE_APPLICATION_PREFIX}${node}'`, [], undefined)

  const liveNodes = Effect.map(
    sql<{ name: string }>`SELECT application_name AS name FROM pg_stat_activity
      WHERE datname = current_database() AND application_name LIKE ${NODE_APPLICATION_PREFIX + "%"}`,
    (rows) => rows.map((row) => row.name.slice(NODE_APPLICATION_PREFIX.length))
  )

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
      yield* session.execute("SELECT pg_advisory_unlock($1, $2)", [LOCK_NAMESPACE, shard], undefined)
    })

  const tryLock = (shard: number) =>
    Effect.map(
      session.execute("SELECT pg_try_advisory_lock($1, $2) AS ok", [LOCK_NAMESPACE, shard], undefined),
      (rows) => (rows as ReadonlyArray<{ ok: boolean }>)[0]?.ok === true
    )

  const rebalance = Effect.gen(function*() {
    const nodes = Math.max(1, (yield* liveNodes).length)
    const target = Math.ceil(shards / nodes)
    const offset = Math.floor(Math.random() * shards)
    for (let i = 0; i < shards && actors.size < target; i++) {
      const shard = (offset + i) % shards
      if (!actors.has(shard) && (yield* tryLock(shard))) yield* startActor(shard)
    }
    for (const shard of [...actors.keys()].slice(0, Math.max(0, actors.size - target))) yield* stopActor(shard)
    yield* heartbeats.beat("scheduler")
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("shard rebalance failed", cause)))

  const routeNotifications = Effect.gen(function*() {
    const notifications = yield* pg.listen(WAKE_CHANNEL)
    for (;;) {
      const notification = yield* Queue.take(notifications)
      yield* wakeups.wake(decodeWake(notification.payload).filter((item) => actors.has(item.shard)))
    }
  }).pipe(
    Effect.scoped,
    Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.logWarning("LISTEN failed; reconnecting", cause)),
    Effect.repeat(Schedule.spaced("1 second"))
  )

  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      for (const shard of [...actors.keys()]) yield* stopActor(shard)
    }).pipe(Effect.ignore)
  )
  yield* rebalance
  yield* Effect.forkScoped(routeNotifications)
  yield* Effect.forkScoped(Effect.repeat(rebalance, Schedule.spaced(REBALANCE_EVERY)))
}))
