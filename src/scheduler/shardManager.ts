// ShardManager: owns shards through PostgreSQL advisory locks held on one session per node (which,
// like every connection of the node, announces it: store/nodePresence.ts). Every second it checks
// that session, takes free shards up to ceil(shards / live nodes), releases extras so a joining node
// gets its share, runs one ShardActor fiber per owned shard, routes wake-ups to them, and beats the
// `scheduler` heartbeat. Ownership is an optimisation: claims are compare-and-sets.
// - The session is lost (PostgreSQL restarted, or the session was killed): the locks went with it,
//   so every actor stops at once (no longer an owner); the next round opens a new session with the
//   same node id and takes shards again. Deliveries in flight go on and are recorded once the
//   database is back (the dispatcher retries).
// - Claims of this node's it has lost track of (a commit whose answer was lost) it sends again itself
//   (unheldClaims.ts).
// - Graceful stop: the actors stop (no more claims or fires) and the shards are released at once, so other
//   nodes take over within a round, while this node stays present until it has sent what it holds
//   and recorded every outcome (bounded by DRAIN_TIMEOUT_SECONDS); only then does it leave.
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import { NodeIdentity } from "../cluster/node.ts"
import { decodeWake, Wakeups } from "../cluster/wakeups.ts"
import { AppConfig } from "../config.ts"
import { Dispatcher } from "../delivery/dispatcher.ts"
import { forkLoop } from "../lib/backgroundLoop.ts"
import { Metrics } from "../metrics/metrics.ts"
import { type Database, ShardCount } from "../store/db.ts"
import { triggersGiveBackFired } from "../store/firedTriggers.ts"
import { presenceRead } from "../store/nodePresence.ts"
import { Notifications, WAKE_CHANNEL } from "../store/notifications.ts"
import { shardMarksHandOver } from "../store/shardMarks.ts"
import { type ShardLockSession, shardLocksOpen } from "../store/shardLocks.ts"
import { Heartbeats } from "./heartbeats.ts"
import { runShardActor } from "./shardActor.ts"
import { ShardMailbox } from "./shardMailbox.ts"
import { forkUnheldClaimsLoop } from "./unheldClaims.ts"

const REBALANCE_EVERY = "1 second"
/** Shards fetching a later page of a large burst at once (shardActor.ts). */
const LATER_PAGES_AT_ONCE = 2

interface LockSession {
  readonly locks: ShardLockSession
  readonly scope: Scope.Closeable
}

export const ShardManagerLive = Layer.effectDiscard(Effect.gen(function*() {
  const node = (yield* NodeIdentity).id
  const wakeups = yield* Wakeups
  const heartbeats = yield* Heartbeats
  const notifications = yield* Notifications
  const dispatcher = yield* Dispatcher
  const config = yield* AppConfig
  const shards = (yield* ShardCount).count
  const services = yield* Effect.context<Database>()
  const presence = Effect.provideContext(presenceRead, services)
  // The actors' recoveries (one per shard every few seconds, spread over the period) share one read
  // a second: 64 shards read pg_stat_activity 13 times a second otherwise, a quarter of an idle node's
  // statements. A second-old view is safe: a node that joined within it cannot hold claims on a shard
  // this node owns, and one that left within it is recovered from at the next turn.
  const actorsPresence = yield* Effect.cachedWithTTL(presence, (exit) => (Exit.isSuccess(exit) ? "1 second" : 0))
  const laterPages = yield* Semaphore.make(LATER_PAGES_AT_ONCE)
  const metrics = yield* Metrics

  const actors = new Map<number, Fiber.Fiber<unknown, unknown>>()
  metrics.watch("shardsOwned", () => actors.size)
  let session: LockSession | undefined
  /** Set when the node stops: what it gives back stays claimed by it, for crash recovery, not for itself. */
  let stopping = false

  const openSession = Effect.gen(function*() {
    const scope = yield* Scope.make()
    const locks = yield* shardLocksOpen(node).pipe(
      Scope.provide(scope),
      Effect.provideContext(services),
      Effect.onError(() => Scope.close(scope, Exit.void))
    )
    return { locks, scope } satisfies LockSession
  })

  const startActor = (shard: number) =>
    Effect.gen(function*() {
      const mailbox = new ShardMailbox()
      yield* wakeups.attach(shard, (items) => Effect.sync(() => mailbox.offer(items)))
      const fiber = yield* Effect.forkDetach(runShardActor({ shard, node, mailbox, presence: actorsPresence, laterPages }))
      actors.set(shard, fiber)
    })

  /** Stops a shard's actor; its lock is released by the caller (or went with a lost session). */
  const stopActor = (shard: number) =>
    Effect.gen(function*() {
      const fiber = actors.get(shard)
      actors.delete(shard)
      yield* wakeups.detach(shard)
      if (fiber !== undefined) yield* Fiber.interrupt(fiber)
    })

  const stopAllActors = Effect.suspend(() => Effect.forEach([...actors.keys()], stopActor, { discard: true }))

  /** One log line per change of ownership (with LOG_FORMAT=json: `event`, `shards`, `owned`). */
  const logShards = (event: string, message: string, moved: ReadonlyArray<number>) =>
    Effect.log(message).pipe(Effect.annotateLogs({ event, shards: [...moved].sort((a, b) => a - b), owned: actors.size }))

  /** The session is gone, and the locks with it: this node owns nothing until it has a new one. */
  const loseSession = (lost: LockSession) =>
    Effect.gen(function*() {
      session = undefined
      yield* stopAllActors
      yield* Scope.close(lost.scope, Exit.void)
    })

  const rebalance = Effect.gen(function*() {
    const current = session ?? (session = yield* openSession)
    const checked = yield* Effect.exit(current.locks.check)
    if (Exit.isFailure(checked)) {
      yield* heartbeats.databaseReached(false)
      const lost = [...actors.keys()]
      yield* loseSession(current)
      yield* Effect.logWarning("the shard-lock session was lost; shards released, reconnecting", checked.cause).pipe(
        Effect.annotateLogs({ event: "shards_lost", shards: lost.sort((a, b) => a - b), owned: 0 })
      )
      return
    }
    const { nodes, draining } = yield* presence
    const target = Math.ceil(shards / Math.max(1, nodes.length - draining.length))
    const offset = Math.floor(Math.random() * shards)
    const taken: Array<number> = []
    for (let i = 0; i < shards && actors.size < target; i++) {
      const shard = (offset + i) % shards
      if (!actors.has(shard) && (yield* current.locks.tryLock(shard))) {
        yield* startActor(shard)
        taken.push(shard)
      }
    }
    const extras = [...actors.keys()].slice(0, Math.max(0, actors.size - target))
    for (const shard of extras) {
      yield* stopActor(shard)
      yield* handOver([shard])
      yield* current.locks.unlock(shard)
    }
    const present = `${nodes.length} ${nodes.length === 1 ? "node" : "nodes"} present`
    if (taken.length > 0) yield* logShards("shards_taken", `took ${taken.length} shards (owns ${actors.size} of ${shards}, ${present})`, taken)
    if (extras.length > 0) yield* logShards("shards_released", `released ${extras.length} shards to other nodes (owns ${actors.size} of ${shards}, ${present})`, extras)
    yield* heartbeats.beat("scheduler")
    yield* heartbeats.databaseReached(true)
  }).pipe(
    // a statement failed mid-round: the session counts as lost (a healthy one is reopened next round)
    Effect.tapError(() =>
      Effect.andThen(heartbeats.databaseReached(false), session === undefined ? Effect.void : loseSession(session)))
  )

  const routeNotifications = Effect.scoped(Effect.gen(function*() {
    const next = yield* notifications.listen(WAKE_CHANNEL)
    for (;;) {
      const payload = yield* next
      yield* wakeups.wake(decodeWake(payload).filter((item) => actors.has(item.shard)))
    }
  }))

  /**
   * Before this node lets go of shards while it runs: the fired triggers it does not hold (a fetch
   * cut short) are given back, so their next owner fires them (store/firedTriggers.ts), and the
   * marks say they were handed over, so the next owner leaves what this node still sends to it
   * (store/shardMarks.ts). When either fails, the next owner takes this node for gone and sends
   * again what it had fired: a duplicate of what is in flight, never a trigger left waiting.
   */
  const handOver = (shards: ReadonlyArray<number>) =>
    Effect.provideContext(
      Effect.andThen(triggersGiveBackFired({ shards, holding: dispatcher.held() }), (given) =>
        Effect.andThen(shardMarksHandOver({ node, shards }), wakeups.wake(given))),
      services
    ).pipe(
      Effect.catchCause((cause) => Effect.logWarning("handing fired triggers over failed; the next owner sends them again", cause))
    )

  /**
   * Graceful stop, in this order: stop firing and claiming (a fire under way finishes and hands its
   * triggers over), give back what was fired and is not held, hand the shards over, finish and
   * record, leave.
   */
  const stop = Effect.gen(function*() {
    stopping = true
    const owned = [...actors.keys()]
    yield* stopAllActors
    yield* handOver(owned)
    if (session !== undefined) yield* Effect.ignore(session.locks.releaseAllAndDrain)
    if (owned.length > 0) yield* logShards("shards_released", `released all ${owned.length} shards: stopping`, owned)
    yield* dispatcher.drain(config.drainTimeoutSeconds * 1000)
    if (session !== undefined) yield* Scope.close(session.scope, Exit.void)
  })

  yield* Effect.addFinalizer(() => stop)
  yield* Effect.ignore(rebalance)
  yield* forkLoop("wake-up listener", routeNotifications)
  yield* forkLoop("shard rebalance", rebalance, { every: REBALANCE_EVERY })
  yield* forkUnheldClaimsLoop(() => !stopping).pipe(Effect.provideContext(services))
}))
